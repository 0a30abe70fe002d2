#pragma once
// Internal to the PMIx glue: PmixServer's state, shared by the public API (pmix_server.cc) and
// the libpmix upcalls (pmix_upcalls.cc).
#include <pmix.h>
#include <pmix_server.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <optional>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/pmix_job_geometry.h"
#include "bootstrap/pmix_job_info.h"
#include "bootstrap/pmix_server.h"

namespace tlaunch {

// A libpmix completion callback and its context, to be called exactly once from the strand.
struct ModexReply {
  pmix_modex_cbfunc_t fn = nullptr;
  void* cbdata = nullptr;

  // libpmix keeps `data` until it calls the release function, which frees our copy.
  void operator()(pmix_status_t status, std::string data) const {
    if (!fn) return;
    if (status != PMIX_SUCCESS || data.empty()) {
      fn(status, nullptr, 0, cbdata, nullptr, nullptr);
      return;
    }
    auto* owned = new std::string(std::move(data));
    fn(PMIX_SUCCESS, owned->data(), owned->size(), cbdata, [](void* p) { delete static_cast<std::string*>(p); },
       owned);
  }
};

struct OpReply {
  pmix_op_cbfunc_t fn = nullptr;
  void* cbdata = nullptr;
  void operator()(pmix_status_t status) const {
    if (fn) fn(status, cbdata);
  }
};

struct LookupReply {
  pmix_lookup_cbfunc_t fn = nullptr;
  void* cbdata = nullptr;
  // libpmix packs `data` before it returns, so it is ours to free afterwards.
  void operator()(pmix_status_t status, pmix_pdata_t* data = nullptr, size_t ndata = 0) const {
    if (fn) fn(status, data, ndata, cbdata);
  }
};

// A group operation's completion (pmix_groups.cc): for a construct, every node's endpoint
// data and, when asked for, the context id the frontend gave the group.
struct GroupReply {
  pmix_info_cbfunc_t fn = nullptr;
  void* cbdata = nullptr;
  bool assign_context_id = false;
  void operator()(pmix_status_t status, std::string data, uint64_t context_id) const;
};

// A collective's completion: connect / disconnect answer a status, a fence answers data too,
// a group construct data and a context id.
struct CollectiveReply {
  ModexReply modex;
  OpReply op;
  GroupReply group;
  void operator()(pmix_status_t status, std::string data, uint64_t context_id = 0) const {
    if (modex.fn) modex(status, std::move(data));
    else if (group.fn) group(status, std::move(data), context_id);
    else op(status);
  }
};

struct InfoReply {
  pmix_info_cbfunc_t fn = nullptr;
  void* cbdata = nullptr;
  void operator()(pmix_status_t status) const {
    if (fn) fn(status, nullptr, 0, cbdata, nullptr, nullptr);
  }
};

// PMIx_Spawn's answer: the new namespace, or the status of its failure.
struct SpawnReply {
  pmix_spawn_cbfunc_t fn = nullptr;
  void* cbdata = nullptr;
  void operator()(pmix_status_t status, const std::string& nspace = {}) const;
};

struct PmixServer::Impl {
  // A namespace started by PMIx_Spawn (pmix_spawn.cc), its procs numbered from `base`.
  struct Spawned {
    PmixJobLayout layout;
    PmixJobGeometry geometry;
    pmix_nspace_t nspace;
    int base = 0;
  };
  struct Job {
    PmixJobLayout layout;
    PmixJobGeometry geometry;
    std::string shm_dir;
    pmix_nspace_t nspace;
    uint64_t next_fence_seq = 0;
    std::map<uint64_t, ModexReply> fences;  // local fences waiting for completeFence
    std::map<uint64_t, std::pair<pmix_status_t, std::string>> early_completions;  // before the local fence
    uint64_t next_request_id = 0;
    std::map<uint64_t, ModexReply> modex_requests;
    // Publish / lookup / unpublish / collectives waiting for the frontend, by request id.
    uint64_t next_op_id = 0;
    std::map<uint64_t, OpReply> publishes, unpublishes;
    std::map<uint64_t, LookupReply> lookups;
    std::map<uint64_t, CollectiveReply> collectives;
    std::map<uint64_t, InfoReply> job_controls;
    std::map<uint64_t, SpawnReply> spawns;
    std::vector<std::unique_ptr<Spawned>> spawned;
    // Spawned namespaces forgotten once their procs ended (deregisterSpawned): kept only to
    // name those procs (data they published, an event about them), never as known to libpmix.
    struct Retired {
      pmix_nspace_t nspace;
      int base = 0;
      int size = 0;
    };
    std::vector<Retired> retired;
  };

