// What tlaunchd does with each message its frontend sends once authenticated, as one table
// (bootstrap/message_router.h). The challenge and welcome before it are daemon_session.cc's.
#include <signal.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "binding/rdma/rdma_pair_protocol.h"
#include "daemon/daemon_session.h"
#include "daemon/output_channel.h"

namespace tlaunch {

namespace {
using Type = const std::string&;
}  // namespace

DaemonSession::Router DaemonSession::makeRouter() {
  Router r;
  r.on("ping", [](Type, Json&&) {});
  r.on("credit", [this](Type, Json&& m) {
    if (output_) output_->credit(static_cast<size_t>(std::max(0LL, getInt(m, "n"))));
  });
  // The job's course.
  r.on("config", [this](Type, Json&& m) { handleConfig(m); });
  r.on("tree", [this](Type, Json&& m) { handleTree(m); });
  r.on("reach", [this](Type, Json&& m) { handleReach(m); });
  r.onPrefix("rdma_", [this](Type t, Json&& m) {
    if (isRdmaStage(t)) handleRdmaStage(std::move(m));
    else spdlog::warn("ignoring unknown message '{}' from the frontend", t);
  });
  r.on("job", [this](Type, Json&& m) { job_shared_ = std::move(m); });
  r.on("prepare", [this](Type, Json&& m) { handlePrepare(m); });
  r.on("start", [this](Type, Json&&) { handleStart(); });
  r.on("signal", [this](Type, Json&& m) { handleSignalRanks(m); });
  r.on("terminate", [this](Type, Json&& m) { handleTerminate(m); });
  r.on("shutdown", [this](Type, Json&&) { shutdown(0); });
  // Started by this node's keeper after tlaunch had given up waiting for it: another tlaunchd
  // (over ssh or srun) serves the node. Nothing of the job ran here.
  r.on("superseded", [this](Type, Json&&) {
    spdlog::info("tlaunch started this node's daemon otherwise meanwhile; exiting");
    shutdown(0);
  });
  // It proved the job secret, but tlaunch has no place for it (another daemon serves this
  // node, or the node is not one of the job's): connecting again would not change that.
  r.on("refused", [this](Type, Json&& m) {
    spdlog::error("tlaunch refused this daemon: {}", getString(m, "reason"));
    shutdown(69);
  });
  // --stdin, `tlaunch stacks`, `tlaunch status`.
  r.on("stdin", [this](Type, Json&& m) {
    if (ranks_) ranks_->writeStdin(static_cast<int>(getInt(m, "r")), bytesOf(m["d"]));
  });
  r.on("stdin_eof", [this](Type, Json&& m) {
    if (ranks_) ranks_->closeStdin(static_cast<int>(getInt(m, "r")));
  });
  r.on("stacks", [this](Type, Json&& m) { handleStacks(m); });
  r.on("status", [this](Type, Json&& m) { handleStatus(m); });
  // PMIx_Spawn: the placement, then the start (or the cancel) of this node's share.
  r.on("pmix_spawn_job", [this](Type, Json&& m) { handlePmixSpawnJob(m); });
  r.on("pmix_spawn_start", [this](Type, Json&& m) { handlePmixSpawnStart(m); });
  r.on("pmix_spawn_end", [this](Type, Json&& m) {  // every process of that spawn has ended
    if (pmix_) pmix_->endSpawned(static_cast<int>(getInt(m, "k", -1)));
  });
  r.on("pmix_spawn_cancel", [this](Type, Json&& m) {
    const int spawn_id = static_cast<int>(getInt(m, "k", -1));
    spawn_launches_.erase(spawn_id);
    if (pmix_) pmix_->endSpawned(spawn_id);  // registered here, never started anywhere
    spawnSettled();
  });
  // Answers to this node's PMIx server (daemon/pmix_bridge.h).
  r.on({"fence_done", "dmodex_serve", "dmodex_done", "pub_done", "lookup_done", "unpub_done", "coll_done",
        "jobctl_done", "rank_failed", "pmix_spawn_done"},
       [this](Type t, Json&& m) {
         if (pmix_) pmix_->onMessage(t, m);
       });
  return r;
}

void DaemonSession::handleSignalRanks(const Json& msg) {
  if (!ranks_) return;
  const int sig = static_cast<int>(getInt(msg, "sig", SIGTERM));
  if (msg.contains("ranks") && msg["ranks"].is_array()) {  // PMIx_Job_control of some ranks
    for (const auto& r : msg["ranks"])
      if (r.is_number_integer()) ranks_->signalRank(r.get<int>(), sig);
  } else {
    ranks_->signalAll(sig, /*whole_group=*/sig == SIGKILL);
  }
}

}  // namespace tlaunch
