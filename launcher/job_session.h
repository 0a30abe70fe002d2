#pragma once
// The frontend's side of one job, on one io_context thread: accept and authenticate the
// daemons, collect inventories, plan, prepare, start, relay output, supervise, tear down.
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <asio.hpp>

#include "bootstrap/connection.h"
#include "bootstrap/fence_collector.h"
#include "bootstrap/message_router.h"
#include "bootstrap/pmix_server.h"
#include "bootstrap/tree_shape.h"
#include "launcher/daemon_starter.h"
#include "launcher/ssh_starter.h"
#include "launcher/start_failure_report.h"
#include "bootstrap/inventory_codec.h"
#include "launcher/held_signals.h"
#include "launcher/job_lifecycle.h"
#include "launcher/plan/job_plan.h"
#include "launcher/output_sink.h"

namespace tlaunch {

class CrossNodePreflight;
class PmixCollectives;
class PmixSpawns;
class PmixDirectory;
class JobInspector;
class RankFailurePolicy;
struct RankFailure;
class FailureBlame;
namespace nccl {
class JobCheck;
}
class StdinCredit;

struct SessionConfig {
  JobSpec spec;
  std::vector<NodeTarget> nodes;
  PlanContext plan_context;
  std::string secret;
  std::string listen_address = "127.0.0.1";  // where daemons connect
  std::string advertise_address;             // given to daemons if not listen_address
  // Where the daemons are told to connect.
  const std::string& connectAddress() const { return advertise_address.empty() ? listen_address : advertise_address; }
  int unnamed_nodes = 0;  // srun picks nodes: accept this many by name, ordered by name
  std::vector<NodeTarget> starter_nodes;  // what the starter starts, if not `nodes`
  // Over ssh, with more nodes than --tree-radix: the frontend starts its direct children only,
  // and each daemon starts its own children over ssh with these options (tree spawn).
  std::optional<SshStarterOptions> tree_spawn;
  std::vector<bool> started_by_frontend;  // under tree spawn, by node index: tlaunch's own host
  // `tlaunch preflight` run again without nodes that could not be started: their rows, shown in
  // this run's table (and failing it) beside the checks of the others.
  std::vector<PreflightItem> unstarted_preflight;
  std::string daemon_path;
  Json daemon_config;  // sent to every daemon in its welcome (topology_xml, sysfs_root, ...)
  // --time-limit counts from here: tlaunch's start, not this attempt's (--max-restarts).
  std::chrono::steady_clock::time_point time_limit_start = std::chrono::steady_clock::now();
  // Started under nohup, or in the background of a script: these stay ignored (held_signals.h).
  IgnoredSignals ignored_signals;
  // Held again the moment the loop stops (runJob's; none in tests): a signal from then on waits
  // for runJob instead of going to a signal_set nobody waits on.
  HeldSignals* held_signals = nullptr;
  // A rank's request for another node's rank's PMIx data (direct modex) fails after this long
  // (Slurm's PMIx plugin: 300 s). Shorter in tests.
  std::chrono::milliseconds dmodex_timeout = std::chrono::seconds(300);
  // ... and past this many waiting at once, a new one is answered "out of resource" (a bound on
  // what ranks' code can make the frontend hold). Smaller in tests.
  size_t dmodex_max_waiting = size_t{1} << 16;
  // Daemons come only through JobSession::adopt (in-memory tests): no TCP listener and no
  // `tlaunch stacks` control socket.
  bool in_memory = false;
};

// How the job ended, for the summary and the exit status.
struct JobOutcome {
  int exit_code = 0;
  std::string summary;                // empty on success
  std::vector<std::string> stderr_tail;
  int failed_rank = -1;                  // also a spawned process's number (launcher/pmix_spawns.h)
  int signal = 0;                        // the failed rank was killed by this signal
  std::string failed_process{};          // "rank 0 of spawned namespace ..." when not one of the job's ranks
  // For --summary-json (launcher/summary_json.h).
  std::string failed_node{};             // the failed rank's node, or the node lost
  Json phase_seconds = Json::object();   // launch phase → seconds (slowest node)
  std::vector<int> rank_exit_codes{};    // per rank: exit status (128+N for signal N), -1 if it never ended
  std::vector<std::string> lost_nodes{};  // with node_lost: every node lost or never started (by its fault)
  Json restarts = Json::array();         // --max-restarts: one entry per restart (launcher/run_job.cc)
  Json nccl = nullptr;                   // --nccl-check: the report once every rank reported (nccl::JobCheck::toJson)
  bool node_lost = false;                // a daemon went away mid-job (failed_node names it)
  bool nodes_not_started = false;        // the attempt ended because nodes could not be started
  // `tlaunch preflight`: with nodes_not_started, a "daemon_start" row for each of those nodes
  // (launcher/run_job.cc checks the others without them, and shows every row in one table).
  std::vector<PreflightItem> unstarted_preflight{};
  bool preflight_reported = false;  // `tlaunch preflight` printed its report
  bool ranks_started = false;            // the nodes were told to start the ranks (a failure before: "not started")
  // tlaunch was told to end (Ctrl-C, SIGTERM, SIGHUP), also while a rank's failure was already
  // ending the job: --max-restarts never starts another attempt then.
  bool interrupted = false;
  // Ranks (and spawned processes) the teardown's SIGTERM did not end within --kill-timeout: its
  // SIGKILL did (a checkpoint cut short). Not counted after "kill at once" (a second Ctrl-C).
  int killed_at_kill_timeout = 0;
};

class JobSession {
 public:
  JobSession(asio::io_context& io, SessionConfig config, std::unique_ptr<DaemonStarter> starter, OutputSink& out);
  ~JobSession();
  // Runs the job to its end; returns its outcome.
  JobOutcome run();
  // A daemon's connection from elsewhere than the TCP listener (an in-memory pipe in tests):
  // challenged and authenticated like any other.
  void adopt(std::unique_ptr<ByteStream> stream);

