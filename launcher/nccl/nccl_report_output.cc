#include "launcher/nccl/nccl_report_output.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "launcher/nccl/nccl_verdict.h"
#include "tlaunch/strings.h"

namespace tlaunch::nccl {
namespace {

using nlohmann::json;

std::string dash(const std::string& s) { return s.empty() ? "-" : s; }

std::string betweenCell(const RankReport& r) {
  switch (r.transport) {
    case Transport::none: return "-";
    case Transport::roce: return "NET/" + r.net + " (RoCE)";
    default: return "NET/" + r.net;
  }
}

std::string hcaCell(const RankReport& r) {
  std::string out = joinStrings(r.hcas, ",");
  if (r.transport == Transport::plugin && !r.provider.empty()) out = r.provider;
  if (r.pxn_proxy >= 0) out += " via rank " + std::to_string(r.pxn_proxy);
  return dash(out);
}

std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row[i].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i)
      line += i + 1 == row.size() ? row[i] : row[i] + std::string(width[i] - row[i].size() + 2, ' ');
    out += line + "\n";
  }
  return out;
}

json warningsJson(const std::vector<WarnRecord>& warnings) {
  json out = json::array();
  for (const auto& w : warnings) {
    json j = {{"text", w.text}, {"count", w.count}, {"error", w.followed_by_error}};
    if (auto hint = warnHint(w.text); !hint.empty()) j["hint"] = hint;
    out.push_back(std::move(j));
  }
  return out;
}

json orNull(long v) { return v >= 0 ? json(v) : json(nullptr); }

}  // namespace

std::string reportText(const NcclReport& report) {
  std::string out;
  if (!report.ranks.empty()) {
    std::vector<std::vector<std::string>> rows{
        {"RANK", "HOST", "PID", "GPU", "BETWEEN NODES", "HCA/IF", "GDR", "WITHIN NODE", "BOOTSTRAP", "STATUS"}};
    for (const auto& r : report.ranks) {
      rows.push_back({r.rank >= 0 ? std::to_string(r.rank) : "?", r.host, std::to_string(r.pid),
                      r.cuda_dev >= 0 ? std::to_string(r.cuda_dev) : "-", betweenCell(r), hcaCell(r),
                      r.transport == Transport::none ? "-" : gdrName(r.gdr), dash(joinStrings(r.intra, ",")),
                      dash(r.bootstrap_if.empty() ? r.oob_if : r.bootstrap_if), statusName(r.status)});
    }
    out += table(rows);
    for (const auto& r : report.ranks)
      for (const auto& w : r.warnings) {
        out += r.host + ":" + std::to_string(r.pid) + (r.rank >= 0 ? " (rank " + std::to_string(r.rank) + ")" : "") +
               ": WARN " + w.text + (w.count > 1 ? " (x" + std::to_string(w.count) + ")" : "") + "\n";
        if (auto hint = warnHint(w.text); !hint.empty()) out += "  " + hint + "\n";
      }
  }
  out += report.verdict + "\n";
  return out;
}

json reportJson(const NcclReport& report) {
  json ranks = json::array();
  for (const auto& r : report.ranks) {
    json plugin = nullptr;
    if (!r.plugin.empty())
      plugin = {{"name", r.plugin},         {"version", r.plugin_version}, {"provider", r.provider},
                {"nics", orNull(r.provider_nics)}, {"used", r.plugin_used}};
    ranks.push_back({
        {"rank", orNull(r.rank)},
        {"nranks", orNull(r.nranks)},
        {"nnodes", orNull(r.nnodes)},
        {"host", r.host},
        {"pid", r.pid},
        {"gpu", orNull(r.cuda_dev)},
        {"source", r.source},
        {"transport", transportName(r.transport)},
        {"net", r.net},
        {"hcas", r.hcas},
        {"links", r.links},
        {"gdr", gdrName(r.gdr)},
        {"pxn_proxy", orNull(r.pxn_proxy)},
        {"selected_network", r.selected_network},
        {"devices", r.listed},
        {"plugin", plugin},
        {"bootstrap", {{"interface", r.bootstrap_if}, {"address", r.bootstrap_address}}},
        {"oob_interface", r.oob_if},
        {"intra_node", r.intra},
        {"no_ib_reason", r.no_ib_reason},
        {"status", statusName(r.status)},
        {"warnings", warningsJson(r.warnings)},
    });
  }
  return {
      {"verdict", report.verdict},
      {"level", report.level},
      {"versions", report.versions},
      {"job",
       {{"processes", report.processes},
        {"hosts", report.hosts},
        {"world", orNull(report.world)},
        {"ranks_unique", report.ranks_unique},
        {"multi_node", report.multi_node},
        {"transport", transportName(report.transport)},
        {"nets", report.nets},
        {"hcas", report.hcas},
        {"gdr", gdrName(report.gdr)},
        {"bootstrap_interfaces", report.bootstrap_ifs},
        {"intra_node", report.intra}}},
      {"ranks", std::move(ranks)},
  };
}

std::string reportJsonText(const NcclReport& report) {
  return reportJson(report).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace tlaunch::nccl
