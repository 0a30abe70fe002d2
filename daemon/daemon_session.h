#pragma once
// tlaunchd's life for one job: connect back to the frontend, prove the job secret, report
// the node's inventory, prepare and run the ranks it is given, relay their output and exits,
// and tear everything down when told to, or when the frontend disappears.
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <asio.hpp>

#include "bootstrap/connection.h"
#include "bootstrap/message_router.h"
#include "daemon/descendants.h"
#include "daemon/nccl_watch_set.h"
#include "daemon/pmix_bridge.h"
#include "daemon/rank_status.h"
#include "daemon/rank_supervisor.h"
#include "daemon/subtree_fence.h"
#include "daemon/upstream_broadcasts.h"
#include "launcher/daemon_starter.h"
#include "tlaunch/node_launch.h"

namespace tlaunch {

class OutputChannel;
class StackCollector;
class RdmaPairAgent;
class TreeChildren;
class VerbsApi;

struct DaemonOptions {
  std::string connect_host;
  int connect_port = 0;
  // The frontend's --connect-timeout: past it, tlaunch has given up on this daemon, so neither
  // does it try longer (a frontend host that drops packets would hold each connect for the
  // kernel's SYN retries, about 2 minutes).
  std::chrono::seconds connect_timeout{60};
  int node_index = -1;     // -1: the frontend matches us by node name (Slurm starts us this way)
  std::string node_name;   // empty: SLURMD_NODENAME, else the host name
  std::string job_id;
  std::string secret;
  std::string tree_parent;  // tree spawn: the node whose daemon started this one, and whom --connect names
  // Tree spawn: the parent's heartbeat timeout, in force from the welcome until the config
  // (which may name another) arrives through the parent.
  std::chrono::milliseconds tree_parent_timeout{15'000};
  // --keep-for: the warm-daemon keeper this daemon started (daemon/warm_keeper.h), said in the hello.
  int keeper_port = 0;
  long long keeper_pid = 0;
  long long keeper_since = 0;
  std::string keeper_error;  // why no keeper could be started (said in the hello, for the user)
  int keeper_lifeline_fd = -1;  // held: one byte once the frontend knows the keeper; closes with this process
  std::string inventory_cache;  // started by a keeper: its inventory cache (daemon/inventory_cache.h)
  bool via_keeper = false;      // started by a keeper (tlaunch may have started this node otherwise meanwhile)
};

class DaemonSession {
 public:
  DaemonSession(asio::io_context& io, DaemonOptions options);
  ~DaemonSession();
  void start();
  int exitCode() const { return exit_code_; }
  // A signal to the daemon (srun ending its step, scancel, a user's kill): tell the frontend
  // first, then end the ranks, remove the job's files and exit — the same bounded path as the
  // frontend's shutdown. Ranks that exit 0 on SIGTERM must not make the job look finished.
  void stopOnSignal(int sig);
  // SIGUSR1/SIGUSR2 sent to the daemon (Slurm's --signal=USR1@T signals every task of a step):
  // the ranks', as tlaunch forwards them.
  void forwardSignal(int sig);

 private:
  void connect(int attempt);
  std::string upstreamName() const;  // "the frontend", or "node N (its parent in the control tree)"
  void awaitChallenge();  // reconnects when an accepted connection never gets the challenge
  using Router = MessageRouter<>;
  Router makeRouter();  // daemon/daemon_session_routes.cc: every frontend-to-daemon message
  void onMessage(Json&& msg);
  void handleSignalRanks(const Json& msg);
  void onClose(const std::string& reason);
  void handleChallenge(const Json& msg);
  void handleWelcome(const Json& msg);
  void handleConfig(const Json& msg);
  void startNcclWatch(std::vector<RankLaunch>& launches);  // daemon/nccl_watch_set.cc
  void handlePrepare(const Json& msg);
  void handleStart();
  void handleTerminate(const Json& msg);
  void shutdown(int code);
  void waitForFlush(std::chrono::steady_clock::time_point deadline);
  void sendInventory(const Json& config);
  void heartbeat();
  void frontendLost(const std::string& why);
  // The grace between SIGTERM and SIGKILL for ranks the daemon ends on its own (signalled, as
  // scancel means it, or its frontend lost): --kill-timeout, the ranks' checkpoint.
  std::chrono::milliseconds ownTeardownGrace() const;
  // Ends this node's ranks on the daemon's own account (its frontend lost, a signal): SIGTERM,
  // the grace, SIGKILL, then shutdown; past a bound, shutdown without them.
  void endOwnRanks(std::chrono::milliseconds grace);
  void acceptProbes();
  void handleRdmaStage(Json&& msg);
  void handleReach(const Json& msg);
  Result<void> probePeers();
  Json helloMessage(const std::string& server_nonce, const std::string& client_nonce) const;
  // The control tree (daemon_session_tree.cc).
  void startTreeListener();
  void handleTree(const Json& msg);
  void attachToParent(const std::string& host, int port, const std::string& parent_name);
  void switchToParent(const std::string& parent_name);
  bool relayDown(Json& msg);  // true: the message was for a node below this one, and went on
  // The connection delivering the broadcast being handled: the upstream one, or the direct one
  // still being read while this node switches to its tree parent; nullptr for a message that
  // is not a broadcast.
  const Connection* deliveringConnection() const;
  void sendUp(Json&& msg, bool bulk);
  void sendOwn(const Json& msg);  // this node's PMIx server's messages (fences gather the subtree's)
  void awaitChildren(std::chrono::steady_clock::time_point deadline, std::function<void()> then);
  // Tree spawn (daemon_session_spawn.cc): this node starts its children's daemons over ssh.
  void spawnChildren(const Json& spawn);
  void pollSpawned();
  // PMIx_Spawn's processes (daemon_session_pmix_spawn.cc): register the namespace and
  // prepare this node's share, start it when every node is ready.
  void handlePmixSpawnJob(const Json& msg);
  void handlePmixSpawnStart(const Json& msg);
  std::map<int, std::vector<RankLaunch>> spawn_launches_;  // by spawn number, until started or cancelled
  void onRanksEnded();  // every rank (and spawned process) of this node has been reported
  // Signalled, every rank ended: shutdown once the output waiting for credit has left, or at `deadline`.
  void shutdownAfterOutput(std::chrono::steady_clock::time_point deadline);
  static constexpr std::chrono::seconds kSignalledOutputWait{30};
  void spawnSettled();  // a prepared spawn was started or cancelled: a held onRanksEnded goes on
  bool ranks_ended_while_spawning_ = false;
  // `tlaunch stacks` / `tlaunch status` (daemon_inspect.cc).
  void handleStacks(const Json& msg);
  void handleStatus(const Json& msg);
  void stopStacks();  // the job is ending: gdbs go, and no more come (daemon_inspect.cc)
  bool rankRunsMpi(int rank) const;  // an MPI library in its processes (daemon_inspect.cc, mpi_process.h)
  RankStatusSampler::Sample sampleWithDescendants(pid_t rank, const std::vector<ProcEntry>& procs);

