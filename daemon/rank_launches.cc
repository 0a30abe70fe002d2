#include "daemon/rank_launches.h"

namespace tlaunch {

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
      l.binding = *prepared;
    }
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace tlaunch
