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
  Json pmix = {{"enabled", n.pmix.enabled}, {"this_node", n.pmix.this_node}, {"tcp_if_include", n.pmix.tcp_if_include}};
  // The job's geometry travels once per job ("geometry"), not in each of N nodes' launches.
  if (!n.pmix.node_names.empty()) pmix["geometry"] = pmixGeometryToJson(n.pmix);
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
          {"pmix", std::move(pmix)}};
}

Json pmixGeometryToJson(const PmixSpec& p) {
  // Each node's ranks as [first, count] runs: a node's ranks are consecutive in every plan, so
  // a node costs one pair, not a list of its ranks.
  Json runs = Json::array();
  for (const auto& ranks : p.ranks_by_node) {
    Json node = Json::array();
    for (size_t i = 0; i < ranks.size();) {
      size_t j = i + 1;
      while (j < ranks.size() && ranks[j] == ranks[j - 1] + 1) ++j;
      node.push_back(ranks[i]);
      node.push_back(static_cast<int>(j - i));
      i = j;
    }
    runs.push_back(std::move(node));
  }
  return {{"nspace", p.nspace}, {"node_names", p.node_names}, {"rank_runs", std::move(runs)}};
}

Result<void> applyPmixGeometry(const Json& j, PmixSpec& p) {
  try {
    p.nspace = j.at("nspace").get<std::string>();
    p.node_names = j.at("node_names").get<std::vector<std::string>>();
    const auto& runs = j.at("rank_runs");
    if (!runs.is_array() || runs.size() != p.node_names.size())
      return fail(Errc::protocol, "the job's geometry names " + std::to_string(p.node_names.size()) +
                                      " nodes but lists the ranks of " + std::to_string(runs.size()));
    p.ranks_by_node.clear();
    size_t total = 0;
    for (const auto& node : runs) {
      std::vector<int> ranks;
      if (!node.is_array() || node.size() % 2 != 0) return fail(Errc::protocol, "a malformed rank run in the job's geometry");
      for (size_t i = 0; i < node.size(); i += 2) {
        const long long first = node[i].get<long long>(), count = node[i + 1].get<long long>();
        total += static_cast<size_t>(std::max(0LL, count));
        // A world is at most a million ranks: a peer cannot make us allocate more.
        if (first < 0 || count < 0 || first + count > kMaxPmixRanks || total > kMaxPmixRanks)
          return fail(Errc::protocol, "the job's geometry lists more ranks than a job can have");
        for (long long r = first; r < first + count; ++r) ranks.push_back(static_cast<int>(r));
      }
      p.ranks_by_node.push_back(std::move(ranks));
    }
    if (p.this_node < 0 || p.this_node >= static_cast<int>(p.node_names.size()))
      return fail(Errc::protocol, "this node's index is outside the job's geometry");
    return {};
  } catch (const Json::exception& e) {
    return fail(Errc::protocol, std::string("malformed job geometry: ") + e.what());
  }
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
    n.pmix.this_node = p.at("this_node").get<int>();
    n.pmix.tcp_if_include = p.at("tcp_if_include").get<std::string>();
    if (auto g = p.find("geometry"); g != p.end())
      if (auto r = applyPmixGeometry(*g, n.pmix); !r) return tl::unexpected(r.error());
    if (n.argv.empty()) return fail(Errc::protocol, "launch message without a program");
    return n;
  } catch (const Json::exception& e) {
    return fail(Errc::protocol, std::string("malformed launch message: ") + e.what());
  }
}

}  // namespace tlaunch
