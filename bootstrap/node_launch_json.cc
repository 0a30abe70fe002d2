#include "bootstrap/node_launch_json.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

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

namespace {

using EnvSet = std::unordered_set<std::string_view>;

EnvSet setOf(const std::vector<std::string>& env) { return EnvSet(env.begin(), env.end()); }

// The entries of `env` that every other list in `lists` has too, in `env`'s order.
std::vector<std::string> commonEntries(const std::vector<std::string>& env,
                                       const std::vector<const std::vector<std::string>*>& lists) {
  // Ranks' lists come from one builder, so an entry is nearly always at the same index in each:
  // compared in place first; only the others are looked up in a small index of the candidates
  // (32,000 ranks of 30 variables: a million string compares, few hashes, no set per rank).
  std::unordered_map<std::string_view, size_t> candidate;
  for (size_t i = 0; i < env.size(); ++i) candidate.emplace(env[i], i);
  std::vector<bool> keep(env.size(), true), seen(env.size());
  for (const auto* list : lists) {
    if (list == &env) continue;
    std::fill(seen.begin(), seen.end(), false);
    for (size_t k = 0; k < list->size(); ++k) {
      const std::string& kv = (*list)[k];
      if (k < env.size() && kv == env[k]) seen[k] = true;
      else if (auto it = candidate.find(kv); it != candidate.end()) seen[it->second] = true;
    }
    for (size_t i = 0; i < env.size(); ++i) keep[i] = keep[i] && seen[i];
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < env.size(); ++i)
    if (keep[i]) out.push_back(env[i]);
  return out;
}

std::vector<std::string> without(const std::vector<std::string>& env, const EnvSet& drop) {
  std::vector<std::string> out;
  for (const auto& kv : env)
    if (!drop.count(kv)) out.push_back(kv);
  return out;
}

}  // namespace

SharedLaunch sharedLaunchOf(const std::vector<NodeLaunch>& nodes) {
  SharedLaunch s;
  if (nodes.empty()) return s;
  s.has_base_env = std::all_of(nodes.begin(), nodes.end(), [&](const NodeLaunch& n) { return n.base_env == nodes[0].base_env; });
  if (s.has_base_env) s.base_env = nodes[0].base_env;
  std::vector<const std::vector<std::string>*> envs;
  for (const auto& n : nodes)
    for (const auto& r : n.ranks) envs.push_back(&r.env);
  if (!envs.empty()) s.rank_env = commonEntries(*envs.front(), envs);
  return s;
}

Json sharedLaunchToJson(const SharedLaunch& s) {
  Json j = {{"rank_env", s.rank_env}};
  if (s.has_base_env) j["base_env"] = s.base_env;
  return j;
}

Result<SharedLaunch> sharedLaunchFromJson(const Json& j) {
  try {
    SharedLaunch s;
    s.rank_env = j.at("rank_env").get<std::vector<std::string>>();
    if (auto b = j.find("base_env"); b != j.end()) {
      s.base_env = b->get<std::vector<std::string>>();
      s.has_base_env = true;
    }
    return s;
  } catch (const Json::exception& e) {
    return fail(Errc::protocol, std::string("malformed shared launch: ") + e.what());
  }
}

