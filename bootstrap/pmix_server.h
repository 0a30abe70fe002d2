#pragma once
// The PMIx server of one tlaunchd (one node, one job at a time): Open MPI and mpi4py ranks
// direct-launch against it as under `srun --mpi=pmix`.
//
// It never does networking. Cross-node work leaves through Callbacks (a fence contribution, a
// direct-modex request) and comes back through complete*/serve* calls made by the daemon's
// control plane. libpmix runs its own progress thread; every upcall from it only copies its
// arguments and posts to the daemon's strand, so Callbacks always run there. All public
// methods must be called on that strand too (they are not thread-safe).
//
// One PmixServer per process, started once: libpmix 4.2.2 cannot restart its server after
// PMIx_server_finalize. It serves any number of jobs one after another. libpmix headers stay out
// of this file.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

struct PmixServerConfig {
  std::string node_name;  // this node's name exactly as in PmixJobLayout::node_names
  int node_index = 0;     // the server's rank; must equal PmixJobLayout::this_node
  // Per node, per daemon (PMIX_SERVER_TMPDIR). Created by start(); removed with everything in it
  // when the server is destroyed, so never point it at a shared directory.
  std::string tmpdir;
  uint32_t uid = 0, gid = 0;  // the ranks' credentials; PMIx checks them on connect (SO_PEERCRED)
  // This node's topology as hwloc v2 XML, if the daemon loaded it already: libpmix then reads it
  // instead of discovering the machine a second time (a full hwloc discovery with PCI: ~10 ms of
  // CPU, more in a VM, where each PCI config read traps). "" lets libpmix discover it.
  std::string topology_xml;
  // Upper bound for each blocking libpmix call in registerJob and ~PmixServer. libpmix 4.2.2 can
  // wedge in teardown; past the bound the call is abandoned, never waited for.
  std::chrono::milliseconds op_bound{5000};
};

struct PmixJobLayout {
  std::string nspace;                           // unique per job, e.g. "tlaunch.<jobid>"
  std::vector<std::string> node_names;          // node order; same names the daemons use
  std::vector<std::vector<int>> ranks_by_node;  // global ranks per node; position = local rank
  int this_node = 0;                            // index into node_names
  // Per node, per job: PMIX_TMPDIR / PMIX_NSDIR (Open MPI's session directories). Created by
  // registerJob, removed with everything in it by deregisterJob.
  std::string job_tmpdir;
  // Per node, per job, on tmpfs: Open MPI's shared-memory (vader) backing directory, so that
  // segments of nodes sharing /dev/shm and a host name never collide and are removed with it.
  // Empty: /dev/shm/[tlaunch.]<nspace>.<node name> (<job_tmpdir>/shm without /dev/shm).
  // Created by registerJob, removed by deregisterJob.
  std::string shm_dir;
  // OMPI_MCA_btl_tcp_if_include: interface names or subnets ("ib0", "10.1.0.0/16"), comma
  // separated; empty: Open MPI's choice. A /32 is refused (Open MPI 4.1 then matches everything).
  std::string tcp_if_include;
  // A namespace started by PMIx_Spawn (registerSpawned): its ranks 0..M-1 live on some of the
  // job's nodes; node_names lists only those.
  std::string parent_nspace;   // non-empty: spawned by parent_rank of this namespace (PMIX_PARENT_ID)
  uint32_t parent_rank = 0;
  std::vector<uint32_t> node_ids;        // PMIX_NODEID of each node_names entry (empty: its index)
  std::vector<uint32_t> appnum_of_rank;  // PMIX_APPNUM of each rank (empty: all app 0)
  // This node's hwloc topology as v2 XML (PMIX_HWLOC_XML_V2): Open MPI 4.1 loads it instead of
  // discovering the machine in every rank (150 sysfs reads each here; srun's plugin gives it
  // too). Empty: not given (the daemon's topology came from a file, not this machine).
  std::string topology_xml;
  // More ranks on this node than CPUs for them (PMIX_NODE_OVERSUBSCRIBED): Open MPI 5 then lets
  // waiting ranks yield the CPU (Open MPI 4.1 reads OMPI_MCA_mpi_yield_when_idle instead).
  bool oversubscribed = false;
};