  asio::io_context& io_;
  DaemonOptions opts_;
  const Router router_ = makeRouter();
  std::shared_ptr<Connection> conn_;
  asio::ip::tcp::acceptor probe_acceptor_;
  asio::steady_timer probe_retry_;  // after a failed accept (EMFILE)
  std::string server_nonce_, client_nonce_;
  bool authenticated_ = false;
  bool tell_mpi_ranks_ = false;  // --keep-going: say which ranks are MPI programs (it reads /proc)
  std::optional<NodeLaunch> launch_;
  std::string topology_xml_;  // this node's live topology (hwloc XML) for the ranks' PMIx; "" if none
  Json job_shared_ = Json::object();  // "job": what every node's launch shares, and the PMIx geometry
  std::unique_ptr<OutputChannel> output_;  // from the config on; outlives ranks_
  std::string nccl_check_ = "off";      // --nccl-check, from the config
  std::unique_ptr<NcclWatchSet> nccl_;  // before ranks_ too: their output feeds it
  std::unique_ptr<PmixBridge> pmix_;  // declared before ranks_: destroyed after them
  std::unique_ptr<RankSupervisor> ranks_;
  std::unique_ptr<StackCollector> stacks_;  // after ranks_: its gdbs go first
  RankStatusSampler status_sampler_;
  asio::steady_timer heartbeat_timer_;
  asio::steady_timer exit_timer_;
  asio::steady_timer challenge_timer_;
  asio::steady_timer connect_timer_;  // one connect attempt, at most kConnectAttemptTimeout
  std::chrono::steady_clock::time_point connect_deadline_{};
  static constexpr std::chrono::seconds kConnectAttemptTimeout{10};
  asio::steady_timer attach_timer_;
  asio::steady_timer give_up_timer_;  // endOwnRanks: ranks that SIGKILL does not end
  std::optional<std::chrono::steady_clock::time_point> kill_at_;  // when the ranks' teardown sends SIGKILL
  std::unique_ptr<TreeChildren> tree_;      // children's connections: before conn_ goes
  std::shared_ptr<Connection> parent_;      // the tree parent, while attaching
  std::shared_ptr<Connection> leaving_;     // the direct connection, until the frontend closes it
  UpstreamBroadcasts upstream_broadcasts_;  // each handled once, also while attaching
  std::string parent_client_nonce_;
  SubtreeFence subtree_fence_;  // fences of the whole job: this node's share and its children's
  // Upstream is a daemon (the tree parent), not the frontend: its silence ends this node's ranks
  // (a frontend's silence does not: Ctrl-Z on tlaunch must not end the job).
  std::string upstream_parent_;  // its node name, or "" while upstream is the frontend
  std::chrono::steady_clock::time_point upstream_heard_{};
  std::unique_ptr<DaemonStarter> spawner_;  // ssh to this node's tree children (tree spawn)
  bool attaching_ = false;
  bool keeper_told_ = false;  // this node's keeper knows that the frontend wrote it down
  std::chrono::milliseconds dead_peer_timeout_{15000};
  static constexpr std::chrono::seconds kChallengeTimeout{10};
  static constexpr int kChallengeRetries = 5;
  int challenge_retries_ = 0;
  int early_closes_ = 0;  // connections closed before authentication (a flood of strangers)
  std::chrono::milliseconds heartbeat_interval_{1000};
  bool draining_ = false;
  bool lost_ = false;
  int signalled_code_ = 0;  // 128 + the signal that ends this daemon, once its ranks have ended
  bool done_ = false;
  int exit_code_ = 0;
  // The cross-node RDMA write test (--preflight=full): the frontend drives it, stage by stage.
  std::unique_ptr<VerbsApi> verbs_;
  std::unique_ptr<RdmaPairAgent> rdma_agent_;
  std::jthread rdma_worker_;  // declared last: joined before the agent and the verbs go
};

}  // namespace tlaunch