  PmixServerConfig config;
  Post post;
  Callbacks callbacks;
  bool tmpdir_created = false;
  bool wedged = false;  // a libpmix call was abandoned: do not wait for it again
  // Bumped at register and deregister. Upcalls capture it on libpmix's thread; a closure from
  // a job that has since been deregistered is dropped (its libpmix trackers are gone).
  std::atomic<uint64_t> generation{0};
  std::unique_ptr<Job> job;
  // serveDirectModex calls that arrived before registerJob.
  std::vector<std::pair<int, std::function<void(bool, std::string)>>> held_serves;
  bool job_ended = false;  // deregistered: a request now is answered "no data", never held

  // Procs <-> the control plane's numbers (see PmixServer; pmix_spawn.cc). -1 / false: a
  // namespace this node does not know, or a rank outside it.
  int numberOf(const pmix_proc_t& proc) const;
  // The namespace (the job's, base 0, or a spawned one) by name, or holding a number.
  struct NamespaceView {
    const char* nspace;
    const PmixJobGeometry* geometry;
    int base;
    bool is_job;
  };
  std::optional<NamespaceView> namespaceNamed(const pmix_nspace_t nspace) const;
  std::optional<NamespaceView> namespaceOfNumber(int number) const;
  // A proc's numbers, a wildcard expanded to its namespace ({-1} for the whole job).
  bool numbersOf(const pmix_proc_t& proc, std::vector<int>& out) const;
  bool procOf(int number, pmix_proc_t& out) const;
  bool isLocal(int number) const;
  bool knowsNamespace(const pmix_nspace_t nspace) const;

  // Strand side of the upcalls.
  void onSpawn(uint64_t gen, pmix_proc_t requester, PmixSpawnRequest request, SpawnReply reply);
  void onFence(uint64_t gen, const std::vector<pmix_proc_t>& procs, bool collect, std::string blob, ModexReply reply,
               std::optional<std::chrono::steady_clock::time_point> give_up_at = {});
  void onDirectModex(uint64_t gen, pmix_proc_t proc, ModexReply reply);
  void onAbort(uint64_t gen, pmix_proc_t proc, int status, std::string message, OpReply reply);
  void onClientFinalized(uint64_t gen, pmix_proc_t proc, OpReply reply);
  void onClientConnected(uint64_t gen, pmix_proc_t proc, OpReply reply);
  // The requests' `rank` is still the proc's rank in its namespace; these number it.
  void onPublish(uint64_t gen, pmix_proc_t from, PmixPublish request, OpReply reply);
  void onLookup(uint64_t gen, pmix_proc_t from, PmixLookup request, LookupReply reply);
  void onUnpublish(uint64_t gen, pmix_proc_t from, PmixUnpublish request, OpReply reply);
  // procs: the collective's participants as libpmix gave them.
  void onCollective(uint64_t gen, std::string kind, const std::vector<pmix_proc_t>& procs, std::string blob,
                    CollectiveReply reply, int timeout_s = 0,
                    std::optional<std::chrono::steady_clock::time_point> give_up_at = {});
  // Callbacks::answer_at: `answer` runs at `at` on the strand if this job is still the
  // registered one.
  void answerTimeoutAt(std::optional<std::chrono::steady_clock::time_point> at, std::function<void(Impl&)> answer);
  // Before libpmix's own timer of a connect: a quarter second covers a busy daemon io thread.
  static constexpr std::chrono::milliseconds kAheadOfLibpmix{250};
  // targets as libpmix gave them (none: the requester's whole namespace).
  void onJobControl(uint64_t gen, pmix_proc_t requester, const std::vector<pmix_proc_t>& targets, int signal,
                    InfoReply reply);

  // PMIx_server_register_nspace within config.op_bound; past it libpmix counts as wedged and
  // `info` is leaked (libpmix may still read it). Errors name the namespace.
  Result<void> registerNamespace(const pmix_nspace_t nspace, int nlocal, PmixInfoList&& info);
  // PMIx_server_register_client for each of `ranks` of `nspace`, each within config.op_bound;
  // stops at the first that fails (one that times out marks libpmix wedged). Errors name the rank.
  Result<void> registerClients(const pmix_nspace_t nspace, const std::vector<int>& ranks);
  // PMIx_server_deregister_nspace (its clients go with it) within `bound`; past it, wedged.
  Result<void> deregisterNamespace(const pmix_nspace_t nspace, std::chrono::milliseconds bound);

