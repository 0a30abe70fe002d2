#include "launcher/pmix_spawns.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>

#include "launcher/cli_values.h"

namespace tlaunch {

Result<SpawnedJob> PmixSpawns::place(const PmixSpawnRequest& request, const std::function<bool(int)>& usable) {
  const Located parent = locate(request.requester);
  if (request.requester < 0 || (request.requester >= world_size_ && !parent.job))
    return fail(Errc::protocol, "a spawn request from an unknown process " + std::to_string(request.requester));
  long long total = 0;
  for (const auto& app : request.apps) total += app.maxprocs;
  if (total < 1 || total > kMaxSpawnProcs)
    return fail(Errc::usage, "it asks for " + std::to_string(total) + " processes (tlaunch starts 1 to " +
                                 std::to_string(kMaxSpawnProcs) + " per spawn)");
  if (static_cast<long long>(next_number_) + total > std::numeric_limits<int>::max())
    return fail(Errc::usage, "the job has spawned too many processes");

  std::map<std::string, int> index_of;
  for (size_t n = 0; n < node_names_.size(); ++n) index_of[node_names_[n]] = static_cast<int>(n);
  std::vector<int> any;
  for (int n = 0; n < static_cast<int>(node_names_.size()); ++n)
    if (usable(n)) any.push_back(n);
  if (any.empty()) return fail(Errc::usage, "no node of the job runs ranks any more");

  SpawnedJob job;
  job.id = static_cast<int>(spawned_.size()) + 1;
  job.nspace = job_nspace_ + ".spawn" + std::to_string(job.id);
  job.base = next_number_;
  job.parent_nspace = parent.job ? parent.job->nspace : job_nspace_;
  job.parent_rank = parent.job ? parent.rank : request.requester;
  std::vector<int> node_of_rank;
  for (size_t a = 0; a < request.apps.size(); ++a) {
    const PmixSpawnApp& app = request.apps[a];
    const auto& hosts = app.hosts.empty() ? request.hosts : app.hosts;
    std::vector<int> targets;
    for (const auto& h : hosts) {
      auto it = index_of.find(h);
      if (it == index_of.end())
        return fail(Errc::usage, "host '" + h + "' is not a node of this job",
                    "name one of the job's nodes (" + node_names_.front() + ", ...) in the \"host\" info");
      if (!usable(it->second)) return fail(Errc::usage, "node " + h + " runs no ranks of the job any more");
      if (std::find(targets.begin(), targets.end(), it->second) == targets.end()) targets.push_back(it->second);
    }
    if (targets.empty()) targets = any;
    PmixSpawnApp copy = app;
    copy.hosts.clear();
    job.apps.push_back(std::move(copy));
    for (int i = 0; i < app.maxprocs; ++i) {
      job.app_of_rank.push_back(static_cast<int>(a));
      node_of_rank.push_back(targets[static_cast<size_t>(i) % targets.size()]);
    }
  }
  // Nodes in the job's order, each with its ranks in rank order.
  std::map<int, std::vector<int>> ranks_on;
  for (int rank = 0; rank < static_cast<int>(node_of_rank.size()); ++rank)
    ranks_on[node_of_rank[static_cast<size_t>(rank)]].push_back(rank);
  for (auto& [node, ranks] : ranks_on) {
    // As -p's bound: an MPI_Comm_spawn of 65,536 on two nodes forked 32,768 processes on each.
    if (ranks.size() > static_cast<size_t>(kMaxRanksPerNode))
      return fail(Errc::usage,
                  "PMIx_Spawn of " + std::to_string(node_of_rank.size()) + " processes would start " +
                      std::to_string(ranks.size()) + " on node " + node_names_[static_cast<size_t>(node)] +
                      ", more than the " + std::to_string(kMaxRanksPerNode) + " a node runs for a job",
                  "spawn fewer processes, or name more nodes in the spawn's \"host\" info");
    job.nodes.push_back(node);
    job.ranks_by_node.push_back(std::move(ranks));
  }
  next_number_ += job.size();
  spawned_.push_back(job);
  node_of_rank_.push_back(std::move(node_of_rank));
  ended_.emplace_back(static_cast<size_t>(job.size()), false);
  running_.push_back(job.size());
  return job;
}

void PmixSpawns::forget(int spawn_id) {
  if (spawn_id < 1 || spawn_id > static_cast<int>(spawned_.size())) return;
  const auto i = static_cast<size_t>(spawn_id - 1);
  std::fill(node_of_rank_[i].begin(), node_of_rank_[i].end(), -1);
  running_[i] = 0;  // nothing of it will exit
  spawned_[i].apps.clear();
}

std::optional<int> PmixSpawns::exited(int number) {
  const Located l = locate(number);
  if (!l.job) return std::nullopt;
  const auto i = static_cast<size_t>(l.job->id - 1);
  const auto r = static_cast<size_t>(l.rank);
  if (ended_[i][r] || running_[i] == 0) return std::nullopt;  // said twice, or a spawn that never started
  ended_[i][r] = true;
  if (--running_[i] > 0) return std::nullopt;
  spawned_[i].apps.clear();  // argv and environment: kept for nothing once its procs are gone
  spawned_[i].apps.shrink_to_fit();
  return l.job->id;
}

PmixSpawns::Located PmixSpawns::locate(int number) const {
  // Bases grow with each spawn: the last one at or below `number`. A job spawning in a loop
  // asks this for every output record of its spawned procs.
  auto after = std::upper_bound(spawned_.begin(), spawned_.end(), number,
                                [](int n, const SpawnedJob& s) { return n < s.base; });
  if (after == spawned_.begin()) return {};
  const SpawnedJob& s = *std::prev(after);
  if (number - s.base < s.size()) return {&s, number - s.base};
  return {};
}

int PmixSpawns::nodeOf(int number) const {
  const Located l = locate(number);
  if (!l.job) return -1;
  return node_of_rank_[static_cast<size_t>(l.job->id - 1)][static_cast<size_t>(l.rank)];
}

std::string PmixSpawns::describe(int number) const {
  const Located l = locate(number);
  if (!l.job) return "rank " + std::to_string(number);
  return "rank " + std::to_string(l.rank) + " of spawned namespace " + l.job->nspace;
}

std::string PmixSpawns::fileStem(int number) const {
  const Located l = locate(number);
  if (!l.job) return "rank." + std::to_string(number);
  return "spawn" + std::to_string(l.job->id) + ".rank." + std::to_string(l.rank);
}

std::string PmixSpawns::label(int number) const {
  const Located l = locate(number);
  if (!l.job) return {};
  return "spawn" + std::to_string(l.job->id) + ":" + std::to_string(l.rank);
}

const SpawnedJob* PmixSpawns::find(int spawn_id) const {
  if (spawn_id < 1 || spawn_id > static_cast<int>(spawned_.size())) return nullptr;
  return &spawned_[static_cast<size_t>(spawn_id - 1)];
}

int PmixSpawns::running() const {
  int n = 0;
  for (int r : running_) n += r;
  return n;
}

}  // namespace tlaunch
