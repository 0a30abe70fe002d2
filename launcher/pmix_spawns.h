#pragma once
// PMIx_Spawn at the frontend (MPI_Comm_spawn, mpi4py.futures): places each request's
// processes on the job's nodes and remembers every spawned namespace, so that the control
// plane can find the node of any proc by its number. Pure: no I/O.
//
// Placement: an app's processes go round robin over its hosts (PMIX_HOST / PMIX_ADD_HOST; the
// job-level list for apps without one), which must be nodes of the job that still run ranks,
// else over every such node; the daemons bind them to the job's share of their node.
// Numbers: the job's ranks are 0..N-1; each namespace's ranks follow the last one's.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/pmix_spawn_wire.h"
#include "tlaunch/result.h"

namespace tlaunch {

class PmixSpawns {
 public:
  PmixSpawns(std::string job_nspace, int world_size, std::vector<std::string> node_names)
      : job_nspace_(std::move(job_nspace)), world_size_(world_size), node_names_(std::move(node_names)) {}

  // Places and records a request. `usable(node)`: the node can still start processes. Errors
  // name what the caller asked for (a host outside the job, a node whose ranks have ended).
  Result<SpawnedJob> place(const PmixSpawnRequest& request, const std::function<bool(int node)>& usable);
  // A spawn whose start failed: its numbers stay taken, its procs are nowhere.
  void forget(int spawn_id);
  // Spawned proc `number` has ended. Returns its spawn's id when it was the last of them (once):
  // the nodes can then forget the namespace. Its apps (argv, env) are dropped then.
  std::optional<int> exited(int number);

  int nodeOf(int number) const;  // -1: unknown
  // "rank 2 of spawned namespace tlaunch.j.spawn1" for a spawned proc, "rank 2" for the job's.
  std::string describe(int number) const;
  // The tag label of a spawned proc ("spawn1:2"); empty for the job's ranks.
  std::string label(int number) const;
  // Its --output-dir files without .out/.err ("spawn1.rank.2"; "rank.2" for the job's ranks).
  std::string fileStem(int number) const;
  const SpawnedJob* find(int spawn_id) const;
  int nextNumber() const { return next_number_; }
  // Spawned procs that have not ended, of every spawn.
  int running() const;

 private:
  struct Located {
    const SpawnedJob* job = nullptr;
    int rank = -1;
  };
  Located locate(int number) const;
  std::string job_nspace_;
  int world_size_ = 0;
  std::vector<std::string> node_names_;
  std::vector<SpawnedJob> spawned_;
  std::vector<std::vector<int>> node_of_rank_;  // per spawned_ entry
  std::vector<std::vector<bool>> ended_;        // per spawned_ entry: which of its procs exited
  std::vector<int> running_;                    // per spawned_ entry: how many have not
  int next_number_ = world_size_;
};

}  // namespace tlaunch
