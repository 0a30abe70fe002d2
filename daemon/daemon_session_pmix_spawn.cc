// PMIx_Spawn on a node (the frontend's side: launcher/job_session_pmix_spawn.cc). Every node
// that still runs ranks registers the new namespace; those that host its processes prepare them
// (program, working directory, binding, PMIx variables) and start them only when the frontend
// says every node is ready. They then belong to the node's RankSupervisor like its ranks.
#include <algorithm>

#include "bootstrap/node_launch_json.h"
#include "daemon/daemon_session.h"
#include "daemon/rank_launches.h"

namespace tlaunch {

void DaemonSession::handlePmixSpawnJob(const Json& msg) {
  const int spawn_id = static_cast<int>(getInt(msg, "k", -1));
  auto reply = [&](const Result<void>& r) {
    sendOwn({{"t", "pmix_spawn_ready"}, {"k", spawn_id}, {"ok", r.has_value()}, {"message", r ? "" : r.error().message}});
  };
  if (!pmix_ || !launch_ || !ranks_) return reply(fail(Errc::internal, "it runs no ranks"));
  auto job = spawnedJobFromJson(msg, static_cast<int>(launch_->pmix.node_names.size()));
  if (!job) return reply(tl::unexpected(job.error()));
  // Its ranks may have ended a moment before the frontend, which placed this spawn, heard so:
  // its PMIx server stays up until the daemon's shutdown, so it can still host the spawn (the
  // frontend counts the node as running again). Only a node that is ending cannot.
  if (done_ || draining_ || lost_ || signalled_code_) {
    // Nothing here can meet the namespace any more. Only a host must refuse.
    const bool hosts = std::find(job->nodes.begin(), job->nodes.end(), launch_->pmix.this_node) != job->nodes.end();
    return reply(hosts ? fail(Errc::internal, "its daemon is ending") : Result<void>{});
  }
  if (auto r = pmix_->registerSpawned(*job, *launch_); !r) return reply(r);
  std::vector<std::string> job_env;  // what every rank of the job has ("job"), less a rank's own
  if (job_shared_.contains("launch"))
    if (auto shared = sharedLaunchFromJson(job_shared_["launch"])) job_env = withoutRankIdentity(shared->rank_env);
  auto launches = buildSpawnedLaunches(*job, *launch_, job_env);
  if (!launches) return reply(tl::unexpected(launches.error()));
  for (auto& l : *launches)
    if (auto r = pmix_->setupFork(l.rank, l.env); !r) return reply(r);
  if (!launches->empty()) spawn_launches_[spawn_id] = std::move(*launches);
  reply({});
}

void DaemonSession::handlePmixSpawnStart(const Json& msg) {
  const int spawn_id = static_cast<int>(getInt(msg, "k", -1));
  auto it = spawn_launches_.find(spawn_id);
  if (it == spawn_launches_.end() || !ranks_) {
    sendOwn({{"t", "pmix_spawn_started"}, {"k", spawn_id}, {"ok", false}, {"message", "nothing was prepared for it"}});
    return;
  }
  auto launches = std::move(it->second);
  spawn_launches_.erase(it);
  ranks_->add(std::move(launches), [this, spawn_id](Result<void> started) {
    if (started) ranks_ended_while_spawning_ = false;  // they are running: their end is reported later
    spawnSettled();
    sendOwn({{"t", "pmix_spawn_started"},
             {"k", spawn_id},
             {"ok", started.has_value()},
             {"message", started ? "" : started.error().message}});
  });
}

void DaemonSession::spawnSettled() {
  // Not while a spawn's processes are still starting (their batch is queued in the supervisor).
  if (ranks_ended_while_spawning_ && spawn_launches_.empty() && (!ranks_ || ranks_->allExited())) onRanksEnded();
}

}  // namespace tlaunch