 private:
  using Phase = JobPhase;  // launcher/job_lifecycle.h: the phases and what moves the job between them
  struct Link;
  struct Pending;
  // A daemon's connection closed: reported a moment later, with what its starter saw of the
  // daemon's end by then.
  struct LostNode {
    int link = 0;
    std::string reason;
    std::vector<std::string> below;  // the nodes it carried in the control tree
    std::chrono::steady_clock::time_point at;  // when its connection closed, or its daemon said it was signalled
    int signal = 0;  // not lost but signalled (its daemon said so)
  };

  Result<void> listen();
  void accept();
  void acceptQueued();  // the connections already waiting, without going round the loop
  static constexpr int kAcceptBurst = 256;
  void challenge(std::shared_ptr<Connection> conn);
  void onPendingMessage(Pending* p, Json&& msg);
  void supersede(Pending* p, const Json& hello, const Link& link);  // a keeper's daemon that came too late
  void welcome(Connection& conn, const std::string& server_nonce, const std::string& client_nonce);  // then sealed
  void forgetPendingLater(const Pending& p);  // after the handler that is reading it
  using Router = MessageRouter<Link&>;
  Router makeRouter();  // launcher/job_session_routes.cc: every daemon-to-frontend message
  void onLinkMessage(Link& link, Json&& msg);
  void onPrepared(Link& link);
  void onStarted(Link& link, const Json& msg);
  void onAllExited(Link& link);
  void onLinkClosed(Link& link, const std::string& reason);
  void onDaemonSignalled(const Link& link, int sig);
  void failSignalled(const Link& link, int sig);
  void onInventory(Link& link, const Json& inv);
  void inventoriesComplete();
  void noteTimings(const char* what, std::chrono::steady_clock::time_point since,
                   std::chrono::steady_clock::time_point Link::*at);
  void onCrossNodeMessage(Link& link, const Json& msg);
  std::vector<NodeReport> reports() const;
  void planAndPrepare();
  void startRanks();
  void onRankExit(Link& link, const Json& msg);
  void onPmixMessage(Link& link, const std::string& type, Json&& msg);
  void sendToNode(int node, Json msg);  // by value: a node below gets it with "@dst" added
  // The control tree (launcher/job_session_tree.cc).
  bool wireTree();  // false: a star (the radix covers every node), nothing to wait for
  void onAttached(Link& link, bool attached, const std::string& reason);
  void checkAcrossNodes();  // after the inventories (and the tree): the cross-node preflight, then the plan
  int routeOf(int node) const;      // the frontend's direct child that carries messages to `node`
  bool carriedBy(int node, int via) const;  // `node` is `via` or reaches the frontend through it
  bool reachable(int node) const;   // its route is open and the node is not lost
  Connection* openRouteTo(int node) const;  // the open connection toward `node`; null: unreachable
  Json treeMessage(int index) const;        // a node's place: index, shape, its children's names
  void noteTreeShape(const std::string& how);  // -v: how many daemons tlaunch talks to
  std::vector<int> routedBelow(int node) const;  // the nodes that reach the frontend through `node`, or will
  void sendRouted(int node, Json msg, bool bulk);
  int outputSource(const Link& link, int rank);  // the node a rank's output on `link` is from; -1: none
  void onChildLost(Link& parent, const Json& msg);
  Link* childNamedIn(const Link& parent, const Json& msg);  // msg's "node", if a child of parent
  // Tree spawn (launcher/job_session_spawn.cc).
  bool spawnsTree() const;  // decided at start: daemons start their children over ssh
  std::vector<NodeTarget> nodesToStart() const;  // what the frontend's own starter starts
  Json daemonConfigFor(const Link& link) const;  // the "config" a daemon gets once authenticated
  void placeInTree(Link& link);  // tree spawn: its place, and the children it starts over ssh
  void onChildJoined(Link& parent, const Json& msg);
  void onSpawnFailed(Link& parent, const Json& msg);
  DaemonCommand daemonCommand() const;  // tlaunchd's command line, connecting to this frontend
  // The nodes their tree parent could not start, started by the frontend under --ssh-fanout.
  std::unique_ptr<SshStarter> fallback_starter_;
  std::vector<std::string> closeRoutedBelow(const Link& link);  // marks lost the nodes it carried; their names
  std::string lostNodeText(const Link& link, const LostNode& lost) const;
  static constexpr auto kTreeWiringTimeout = std::chrono::seconds(30);
  int nodeOfRank(int rank) const;  // also a spawned proc's (launcher/pmix_spawns.h numbers)
  std::string rankName(int rank) const;  // "rank 3", or "rank 0 of spawned namespace ..."
  // PMIx_Spawn (launcher/job_session_pmix_spawn.cc): place, register everywhere, start, answer.
  struct SpawnInFlight {
    int requester_node = -1;
    uint64_t request_id = 0;  // the caller's daemon's, echoed back
    int requester = 0;
    std::set<int> told;      // the nodes that got the placement
    std::set<int> awaiting;  // their answers still to come (ready, then started)
    bool starting = false;
    std::string error;  // the first node's reason to refuse
  };
  void onPmixSpawn(Link& link, const Json& msg);
  void onPmixSpawnReady(Link& link, const Json& msg);
  // Node `link` answered spawn `it`'s registration (ok, or the reason it cannot take part).
  void spawnNodeReady(std::map<int, SpawnInFlight>::iterator it, const Link& link, bool ok, std::string message);
  // A node whose ranks had all ended went away: the spawns waiting for its answer go on
  // without it. False when one was starting processes there: the node is lost to the job.
  bool spawnsGoOnWithout(const Link& link, const std::string& reason);
  void onPmixSpawnStarted(Link& link, const Json& msg);
  void answerSpawn(int requester_node, uint64_t request_id, PmixReply status, const std::string& nspace);
  std::unique_ptr<PmixSpawns> pmix_spawns_;  // with the plan, when PMIx is on
  std::map<int, SpawnInFlight> spawns_in_flight_;  // by spawn number
  // Each spawn in flight has every node register a namespace: past kMaxSpawnsInFlight requests
  // wait here (ranks that each spawn a helper with MPI_COMM_SELF), past kMaxSpawnsWaiting they
  // are refused ("out of resource").
  std::deque<std::pair<int, Json>> spawns_waiting_;  // node, request
  static constexpr size_t kMaxSpawnsInFlight = 8;
  static constexpr size_t kMaxSpawnsWaiting = 4096;
  void spawnLeftFlight(std::map<int, SpawnInFlight>::iterator it);
  // A daemon gone after all its ranks had ended and been reported: a warning, not a loss.
  void sayEndedAfterRanks(Link& link, const std::string& reason);
  // The starters' failures: collected (StartFailureReport), the job ends once they are all in.
  void onStartFailures(const std::vector<StartFailure>& failures, std::chrono::steady_clock::time_point now);
  bool belowFailedNode(int index) const;  // tree spawn: a node that failed was to start it
  bool start_wait_said_ = false;          // "waiting up to N s for the other nodes" said
  void fail(int exit_code, std::string summary, int rank = -1, std::vector<std::string> tail = {},
            std::string node = {}, int signal = 0);
  void recordFailure(int exit_code, std::string summary, int rank, std::vector<std::string> tail, std::string node,
                     int signal);  // the outcome fail() reports
  // A failed rank (launcher/job_session_failures.cc): announced to every node as a PMIx event,
  // then the job ends after --event-grace, or goes on with --keep-going.
  void onRankFailed(RankFailure f);
  // The job ends for f (--event-grace counted from `since`, when its failure was first heard of).
  void endJobFor(RankFailure f, std::chrono::steady_clock::time_point since);
  // The failures held for blame_'s window: the earliest is the job's reason.
  void settleBlame();
  // At the end, when the rank blamed only lost a peer (its error says a socket closed): a rank
  // that had ended with status 0 before it is named (it left early), and a rank whose @record
  // wrote an exception of its own becomes the job's cause (it broke its peers and ended after
  // them: a slow exit hook; its `finally:` closed the process group first).
  void explainPeerLoss();
  bool lostNodePending() const { return lost_node_ && !failed_; }
  void failNodeLost();  // the lost node is the reason, the ranks that failed meanwhile its consequence
  void failPmixOperationsOf(int rank);
  void endEventGrace();  // the teardown a failed rank's --event-grace holds back starts now
  void teardown();
  // Moves the job along the lifecycle table; false, and nothing changes, when the event means
  // nothing in the current phase.
  bool advance(JobEvent event);
  // To finishing, for `why` (the job is over, drained, or failed before any node prepared).
  void finish(JobEvent why);
  void tick();
  // Finishing: stops the loop once no daemon's connection is open (or past the deadline).
  bool stopOnceAllClosed(std::chrono::steady_clock::time_point now);
  void sayStarterNotes();        // what the starter wants said (warm daemons reused, ...)
  void noteCachedInventories();  // -v: warm nodes that sent their last inventory and preflight again
  void handleSignal(int sig);
  void watchSignals();
  void forwardStdin();
  size_t outputWindow() const;
  void grantOutputCredit(int source, size_t bytes);
  void dropOneStranger();  // see bootstrap/stranger_eviction.h
  size_t pendingLimit() const;  // connections not yet authenticated, before one is dropped
  static constexpr size_t kMaxPendingConnections = 256;
  static constexpr auto kPendingAuthTimeout = std::chrono::seconds(5);
  static constexpr size_t kStdinWindow = 1u << 20;
  // PMIx fences: a bound on those open at once (a job has a few at a time); a result is bounded
  // by kMaxCollectedBytes.
  static constexpr size_t kMaxFencesInProgress = 4096;
  static constexpr uint64_t kRejectionsShown = 10;
  // What a node that proved the job secret did wrong (connected twice, spoke for a node or
  // rank that is not its own): counted apart from strangers' rejections, which anyone can
  // cause, so that a flood of strangers cannot hide these.
  static constexpr uint64_t kAnomaliesShown = 20;
  void noteAnomaly(const std::string& text);
  // A daemon that proved the secret but cannot serve the job (unknown node, connected twice):
  // told why (after the welcome, so the word is ours), so that it ends instead of connecting again.
  void refuseProved(Pending* p, const Json& hello, const std::string& why);
  void broadcast(Json msg);  // by value: tagged in place (a fence's result can be megabytes)
  std::string nodeLabel(int index) const;
  bool allDrained() const;