  bool isStale(uint64_t gen) const { return gen != generation.load(); }
  void failOutstanding(pmix_status_t status);
  std::string where() const { return "node " + config.node_name; }
  // Removes a namespace's directories (shm_dir may be ""), saying which one stayed.
  Result<void> removeDirs(const std::string& tmpdir, const std::string& shm_dir) const;
};

// The libpmix status a control-plane answer stands for (pmix_pubsub.cc).
pmix_status_t pmixStatusOf(PmixReply r);

// Waits for a libpmix op_cbfunc, at most `bound`. On timeout the waiter stays alive for the
// late callback (it owns a reference), and the caller must treat libpmix as wedged.
class BoundedPmixOp {
 public:
  // `start(cbfunc, cbdata)` issues the call and returns its immediate status.
  template <class Start>
  static std::optional<pmix_status_t> run(Start&& start, std::chrono::milliseconds bound) {
    auto state = std::make_shared<State>();
    auto* ref = new std::shared_ptr<State>(state);
    pmix_status_t rc = start(&BoundedPmixOp::done, static_cast<void*>(ref));
    if (rc != PMIX_SUCCESS) {  // the callback will not run
      delete ref;
      return rc == PMIX_OPERATION_SUCCEEDED ? PMIX_SUCCESS : rc;
    }
    std::unique_lock lock(state->mutex);
    if (!state->cv.wait_for(lock, bound, [&] { return state->finished; })) return std::nullopt;
    return state->status;
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable cv;
    bool finished = false;
    pmix_status_t status = PMIX_SUCCESS;
  };
  static void done(pmix_status_t status, void* cbdata) {
    auto* ref = static_cast<std::shared_ptr<State>*>(cbdata);
    std::shared_ptr<State> state = std::move(*ref);
    delete ref;
    {
      std::lock_guard lock(state->mutex);
      state->finished = true;
      state->status = status;
    }
    state->cv.notify_all();
  }
};

// libpmix calls its module functions without any context pointer, so the one server of this
// process is found here. Guarded because upcalls run on libpmix's thread.
struct PmixRegistry {
  std::mutex mutex;
  std::weak_ptr<PmixServer::Impl> current;
  // libpmix 4.2.2 cannot initialise its server twice in one process: after PMIx_server_finalize,
  // a second PMIx_server_init starts a listener thread that aborts in select() (fd -1).
  bool started = false;
};
PmixRegistry& pmixRegistry();

// The server module: every upcall copies its arguments and posts to the strand.
pmix_server_module_t makePmixModule();
// Adds publish / lookup / unpublish / connect / disconnect (pmix_pubsub.cc).
void addPubsubUpcalls(pmix_server_module_t& m);
// Adds job_control for signal / kill / terminate (pmix_job_control.cc).
void addJobControlUpcall(pmix_server_module_t& m);
// Adds group for PMIx_Group_construct / destruct (pmix_groups.cc).
void addGroupUpcall(pmix_server_module_t& m);
// An integer-like pmix_info_t's value (-1 for other types), as clients send them (pmix_pubsub.cc).
int infoInt(const pmix_info_t& info);
// Adds spawn for PMIx_Spawn (pmix_spawn.cc).
void addSpawnUpcall(pmix_server_module_t& m);
// Every other upcall answers PMIX_ERR_NOT_SUPPORTED at once (pmix_unsupported.cc).
void addUnsupportedUpcalls(pmix_server_module_t& m);

// Runs `fn(impl, generation)` on the strand. Never blocks: only copies and posts. Called on
// libpmix's thread.
template <class Fn>
pmix_status_t postToStrand(Fn fn) {
  std::shared_ptr<PmixServer::Impl> impl;
  {
    std::lock_guard lock(pmixRegistry().mutex);
    impl = pmixRegistry().current.lock();
  }
  if (!impl) return PMIX_ERR_INIT;
  std::weak_ptr<PmixServer::Impl> weak = impl;
  const uint64_t gen = impl->generation.load();
  impl->post([weak, gen, fn = std::move(fn)]() mutable {
    if (auto s = weak.lock()) fn(*s, gen);
  });
  return PMIX_SUCCESS;
}

}  // namespace tlaunch
