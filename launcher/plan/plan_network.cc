#include "launcher/plan/plan_network.h"

#include "binding/fabric/fabric_env.h"
#include "binding/fabric/fabric_json.h"
#include "bootstrap/rank_env.h"

namespace tlaunch {

Result<std::optional<NetworkChoice>> chooseJobNetwork(const JobSpec& spec, const std::vector<NodeReport>& nodes,
                                                      const PlanContext& ctx) {
  const bool asked = !spec.net_if.empty() || !spec.net_cidr.empty() || spec.sysfs_root != "/" || spec.net_mode == "tcp";
  if (ctx.loopback_only && !asked) return std::optional<NetworkChoice>{};
  std::vector<NodeFabricInput> inputs;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeReport& n = nodes[i];
    if (!n.inventory.contains("fabric")) {
      return fail(Errc::fabric, "node " + n.name + " could not list its network interfaces: " +
                                    getString(n.inventory, "fabric_error", "not reported"));
    }
    auto fabric = fabricFromJson(n.inventory["fabric"]);
    if (!fabric) return fail(Errc::protocol, "node " + n.name + " sent a malformed fabric report");
    NodeFabricInput in{n.name, std::move(*fabric), {}};
    if (i < ctx.node_net_if.size()) in.net_if = ctx.node_net_if[i];
    inputs.push_back(std::move(in));
  }
  NetOptions opts;
  opts.mode = spec.net_mode == "tcp" ? NetMode::tcp : NetMode::fabric;
  opts.net_if = spec.net_if;
  opts.net_cidr = spec.net_cidr;
  auto choice = chooseNetwork(inputs, opts);
  if (!choice) {
    Error e = choice.error();
    e.code = e.code == Errc::usage ? Errc::usage : Errc::fabric;
    if (e.hint.empty())
      e.hint = "check the IPoIB/RoCE link on that node (ip link, ibstat), or choose with --net-if / --net-cidr; "
               "--net tcp allows a plain Ethernet job";
    return tl::unexpected(e);
  }
  return std::optional<NetworkChoice>{std::move(*choice)};
}

void applyNetworkEnv(const NetworkChoice& choice, const PlanContext& ctx, JobPlan& plan) {
  Json per_node = Json::array();
  plan.network_text = "network: " + std::string(netKindName(choice.kind)) + " on " + choice.cidr +
                      (choice.rdma ? " (RDMA)" : "") + ", MASTER_ADDR " + choice.master_addr + "\n";
  for (size_t i = 0; i < plan.nodes.size() && i < choice.nodes.size(); ++i) {
    const NodeNetChoice& nc = choice.nodes[i];
    Json node_env = Json::array();
    std::string shown;
    for (auto& r : plan.nodes[i].ranks) {
      auto settings = fabricEnv(choice, i, ctx.user_env, envValue(r.env, "TLAUNCH_HCA"));
      for (auto& kv : envAssignments(settings)) r.env.push_back(std::move(kv));
      if (r.local_rank != 0) continue;
      for (const auto& s : settings) {
        node_env.push_back({{"name", s.name},
                            {"value", s.value},
                            {"source", s.source},
                            {"overridden_by_user", s.overridden_by_user},
                            {"user_value", s.user_value},
                            {"user_source", s.user_source},
                            {"effective", s.effective()}});
        shown += "    " + s.name + "=" + s.value;
        if (s.overridden_by_user)
          shown += "  (yours wins: " + (s.user_value.empty() ? "unset" : s.user_value) + " from " + s.user_source + ")";
        if (!s.conflict.empty()) shown += "  WARNING: " + s.conflict;
        shown += "\n";
      }
    }
    plan.network_text += "  " + nc.node + ": " + nc.ifname + " " + nc.ipv4 + "/" + std::to_string(nc.prefix) +
                         (nc.port.empty() ? "" : " on " + nc.port) +
                         (nc.hca_ports.empty() ? "" : ", data ports " + joinHcaPorts(nc)) + "\n" + shown;
    per_node.push_back({{"node", nc.node}, {"env", node_env}});
  }
  for (const auto& note : choice.notes) plan.network_text += "  note: " + note + "\n";
  Json j = networkChoiceToJson(choice);
  j["env"] = per_node;
  plan.details["network"] = j;
}

std::vector<std::vector<ReachTarget>> reachabilityTargets(const JobSpec& spec, const std::vector<NodeReport>& nodes,
                                                          const std::optional<NetworkChoice>& network) {
  const int count = static_cast<int>(nodes.size());
  std::vector<std::vector<ReachTarget>> out(nodes.size());
  if (spec.check_reachability == "off" || count < 2) return out;
  const int peers = spec.check_reachability == "all" ? count - 1 : 1;
  for (int i = 0; i < count; ++i)
    for (int k = 1; k <= peers; ++k) {
      const int j = (i + k) % count;
      const NodeReport& peer = nodes[static_cast<size_t>(j)];
      out[static_cast<size_t>(i)].push_back({peer.name, network ? network->nodes[static_cast<size_t>(j)].ipv4 : peer.control_ip,
                                             static_cast<int>(getInt(peer.inventory, "probe_port"))});
    }
  return out;
}

}  // namespace tlaunch
