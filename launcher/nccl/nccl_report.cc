#include "launcher/nccl/nccl_report.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "launcher/nccl/nccl_text.h"
#include "launcher/nccl/nccl_verdict.h"
#include "tlaunch/strings.h"

namespace tlaunch::nccl {
namespace {

template <class T>
void addUnique(std::vector<T>& list, const T& item) {
  if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

// "P2P/IPC/read" → "P2P/IPC"; "SHM/direct/direct" stays; "direct shared memory" (2.4) → "SHM";
// "" for a path cut off before it says anything ("via P").
std::string intraLabel(const std::string& path) {
  if (path.starts_with("direct shared memory")) return "SHM";
  auto slash = path.find('/');
  if (slash == std::string::npos || slash + 1 == path.size()) return "";
  if (path.starts_with("P2P/")) return path.substr(0, path.find('/', 4));
  if (path.starts_with("SHM/")) return path;
  return path.substr(0, slash);
}

bool ibLike(const std::string& net) { return net == "IB" || net.starts_with("IBext"); }

// Why NCCL's IB transport was not available, in NCCL's words where it gave them.
std::string noIbReason(const ProcessState& p) {
  if (p.ib_no_device) return "NET/IB: No device found";
  for (const auto& w : p.warnings)
    if (w.text.find("libibverbs") != std::string::npos) return "libibverbs not found";
  if (auto it = p.env.find("NCCL_IB_DISABLE"); it != p.env.end() && toLong(it->second) > 0)
    return "NCCL_IB_DISABLE=" + it->second;
  if (auto it = p.env.find("NCCL_NET"); it != p.env.end()) return "NCCL_NET=" + it->second;
  return "";
}

// The device lists NCCL printed for this process, or for another process on the same host when
// this one's line was lost (Ray's deduplication drops repeated lines).
struct DeviceLists {
  const std::vector<NetDevice>* ib;
  const std::vector<NetDevice>* socket;
};

// Per host, the first process's lists that are not empty: found once for all processes (a
// search per process was quadratic: 40,000 processes took minutes).
using HostDeviceLists = std::map<std::string, DeviceLists, std::less<>>;

HostDeviceLists hostDeviceLists(const NcclLogState& state) {
  HostDeviceLists out;
  for (const auto& p : state.processes()) {
    auto [it, added] = out.try_emplace(p.host, DeviceLists{&p.ib_devices, &p.socket_devices});
    if (added) continue;
    if (it->second.ib->empty() && !p.ib_devices.empty()) it->second.ib = &p.ib_devices;
    if (it->second.socket->empty() && !p.socket_devices.empty()) it->second.socket = &p.socket_devices;
  }
  return out;
}

DeviceLists deviceListsFor(const ProcessState& p, const HostDeviceLists& hosts) {
  DeviceLists out{&p.ib_devices, &p.socket_devices};
  if (auto it = hosts.find(p.host); it != hosts.end()) {
    if (out.ib->empty()) out.ib = it->second.ib;
    if (out.socket->empty()) out.socket = it->second.socket;
  }
  return out;
}

void addHops(RankReport& r, const ProcessState& p, const DeviceLists& lists) {
  std::set<std::string> nets;
  long netHops = 0, gdrHops = 0;
  for (const auto& [key, hop] : p.hops) {
    if (!hop.isNet()) {
      if (auto label = intraLabel(hop.path); !label.empty()) addUnique(r.intra, label);
      continue;
    }
    nets.insert(hop.net);
    ++netHops;
    if (hop.gdr) ++gdrHops;
    if (hop.proxy_rank >= 0 && hop.proxy_rank != hop.self()) r.pxn_proxy = hop.proxy_rank;
    const auto& devices = hop.net == "Socket" ? *lists.socket : *lists.ib;
    if (hop.net != "Socket" && !ibLike(hop.net)) continue;  // a plugin's devices are not listed
    for (const auto& d : devices) {
      if (d.index != hop.net_dev) continue;
      addUnique(r.hcas, d.port > 0 ? d.name + ":" + std::to_string(d.port) : d.name);
      if (!d.link.empty()) addUnique(r.links, d.link);
    }
  }
  std::sort(r.intra.begin(), r.intra.end());
  for (const auto& n : nets) r.net += (r.net.empty() ? "" : ", ") + n;
  if (nets.contains("Socket")) {
    r.transport = Transport::socket;
  } else if (!nets.empty() && std::all_of(nets.begin(), nets.end(), ibLike)) {
    r.transport = r.links.size() == 1 && r.links.front() == "RoCE" ? Transport::roce : Transport::ib;
  } else if (!nets.empty()) {
    r.transport = Transport::plugin;
  }
  r.gdr = netHops == 0 ? Gdr::unknown : gdrHops == netHops ? Gdr::yes : gdrHops == 0 ? Gdr::no : Gdr::partial;
  r.plugin_used = !r.plugin.empty() && (nets.contains(r.plugin) || (nets.empty() && r.selected_network == r.plugin));
}

RankReport rankOf(const ProcessState& p, const HostDeviceLists& host_lists) {
  RankReport r;
  r.host = p.host;
  r.pid = p.pid;
  r.source = p.source;
  r.cuda_dev = p.cuda_dev;
  const CommState* largest = nullptr;
  for (const auto& c : p.comms) {
    if (!largest || c.nranks > largest->nranks) largest = &c;
    r.nnodes = std::max(r.nnodes, c.nnodes);
  }
  if (largest) {
    r.rank = largest->rank;
    r.nranks = largest->nranks;
  } else {
    std::set<int> selves;  // the rank that printed each channel line
    for (const auto& [key, hop] : p.hops) selves.insert(hop.self());
    r.rank = selves.size() == 1 ? *selves.begin() : p.tag_rank;
  }
  DeviceLists lists = deviceListsFor(p, host_lists);
  r.selected_network = p.using_network;
  if (r.selected_network.empty())  // before 2.6 NCCL did not say; its device list tells
    r.selected_network = !p.ib_devices.empty() ? "IB" : !p.socket_devices.empty() ? "Socket" : "";
  for (const auto& d : r.selected_network == "Socket" ? *lists.socket : *lists.ib)
    r.listed.push_back(d.port > 0 ? d.name + ":" + std::to_string(d.port) + "/" + d.link : d.name);
  r.plugin = p.plugin;
  if (r.plugin.empty() && !p.plugin_version.empty()) r.plugin = "AWS Libfabric";  // aws-ofi-nccl before "Loaded net plugin"
  r.plugin_version = p.plugin_version;
  r.provider = p.provider;
  r.provider_nics = p.provider_nics;
  r.bootstrap_if = p.bootstrap_if;
  r.bootstrap_address = p.bootstrap_address;
  r.oob_if = p.oob_if;
  addHops(r, p, lists);
  r.no_ib_reason = noIbReason(p);
  r.warnings = p.warnings;
  bool failed = std::any_of(p.warnings.begin(), p.warnings.end(), [](const WarnRecord& w) { return w.followed_by_error; });
  r.status = failed || (!p.initComplete() && !p.warnings.empty()) ? Status::error
             : p.initComplete()                                  ? Status::ok
                                                                 : Status::incomplete;
  return r;
}

// A path within a node serves both ends, but only the sender prints it: give the receiving rank
// (same host, and ranks that identify processes) the path too.
void shareIntraPaths(std::vector<RankReport>& ranks, const NcclLogState& state) {
  for (const auto& p : state.processes())  // several communicators number ranks differently
    for (const auto& c : p.comms)
      if (c.rank != p.comms.front().rank || c.nranks != p.comms.front().nranks) return;
  std::map<std::pair<std::string, int>, RankReport*> byRank;
  for (auto& r : ranks)
    if (r.rank >= 0 && !byRank.emplace(std::make_pair(r.host, r.rank), &r).second) return;  // ambiguous
  for (const auto& p : state.processes())
    for (const auto& [key, hop] : p.hops) {
      if (hop.isNet() || hop.direction == Direction::receive) continue;
      auto label = intraLabel(hop.path);
      auto peer = byRank.find(std::make_pair(p.host, hop.dst));
      if (label.empty() || peer == byRank.end()) continue;
      addUnique(peer->second->intra, label);
      std::sort(peer->second->intra.begin(), peer->second->intra.end());
    }
}

}  // namespace

const char* transportName(Transport t) {
  switch (t) {
    case Transport::none: return "none";
    case Transport::ib: return "IB";
    case Transport::roce: return "RoCE";
    case Transport::socket: return "Socket";
    case Transport::plugin: return "plugin";
  }
  return "none";
}

const char* gdrName(Gdr g) {
  switch (g) {
    case Gdr::unknown: return "unknown";
    case Gdr::no: return "no";
    case Gdr::yes: return "yes";
    case Gdr::partial: return "partial";
  }
  return "unknown";
}

const char* statusName(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::incomplete: return "incomplete";
    case Status::error: return "error";
  }
  return "incomplete";
}

NcclReport buildReport(const NcclLogState& state) {
  NcclReport out;
  const HostDeviceLists host_lists = hostDeviceLists(state);
  for (const auto& p : state.processes()) out.ranks.push_back(rankOf(p, host_lists));
  shareIntraPaths(out.ranks, state);
  std::sort(out.ranks.begin(), out.ranks.end(), [](const RankReport& a, const RankReport& b) {
    auto key = [](const RankReport& r) { return std::make_tuple(r.rank < 0, r.rank, r.host, r.pid); };
    return key(a) < key(b);
  });
  out.versions.assign(state.versions().begin(), state.versions().end());
  out.processes = static_cast<int>(out.ranks.size());
  std::set<std::string> hosts;
  std::set<int> seen;
  long netRanks = 0;
  int gdrYes = 0, gdrNo = 0;
  for (const auto& r : out.ranks) {
    hosts.insert(r.host);
    out.world = std::max(out.world, r.nranks);
    if (r.rank < 0 || !seen.insert(r.rank).second) out.ranks_unique = false;
    if (r.nnodes > 1 || r.transport != Transport::none) out.multi_node = true;
    if (r.transport != Transport::none) {
      ++netRanks;
      addUnique(out.nets, r.net);
      for (const auto& h : r.hcas) addUnique(out.hcas, h);
      gdrYes += r.gdr == Gdr::yes || r.gdr == Gdr::partial;
      gdrNo += r.gdr == Gdr::no || r.gdr == Gdr::partial;
    }
    const std::string& boot = r.bootstrap_if.empty() ? r.oob_if : r.bootstrap_if;
    if (!boot.empty()) addUnique(out.bootstrap_ifs, boot);
    for (const auto& i : r.intra) addUnique(out.intra, i);
  }
  out.hosts = static_cast<int>(hosts.size());
  if (out.hosts > 1) out.multi_node = true;
  std::sort(out.intra.begin(), out.intra.end());
  auto has = [&](Transport t) {
    return std::any_of(out.ranks.begin(), out.ranks.end(), [t](const RankReport& r) { return r.transport == t; });
  };
  out.transport = has(Transport::socket)                      ? Transport::socket
                  : has(Transport::plugin)                    ? Transport::plugin
                  : has(Transport::ib)                        ? Transport::ib
                  : has(Transport::roce)                      ? Transport::roce
                                                              : Transport::none;
  out.gdr = netRanks == 0 ? Gdr::unknown : gdrNo == 0 ? Gdr::yes : gdrYes == 0 ? Gdr::no : Gdr::partial;
  writeVerdict(out);
  return out;
}

std::string rankRanges(std::vector<int> ranks) { return formatRankRanges(std::move(ranks), ","); }

std::string compactHcas(const std::vector<std::string>& ports) {
  // Group "name_N:1" by name_ prefix; numbers become ranges. Anything else is listed as is.
  std::map<std::string, std::vector<int>> groups;
  std::vector<std::string> order, others;
  for (const auto& port : ports) {
    std::string name = port.ends_with(":1") ? port.substr(0, port.size() - 2) : port;
    std::size_t d = name.size();
    while (d > 0 && isDigit(name[d - 1])) --d;
    if (name.find(':') != std::string::npos || d == name.size() || d == 0 || name.size() - d > 6) {
      addUnique(others, port);
      continue;
    }
    std::string prefix = name.substr(0, d);
    if (!groups.contains(prefix)) order.push_back(prefix);
    groups[prefix].push_back(toInt(std::string_view(name).substr(d)));
  }
  std::string out;
  for (const auto& prefix : order) out += (out.empty() ? "" : ",") + prefix + rankRanges(groups[prefix]);
  for (const auto& o : others) out += (out.empty() ? "" : ",") + o;
  return out;
}

}  // namespace tlaunch::nccl
