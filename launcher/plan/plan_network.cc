#include "launcher/plan/plan_network.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "binding/fabric/fabric_env.h"
#include "binding/fabric/ipv4_net.h"
#include "launcher/hostlist.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

// The subnet of the address a node's daemon reached the frontend from (its control
// connection), as that node's interfaces say; "" when none carries it.
std::string controlSubnet(const NodeFabric& fabric, const std::string& control_ip) {
  for (const auto& iface : fabric.interfaces)
    for (const auto& a : iface.ipv4)
      if (a.address == control_ip)
        if (auto ip = parseIpv4(a.address)) return formatCidr(networkOf(*ip, a.prefix));
  return "";
}

// The interface that holds the node's control address; "" when none does.
std::string controlInterface(const NodeFabric& fabric, const std::string& control_ip) {
  for (const auto& iface : fabric.interfaces)
    for (const auto& a : iface.ipv4)
      if (a.address == control_ip) return iface.name;
  return "";
}

// The smallest network holding every node's control address, when each is an address of that
// node's own interfaces (no NAT between them and us); "" otherwise. Nodes whose addresses are
// host addresses (/32 on cloud VMs) reached us over it: it is the network they share.
std::string controlAddressesNet(const std::vector<NodeFabricInput>& inputs, const std::vector<NodeReport>& nodes) {
  std::vector<std::uint32_t> addresses;
  for (size_t i = 0; i < nodes.size() && i < inputs.size(); ++i) {
    auto ip = parseIpv4(nodes[i].control_ip);
    if (!ip || controlSubnet(inputs[i].fabric, nodes[i].control_ip).empty()) return "";
    addresses.push_back(*ip);
  }
  auto net = coveringNet(addresses);
  // A covering network as wide as a /8 or wider says the nodes are not of one network: no guess
  // then (Open MPI's and PMIx's if_include would take overlay interfaces inside it too).
  return net && net->prefix > 8 && (net->network >> 24) != 127 ? formatCidr(*net) : "";
}

// "NCCL_SOCKET_IFNAME=^docker,lo (environment) conflicts with the job's network on 5 nodes:
// node1, node2, node3 and 2 more: also selects eth0 (...)": nodes with the same conflict
// together, at most kShown nodes named.
std::string conflictWarning(const EnvSetting& first, const std::vector<std::pair<std::string, std::string>>& byNode) {
  constexpr size_t kShown = 3;
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // conflict -> nodes, in node order
  for (const auto& entry : byNode) {  // (node, conflict)
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == entry.second; });
    if (it == groups.end()) it = groups.insert(groups.end(), {entry.second, {}});
    it->second.push_back(entry.first);
  }
  std::vector<std::string> parts;
  size_t named = 0, covered = 0;
  for (const auto& [conflict, names] : groups) {
    if (named == kShown) break;
    const size_t take = std::min(names.size(), kShown - named);
    std::vector<std::string> shown(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(take));
    parts.push_back(joinStrings(shown, ", ") +
                    (names.size() > take ? " and " + std::to_string(names.size() - take) + " more" : "") + ": " +
                    conflict);
    named += take;
    covered += names.size();
  }
  if (const size_t rest = byNode.size() - covered; rest > 0)
    parts.push_back("and " + std::to_string(rest) + " more node" + (rest == 1 ? "" : "s"));
  const std::string yours =
      first.user_value.empty() ? first.name + " (" + first.user_source + ")"
                               : first.name + "=" + first.user_value + " (" + first.user_source + ")";
  return yours + " conflicts with the job's network on " + std::to_string(byNode.size()) + " node" +
         (byNode.size() == 1 ? "" : "s") + ": " + joinStrings(parts, "; ") + " (--dry-run shows each node)";
}