Json nodeLaunchToJson(const NodeLaunch& n, const SharedLaunch* shared) {
  // What the job shares is left out; what this node's ranks share is said once for the node.
  EnvSet drop = shared ? setOf(shared->rank_env) : EnvSet{};
  std::vector<const std::vector<std::string>*> envs;
  for (const auto& r : n.ranks) envs.push_back(&r.env);
  std::vector<std::string> node_env;
  if (!envs.empty())
    for (auto& kv : commonEntries(*envs.front(), envs))
      if (!drop.count(kv)) node_env.push_back(std::move(kv));
  for (const auto& kv : node_env) drop.insert(kv);
  Json ranks = Json::array();
  for (const auto& r : n.ranks)
    ranks.push_back({{"rank", r.rank}, {"local_rank", r.local_rank}, {"env", without(r.env, drop)}, {"cpus", r.cpus},
                     {"mem_nodes", r.mem_nodes}});
  Json pmix = {{"enabled", n.pmix.enabled}, {"this_node", n.pmix.this_node}, {"tcp_if_include", n.pmix.tcp_if_include}};
  if (n.pmix.oversubscribed) pmix["oversubscribed"] = true;
  // The job's geometry travels once per job ("geometry"), not in each of N nodes' launches.
  if (!n.pmix.node_names.empty()) pmix["geometry"] = pmixGeometryToJson(n.pmix);
  Json j = {{"job_id", n.job_id},
            {"node_name", n.node_name},
            {"argv", n.argv},
            {"cwd", n.cwd},
            {"node_env", std::move(node_env)},
            {"ranks", ranks},
            {"apply_binding", n.apply_binding},
            {"stdin_rank", n.stdin_rank},
            {"kill_timeout_ms", n.kill_timeout_ms},
            {"umask", n.umask},
            {"nofile", n.nofile},
            {"reach", reachToJson(n.reach)},
            {"pmix", std::move(pmix)}};
  if (n.stdout_terminal) {
    j["stdout_terminal"] = true;
    j["terminal_size"] = {n.terminal_columns, n.terminal_rows};
  }
  if (shared) j["rank_env_shared"] = true;
  if (shared && shared->has_base_env && n.base_env == shared->base_env) j["base_env_shared"] = true;
  else j["base_env"] = n.base_env;
  return j;
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

Result<NodeLaunch> nodeLaunchFromJson(const Json& j, const SharedLaunch* shared) {
  // A peer's message: any type mismatch is a protocol error, not an exception escaping.
  try {
    NodeLaunch n;
    n.job_id = j.at("job_id").get<std::string>();
    n.node_name = j.at("node_name").get<std::string>();
    n.argv = j.at("argv").get<std::vector<std::string>>();
    n.cwd = j.at("cwd").get<std::string>();
    const bool base_shared = j.value("base_env_shared", false), rank_shared = j.value("rank_env_shared", false);
    if ((base_shared || rank_shared) && (!shared || (base_shared && !shared->has_base_env)))
      return fail(Errc::protocol, "a launch that refers to the job's shared part, which did not arrive before it");
    n.base_env = base_shared ? shared->base_env : j.at("base_env").get<std::vector<std::string>>();
    std::vector<std::string> common = rank_shared ? shared->rank_env : std::vector<std::string>{};
    for (auto& kv : j.value("node_env", std::vector<std::string>{})) common.push_back(std::move(kv));
    for (const auto& r : j.at("ranks")) {
      RankSpec s;
      s.rank = r.at("rank").get<int>();
      s.local_rank = r.at("local_rank").get<int>();
      s.env = common;
      for (auto& kv : r.at("env").get<std::vector<std::string>>()) s.env.push_back(std::move(kv));
      s.cpus = r.at("cpus").get<std::vector<int>>();
      s.mem_nodes = r.at("mem_nodes").get<std::vector<int>>();
      n.ranks.push_back(std::move(s));
    }
    n.apply_binding = j.at("apply_binding").get<bool>();
    n.stdin_rank = j.at("stdin_rank").get<int>();
    n.kill_timeout_ms = j.at("kill_timeout_ms").get<int>();
    n.umask = std::clamp(j.value("umask", -1), -1, 0777);
    n.nofile = std::max(j.value("nofile", -1LL), -1LL);
    n.stdout_terminal = j.value("stdout_terminal", false);
    if (const auto size = j.find("terminal_size"); size != j.end() && size->is_array() && size->size() == 2) {
      n.terminal_columns = std::clamp(size->at(0).get<int>(), 0, 65535);
      n.terminal_rows = std::clamp(size->at(1).get<int>(), 0, 65535);
    }
    auto reach = reachFromJson(j.at("reach"));
    if (!reach) return tl::unexpected(reach.error());
    n.reach = std::move(*reach);
    const auto& p = j.at("pmix");
    n.pmix.enabled = p.at("enabled").get<bool>();
    n.pmix.this_node = p.at("this_node").get<int>();
    n.pmix.tcp_if_include = p.at("tcp_if_include").get<std::string>();
    n.pmix.oversubscribed = p.value("oversubscribed", false);
    if (auto g = p.find("geometry"); g != p.end())
      if (auto r = applyPmixGeometry(*g, n.pmix); !r) return tl::unexpected(r.error());
    if (n.argv.empty()) return fail(Errc::protocol, "launch message without a program");
    return n;
  } catch (const Json::exception& e) {
    return fail(Errc::protocol, std::string("malformed launch message: ") + e.what());
  }
}

}  // namespace tlaunch
