#pragma once
// Connects the node's PMIx server (bootstrap/pmix_server.h) to the control plane: fence
// contributions and direct-modex requests go to the frontend as messages, its answers come
// back here. Lives on the daemon's io_context thread; libpmix upcalls arrive through asio::post.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <asio.hpp>

#include "bootstrap/message.h"
#include "bootstrap/pmix_server.h"
#include "bootstrap/pmix_spawn_wire.h"
#include "tlaunch/node_launch.h"

namespace tlaunch {

class PmixBridge {
 public:
  using Send = std::function<void(Json)>;
  // Starts the PMIx server and registers the job's namespace and local ranks.
  // `topology_xml`: this node's topology (hwloc XML) for the ranks, "" if none.
  static Result<std::unique_ptr<PmixBridge>> start(asio::io_context& io, const NodeLaunch& launch, const Send& send,
                                                   std::string topology_xml);
  ~PmixBridge();
  // A namespace PMIx_Spawn started (the frontend's placement): registered here whether or not
  // this node hosts its ranks.
  Result<void> registerSpawned(const SpawnedJob& job, const NodeLaunch& launch);
  // The frontend's word that every process of spawn `spawn_id` has ended: its namespace goes.
  void endSpawned(int spawn_id);
  // Adds the PMIx variables (server URI, namespace, rank, Open MPI's hints) to a rank's env.
  Result<void> setupFork(int rank, std::vector<std::string>& env);
  // Where rank `rank` of the job writes torchrun's error file (daemon/rank_error_file.h): in
  // this node's job directory, removed with it.
  std::string errorFileOf(int rank) const { return node_dir_ + "/errors/rank." + std::to_string(rank) + ".json"; }
  // Frontend messages: "fence_done", "dmodex_serve", "dmodex_done", "pmix_spawn_done", "rank_failed" (a PMIx
  // event for the local clients), and those of pmix_pubsub_wire.h.
  void onMessage(const std::string& type, const Json& msg);
  // Whether a local rank that connects is an MPI program (daemon/mpi_process.h): said to the
  // frontend with the connection, for --keep-going.
  void setMpiProbe(std::function<bool(int rank)> probe) { *mpi_probe_ = std::move(probe); }
  // A local rank exited with a failure (not killed by teardown): libpmix forgets it shortly
  // after (PmixServer::forgetFailedRank), and the frontend's event about it reaches the local
  // ranks only then, so that a fence they enter in reaction cannot wait for it here.
  void onLocalRankFailed(int rank);
  // A local rank that called PMIx_Init and has not called PMIx_Finalize (MPI_Init without
  // MPI_Finalize, os._exit): mpirun calls its end abnormal even with exit status 0.
  bool endedWithoutFinalize(int rank) const { return unfinalized_->count(rank) > 0; }

 private:
  // At the bridge's end (the daemon's shutdown, after the frontend has the node's outcome):
  // bounded deregistration and removal of the job's files.
  void finish();

  PmixBridge() = default;
  asio::io_context* io_ = nullptr;
  std::string topology_xml_;  // for spawned namespaces too
  std::map<int, std::string> spawned_nspaces_;  // spawn id -> namespace, while registered here
  std::map<int, std::unique_ptr<asio::steady_timer>> end_timers_;  // spawns to forget in a moment
  // Gone with the bridge. A timer that had expired when the bridge went still runs its handler
  // (not as cancelled), after the bridge: the handlers check it before touching anything.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  // Runs `f` after `delay` on the io thread unless the bridge has finished or gone; the timer
  // lives in `timers` under `key` until then.
  void later(std::map<int, std::unique_ptr<asio::steady_timer>>& timers, int key, std::chrono::milliseconds delay,
             std::function<void()> f);
  static constexpr std::chrono::milliseconds kForgetSpawnedAfter{300};  // onLocalRankFailed waits 200
  std::map<int, std::unique_ptr<asio::steady_timer>> forget_timers_;  // failed local ranks to forget
  // PmixServer::Callbacks::answer_at: a client's PMIX_TIMEOUT on a connect or a fence.
  void answerAt(std::chrono::steady_clock::time_point at, std::function<void()> answer);
  std::map<int, std::unique_ptr<asio::steady_timer>> answer_timers_;
  int next_answer_timer_ = 0;
  std::map<int, std::vector<Json>> held_events_;  // local failed ranks not yet forgotten -> their events
  void notify(const Json& msg);
  // Local ranks between PMIx_Init and PMIx_Finalize (libpmix's upcalls; shared with them).
  std::shared_ptr<std::set<int>> unfinalized_ = std::make_shared<std::set<int>>();
  // Shared with the server's callbacks, which may run after this bridge is gone.
  std::shared_ptr<std::function<bool(int)>> mpi_probe_ = std::make_shared<std::function<bool(int)>>();
  std::unique_ptr<PmixServer> server_;
  Send send_;
  int this_node_ = -1;  // the node's index in the job
  std::string node_dir_;
  std::string shm_twin_;  // its /dev/shm twin's name (shmTwinName)
  bool finished_ = false;
};

}  // namespace tlaunch