// One warning per variable the user set that defeats the choice on some node. A MASTER_ADDR off
// the job's network is warned about already (makePlan).
void addConflictWarnings(JobPlan& plan) {
  std::vector<std::string> names;  // in the settings' order
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> byName;
  std::map<std::string, const EnvSetting*> firstOf;
  for (size_t i = 0; i < plan.network_env.size() && i < plan.nodes.size(); ++i)
    for (const auto& s : plan.network_env[i]) {
      if (s.conflict.empty()) continue;
      if (!byName.count(s.name)) {
        names.push_back(s.name);
        firstOf[s.name] = &s;
      }
      byName[s.name].emplace_back(plan.nodes[i].node_name, s.conflict);
    }
  for (const auto& name : names) {
    const std::string masterAddr = "MASTER_ADDR " + firstOf[name]->user_value + " ";
    auto saysIt = [&](const std::string& w) { return w.starts_with(masterAddr); };
    const bool said = name == "MASTER_ADDR" && std::any_of(plan.warnings.begin(), plan.warnings.end(), saysIt);
    if (!said) plan.warnings.push_back(conflictWarning(*firstOf[name], byName[name]));
  }
}

}  // namespace

RdmaPresence rdmaPresence(const std::vector<NodeReport>& nodes) {
  RdmaPresence p;
  for (const auto& n : nodes) {
    const auto& fabric = n.inventory.fabric;
    if (!fabric) continue;
    const bool efa_only = !fabric->devices.empty() &&
                          std::all_of(fabric->devices.begin(), fabric->devices.end(),
                                      [](const RdmaDevice& d) { return d.vendor_id == kPciVendorAmazon; });
    if (efa_only) {
      ++p.efa;
      p.efa_names.push_back(n.name);
    }
    if (fabric->devices.empty() || efa_only) {
      ++p.without;
      p.without_names.push_back(n.name);
    } else {
      ++p.with;
      p.with_names.push_back(n.name);
    }
  }
  return p;
}

bool plainEthernet(const JobSpec& spec, const RdmaPresence& rdma) {
  return spec.net_mode == "auto" && rdma.with == 0 && rdma.without > 0;
}

Result<std::optional<NetworkChoice>> chooseJobNetwork(const JobSpec& spec, const std::vector<NodeReport>& nodes,
                                                      const PlanContext& ctx) {
  // `--net-if lo` (or a hostfile's net_if=lo) on nodes that are all this host asks for what such
  // a job does anyway; another name is a choice to make.
  const auto names = [&](const std::vector<std::string>& list) {
    return !list.empty() && !(ctx.loopback_only && list == std::vector<std::string>{"lo"});
  };
  const bool asked = names(spec.net_if) || std::any_of(ctx.node_net_if.begin(), ctx.node_net_if.end(), names) ||
                     !spec.net_cidr.empty() || spec.sysfs_root != "/" || spec.net_mode != "auto";
  if (ctx.loopback_only && !asked) return std::optional<NetworkChoice>{};
  std::vector<NodeFabricInput> inputs;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeReport& n = nodes[i];
    if (!n.inventory.fabric) {
      const std::string& why = n.inventory.fabric_error;
      return fail(Errc::fabric, "node " + n.name + " could not list its network interfaces: " +
                                    (why.empty() ? "not reported" : why));
    }
    NodeFabricInput in{n.name, *n.inventory.fabric, {}};
    if (i < ctx.node_net_if.size()) in.net_if = ctx.node_net_if[i];
    inputs.push_back(std::move(in));
  }
  NetOptions opts;
  opts.mode = spec.net_mode == "tcp" ? NetMode::tcp : NetMode::fabric;
  opts.net_if = spec.net_if;
  opts.net_cidr = spec.net_cidr;
  opts.same_host = ctx.loopback_only;  // every node is this host: the same addresses everywhere
  for (const auto& n : nodes) opts.control_ips.push_back(n.control_ip);
  const RdmaPresence rdma = rdmaPresence(nodes);
  const bool plain = plainEthernet(spec, rdma);
  std::string control;
  if (plain) {
    // No fabric to fall back from: plain sockets, on the network the daemons reached us over.
    opts.mode = NetMode::tcp;
    if (opts.net_if.empty() && opts.net_cidr.empty()) {
      control = controlSubnet(inputs.front().fabric, nodes.front().control_ip);
      opts.net_cidr = control;
    }
  }
  auto choice = chooseNetwork(inputs, opts);
  if (!choice && !control.empty()) {  // not every node has an address there: a common subnet where they differ
    opts.net_cidr.clear();
    control.clear();
    choice = chooseNetwork(inputs, opts);
    if (!choice) {  // no subnet in common (host addresses): the one the daemons reached us over
      const std::string reached = controlAddressesNet(inputs, nodes);
      if (!reached.empty()) {
        opts.net_cidr = reached;
        // Each node on the interface its daemon reached us over, not another one inside that
        // network (a bridge, a second NIC) that comes first by name.
        std::vector<NodeFabricInput> pinned = inputs;
        for (size_t i = 0; i < pinned.size() && i < nodes.size(); ++i)
          if (pinned[i].net_if.empty())
            pinned[i].net_if = {controlInterface(pinned[i].fabric, nodes[i].control_ip)};
        if (auto joined = chooseNetwork(pinned, opts)) {
          choice = std::move(joined);
          control = reached;
        }
      }
    }
  }
  if (!choice) {
    Error e = choice.error();
    e.code = e.code == Errc::usage ? Errc::usage : Errc::fabric;
    if (opts.mode == NetMode::fabric && rdma.with > 0 && rdma.without > 0) {
      e.message += "\nRDMA devices on " + joinStrings(rdma.with_names) + " but none on " + joinStrings(rdma.without_names) +
                   ": the ranks of one job need the same fabric";
      e.hint = "leave the nodes without RDMA out (--exclude), fix their HCA driver, or --net tcp for plain sockets";
    }
    if (e.hint.empty())
      e.hint = "check the IPoIB/RoCE link on that node (ip link, ibstat), or choose with --net-if / --net-cidr; "
               "--net tcp allows a plain Ethernet job";
    return tl::unexpected(e);
  }
  if (plain && rdma.efa > 0)
    choice->notes.insert(choice->notes.begin(),
                         "EFA on " +
                             std::string(rdma.efa == rdma.without ? "every node" : compressHostlist(rdma.efa_names)) +
                             ", no IPoIB or RoCE: sockets and the rendezvous run over TCP on " + choice->cidr +
                             "; NCCL reaches EFA through its aws-ofi-nccl plugin (NCCL_NET left unset)");
  else if (plain)
    choice->notes.insert(choice->notes.begin(),
                         "no RDMA device on any node: the job runs over TCP on " + choice->cidr +
                             (control.empty() ? "" : " (the daemons' control network)"));
  return std::optional<NetworkChoice>{std::move(*choice)};
}

