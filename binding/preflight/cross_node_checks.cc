#include "binding/preflight/cross_node_checks.h"

#include <algorithm>
#include <functional>
#include <set>

#include "binding/fabric/ipv4_net.h"
#include "binding/fabric/roce_gid.h"
#include "tlaunch/strings.h"

namespace tlaunch {
namespace {

// Every check counts only the ports that can carry the job (isRdmaDataPort): an Ethernet port
// without a RoCE v2 IPv4 GID (an Azure accelerated-networking VF) is not a rail and its MTU
// does not matter.

using S = PreflightStatus;

// "200 Gb/sec (4X HDR) x2, 100 Gb/sec (4X EDR) x1": a multiset, sorted.
std::string countedList(const std::vector<std::string>& values) {
  std::map<std::string, int> counts;
  for (const auto& v : values) ++counts[v];
  std::vector<std::string> parts;
  for (const auto& [v, n] : counts) parts.push_back(v + " x" + std::to_string(n));
  return parts.empty() ? "none" : joinStrings(parts, ", ");
}

std::string railsOf(const NodeFabric& f) {
  std::vector<std::string> layers;
  for (const auto& d : f.devices)
    for (const auto& p : d.ports)
      if (isRdmaDataPort(p)) layers.emplace_back(p.link_layer == LinkLayer::infiniband ? "InfiniBand" : "RoCE");
  return countedList(layers);
}

std::string ratesOf(const NodeFabric& f) {
  std::vector<std::string> rates;
  for (const auto& d : f.devices)
    for (const auto& p : d.ports)
      if (isRdmaDataPort(p)) rates.push_back(p.rate.empty() ? "unknown rate" : p.rate);
  return countedList(rates);
}

// The port's live netdevs, as the network choice scans them: on IB the IPoIB parent and its
// pkey children (ib0.8001), on RoCE the port's netdev.
std::vector<const NetInterface*> liveNetdevsOf(const NodeFabric& f, const RdmaDevice& d, const RdmaPort& p) {
  std::vector<const NetInterface*> out;
  for (const auto& i : f.interfaces) {
    const bool ofPort = p.link_layer == LinkLayer::infiniband
                            ? i.type == kArphrdInfiniband && i.rdma_device == d.name && i.rdma_port == p.number
                            : i.name == p.netdev;
    if (ofPort && i.live) out.push_back(&i);
  }
  return out;
}

// The port MTUs (verbs) and the MTUs of the netdevs that carry IP traffic: on IB every IPoIB
// interface of the port with an address (the job may run on a pkey child, not the parent).
std::string mtusOf(const CrossNodeInput& n) {
  std::set<std::string> mtus;
  for (const auto& d : n.fabric.devices)
    for (const auto& p : d.ports) {
      if (!isRdmaDataPort(p)) continue;
      if (auto it = n.port_mtu.find(portName(d.name, p.number)); it != n.port_mtu.end())
        mtus.insert("port " + std::to_string(it->second));
      const bool ib = p.link_layer == LinkLayer::infiniband;
      for (const NetInterface* i : liveNetdevsOf(n.fabric, d, p))
        if (!ib || !i->ipv4.empty())
          mtus.insert((ib ? "IPoIB " : "netdev ") + std::to_string(i->mtu) +
                      (i->ipoib_mode.empty() ? "" : " " + i->ipoib_mode));
    }
  return mtus.empty() ? "none" : joinStrings(mtus);
}

std::string subnetsOf(const NodeFabric& f) {
  std::set<std::string> nets;
  for (const auto& d : f.devices)
    for (const auto& p : d.ports) {
      if (!isRdmaDataPort(p)) continue;
      for (const NetInterface* i : liveNetdevsOf(f, d, p))
        for (const auto& a : i->ipv4)
          if (auto addr = parseIpv4(a.address)) nets.insert(formatCidr(networkOf(*addr, a.prefix)));
    }
  return nets.empty() ? "none" : joinStrings(nets);
}

// Groups nodes by value and reports outliers (or every group when no value has a majority).
void compare(std::vector<PreflightItem>& out, const std::vector<CrossNodeInput>& nodes, const std::string& check,
             S severity, const std::string& what, const std::string& fix,
             const std::function<std::string(const CrossNodeInput&)>& valueOf) {
  std::map<std::string, std::vector<std::string>> groups;  // value -> nodes
  std::vector<std::string> order;                           // values by first appearance
  for (const auto& n : nodes) {
    std::string v = valueOf(n);
    if (!groups.count(v)) order.push_back(v);
    groups[v].push_back(n.node);
  }
  if (groups.size() <= 1) {
    out.push_back(PreflightItem{check, "", "", S::pass, order.empty() ? "no nodes" : order.front(),
                                "the same " + what + " on every node", ""});
    return;
  }
  std::size_t largest = 0;
  for (const auto& [v, members] : groups) largest = std::max(largest, members.size());
  std::vector<std::string> majority;
  for (const auto& v : order)
    if (groups[v].size() == largest) majority.push_back(v);
  if (majority.size() == 1) {
    const std::string& common = majority.front();
    for (const auto& v : order) {
      if (v == common) continue;
      out.push_back(PreflightItem{check, joinStrings(groups[v], ","), "", severity, v,
                                  common + " (as on " + joinStrings(groups[common], ",") + ")", fix});
    }
    return;
  }
  std::vector<std::string> described;
  for (const auto& v : order) described.push_back(joinStrings(groups[v], ",") + ": " + v);
  std::vector<std::string> all;
  for (const auto& n : nodes) all.push_back(n.node);
  out.push_back(PreflightItem{check, joinStrings(all, ","), "", severity, joinStrings(described, "; "),
                              "the same " + what + " on every node", fix});
}

}  // namespace

std::vector<PreflightItem> crossNodeChecks(const std::vector<CrossNodeInput>& nodes) {
  std::vector<PreflightItem> out;
  compare(out, nodes, "cross_rails", S::warn, "number of ACTIVE data ports",
          "bring the missing ports up (ibstat) or expect NCCL to use fewer rails on these nodes",
          [](const CrossNodeInput& n) { return railsOf(n.fabric); });
  compare(out, nodes, "cross_rate", S::warn, "port rates",
          "the slowest link sets the pace of every collective: check cables and switch port speeds",
          [](const CrossNodeInput& n) { return ratesOf(n.fabric); });
  compare(out, nodes, "cross_mtu", S::fail, "MTUs",
          "set the same MTU (and IPoIB mode) on every node; mismatched MTUs hang NCCL and IPoIB",
          [](const CrossNodeInput& n) { return mtusOf(n); });
  compare(out, nodes, "cross_subnets", S::warn, "fabric subnets",
          "put every node's fabric interfaces on the same subnets (rails)",
          [](const CrossNodeInput& n) { return subnetsOf(n.fabric); });
  return out;
}

}  // namespace tlaunch
