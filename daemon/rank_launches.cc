#include "daemon/rank_launches.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "daemon/job_marked_processes.h"

namespace tlaunch {
namespace {

Result<PreparedBinding> bindingLike(const RankSpec& r) {
  RankBinding b;
  b.local_rank = r.local_rank;
  b.cpus = r.cpus;
  b.mem_nodes = r.mem_nodes;
  return prepareBinding(b);
}

}  // namespace

Result<std::vector<RankLaunch>> buildRankLaunches(const NodeLaunch& launch) {
  std::vector<RankLaunch> out;
  for (const auto& r : launch.ranks) {
    RankLaunch l;
    l.rank = r.rank;
    l.argv = launch.argv;
    l.env = mergeEnv(launch.base_env, r.env);
    l.cwd = launch.cwd;
    auto exe = resolveProgram(launch.argv[0], programSearchPath(l.env), launch.cwd, launch.node_name);
    if (!exe) return tl::unexpected(exe.error());
    l.exe_path = *exe;
    l.stdin_pipe = launch.stdin_rank == r.rank;
    l.umask = launch.umask;
    l.nofile = launch.nofile;
    l.stdout_terminal = launch.stdout_terminal;
    l.terminal_columns = launch.terminal_columns;
    l.terminal_rows = launch.terminal_rows;
    if (launch.apply_binding && (!r.cpus.empty() || !r.mem_nodes.empty())) {
      auto prepared = bindingLike(r);
      if (!prepared) return tl::unexpected(prepared.error());
      l.binding = *prepared;
    }
    out.push_back(std::move(l));
  }
  return out;
}

std::vector<std::string> withoutRankIdentity(const std::vector<std::string>& job_env) {
  std::set<std::string> own(rankIdentityNames().begin(), rankIdentityNames().end());
  for (const char* name : {kRankGpuBusIdVar, kRankGpuUuidVar, kRankHcaVar}) own.insert(name);
  std::vector<std::string> out;
  for (const auto& kv : job_env)
    if (!own.count(kv.substr(0, kv.find('=')))) out.push_back(kv);
  return out;
}

namespace {
// Open MPI's OMPI_COMM_WORLD_* of a spawned process, as mpirun gives them: its place in the
// spawned job's own MPI_COMM_WORLD (scripts and DeepSpeed's MPI discovery read them).
std::vector<std::string> spawnedWorldOf(const SpawnedJob& job, int rank, size_t local, size_t local_size) {
  return {"OMPI_COMM_WORLD_RANK=" + std::to_string(rank), "OMPI_COMM_WORLD_SIZE=" + std::to_string(job.size()),
          "OMPI_COMM_WORLD_LOCAL_RANK=" + std::to_string(local),
          "OMPI_COMM_WORLD_LOCAL_SIZE=" + std::to_string(local_size),
          "OMPI_COMM_WORLD_NODE_RANK=" + std::to_string(local)};
}
}  // namespace

Result<std::vector<RankLaunch>> buildSpawnedLaunches(const SpawnedJob& job, const NodeLaunch& launch,
                                                     const std::vector<std::string>& job_env) {
  std::vector<RankLaunch> out;
  size_t here = job.nodes.size();
  for (size_t i = 0; i < job.nodes.size(); ++i)
    if (job.nodes[i] == launch.pmix.this_node) here = i;
  if (here == job.nodes.size()) return out;
  const std::vector<std::string> base = mergeEnv(launch.base_env, job_env);
  // Spawned processes come on top of the node's ranks: pinned to a rank's core each would share
  // it with a rank that busy-polls (Open MPI waits so), and starve. They get the job's share of
  // the node instead, every CPU and memory node of its ranks (Open MPI does not bind
  // oversubscribed processes at all).
  RankSpec share;
  std::set<int> cpus, mems;
  for (const auto& r : launch.ranks) {
    cpus.insert(r.cpus.begin(), r.cpus.end());
    mems.insert(r.mem_nodes.begin(), r.mem_nodes.end());
  }
  share.cpus.assign(cpus.begin(), cpus.end());
  share.mem_nodes.assign(mems.begin(), mems.end());
  // More processes than CPUs here once these start: they yield while they wait, as the ranks of
  // an oversubscribed node do (launcher/plan/rank_env_builder.cc); spinning, 6 children of one
  // rank on 2 CPUs took 19 s to do what took 0.7 s yielding. A value the user gave wins.
  size_t cpus_here = share.cpus.size();
  if (cpus_here == 0) {  // --bind none: the CPUs this daemon (and so each process) may run on
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    cpus_here = ::sched_getaffinity(0, sizeof allowed, &allowed) == 0 ? static_cast<size_t>(CPU_COUNT(&allowed)) : 1;
  }
  const bool crowded = launch.pmix.oversubscribed || launch.ranks.size() + job.ranks_by_node[here].size() > cpus_here;
  const std::vector<std::string> defaults =
      crowded ? std::vector<std::string>{"OMPI_MCA_mpi_yield_when_idle=1"} : std::vector<std::string>{};
  size_t local = 0;
  for (int rank : job.ranks_by_node[here]) {
    const PmixSpawnApp& app = job.apps[static_cast<size_t>(job.app_of_rank[static_cast<size_t>(rank)])];
    RankLaunch l;
    l.rank = job.base + rank;
    l.argv = app.argv;
    // With the job's marks (no rank identity, but the job's id and the node's place): what the
    // daemon's watcher finds a process of the job by when no cgroup holds it (job_marked_processes.h).
    l.env = mergeEnv(mergeEnv(mergeEnv(mergeEnv(defaults, base), app.env), jobMarksOf(launch)),
                     spawnedWorldOf(job, rank, local, job.ranks_by_node[here].size()));
    l.cwd = app.cwd.empty() ? launch.cwd : app.cwd;
    if (auto cwd = checkWorkingDirectory(l.cwd, launch.node_name); !cwd) return tl::unexpected(cwd.error());
    auto exe = resolveProgram(app.argv.front(), programSearchPath(l.env), l.cwd, launch.node_name);
    if (!exe) return tl::unexpected(exe.error());
    l.exe_path = *exe;
    l.umask = launch.umask;
    l.nofile = launch.nofile;
    l.stdout_terminal = launch.stdout_terminal;
    l.terminal_columns = launch.terminal_columns;
    l.terminal_rows = launch.terminal_rows;
    if (launch.apply_binding && (!share.cpus.empty() || !share.mem_nodes.empty())) {
      share.local_rank = static_cast<int>(local);
      auto prepared = bindingLike(share);
      if (!prepared) return tl::unexpected(prepared.error());
      l.binding = *prepared;
    }
    ++local;
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace tlaunch
