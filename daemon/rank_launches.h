#pragma once
// From the frontend's NodeLaunch to the exact argv/env/binding of each rank process.
#include <string>
#include <vector>

#include "bootstrap/pmix_spawn_wire.h"
#include "bootstrap/rank_env.h"
#include "daemon/rank_spawner.h"
#include "tlaunch/node_launch.h"

namespace tlaunch {

Result<std::vector<RankLaunch>> buildRankLaunches(const NodeLaunch& launch);

// The processes PMIx_Spawn placed on this node (none if it hosts none): each app's argv, its
// environment over the job's (the node's base environment, then `job_env`, what every rank of
// the job has), in its working directory (the job's if none), bound to every CPU and memory
// node of the node's ranks (not to one rank's core: see the .cc). Errors name the node and the
// program.
// The variables every rank of the job shares, less torchrun's (a rank's identity and the job's
// rendezvous: RANK, WORLD_SIZE, MASTER_ADDR, ...) and a rank's own GPU and HCA (TLAUNCH_GPU_*,
// TLAUNCH_HCA): in a one-rank job "every rank" is rank 0, and a spawned process is none of the
// job's ranks. The network's and the node's GPU settings stay.
std::vector<std::string> withoutRankIdentity(const std::vector<std::string>& job_env);

Result<std::vector<RankLaunch>> buildSpawnedLaunches(const SpawnedJob& job, const NodeLaunch& launch,
                                                     const std::vector<std::string>& job_env);

}  // namespace tlaunch