void applyNetworkEnv(const NetworkChoice& choice, const PlanContext& ctx, const std::vector<NodeReport>& nodes,
                     JobPlan& plan) {
  plan.network_env.assign(plan.nodes.size(), {});
  for (size_t i = 0; i < plan.nodes.size() && i < choice.nodes.size(); ++i) {
    // Kept for the node's first rank (UCX_NET_DEVICES differs per rank: its nearest HCA); the
    // ranks' variables themselves come from the rank environment builder.
    if (plan.nodes[i].ranks.empty()) continue;
    const int first = plan.nodes[i].ranks.front().rank;
    std::string hca;
    for (const auto& row : plan.manifest)
      if (row.rank == first && row.binding.hca) hca = *row.binding.hca;
    const NodeFabric* fabric = i < nodes.size() && nodes[i].inventory.fabric ? &*nodes[i].inventory.fabric : nullptr;
    plan.network_env[i] = fabricEnv(choice, i, ctx.user_env, hca, fabric);
  }
  addConflictWarnings(plan);
  plan.network = choice;
}

std::vector<std::vector<ReachTarget>> reachabilityTargets(const JobSpec& spec, const std::vector<NodeReport>& nodes,
                                                          const std::optional<NetworkChoice>& network) {
  const int count = static_cast<int>(nodes.size());
  std::vector<std::vector<ReachTarget>> out(nodes.size());
  const bool skipped = std::find(spec.preflight_skip.begin(), spec.preflight_skip.end(), "reachability") !=
                       spec.preflight_skip.end();
  if (spec.check_reachability == "off" || skipped || count < 2) return out;
  const int peers = spec.check_reachability == "all" ? count - 1 : 1;
  for (int i = 0; i < count; ++i)
    for (int k = 1; k <= peers; ++k) {
      const int j = (i + k) % count;
      const NodeReport& peer = nodes[static_cast<size_t>(j)];
      out[static_cast<size_t>(i)].push_back({peer.name, network ? network->nodes[static_cast<size_t>(j)].ipv4 : peer.control_ip,
                                             peer.inventory.probe_port});
    }
  return out;
}

}  // namespace tlaunch