// PMIx_Spawn from a local rank (MPI_Comm_spawn): the apps to start in a new namespace.
struct PmixSpawnApp {
  std::string cmd;
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "K=V" the caller adds (Open MPI: its parent port)
  std::string cwd;                // PMIX_WDIR; empty: the job's
  int maxprocs = 1;
  std::vector<std::string> hosts;  // PMIX_HOST / PMIX_ADD_HOST (comma lists split); empty: any node
};
struct PmixSpawnRequest {
  int requester = 0;  // tlaunch's number for the calling proc (see PmixServer)
  std::vector<PmixSpawnApp> apps;
  std::vector<std::string> hosts;  // job-level PMIX_HOST, for apps without their own
};

// Publish / lookup / unpublish (PMIx_Publish & co., MPI_Publish_name): the data lives at the
// frontend; requests travel as control-plane messages. Ranges and persistence are PMIx's
// PMIX_RANGE_* / PMIX_PERSIST_* numbers; values are opaque packed pmix_info_t.
// proc_lost: a participant of the collective has failed (PMIX_ERR_LOST_CONNECTION, as libpmix
// answers a local collective whose member's connection dropped).
enum class PmixReply { ok = 0, not_found, timeout, duplicate, bad_param, not_supported, proc_lost, no_room };
// The last of them: a peer's number above it is not a reply (daemon/pmix_pubsub_wire.cc).
inline constexpr PmixReply kLastPmixReply = PmixReply::no_room;

struct PmixPublish {
  int rank = 0;                       // the publisher
  int range = 4;                      // PMIX_RANGE_SESSION unless the client says otherwise
  int persistence = 4;                // PMIX_PERSIST_SESSION
  std::vector<std::pair<std::string, std::string>> values;  // key, packed pmix_info_t
};

struct PmixLookup {
  int rank = 0;  // the requester
  std::vector<std::string> keys;
  int range = 4;
  int wait = -1;       // -1: answer at once; 0: wait for every key; n: for n of them
  int timeout_s = 0;   // with wait: give up after this many seconds (0: never)
};

struct PmixUnpublish {
  int rank = 0;
  std::vector<std::string> keys;  // empty: everything the rank published
  int range = 0;                  // PMIX_RANGE_UNDEF: any range
};

// A collective among some ranks of the job (see Callbacks::collective).
struct PmixCollective {
  std::string kind;        // "connect", "disconnect", "fence", "group_construct/NAME", "group_destruct/NAME"
  std::vector<int> ranks;  // sorted; {-1}: all
  std::string blob;        // this node's contribution (fences)
  int timeout_s = 0;       // PMIX_TIMEOUT: give up after this many seconds (0: never)
};

struct PmixFound {
  std::string key;
  int publisher = 0;
  std::string value;  // packed pmix_info_t, as in PmixPublish::values
};

class PmixServer {
 public:
  // Runs a closure on the daemon's Asio strand. Called from libpmix's thread: must be
  // thread-safe (asio::post is). A closure that is never run (the io_context stopped) is dropped.
  using Post = std::function<void(std::function<void()>)>;

