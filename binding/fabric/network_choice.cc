#include "binding/fabric/network_choice.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include "binding/fabric/ipv4_net.h"
#include "binding/fabric/network_ports.h"
#include "binding/fabric/roce_gid.h"
#include "tlaunch/strings.h"

namespace tlaunch {
namespace {

struct Candidate {
  const NetInterface* iface = nullptr;
  std::uint32_t address = 0;
  Ipv4Net net;    // the interface's own network
  Ipv4Net group;  // the network it joins the other nodes on: net, or --net-cidr's
  NetKind kind = NetKind::tcp;
  std::string port;  // "mlx4_0:1" or ""
  long order = 0;    // rank 0's preference: HCA order first, then interface order
  double rate = 0;   // the port's rate in Gb/s; 0 for plain TCP
};

struct NodeCandidates {
  std::vector<Candidate> list;
  std::vector<std::string> reasons;  // why fabric interfaces were left out
};

std::string stateText(const RdmaPort& port) {
  std::string text = port.state_name.empty() ? "in state " + std::to_string(port.state) : port.state_name;
  if (!port.phys_state_name.empty()) text += " (" + port.phys_state_name + ")";
  return text;
}

// "" when the live interface can carry traffic; otherwise why not.
std::string livenessProblem(const NetInterface& iface) {
  if (!iface.live) return iface.name + " is in sysfs but absent on the live system";
  if (!iface.up) return iface.name + " is down";
  if (!iface.running) return iface.name + " is up but not running (no carrier)";
  if (iface.ipv4.empty()) return iface.name + " has no IPv4 address";
  return "";
}

bool hasRoceV2Ipv4(const RdmaPort& port) {
  return std::any_of(port.gids.begin(), port.gids.end(), isRoceV2Ipv4);
}

void addAddresses(NodeCandidates& out, const NetInterface& iface, NetKind kind, const std::string& port, long order,
                  double rate = 0) {
  for (const auto& a : iface.ipv4) {
    auto address = parseIpv4(a.address);
    if (!address) continue;
    const Ipv4Net net = networkOf(*address, a.prefix);
    out.list.push_back(Candidate{&iface, *address, net, net, kind, port, order, rate});
  }
}

// Bridges and tunnels that containers and VMs create on each host; their addresses are usually
// the same on every host (docker0 172.17.0.1), so they rank after the real interfaces.
bool virtualBridge(const std::string& name) {
  static constexpr std::string_view kPrefixes[] = {"docker", "br-",   "virbr", "veth", "cni", "flannel", "cali",
                                                   "vxlan",  "tun",   "tap",   "lxcbr", "podman"};
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                     [&](std::string_view prefix) { return name.starts_with(prefix); });
}

NodeCandidates collectCandidates(const NodeFabric& fabric, NetMode mode) {
  NodeCandidates out;
  std::set<std::string> fabricIfs;
  if (fabric.devices.empty())
    out.reasons.push_back("no RDMA device (nothing in " +
                          (fabric.sysfs_root == "/" ? std::string() : fabric.sysfs_root) +
                          "/sys/class/infiniband)");
  for (std::size_t d = 0; d < fabric.devices.size(); ++d) {
    const RdmaDevice& device = fabric.devices[d];
    for (const RdmaPort& port : device.ports) {
      const std::string name = portName(device.name, port.number);
      const long order = static_cast<long>(d) * 1000 + port.number;
      const bool ib = port.link_layer == LinkLayer::infiniband;
      const bool roce = port.link_layer == LinkLayer::ethernet;
      if (!ib && !roce) {
        out.reasons.push_back(name + ": link layer unknown");
        continue;
      }
      if (port.state != kPortStateActive) {
        out.reasons.push_back(name + (port.netdev.empty() ? "" : " (" + port.netdev + ")") + ": port is " +
                              stateText(port));
        continue;
      }
      if (roce && !hasRoceV2Ipv4(port)) {
        out.reasons.push_back(name + ": RoCE port has no RoCE v2 IPv4 GID");
        continue;
      }
      if (port.netdev.empty()) {
        out.reasons.push_back(name + (ib ? ": ACTIVE InfiniBand port without an IPoIB interface"
                                         : ": ACTIVE RoCE port without a netdev"));
        continue;
      }
      // Every netdev of this port (an IPoIB parent and its pkey children).
      for (const auto& iface : fabric.interfaces) {
        bool ofPort = ib ? (iface.rdma_device == device.name && iface.rdma_port == port.number &&
                            iface.type == kArphrdInfiniband)
                         : iface.name == port.netdev;
        if (!ofPort) continue;
        if (auto problem = livenessProblem(iface); !problem.empty()) {
          out.reasons.push_back(problem + " (HCA port " + name + " is ACTIVE)");
          continue;
        }
        fabricIfs.insert(iface.name);
        addAddresses(out, iface, ib ? NetKind::ib : NetKind::roce, name, order, port.rate_gbps);
      }
      if (roce && !fabric.findInterface(port.netdev))
        out.reasons.push_back(port.netdev + " (RoCE netdev of " + name + ") is absent on the live system");
    }
  }
  for (const auto& iface : fabric.interfaces)
    if (iface.type == kArphrdInfiniband && iface.rdma_device.empty())
      out.reasons.push_back(iface.name + ": IPoIB interface matched to no HCA port");
  if (mode == NetMode::tcp) {
    for (std::size_t i = 0; i < fabric.interfaces.size(); ++i) {
      const NetInterface& iface = fabric.interfaces[i];
      if (fabricIfs.count(iface.name) || iface.loopback || !livenessProblem(iface).empty()) continue;
      const long rank = virtualBridge(iface.name) ? 2000000 : 1000000;
      addAddresses(out, iface, NetKind::tcp, "", rank + static_cast<long>(i));
    }
  }
  return out;
}

std::string describe(const Candidate& c) {
  return c.iface->name + " " + formatIpv4(c.address) + "/" + std::to_string(c.net.prefix);
}

// Why the interface the user named cannot be used on this node.
std::string explainNamed(const NodeFabric& fabric, const NodeCandidates& found, const std::string& name,
                         NetMode mode) {
  const NetInterface* iface = fabric.findInterface(name);
  if (!iface) return "has no interface named " + name;
  for (const auto& reason : found.reasons)
    if (reason.rfind(name + " ", 0) == 0 || reason.rfind(name + ":", 0) == 0 ||
        reason.find("(" + name + ")") != std::string::npos)
      return reason;
  if (iface->loopback) return name + " is the loopback interface";
  if (auto problem = livenessProblem(*iface); !problem.empty()) return problem;
  if (mode == NetMode::fabric)
    return name + " is not an IPoIB or RoCE interface (type " + std::to_string(iface->type) +
           "); add --net tcp to allow plain Ethernet";
  return name + " cannot be used";
}

// "node1 and node2 both have 172.17.0.1 (docker0)": the first address two nodes share among
// `chosen` (one candidate per node, in node order); nullopt when every address differs.
std::optional<std::string> sharedAddress(const std::vector<NodeFabricInput>& nodes,
                                         const std::vector<const Candidate*>& chosen) {
  std::map<std::uint32_t, std::size_t> first;  // address -> the first node that has it
  for (std::size_t n = 0; n < chosen.size(); ++n) {
    auto [it, fresh] = first.emplace(chosen[n]->address, n);
    if (fresh) continue;
    const std::size_t m = it->second;
    const std::string& a = chosen[m]->iface->name;
    const std::string& b = chosen[n]->iface->name;
    return nodes[m].node + " and " + nodes[n].node + " both have " + formatIpv4(chosen[n]->address) + " (" +
           (a == b ? a : a + " and " + b) + ")";
  }
  return std::nullopt;
}

// When the nodes' preferred addresses are host addresses (/32, as cloud VMs get them) or ends of
// point-to-point links (/31, routed fabrics), no subnet can be common: say so, and suggest the
// smallest network holding them. "" when some node's preferred address is on a wider subnet.
std::string hostAddressHint(const std::vector<NodeCandidates>& perNode) {
  std::vector<std::uint32_t> preferred;
  std::string example;
  for (const auto& node : perNode) {
    const auto first = std::min_element(node.list.begin(), node.list.end(), [](const Candidate& a, const Candidate& b) {
      return std::tie(a.order, a.address) < std::tie(b.order, b.address);
    });
    if (first == node.list.end() || first->net.prefix < 31) return "";
    preferred.push_back(first->address);
    if (example.empty()) example = describe(*first);
  }
  auto covering = coveringNet(preferred);
  if (!covering) return "";
  return "the nodes' addresses are host addresses (" + example +
         "): each is a network of its own; if they reach each other, choose the network with --net-cidr " +
         formatCidr(*covering) + " or wider";
}

int kindRank(NetKind kind) { return kind == NetKind::ib ? 0 : kind == NetKind::roce ? 1 : 2; }

// A subnet common to all nodes, and how it ranks.
struct Option {
  Ipv4Net net;
  NetKind kind = NetKind::tcp;
  bool control = false;  // a fabric subnet carrying the daemons' control connections (a management NIC)
  double rate = 0;       // the slowest of the nodes' ports on it (0: plain TCP)
  long order = 0;        // rank 0's HCA / interface order
};

// Kind first (IB, RoCE, TCP), then fabric subnets without the control connections, the faster
// link, rank 0's HCA order: a management ConnectX enumerated first is not the job's network.
bool ranksBefore(const Option& a, const Option& b) {
  return std::make_tuple(kindRank(a.kind), a.control, -a.rate, a.order, a.net) <
         std::make_tuple(kindRank(b.kind), b.control, -b.rate, b.order, b.net);
}

Option makeOption(const Ipv4Net& net, NetKind kind, const std::vector<const Candidate*>& chosen,
                  const std::vector<std::uint32_t>& control) {
  Option o{net, kind, kind != NetKind::tcp && carriesControl(net, control), 0, chosen.front()->order};
  if (kind != NetKind::tcp) {
    o.rate = chosen.front()->rate;
    for (const auto* c : chosen) o.rate = std::min(o.rate, c->rate);
  }
  return o;
}

// Says why the job's fabric subnet carries the daemons' control connections, when another
// fabric subnet was common to all nodes.
std::optional<std::string> controlNote(const std::vector<Option>& common) {
  const Option& pick = common.front();
  if (!pick.control) return std::nullopt;
  const auto other = std::find_if(common.begin() + 1, common.end(),
                                  [](const Option& o) { return o.kind != NetKind::tcp; });
  if (other == common.end()) return std::nullopt;
  const bool allControl = std::all_of(common.begin() + 1, common.end(),
                                      [](const Option& o) { return o.kind == NetKind::tcp || o.control; });
  return "the job's network " + formatCidr(pick.net) + " also carries the daemons' control connections (" +
         (allControl ? "so does every other fabric subnet common to all nodes"
                     : std::string(netKindName(pick.kind)) + " ranks before " + netKindName(other->kind)) +
         "); to use another: --net-cidr " + formatCidr(other->net);
}

}  // namespace