  asio::io_context& io_;
  SessionConfig cfg_;
  std::unique_ptr<DaemonStarter> starter_;
  OutputSink& out_;
  const Router router_ = makeRouter();
  // About one ssh connect timeout: a node that is going to fail to start has failed by then.
  StartFailureReport start_failures_{std::chrono::seconds(cfg_.spec.ssh_connect_timeout_s + 2)};
  // Lets the sink's writer thread post output credit only while the session's loop runs.
  struct CreditGate {
    std::mutex mu;
    bool open = true;
  };
  std::shared_ptr<CreditGate> credit_gate_ = std::make_shared<CreditGate>();
  asio::ip::tcp::acceptor acceptor_;
  asio::signal_set signals_;
  asio::steady_timer tick_timer_;
  asio::steady_timer accept_retry_;
  std::shared_ptr<StdinCredit> stdin_;  // shared with the stdin reader thread
  int stdin_node_ = -1;                 // the node of --stdin's rank: its credit comes from there only
  std::chrono::steady_clock::time_point last_tick_{};
  // Ctrl-\ (stacks): a repeat within a second is the same request
  std::chrono::steady_clock::time_point last_sigquit_{};
  std::vector<std::unique_ptr<Link>> links_;
  std::unique_ptr<FrameCipher> broadcast_sealer_;  // the job's broadcasts, sealed once for all links
  uint64_t broadcasts_sent_ = 0;
  TopologyDecodeCache topologies_;  // identical machines' topologies parsed once
  std::vector<std::unique_ptr<Pending>> pending_;
  uint64_t next_pending_id_ = 1;
  std::optional<TreeShape> tree_;  // once the tree is wired (or being wired); none: a star
  int tree_waiting_ = 0;           // nodes yet to say whether they attached to their parent
  std::chrono::steady_clock::time_point tree_started_at_;
  Phase phase_ = Phase::connecting;
  std::optional<JobPlan> plan_;
  FenceCollector<uint64_t> fences_;  // PMIx fences in progress, by sequence number
  // Direct-modex requests passed to the rank's node and not answered yet: (asking node, its
  // request id) -> the rank asked about. Failed at once when that rank fails (it may never
  // commit); answered with a timeout after SessionConfig::dmodex_timeout (as Slurm's PMIx plugin
  // does: a rank that is alive but never commits would hold its peers in MPI_Init for ever). In
  // arrival order too, which is deadline order.
  struct DirectModexWait {
    int rank = 0;
    std::chrono::steady_clock::time_point deadline;
  };
  using DirectModexKey = std::pair<int, long long>;
  std::map<DirectModexKey, DirectModexWait> dmodex_waiting_;
  std::set<int> dmodex_big_said_;  // ranks whose too-big direct-modex data was said (once each)
  bool dmodex_full_said_ = false;  // dmodex_max_waiting reached once: the note is given once
  std::deque<std::pair<DirectModexKey, std::chrono::steady_clock::time_point>> dmodex_deadlines_;
  void expireDirectModex(std::chrono::steady_clock::time_point now);
  std::unique_ptr<PmixDirectory> pmix_directory_;      // PMIx publish / lookup store
  std::unique_ptr<PmixCollectives> pmix_collectives_;  // PMIx connect / disconnect / subset fences
  std::unique_ptr<JobInspector> inspector_;  // stacks, status, --hang-timeout
  std::unique_ptr<nccl::JobCheck> nccl_check_;  // --nccl-check (launcher/job_session_nccl.cc)
  std::unique_ptr<RankFailurePolicy> rank_failures_;  // made with the plan
  // Failed ranks that end the job, held a moment so that the earliest, not the first reported,
  // is named (launcher/failure_blame.h)
  std::unique_ptr<FailureBlame> blame_;
  struct RecordedError {  // an exception a rank's error file holds (daemon/rank_error_file.h)
    std::string node, message;
    int64_t at_us = 0;
    std::vector<std::string> tail;
  };
  // Every rank's recorded exception that is not a peer's loss (launcher/peer_loss_text.h), and
  // the blamed rank's own, whatever it says (bounded).
  std::map<int, RecordedError> recorded_errors_;
  // The first of the job's ranks to end with status 0 while the others ran, and when (its
  // node's clock): a peer's "connection closed" after it is of it (explainPeerLoss).
  struct CleanEnd {
    int rank = -1;
    std::string node;
    int64_t at_us = 0;
  };
  std::optional<CleanEnd> first_clean_end_;
  int64_t blamed_ended_us_ = 0;  // when the failure the job ended for happened
  std::optional<std::chrono::steady_clock::time_point> teardown_at_;  // a failed rank's --event-grace
  void startNcclCheck();
  void onNcclSummary(const Json& msg);
  void startInspector();
  std::unique_ptr<CrossNodePreflight> cross_node_;  // RDMA write test, preflight's reachability
  JobOutcome outcome_;
  std::set<int> pmix_joined_;  // the job's ranks that called PMIx_Init
  // The job's ranks that ended with status 0 before PMIx_Init while no rank had called it yet:
  // an improper end once one does, as mpirun counts it (MPI_Init's fence would wait for them).
  struct EndedUnjoined {
    int rank = -1;
    std::string node;
    int64_t ended_us = 0;
  };
  std::vector<EndedUnjoined> ended_unjoined_;
  // --keep-going with MPI programs (daemon/mpi_process.h): ranks and spawned processes that are
  // MPI programs, and the first of the job's ranks that failed before PMIx_Init while none had
  // called it yet (an MPI rank calling it later would wait for it in MPI_Init's fence).
  std::set<int> mpi_ranks_;
  // Ranks that called MPI_Abort, and their stderr's last lines from their exit (a few): the
  // failure is the call, which comes before them.
  std::set<int> aborted_;
  std::map<int, std::vector<std::string>> abort_tails_;
  std::unique_ptr<RankFailure> failed_unjoined_;
  // Why --keep-going cannot keep the job going after `f` ("": it can).
  std::string mpiPeersWaitFor(const RankFailure& f);
  void onPmixClient(Link& link, int rank, bool mpi);
  // Nodes that cannot run the job, gathered until every node answered or a moment passed.
  struct PrepareFailure {
    int node = -1;
    Error why;
  };
  std::vector<PrepareFailure> prepare_failures_;
  static constexpr std::chrono::seconds kPrepareFailuresWait{2};
  std::chrono::steady_clock::time_point prepare_failures_due_{};
  void onPrepareFailed(Link& link, Error why);
  void prepareFailuresDue(std::chrono::steady_clock::time_point now);
  std::vector<PreflightItem> unstartedAsPreflight() const;
  void failImproperEnd(int rank, const std::string& node, int64_t ended_us, const std::string& what,
                       bool unfinalized = false);
  bool failed_ = false;
  bool pmix_clients_ = false;  // a rank called PMIx_Init: --event-grace applies
  int interrupts_ = 0;
  int first_interrupt_ = 0;  // its signal; a repeat within a second of it is the same request
  int kept_going_said_ = 0;  // --keep-going: later failed ranks named so far (a bounded number)
  uint64_t rejections_ = 0;  // a stranger can cause billions over days: never wraps
  uint64_t anomalies_ = 0;
  std::optional<LostNode> lost_node_;  // reported at lost_deadline_
  std::chrono::steady_clock::time_point lost_deadline_;
  std::chrono::steady_clock::time_point started_at_;
  std::chrono::steady_clock::time_point first_interrupt_at_;
  std::chrono::steady_clock::time_point prepare_sent_at_, start_sent_at_;
  std::chrono::steady_clock::time_point phase_deadline_;
  std::chrono::steady_clock::time_point last_ping_;
};

}  // namespace tlaunch