  // Invoked on the strand only. Empty functions are allowed (the event is then ignored).
  struct Callbacks {
    // This node's contribution to fence number fence_seq (0, 1, 2, ... per job; every node
    // sees the job's fences in the same order). Gather all nodes' blobs and answer with
    // completeFence(fence_seq, ...) on every node. Exchange even when blob is empty: a fence
    // is also a barrier.
    std::function<void(uint64_t fence_seq, std::string blob, bool collect)> fence_contribution;
    // A local rank wants the data of a rank on another node: ask the owning node's daemon to
    // serveDirectModex(target_rank, ...) and answer with completeDirectModex(request_id, ...).
    std::function<void(uint64_t request_id, int target_rank)> direct_modex_request;
    // MPI_Abort / PMIx_Abort from a local rank: kill the job everywhere; `status` is its exit code.
    std::function<void(int rank, int status, std::string message)> abort;
    std::function<void(int rank)> client_connected;  // PMIx_Init of a local rank succeeded
    std::function<void(int rank)> client_finalized;  // clean PMIx_Finalize of a local rank
    // PMIx_Publish / PMIx_Lookup / PMIx_Unpublish of a local rank: answer with
    // completePublish / completeLookup / completeUnpublish(request_id, ...). Empty: the
    // client gets PMIX_ERR_NOT_SUPPORTED at once.
    std::function<void(uint64_t request_id, PmixPublish)> publish;
    std::function<void(uint64_t request_id, PmixLookup)> lookup;
    std::function<void(uint64_t request_id, PmixUnpublish)> unpublish;
    // A collective among some ranks of the job, entered once per node that hosts any of them:
    // PMIx_Connect / PMIx_Disconnect (kind "connect" / "disconnect") and fences over a subset
    // of the ranks ("fence", with this node's blob). Answer with completeCollective(request_id,
    // ...) once every node hosting one of them entered, or its timeout passed.
    std::function<void(uint64_t request_id, PmixCollective)> collective;
    // PMIx_Job_control signal / kill / terminate of ranks of the job ({-1}: all): deliver
    // `signal` to them and answer completeJobControl(request_id, ...). Other directives are
    // refused before they get here.
    std::function<void(uint64_t request_id, int requester, std::vector<int> ranks, int signal)> job_control;
    // PMIx_Spawn: place and start the apps, registerSpawned on every node, then answer with
    // completeSpawn(request_id, ...). Empty: PMIX_ERR_NOT_SUPPORTED at once.
    std::function<void(uint64_t request_id, PmixSpawnRequest)> spawn;
    // A client's PMIX_TIMEOUT on a connect or a fence: run `answer` on the strand at `at`; it
    // answers "timed out" unless the request has been answered by then. A fence's timeout is
    // the host's once the node's contributions are in (libpmix deletes its own timer before
    // the upcall). A connect's is not: libpmix 4.2.2 arms a timer of its own at the upcall that
    // answers the clients and drops its tracker, and an answer from us after that makes it
    // process the tracker again (a freed tracker read, its list of collectives corrupted: the
    // daemon dies at the next fence), so `at` comes a little before that timer, and our answer
    // deletes it. Empty: timeouts are the frontend's alone.
    std::function<void(std::chrono::steady_clock::time_point at, std::function<void()> answer)> answer_at;
  };

  // PMIx_server_init; fails if a server was started before in this process. Edits this process's
  // environment first (call it before other threads read the environment): removes inherited
  // PMIx client variables (PMIX_* but PMIX_MCA_*, e.g. from `srun --mpi=pmix`), which break
  // PMIx_server_init, and sets PMIX_MCA_psec=native and
  // PMIX_MCA_pmix_server_fence_localonly_opt=0 (every fence goes through Callbacks).
  static Result<std::unique_ptr<PmixServer>> start(const PmixServerConfig& config, Post post,
                                                   Callbacks callbacks);

  // Procs are numbered for the control plane: the job's ranks are 0..N-1, and the ranks of a
  // namespace started by PMIx_Spawn follow at the base the frontend gave it (base + rank). Every
  // `rank` in Callbacks and in the calls below is such a number.

  // register_nspace + register_client (with config uid/gid) for every local rank. Call before
  // forking any rank. One job at a time; deregisterJob before registering the next. Held
  // serveDirectModex requests are served once it succeeds.
  Result<void> registerJob(const PmixJobLayout& layout);

  // A namespace started by PMIx_Spawn while the job runs, on every node of the job (so that
  // connect, get and fences across namespaces know it), with its ranks numbered from `base`.
  // layout.this_node is -1 on a node that hosts none of its ranks. Its directories live in the
  // job's and go with it.
  Result<void> registerSpawned(const PmixJobLayout& layout, int base);
  // Every process of spawned namespace `nspace` has ended (the frontend counts their exits):
  // libpmix forgets it, which frees its shared-memory store (two 4 MiB segments per namespace
  // on the nodes that hosted it), and its directories go. A job that spawns in a loop
  // (mpi4py.futures) would otherwise keep every namespace it ever spawned until it ends. As
  // PRRTE, which cleans up a spawned job once its processes have terminated. Not waited for.
  // Its procs keep their names (lookups of what they published, events about them); a request
  // for their data is answered "not found".
  Result<void> deregisterSpawned(const std::string& nspace);
  // The answer to Callbacks::spawn: the new namespace's name, or why it failed.
  void completeSpawn(uint64_t request_id, PmixReply status, const std::string& nspace);

