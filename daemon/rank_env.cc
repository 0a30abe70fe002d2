#include "daemon/rank_env.h"

#include <unordered_map>

namespace tlaunch {

namespace {
std::string keyOf(const std::string& kv) { return kv.substr(0, kv.find('=')); }
}  // namespace

std::string envValue(const std::vector<std::string>& env, const std::string& key) {
  std::string value;
  for (const auto& kv : env) {
    auto eq = kv.find('=');
    if (eq != std::string::npos && kv.compare(0, eq, key) == 0 && eq == key.size()) value = kv.substr(eq + 1);
  }
  return value;
}

std::vector<std::string> mergeEnv(const std::vector<std::string>& base, const std::vector<std::string>& overrides) {
  std::unordered_map<std::string, size_t> index;
  std::vector<std::string> out;
  out.reserve(base.size() + overrides.size());
  for (const auto* list : {&base, &overrides}) {
    for (const auto& kv : *list) {
      auto k = keyOf(kv);
      auto it = index.find(k);
      if (it != index.end()) {
        out[it->second] = kv;
      } else {
        index.emplace(k, out.size());
        out.push_back(kv);
      }
    }
  }
  return out;
}

Result<std::vector<RankLaunch>> buildRankLaunches(const NodeLaunch& launch) {
  std::vector<RankLaunch> out;
  for (const auto& r : launch.ranks) {
    RankLaunch l;
    l.rank = r.rank;
    l.argv = launch.argv;
    l.env = mergeEnv(launch.base_env, r.env);
    l.cwd = launch.cwd;
    auto exe = resolveProgram(launch.argv[0], envValue(l.env, "PATH"), launch.cwd, launch.node_name);
    if (!exe) return tl::unexpected(exe.error());
    l.exe_path = *exe;
    l.stdin_pipe = launch.stdin_rank == r.rank;
    if (launch.apply_binding && (!r.cpus.empty() || !r.mem_nodes.empty())) {
      RankBinding b;
      b.local_rank = r.local_rank;
      b.cpus = r.cpus;
      b.mem_nodes = r.mem_nodes;
      auto prepared = prepareBinding(b);
      if (!prepared) return tl::unexpected(prepared.error());
      l.binding = std::move(*prepared);
    }
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace tlaunch
