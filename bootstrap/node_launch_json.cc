#include "bootstrap/node_launch_json.h"

namespace tlaunch {

Json reachToJson(const std::vector<ReachTarget>& reach) {
  Json out = Json::array();
  for (const auto& t : reach) out.push_back({{"node", t.node}, {"addr", t.addr}, {"port", t.port}});
  return out;
}

Result<std::vector<ReachTarget>> reachFromJson(const Json& j) {
  if (!j.is_array()) return fail(Errc::protocol, "reachability targets are not a list");
  std::vector<ReachTarget> out;
  for (const auto& t : j) {
    if (!t.is_object() || !t.contains("port") || !t["port"].is_number_integer())
      return fail(Errc::protocol, "a malformed reachability target");
    out.push_back({getString(t, "node"), getString(t, "addr"), t["port"].get<int>()});
  }
  return out;
}

Json nodeLaunchToJson(const NodeLaunch& n) {
  Json ranks = Json::array();
  for (const auto& r : n.ranks)
    ranks.push_back({{"rank", r.rank}, {"local_rank", r.local_rank}, {"env", r.env}, {"cpus", r.cpus},
                     {"mem_nodes", r.mem_nodes}});
  return {{"job_id", n.job_id},
          {"node_name", n.node_name},
          {"argv", n.argv},
          {"cwd", n.cwd},
          {"base_env", n.base_env},
          {"ranks", ranks},
          {"apply_binding", n.apply_binding},
          {"stdin_rank", n.stdin_rank},
          {"kill_timeout_ms", n.kill_timeout_ms},
          {"reach", reachToJson(n.reach)},
          {"pmix",
           {{"enabled", n.pmix.enabled},
            {"nspace", n.pmix.nspace},
            {"node_names", n.pmix.node_names},
            {"ranks_by_node", n.pmix.ranks_by_node},
            {"this_node", n.pmix.this_node},
            {"tcp_if_include", n.pmix.tcp_if_include}}}};
}

Result<NodeLaunch> nodeLaunchFromJson(const Json& j) {
  // A peer's message: any type mismatch is a protocol error, not an exception escaping.
  try {
    NodeLaunch n;
    n.job_id = j.at("job_id").get<std::string>();
    n.node_name = j.at("node_name").get<std::string>();
    n.argv = j.at("argv").get<std::vector<std::string>>();
    n.cwd = j.at("cwd").get<std::string>();
    n.base_env = j.at("base_env").get<std::vector<std::string>>();
    for (const auto& r : j.at("ranks")) {
      RankSpec s;
      s.rank = r.at("rank").get<int>();
      s.local_rank = r.at("local_rank").get<int>();
      s.env = r.at("env").get<std::vector<std::string>>();
      s.cpus = r.at("cpus").get<std::vector<int>>();
      s.mem_nodes = r.at("mem_nodes").get<std::vector<int>>();
      n.ranks.push_back(std::move(s));
    }
    n.apply_binding = j.at("apply_binding").get<bool>();
    n.stdin_rank = j.at("stdin_rank").get<int>();
    n.kill_timeout_ms = j.at("kill_timeout_ms").get<int>();
    auto reach = reachFromJson(j.at("reach"));
    if (!reach) return tl::unexpected(reach.error());
    n.reach = std::move(*reach);
    const auto& p = j.at("pmix");
    n.pmix.enabled = p.at("enabled").get<bool>();
    n.pmix.nspace = p.at("nspace").get<std::string>();
    n.pmix.node_names = p.at("node_names").get<std::vector<std::string>>();
    n.pmix.ranks_by_node = p.at("ranks_by_node").get<std::vector<std::vector<int>>>();
    n.pmix.this_node = p.at("this_node").get<int>();
    n.pmix.tcp_if_include = p.at("tcp_if_include").get<std::string>();
    if (n.argv.empty()) return fail(Errc::protocol, "launch message without a program");
    return n;
  } catch (const Json::exception& e) {
    return fail(Errc::protocol, std::string("malformed launch message: ") + e.what());
  }
}

}  // namespace tlaunch