const char* netKindName(NetKind kind) {
  switch (kind) {
    case NetKind::ib: return "ib";
    case NetKind::roce: return "roce";
    case NetKind::tcp: return "tcp";
  }
  return "tcp";
}

std::string joinHcaPorts(const NodeNetChoice& node) {
  std::string out;
  for (const auto& p : node.hca_ports) out += (out.empty() ? "" : ",") + p.name;
  return out;
}

Result<NetworkChoice> chooseNetwork(const std::vector<NodeFabricInput>& nodes, const NetOptions& options) {
  if (nodes.empty()) return fail(Errc::usage, "no nodes to choose a network for");
  std::optional<Ipv4Net> cidr;
  if (!options.net_cidr.empty()) {
    cidr = parseCidr(options.net_cidr);
    if (!cidr)
      return fail(Errc::usage, "--net-cidr " + options.net_cidr + " is not an IPv4 subnet",
                  "write it as ADDRESS/PREFIX, for example --net-cidr 10.1.0.0/16");
  }
  const char* what = options.mode == NetMode::fabric ? "fabric interface" : "interface";

  std::vector<NodeCandidates> perNode;
  std::vector<std::string> problems;
  for (const auto& node : nodes) {
    NodeCandidates found = collectCandidates(node.fabric, options.mode);
    NodeCandidates kept = found;
    const auto& names = node.net_if.empty() ? options.net_if : node.net_if;
    if (!names.empty()) {
      std::erase_if(kept.list, [&](const Candidate& c) {
        return std::find(names.begin(), names.end(), c.iface->name) == names.end();
      });
      if (kept.list.empty()) {
        std::string why;
        for (const auto& name : names)
          why += (why.empty() ? "" : "; ") + explainNamed(node.fabric, found, name, options.mode);
        problems.push_back(node.node + ": " + why);
      }
    }
    if (cidr && !kept.list.empty()) {
      std::vector<std::string> outside;
      for (const auto& c : kept.list)
        if (!contains(*cidr, c.address)) outside.push_back(describe(c));
      std::erase_if(kept.list, [&](const Candidate& c) { return !contains(*cidr, c.address); });
      if (kept.list.empty()) {
        // An interface that has its address there but cannot be used (down, no carrier) is the
        // likelier cause than the subnet: say it.
        std::string unusable;
        for (const auto& iface : node.fabric.interfaces)
          for (const auto& a : iface.ipv4)
            if (const auto addr = parseIpv4(a.address); addr && contains(*cidr, *addr) && unusable.empty())
              if (const std::string problem = livenessProblem(iface); !problem.empty())
                unusable = problem + " (it has " + a.address + ")";
        problems.push_back(node.node + ": " +
                           (!unusable.empty() ? unusable
                                              : "no " + std::string(what) + " has an address in " + formatCidr(*cidr) +
                                                    " (found " + joinStrings(outside, ", ") + ")"));
      }
    }
    if (kept.list.empty() && names.empty() && !(cidr && !found.list.empty())) {
      std::string why = found.reasons.empty() ? std::string("no IPoIB or RoCE interface") : joinStrings(found.reasons, "; ");
      problems.push_back(node.node + ": " + why);
    }
    perNode.push_back(std::move(kept));
  }
  if (!problems.empty()) {
    std::string message = "cannot choose the job's network; " + std::to_string(problems.size()) + " of " +
                          std::to_string(nodes.size()) + " node" + (nodes.size() == 1 ? "" : "s") +
                          " lack" + (problems.size() == 1 ? "s" : "") + " a usable " + what + ":";
    for (const auto& p : problems) message += "\n  " + p;
    return fail(Errc::fabric, message,
                std::string("bring the interface up with an IPv4 address (ip link set IF up), or pick interfaces "
                            "with --net-if / --net-cidr (per node: net_if= in the hostfile)") +
                    (options.mode == NetMode::fabric ? "; --net tcp allows plain Ethernet" : ""));
  }

  // Subnets present on every node.
  std::map<Ipv4Net, std::vector<const Candidate*>> best;  // subnet -> each node's preferred candidate
  std::vector<std::map<Ipv4Net, std::vector<const Candidate*>>> bySubnet;
  std::vector<std::string> notes;
  const std::vector<std::uint32_t> control = controlAddresses(options.control_ips);
  std::vector<Option> common;
  std::vector<std::string> duplicates;  // "172.17.0.0/16: node1 and node2 both have 172.17.0.1 (docker0)"
  std::set<Ipv4Net> rejected;
  for (int pass = 0; pass < 2; ++pass) {
    best.clear();
    bySubnet.assign(nodes.size(), {});
    notes.clear();
    common.clear();
    duplicates.clear();
    rejected.clear();
    for (std::size_t n = 0; n < nodes.size(); ++n)
      for (const auto& c : perNode[n].list) bySubnet[n][c.group].push_back(&c);
    for (const auto& [net, node0] : bySubnet[0]) {
      bool everywhere = true;
      for (std::size_t n = 1; n < nodes.size() && everywhere; ++n) everywhere = bySubnet[n].count(net) > 0;
      if (!everywhere) continue;
      std::vector<const Candidate*> chosen;
      std::set<NetKind> kinds;
      for (std::size_t n = 0; n < nodes.size(); ++n) {
        auto list = bySubnet[n].at(net);
        std::sort(list.begin(), list.end(), [](const Candidate* a, const Candidate* b) {  // the faster port first
          return std::make_tuple(-a->rate, a->order, a->address) < std::make_tuple(-b->rate, b->order, b->address);
        });
        chosen.push_back(list.front());
        kinds.insert(list.front()->kind);
      }
      if (auto shared = sharedAddress(nodes, chosen); shared && !options.same_host) {
        duplicates.push_back(formatCidr(net) + ": " + *shared);
        rejected.insert(net);
        continue;
      }
      NetKind kind = kinds.size() == 1 ? *kinds.begin() : NetKind::tcp;
      if (kinds.size() > 1 && options.mode == NetMode::fabric) {
        notes.push_back(formatCidr(net) + " mixes IPoIB and RoCE interfaces across nodes; not used");
        rejected.insert(net);
        continue;
      }
      best[net] = chosen;
      common.push_back(makeOption(net, kind, chosen, control));
    }
    // The user's network joins the nodes when their own subnets cannot: host addresses (/32 on
    // cloud VMs) and routed fabrics (a /31 per NIC) have no usable subnet in common. Where one
    // is, it is the job's (a --net-cidr wider than two rails still picks one rail).
    if (!common.empty() || !cidr || pass == 1) break;
    for (auto& node : perNode)
      for (auto& c : node.list) c.group = *cidr;
  }
  const bool forced = !options.net_cidr.empty() || !options.net_if.empty() ||
                      std::any_of(nodes.begin(), nodes.end(),
                                  [](const NodeFabricInput& n) { return !n.net_if.empty(); });
  if (common.empty() && forced && !duplicates.empty())
    return fail(Errc::usage,
                "cannot join the nodes over the network chosen with --net-if / --net-cidr: " +
                    joinStrings(duplicates, "; ") +
                    "; an address found on two nodes is local to each (a container bridge such as docker0), and "
                    "each node would talk to itself",
                "choose the subnet of the nodes' real interfaces with --net-cidr or --net-if (per node: net_if= in "
                "the hostfile), or give each node its own address on that subnet");
  for (const auto& d : duplicates)
    notes.push_back(d + ": not used, an address found on two nodes is local to each");
  if (common.empty()) {
    std::map<Ipv4Net, std::vector<std::string>> holders;
    std::string message = "no subnet is common to all " + std::to_string(nodes.size()) + " nodes:";
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      std::string line;
      for (const auto& [net, list] : bySubnet[n]) {
        holders[net].push_back(nodes[n].node);
        std::string ifs;
        for (const auto* c : list) ifs += (ifs.empty() ? "" : ",") + c->iface->name;
        line += (line.empty() ? "" : ", ") + formatCidr(net) + " (" + ifs + ")";
      }
      message += "\n  " + nodes[n].node + ": " + line;
    }
    // Name the nodes missing the most widely present subnet (rank 0's first on ties).
    // (Subnets left out above are on every node already: not named as missing.)
    std::optional<Ipv4Net> widest;
    for (const auto& [net, list] : bySubnet[0])
      if (!rejected.count(net) && (!widest || holders[net].size() > holders[*widest].size())) widest = net;
    for (const auto& [net, names] : holders)
      if (!rejected.count(net) && (!widest || names.size() > holders[*widest].size())) widest = net;
    if (widest) {
      std::vector<std::string> lacking;
      for (const auto& node : nodes)
        if (std::find(holders[*widest].begin(), holders[*widest].end(), node.node) == holders[*widest].end())
          lacking.push_back(node.node);
      message += "\n" + formatCidr(*widest) + " is missing on " + joinStrings(lacking, ", ");
    }
    for (const auto& note : notes) message += "\n" + note;
    if (auto hint = hostAddressHint(perNode); !hint.empty() && !cidr)
      return fail(Errc::fabric, message + "\n" + hint,
                  "name the network that holds the nodes' addresses with --net-cidr (the subnet of your VPC or "
                  "fabric)");
    return fail(Errc::fabric, message,
                "put every node's fabric interface on one subnet, or choose with --net-cidr / --net-if "
                "(per node: net_if= in the hostfile)");
  }
  std::sort(common.begin(), common.end(), ranksBefore);

  const Option& pick = common.front();
  NetworkChoice choice;
  choice.kind = pick.kind;
  choice.cidr = formatCidr(pick.net);
  SubnetFacts facts{{}, control};
  DataPortRules rules{pick.net, {}, 0};
  for (const auto& o : common) {
    facts.common.push_back(o.net);
    if (o.net != pick.net && !carriesControl(o.net, control)) rules.rails.push_back(o.net);
  }
  for (std::size_t i = 1; i < common.size(); ++i)
    notes.push_back("also common to all nodes: " + formatCidr(common[i].net) + " (" + netKindName(common[i].kind) +
                    (common[i].control ? ", the daemons' control network" : "") + "); choose it with --net-cidr " +
                    formatCidr(common[i].net));
  if (auto note = controlNote(common); note && !forced) notes.push_back(*note);
  std::vector<std::string> slower;  // "node1: the job's RoCE port mlx5_0:1 (25 Gb/s) is slower than ..."
  // A note that holds on many nodes is said once, naming the first few (a 1,000-node banner):
  // its text -> the nodes.
  std::map<std::string, std::vector<std::string>> byNodes;
  choice.rdma = true;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const Candidate& c = *best[pick.net][n];
    NodeNetChoice out;
    out.node = nodes[n].node;
    out.ifname = c.iface->name;
    out.ipv4 = formatIpv4(c.address);
    out.prefix = c.net.prefix;
    out.cidr = choice.cidr;
    out.kind = pick.kind;
    out.port = c.port;
    rules.chosen_rate = c.rate;
    if (const auto left = fillDataPorts(out, nodes[n].fabric, rules); !left.empty())
      byNodes["left out of the job's data ports (NCCL_IB_HCA, UCX_NET_DEVICES): " + joinStrings(left, "; ") +
              "; to use them all the same, set NCCL_IB_HCA and UCX_NET_DEVICES with -x"]
          .push_back(nodes[n].node);
    if (auto why = slowerPortReason(out, nodes[n].fabric, c.rate, facts); !why.empty() && !forced)
      slower.push_back(nodes[n].node + ": the job's RoCE port " + why);
    for (const auto& device : nodes[n].fabric.devices) out.efa = out.efa || device.vendor_id == kPciVendorAmazon;
    choice.rdma = choice.rdma && !out.hca_ports.empty();
    std::set<std::string> others;
    for (const auto* other : bySubnet[n].at(pick.net))
      if (other->iface->name != c.iface->name) others.insert(other->iface->name);
    for (const auto& other : others)
      byNodes[other + " is also on " + choice.cidr + "; using " + c.iface->name].push_back(nodes[n].node);
    choice.nodes.push_back(std::move(out));
  }
  addSlowPortNotes(notes, slower, choice.cidr);
  for (const auto& [text, who] : byNodes) notes.push_back(someNodes(who) + ": " + text);
  choice.master_addr = choice.nodes.front().ipv4;
  choice.notes = std::move(notes);
  return choice;
}

}  // namespace tlaunch