  // Adds what only this node knows at fork time to `env` ("K=V" strings): PMIx_server_setup_fork's
  // variables and the vader backing directory (Open MPI's other settings are planned). Inherited
  // PMIX_* (except PMIX_MCA_*) that would point the rank at another server are dropped first.
  Result<void> setupFork(int rank, std::vector<std::string>& env);

  // From the control plane: the fence is complete everywhere. all_blobs is the concatenation
  // of every node's blob (any order, this node's included). ok=false fails the fence in every
  // local rank. Unknown sequence numbers are kept for a local fence still to come; completions
  // of fences already completed are ignored.
  void completeFence(uint64_t fence_seq, bool ok, std::string all_blobs);
  // The same with a reason: PmixReply::proc_lost when a rank of the job has failed.
  void completeFence(uint64_t fence_seq, PmixReply status, std::string all_blobs);

  // A rank of the job failed (on any node): every local client that registered an event
  // handler for it gets PMIX_ERR_PROC_ABORTED (aborted: PMIx_Abort, or killed by SIGABRT) or
  // PMIX_PROC_TERMINATED (a non-zero exit, any other signal), with the rank as
  // PMIX_EVENT_AFFECTED_PROC and `exit_status` (128+N for signal N) as PMIX_EXIT_CODE. libpmix
  // keeps the event for clients that register later. Returns at once.
  void notifyRankFailed(int rank, bool aborted, int exit_status);
  // A local rank failed and has exited: libpmix forgets it, so that a fence listing it by rank
  // reaches Callbacks (and fails there) instead of waiting on this node for a client that is
  // gone. Call it a moment after the exit: libpmix must have seen the connection drop first,
  // or it keeps counting the rank in fences over the whole job.
  void forgetFailedRank(int rank);

  // Owner side of a direct modex: fetch a local rank's data (libpmix waits until that rank
  // has committed). `reply` runs on the strand; ok=false if the rank is not local. A request
  // that arrives before registerJob (other nodes' ranks may start first) waits for it. It can
  // wait forever if the rank never commits: the frontend answers the requester with a timeout.
  void serveDirectModex(int rank, std::function<void(bool ok, std::string data)> reply);
  // Requester side: the answer to Callbacks::direct_modex_request(request_id, ...).
  // ok, not_found or timeout (the owner did not answer in time).
  void completeDirectModex(uint64_t request_id, PmixReply status, std::string data);

  // Answers to Callbacks::publish / lookup / unpublish / collective.
  void completePublish(uint64_t request_id, PmixReply status);
  void completeLookup(uint64_t request_id, PmixReply status, const std::vector<PmixFound>& found);
  void completeUnpublish(uint64_t request_id, PmixReply status);
  // context_id: the number the frontend gave this collective (a group's PMIX_GROUP_CONTEXT_ID).
  void completeCollective(uint64_t request_id, PmixReply status, std::string all_blobs, uint64_t context_id = 0);
  void completeJobControl(uint64_t request_id, PmixReply status);

  // After every local rank has been reaped: fails outstanding fences and direct modex,
  // deregisters the nspace (and with it the clients), removes job_tmpdir and shm_dir.
  // Returns an error if libpmix did not answer within `bound`; the directories are removed
  // anyway, and libpmix counts as stuck (no further job; ~PmixServer skips finalize).
  Result<void> deregisterJob(std::chrono::milliseconds bound);

  // Deregisters a job still registered, runs PMIx_server_finalize on a helper thread for at most
  // op_bound (then abandons it: the daemon should _exit, not run static destructors), removes
  // tmpdir.
  ~PmixServer();

  PmixServer(const PmixServer&) = delete;
  PmixServer& operator=(const PmixServer&) = delete;

  struct Impl;

 private:
  explicit PmixServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;  // shared only so that posted closures can detect destruction
};

}  // namespace tlaunch
