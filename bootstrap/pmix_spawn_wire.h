#pragma once
// PMIx_Spawn on the control plane. A daemon's request goes to the frontend ("pmix_spawn");
// the frontend places the new namespace's ranks and sends the placement to every node of the
// job ("pmix_spawn_job"): all of them register the namespace, those that host its ranks start
// them. Decoding is bounded: the messages come from the network.
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/message.h"
#include "bootstrap/pmix_server.h"
#include "tlaunch/result.h"

namespace tlaunch {

inline constexpr int kMaxSpawnApps = 64;
inline constexpr int kMaxSpawnProcs = 65536;  // per PMIx_Spawn

// One PMIx_Spawn as the frontend placed it.
struct SpawnedJob {
  int id = 0;          // the job's spawn number: 1, 2, ...
  std::string nspace;  // "<job namespace>.spawn<id>"
  int base = 0;        // the control plane's number of its rank 0 (PmixServer's numbering)
  std::string parent_nspace;
  int parent_rank = 0;  // the caller, in parent_nspace
  std::vector<int> nodes;                      // indices of the job's nodes that host its ranks
  std::vector<std::vector<int>> ranks_by_node;  // its ranks (0..size-1) on each of `nodes`
  std::vector<PmixSpawnApp> apps;               // argv, env, cwd of each app
  std::vector<int> app_of_rank;

  int size() const { return static_cast<int>(app_of_rank.size()); }
};

Json spawnRequestToJson(uint64_t request_id, const PmixSpawnRequest& request);
Result<PmixSpawnRequest> spawnRequestFromJson(const Json& j);
Json spawnedJobToJson(const SpawnedJob& job);
// Checks it against the job: node indices below `job_nodes`, each rank placed once.
Result<SpawnedJob> spawnedJobFromJson(const Json& j, int job_nodes);

}  // namespace tlaunch
