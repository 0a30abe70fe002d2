#include "launcher/nccl/nccl_verdict.h"

#include <algorithm>
#include <string>
#include <vector>

#include "launcher/nccl/nccl_text.h"
#include "tlaunch/strings.h"

namespace tlaunch::nccl {
namespace {

// "rank 3", "ranks 8-15", or "host:pid, host:pid (+5 more)" when ranks do not identify processes.
std::string who(const NcclReport& report, const std::vector<const RankReport*>& ranks) {
  if (report.ranks_unique) {
    std::vector<int> numbers;
    for (const auto* r : ranks) numbers.push_back(r->rank);
    return (numbers.size() == 1 ? "rank " : "ranks ") + rankRanges(numbers);
  }
  std::vector<std::string> names, hosts;
  for (const auto* r : ranks) {
    names.push_back(r->host + ":" + std::to_string(r->pid));
    if (std::find(hosts.begin(), hosts.end(), r->host) == hosts.end()) hosts.push_back(r->host);
  }
  if (names.size() <= 3) return joinStrings(names);
  return std::to_string(names.size()) + " processes on " + (hosts.size() == 1 ? "host " : "hosts ") + joinStrings(hosts);
}

// "Connect to 10.0.0.2<34630> failed" and "…<56617>…" are the same failure: numbers, addresses
// and GIDs (runs of hex digits, ':' and '.' holding a digit) compare equal.
std::string withoutNumbers(const std::string& text) {
  auto hexish = [](char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.'; };
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t j = i;
    bool digit = false;
    for (; j < text.size() && hexish(text[j]); ++j) digit = digit || isDigit(text[j]);
    if (j == i) {
      out.push_back(text[i++]);
      continue;
    }
    out += digit ? std::string("#") : text.substr(i, j - i);
    i = j;
  }
  return out;
}

std::string countPhrase(const NcclReport& report) {
  const auto n = static_cast<int>(report.ranks.size());
  std::string hosts = report.hosts > 1 ? " on " + std::to_string(report.hosts) + " hosts" : "";
  if (!report.ranks_unique) return std::to_string(n) + (n == 1 ? " process" : " processes") + hosts;
  if (report.world > n) {
    std::vector<int> numbers;
    for (const auto& r : report.ranks) numbers.push_back(r.rank);
    return (n == 1 ? "rank " : "ranks ") + rankRanges(numbers) + " of " + std::to_string(report.world) + " in this log";
  }
  return std::to_string(n) + (n == 1 ? " rank" : " ranks") + hosts;
}

std::string gdrPhrase(Gdr gdr) {
  switch (gdr) {
    case Gdr::yes: return " with GPUDirect RDMA";
    case Gdr::no: return " without GPUDirect RDMA";
    case Gdr::partial: return " with GPUDirect RDMA on some channels only";
    case Gdr::unknown: break;
  }
  return "";
}

std::string betweenPhrase(const NcclReport& report) {
  std::vector<std::string> reasons, selected;
  for (const auto& r : report.ranks) {
    if (!r.no_ib_reason.empty()) reasons.push_back(r.no_ib_reason);
    if (!r.selected_network.empty()) selected.push_back(r.selected_network);
  }
  if (report.transport == Transport::none) {
    std::string what = report.multi_node ? "no channel between nodes in this log" : "single node";
    if (!selected.empty() && !report.multi_node)
      what += " (network " + selected.front() + " selected, not used" +
              (reasons.empty() ? "" : ": " + reasons.front()) + ")";
    return what;
  }
  std::string out = "between nodes NET/" + joinStrings(report.nets, ", NET/");
  if (report.transport == Transport::roce) out += " over RoCE";
  if (report.transport == Transport::plugin) {
    std::vector<std::string> details;
    for (const auto& r : report.ranks) {
      if (r.transport != Transport::plugin) continue;
      if (!r.plugin_version.empty()) details.push_back(r.plugin_version);
      if (!r.provider.empty())
        details.push_back(r.provider + (r.provider_nics > 0 ? ", " + std::to_string(r.provider_nics) +
                                                                  (r.provider_nics == 1 ? " NIC" : " NICs")
                                                            : ""));
      break;
    }
    if (!details.empty()) out += " (" + joinStrings(details) + ")";
  }
  if (!report.hcas.empty()) out += (report.transport == Transport::socket ? " over " : " on ") + compactHcas(report.hcas);
  out += gdrPhrase(report.gdr);
  std::vector<int> pxn, proxies;
  for (const auto& r : report.ranks)
    if (r.pxn_proxy >= 0 && r.rank >= 0) {
      pxn.push_back(r.rank);
      proxies.push_back(r.pxn_proxy);
    }
  if (!pxn.empty() && report.ranks_unique)
    out += " (PXN: " + std::string(pxn.size() == 1 ? "rank " : "ranks ") + rankRanges(pxn) + " through " +
           (rankRanges(proxies).find_first_of(",-") == std::string::npos ? "rank " + rankRanges(proxies) + "'s NIC)"
                                                                          : "other ranks' NICs)");
  return out;
}

std::string pluginNote(const NcclReport& report) {
  for (const auto& r : report.ranks)
    if (!r.plugin.empty() && !r.plugin_used && report.transport != Transport::none)
      return "; net plugin " + r.plugin + " loaded but not used";
  return "";
}

// A libfabric provider that moves the data over TCP/UDP sockets (aws-ofi-nccl runs on them where
// efa or verbs is missing): "tcp", "tcp;ofi_rxm", "sockets", "udp;ofi_rxd".
bool overTcp(const std::string& provider) {
  const std::string core = provider.substr(0, provider.find(';'));
  return core == "tcp" || core == "sockets" || core == "udp";
}

}  // namespace

std::string warnHint(const std::string& text) {
  auto status = text.find("status=");
  if (status != std::string::npos) {
    switch (toInt(std::string_view(text).substr(status + 7))) {
      case 5: return "work request flushed: an earlier error broke the connection";
      case 10: return "remote access error: memory registration or rkey mismatch";
      case 12: return "IB retry count exceeded: the peer did not answer (link down, wrong GID/route, or the peer died)";
      case 13: return "RNR retry count exceeded: the peer posted no receive in time";
      default: break;
    }
  }
  if (text.find("No route to host") != std::string::npos || text.find("Connection refused") != std::string::npos)
    return "the bootstrap connection to the peer failed: check NCCL_SOCKET_IFNAME and the firewall";
  return "";
}

void writeVerdict(NcclReport& report) {
  if (report.ranks.empty()) {
    report.level = "none";
    report.verdict = "NCCL: no NCCL_DEBUG=INFO output found";
    return;
  }
  std::vector<const RankReport*> failed, socket, plugin_tcp;
  for (const auto& r : report.ranks) {
    if (r.status == Status::error) failed.push_back(&r);
    if (r.transport == Transport::socket) socket.push_back(&r);
    if (r.transport == Transport::plugin && overTcp(r.provider)) plugin_tcp.push_back(&r);
  }
  std::vector<std::string> bootstrap = report.bootstrap_ifs;
  if (!failed.empty()) {
    const RankReport& first = *failed.front();
    const WarnRecord* warn = &first.warnings.front();
    for (const auto& w : first.warnings)
      if (w.followed_by_error) {
        warn = &w;
        break;
      }
    int count = 0;
    for (const auto& w : first.warnings) count += withoutNumbers(w.text) == withoutNumbers(warn->text) ? w.count : 0;
    bool anyInit = false;
    for (const auto* r : failed) anyInit = anyInit || r->nranks > 0;
    std::string hint = warnHint(warn->text);
    report.level = "error";
    report.verdict = "ERROR: NCCL failed on " + who(report, failed) + ": " + warn->text +
                     (count > 1 ? " (x" + std::to_string(count) + ")" : "") + (hint.empty() ? "" : " — " + hint);
    if (report.transport != Transport::none) {
      report.verdict += "; " + betweenPhrase(report);
    } else if (!anyInit && report.ranks.size() == failed.size() && !first.selected_network.empty()) {
      report.verdict += "; no transport was established (network " + first.selected_network +
                        (first.listed.empty() ? "" : " over " + joinStrings(first.listed)) +
                        (first.no_ib_reason.empty() ? "" : ", " + first.no_ib_reason) + ")";
    } else {
      report.verdict += "; no transport line in this log";
    }
    return;
  }
  if (!socket.empty() && report.multi_node) {
    std::string reason;
    for (const auto* r : socket)
      if (!r->no_ib_reason.empty()) {
        reason = " (" + r->no_ib_reason + ")";
        break;
      }
    std::vector<std::string> ifs;
    for (const auto* r : socket)
      for (const auto& h : r->hcas)
        if (std::find(ifs.begin(), ifs.end(), h) == ifs.end()) ifs.push_back(h);
    report.level = "warning";
    report.verdict = "WARNING: " + who(report, socket) + (socket.size() == 1 ? " uses" : " use") + " NET/Socket" +
                     (ifs.empty() ? "" : " over " + joinStrings(ifs)) + reason + " — NCCL fell back to TCP";
    return;
  }
  if (!plugin_tcp.empty() && report.multi_node) {
    const RankReport& first = *plugin_tcp.front();
    report.level = "warning";
    report.verdict = "WARNING: " + who(report, plugin_tcp) + (plugin_tcp.size() == 1 ? " uses " : " use ") +
                     (first.plugin.empty() ? std::string("a net plugin") : first.plugin) + " over libfabric's " +
                     first.provider + " provider — TCP, not RDMA (the fabric's provider, e.g. efa or verbs, was not used)";
    return;
  }
  report.level = "ok";
  std::string v = "NCCL: " + countPhrase(report) + "; " + betweenPhrase(report);
  if (!bootstrap.empty()) v += "; bootstrap on " + joinStrings(bootstrap);
  if (!report.intra.empty()) v += "; within nodes " + joinStrings(report.intra);
  v += pluginNote(report);
  int warnings = 0;
  for (const auto& r : report.ranks)
    for (const auto& w : r.warnings) warnings += w.count;
  if (warnings > 0) v += "; " + std::to_string(warnings) + " NCCL WARN line" + (warnings == 1 ? "" : "s");
  report.verdict = v;
}

}  // namespace tlaunch::nccl
