#include "bootstrap/pmix_server.h"

#include <pmix.h>
#include <pmix_server.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "bootstrap/pmix_dirs.h"
#include "bootstrap/pmix_env.h"
#include "bootstrap/pmix_job_geometry.h"
#include "bootstrap/pmix_job_info.h"

namespace tlaunch {
namespace {

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

std::string pmixError(const char* call, pmix_status_t rc) {
  return std::string(call) + " failed: " + PMIx_Error_string(rc);
}

// Waits for a libpmix op_cbfunc, at most `bound`. On timeout the waiter stays alive for the
// late callback (it owns a reference), and the caller must treat libpmix as wedged.
class BoundedOp {
 public:
  // `start(cbfunc, cbdata)` issues the call and returns its immediate status.
  template <class Start>
  static std::optional<pmix_status_t> run(Start&& start, std::chrono::milliseconds bound) {
    auto state = std::make_shared<State>();
    auto* ref = new std::shared_ptr<State>(state);
    pmix_status_t rc = start(&BoundedOp::done, static_cast<void*>(ref));
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

}  // namespace

struct PmixServer::Impl {
  struct Job {
    PmixJobLayout layout;
    PmixJobGeometry geometry;
    std::string shm_dir;
    pmix_nspace_t nspace;
    uint64_t next_fence_seq = 0;
    std::map<uint64_t, ModexReply> fences;  // local fences waiting for completeFence
    std::map<uint64_t, std::pair<bool, std::string>> early_completions;
    uint64_t next_request_id = 0;
    std::map<uint64_t, ModexReply> modex_requests;
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

  // Strand side of the upcalls.
  void onFence(uint64_t gen, std::vector<pmix_proc_t> procs, bool collect, std::string blob, ModexReply reply);
  void onDirectModex(uint64_t gen, pmix_proc_t proc, ModexReply reply);
  void onAbort(uint64_t gen, pmix_rank_t rank, int status, std::string message, OpReply reply);
  void onClientFinalized(uint64_t gen, pmix_rank_t rank, OpReply reply);
  void onClientConnected(uint64_t gen, pmix_rank_t rank, OpReply reply);

  bool isStale(uint64_t gen) const { return gen != generation.load(); }
  void failOutstanding(pmix_status_t status);
  std::string where() const { return "node " + config.node_name; }
};

namespace {

// libpmix calls its module functions without any context pointer, so the one server of this
// process is found here. Guarded because upcalls run on libpmix's thread.
struct Registry {
  std::mutex mutex;
  std::weak_ptr<PmixServer::Impl> current;
  bool initialised = false;  // between PMIx_server_init and the end of PMIx_server_finalize
  bool wedged = false;       // a finalize was abandoned: libpmix is unusable in this process
};
Registry& registry() {
  static Registry r;
  return r;
}

// Runs `fn(impl)` on the strand. Never blocks: only copies and posts.
template <class Fn>
pmix_status_t postToStrand(Fn fn) {
  std::shared_ptr<PmixServer::Impl> impl;
  {
    std::lock_guard lock(registry().mutex);
    impl = registry().current.lock();
  }
  if (!impl) return PMIX_ERR_INIT;
  std::weak_ptr<PmixServer::Impl> weak = impl;
  const uint64_t gen = impl->generation.load();
  impl->post([weak, gen, fn = std::move(fn)]() mutable {
    if (auto s = weak.lock()) fn(*s, gen);
  });
  return PMIX_SUCCESS;
}

pmix_status_t upFence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[], size_t ninfo, char* data,
                      size_t ndata, pmix_modex_cbfunc_t cbfunc, void* cbdata) {
  // Everything libpmix passes belongs to it: copy before returning.
  std::vector<pmix_proc_t> participants(procs, procs + nprocs);
  bool collect = false;
  for (size_t i = 0; i < ninfo; ++i)
    if (PMIX_CHECK_KEY(&info[i], PMIX_COLLECT_DATA)) collect = PMIX_INFO_TRUE(&info[i]);
  std::string blob = (data && ndata) ? std::string(data, ndata) : std::string();
  ModexReply reply{cbfunc, cbdata};
  return postToStrand([participants, collect, blob, reply](PmixServer::Impl& s, uint64_t gen) mutable {
    s.onFence(gen, std::move(participants), collect, std::move(blob), reply);
  });
}

pmix_status_t upDirectModex(const pmix_proc_t* proc, const pmix_info_t[], size_t, pmix_modex_cbfunc_t cbfunc,
                            void* cbdata) {
  pmix_proc_t target = *proc;
  ModexReply reply{cbfunc, cbdata};
  return postToStrand(
      [target, reply](PmixServer::Impl& s, uint64_t gen) { s.onDirectModex(gen, target, reply); });
}

pmix_status_t upAbort(const pmix_proc_t* proc, void*, int status, const char msg[], pmix_proc_t[], size_t,
                      pmix_op_cbfunc_t cbfunc, void* cbdata) {
  // The procs to terminate are ignored: the daemon ends the whole job, as for any failed rank.
  pmix_rank_t rank = proc->rank;
  std::string message = msg ? msg : "";
  OpReply reply{cbfunc, cbdata};
  return postToStrand([rank, status, message, reply](PmixServer::Impl& s, uint64_t gen) {
    s.onAbort(gen, rank, status, message, reply);
  });
}

pmix_status_t upClientFinalized(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  pmix_rank_t rank = proc->rank;
  OpReply reply{cbfunc, cbdata};
  return postToStrand([rank, reply](PmixServer::Impl& s, uint64_t gen) { s.onClientFinalized(gen, rank, reply); });
}

// libpmix 4.2.2 passes cbfunc == NULL here and drops the client on any status other than
// PMIX_SUCCESS / PMIX_OPERATION_SUCCEEDED.
pmix_status_t upClientConnected(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  pmix_rank_t rank = proc->rank;
  OpReply reply{cbfunc, cbdata};
  pmix_status_t rc =
      postToStrand([rank, reply](PmixServer::Impl& s, uint64_t gen) { s.onClientConnected(gen, rank, reply); });
  return rc == PMIX_SUCCESS || cbfunc ? rc : PMIX_SUCCESS;
}

pmix_server_module_t makeModule() {
  pmix_server_module_t m{};  // a NULL entry makes libpmix answer PMIX_ERR_NOT_SUPPORTED
  m.client_connected = upClientConnected;
  m.client_finalized = upClientFinalized;
  m.abort = upAbort;
  m.fence_nb = upFence;
  m.direct_modex = upDirectModex;
  return m;
}

bool isWildcardFenceOf(const std::vector<pmix_proc_t>& procs, const pmix_nspace_t nspace) {
  return procs.size() == 1 && procs[0].rank == PMIX_RANK_WILDCARD && PMIX_CHECK_NSPACE(procs[0].nspace, nspace);
}

std::string defaultShmDir(const PmixJobLayout& layout) {
  std::string base = "/dev/shm";
  if (access(base.c_str(), W_OK) != 0) return layout.job_tmpdir + "/shm";
  std::string name = "tlaunch." + layout.nspace + "." + layout.node_names[layout.this_node];
  for (char& c : name)
    if (c == '/') c = '_';
  return base + "/" + name;
}

}  // namespace

// ---- strand side ----------------------------------------------------------------------------

void PmixServer::Impl::onFence(uint64_t gen, std::vector<pmix_proc_t> procs, bool collect, std::string blob,
                               ModexReply reply) {
  if (isStale(gen)) return;
  if (!job) return reply(PMIX_ERR_NOT_FOUND, {});
  // Open MPI only fences its whole namespace. A subset fence would not be seen by every node,
  // which breaks the shared sequence numbers.
  if (!isWildcardFenceOf(procs, job->nspace)) return reply(PMIX_ERR_NOT_SUPPORTED, {});
  const uint64_t seq = job->next_fence_seq++;
  if (auto early = job->early_completions.find(seq); early != job->early_completions.end()) {
    auto [ok, all] = std::move(early->second);
    job->early_completions.erase(early);
    reply(ok ? PMIX_SUCCESS : PMIX_ERROR, std::move(all));
    return;
  }
  job->fences.emplace(seq, reply);
  if (callbacks.fence_contribution) callbacks.fence_contribution(seq, std::move(blob), collect);
}

void PmixServer::Impl::onDirectModex(uint64_t gen, pmix_proc_t proc, ModexReply reply) {
  if (isStale(gen)) return;
  if (!job || !PMIX_CHECK_NSPACE(proc.nspace, job->nspace) || proc.rank >= job->geometry.job_size)
    return reply(PMIX_ERR_NOT_FOUND, {});
  const uint64_t id = job->next_request_id++;
  job->modex_requests.emplace(id, reply);
  if (callbacks.direct_modex_request) callbacks.direct_modex_request(id, static_cast<int>(proc.rank));
}

void PmixServer::Impl::onAbort(uint64_t gen, pmix_rank_t rank, int status, std::string message, OpReply reply) {
  if (isStale(gen)) return;
  if (callbacks.abort) callbacks.abort(static_cast<int>(rank), status, std::move(message));
  reply(PMIX_SUCCESS);  // releases the client, which then exits with `status`
}

void PmixServer::Impl::onClientFinalized(uint64_t gen, pmix_rank_t rank, OpReply reply) {
  if (isStale(gen)) return;
  if (callbacks.client_finalized) callbacks.client_finalized(static_cast<int>(rank));
  reply(PMIX_SUCCESS);  // the client blocks in PMIx_Finalize until this
}

void PmixServer::Impl::onClientConnected(uint64_t gen, pmix_rank_t rank, OpReply reply) {
  if (isStale(gen)) return;
  if (callbacks.client_connected) callbacks.client_connected(static_cast<int>(rank));
  reply(PMIX_SUCCESS);
}

void PmixServer::Impl::failOutstanding(pmix_status_t status) {
  if (!job) return;
  auto fences = std::move(job->fences);
  auto requests = std::move(job->modex_requests);
  job->fences.clear();
  job->modex_requests.clear();
  for (auto& [seq, reply] : fences) reply(status, {});
  for (auto& [id, reply] : requests) reply(status, {});
}

// ---- public API -----------------------------------------------------------------------------

PmixServer::PmixServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<PmixServer>> PmixServer::start(const PmixServerConfig& config, Post post,
                                                      Callbacks callbacks) {
  const std::string where = "node " + config.node_name;
  if (config.node_name.empty()) return fail(Errc::internal, "PMIx server: no node name");
  if (!post) return fail(Errc::internal, "PMIx server on " + where + ": no Post function");
  if (config.tmpdir.empty() || config.tmpdir.front() != '/' || config.tmpdir.find_first_not_of('/') == std::string::npos)
    return fail(Errc::internal, "PMIx server on " + where + ": tmpdir '" + config.tmpdir + "' must be absolute");
  // Ranks inherit our credentials unless we are root; libpmix rejects a client whose uid/gid
  // differ from register_client's, and after such a rejection it cannot be torn down.
  if (geteuid() != 0 && (config.uid != geteuid() || config.gid != getegid()))
    return fail(Errc::internal,
                "PMIx server on " + where + ": ranks registered as uid " + std::to_string(config.uid) + " gid " +
                    std::to_string(config.gid) + " but the daemon runs as uid " + std::to_string(geteuid()) +
                    " gid " + std::to_string(getegid()) + " and cannot change their credentials",
                "register the daemon's own uid and gid");

  auto impl = std::make_shared<Impl>();
  impl->config = config;
  impl->post = std::move(post);
  impl->callbacks = std::move(callbacks);
  {
    std::lock_guard lock(registry().mutex);
    if (registry().wedged)
      return fail(Errc::internal, "PMIx server on " + where + ": libpmix did not shut down earlier in this process",
                  "restart the daemon");
    if (registry().initialised)
      return fail(Errc::internal, "PMIx server on " + where + ": a PMIx server already runs in this process");
    registry().initialised = true;
    registry().current = impl;
  }
  auto undo = [&] {
    std::lock_guard lock(registry().mutex);
    registry().initialised = false;
    registry().current.reset();
  };

  const bool existed = access(config.tmpdir.c_str(), F_OK) == 0;
  if (auto ok = makeRankDir(config.tmpdir, config.uid, config.gid, config.node_name); !ok) {
    undo();
    return tl::unexpected(ok.error());
  }
  impl->tmpdir_created = !existed;

  // Deterministic security (no munge attempt) and no shared-memory dstore files (PMIX.md §2.2/2.3).
  setenv("PMIX_MCA_psec", "native", 0);
  setenv("PMIX_MCA_gds", "hash", 0);

  PmixInfoList info;
  info.addString(PMIX_SERVER_TMPDIR, config.tmpdir);
  info.addString(PMIX_SYSTEM_TMPDIR, config.tmpdir);
  info.addBool(PMIX_SERVER_TOOL_SUPPORT, false);
  info.addBool(PMIX_SERVER_SYSTEM_SUPPORT, false);
  info.addString(PMIX_SERVER_NSPACE, "tlaunchd." + config.node_name + "." + std::to_string(getpid()));
  info.addRank(PMIX_SERVER_RANK, static_cast<pmix_rank_t>(config.node_index));
  info.addString(PMIX_HOSTNAME, config.node_name);
  info.addUint32(PMIX_NODEID, static_cast<uint32_t>(config.node_index));
  if (geteuid() == 0 && config.uid != 0) info.addUint32(PMIX_USERID, config.uid);

  static pmix_server_module_t module = makeModule();
  pmix_status_t rc = PMIx_server_init(&module, info.data(), info.size());
  if (rc != PMIX_SUCCESS) {
    if (impl->tmpdir_created) removeTree(config.tmpdir);
    undo();
    return fail(Errc::internal, "PMIx server on " + where + ": " + pmixError("PMIx_server_init", rc));
  }
  return std::unique_ptr<PmixServer>(new PmixServer(std::move(impl)));
}

Result<void> PmixServer::registerJob(const PmixJobLayout& layout) {
  Impl& s = *impl_;
  const std::string where = s.where();
  if (s.job) return fail(Errc::internal, "PMIx on " + where + ": job " + s.job->layout.nspace + " is still registered");
  if (s.wedged) return fail(Errc::internal, "PMIx on " + where + ": libpmix stopped answering", "restart the daemon");
  auto geometry = planPmixJob(layout);
  if (!geometry) return tl::unexpected(geometry.error());
  if (layout.node_names[layout.this_node] != s.config.node_name || layout.this_node != s.config.node_index)
    return fail(Errc::internal, "PMIx on " + where + ": job layout places this daemon at node " +
                                    std::to_string(layout.this_node) + " (" + layout.node_names[layout.this_node] +
                                    "), the server was started as node " + std::to_string(s.config.node_index));

  auto job = std::make_unique<Impl::Job>();
  job->layout = layout;
  job->geometry = std::move(*geometry);
  job->shm_dir = layout.shm_dir.empty() ? defaultShmDir(layout) : layout.shm_dir;
  PMIX_LOAD_NSPACE(job->nspace, layout.nspace.c_str());

  auto removeDirs = [&] {
    removeTree(layout.job_tmpdir);
    removeTree(job->shm_dir);
  };
  for (const std::string& dir : {layout.job_tmpdir, job->shm_dir}) {
    if (auto ok = makeRankDir(dir, s.config.uid, s.config.gid, s.config.node_name); !ok) {
      removeDirs();
      return tl::unexpected(ok.error());
    }
  }
  auto info = buildJobInfo(layout, job->geometry);
  if (!info) {
    removeDirs();
    return tl::unexpected(info.error());
  }

  const auto nlocal = static_cast<int>(job->geometry.local_ranks.size());
  auto rc = BoundedOp::run(
      [&](pmix_op_cbfunc_t cb, void* cbd) {
        return PMIx_server_register_nspace(job->nspace, nlocal, info->data(), info->size(), cb, cbd);
      },
      s.config.op_bound);
  if (!rc) {
    new PmixInfoList(std::move(*info));  // libpmix may still read it: leak it on purpose
    s.wedged = true;
    removeDirs();
    return fail(Errc::internal, "PMIx on " + where + ": PMIx_server_register_nspace(" + layout.nspace +
                                    ") did not complete in time");
  }
  if (*rc != PMIX_SUCCESS) {
    removeDirs();
    return fail(Errc::internal, "PMIx on " + where + ": " + pmixError("PMIx_server_register_nspace", *rc));
  }
  s.generation++;
  s.job = std::move(job);

  // Every local client before any fork: a client fencing before its siblings are registered
  // can hang the fence (openpmix#89).
  for (int rank : s.job->geometry.local_ranks) {
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, s.job->nspace, static_cast<pmix_rank_t>(rank));
    auto crc = BoundedOp::run(
        [&](pmix_op_cbfunc_t cb, void* cbd) {
          return PMIx_server_register_client(&proc, s.config.uid, s.config.gid, nullptr, cb, cbd);
        },
        s.config.op_bound);
    if (!crc || *crc != PMIX_SUCCESS) {
      std::string why = crc ? pmixError("PMIx_server_register_client", *crc) : "PMIx_server_register_client timed out";
      (void)deregisterJob(s.config.op_bound);
      return fail(Errc::internal, "PMIx on " + where + ": rank " + std::to_string(rank) + ": " + why);
    }
  }
  return {};
}

Result<void> PmixServer::setupFork(int rank, std::vector<std::string>& env) {
  Impl& s = *impl_;
  if (!s.job || rank < 0 || !s.job->geometry.isLocal(rank))
    return fail(Errc::internal, "PMIx on " + s.where() + ": rank " + std::to_string(rank) + " is not registered here");
  dropInheritedPmixVars(env);

  // PMIx_server_setup_fork appends to / replaces in a malloc'ed NULL-terminated array.
  char** envp = static_cast<char**>(calloc(env.size() + 1, sizeof(char*)));
  for (size_t i = 0; i < env.size(); ++i) envp[i] = strdup(env[i].c_str());
  pmix_proc_t proc;
  PMIX_PROC_LOAD(&proc, s.job->nspace, static_cast<pmix_rank_t>(rank));
  pmix_status_t rc = PMIx_server_setup_fork(&proc, &envp);
  env.clear();
  for (char** p = envp; p && *p; ++p) {
    env.emplace_back(*p);
    free(*p);
  }
  free(envp);
  if (rc != PMIX_SUCCESS)
    return fail(Errc::internal, "PMIx on " + s.where() + ": rank " + std::to_string(rank) + ": " +
                                    pmixError("PMIx_server_setup_fork", rc));

  // Without a launcher it recognises, Open MPI 4.1 makes every rank a singleton (PMIX.md §2.1).
  setEnv(env, "OMPI_MCA_schizo", "^orte");
  // Shared-memory segments are named after the host name: per node, per job directory.
  setEnv(env, "OMPI_MCA_btl_vader_backing_directory", s.job->shm_dir);
  if (!s.job->layout.tcp_if_include.empty() && !findEnv(env, "OMPI_MCA_btl_tcp_if_include"))
    setEnv(env, "OMPI_MCA_btl_tcp_if_include", s.job->layout.tcp_if_include);
  return {};
}

void PmixServer::completeFence(uint64_t fence_seq, bool ok, std::string all_blobs) {
  Impl& s = *impl_;
  if (!s.job) return;
  auto it = s.job->fences.find(fence_seq);
  if (it == s.job->fences.end()) {
    // Not entered locally yet: keep it for onFence. A completion for an old fence is a duplicate.
    if (fence_seq >= s.job->next_fence_seq) s.job->early_completions[fence_seq] = {ok, std::move(all_blobs)};
    return;
  }
  ModexReply reply = it->second;
  s.job->fences.erase(it);
  reply(ok ? PMIX_SUCCESS : PMIX_ERROR, std::move(all_blobs));
}

void PmixServer::serveDirectModex(int rank, std::function<void(bool ok, std::string data)> reply) {
  Impl& s = *impl_;
  if (!s.job || rank < 0 || !s.job->geometry.isLocal(rank)) {
    s.post([reply = std::move(reply)] { reply(false, {}); });
    return;
  }
  struct Request {
    std::weak_ptr<Impl> server;
    std::function<void(bool, std::string)> reply;
  };
  auto* req = new Request{impl_, std::move(reply)};
  pmix_proc_t proc;
  PMIX_PROC_LOAD(&proc, s.job->nspace, static_cast<pmix_rank_t>(rank));
  // The response runs on libpmix's thread, possibly much later (once the rank has committed).
  auto done = [](pmix_status_t status, char* data, size_t size, void* cbdata) {
    std::unique_ptr<Request> r(static_cast<Request*>(cbdata));
    auto server = r->server.lock();
    if (!server) return;
    bool ok = status == PMIX_SUCCESS;
    std::string blob = (ok && data && size) ? std::string(data, size) : std::string();
    std::weak_ptr<Impl> weak = server;
    server->post([weak, reply = std::move(r->reply), ok, blob = std::move(blob)]() mutable {
      if (weak.lock()) reply(ok, std::move(blob));
    });
  };
  pmix_status_t rc = PMIx_server_dmodex_request(&proc, done, req);
  if (rc != PMIX_SUCCESS) {
    auto reply_fn = std::move(req->reply);
    delete req;
    s.post([reply_fn = std::move(reply_fn)] { reply_fn(false, {}); });
  }
}

void PmixServer::completeDirectModex(uint64_t request_id, bool ok, std::string data) {
  Impl& s = *impl_;
  if (!s.job) return;
  auto it = s.job->modex_requests.find(request_id);
  if (it == s.job->modex_requests.end()) return;
  ModexReply reply = it->second;
  s.job->modex_requests.erase(it);
  reply(ok ? PMIX_SUCCESS : PMIX_ERR_NOT_FOUND, std::move(data));
}

Result<void> PmixServer::deregisterJob(std::chrono::milliseconds bound) {
  Impl& s = *impl_;
  if (!s.job) return {};
  s.failOutstanding(PMIX_ERR_TIMEOUT);
  std::unique_ptr<Impl::Job> job = std::move(s.job);
  s.generation++;

  Result<void> result;
  if (!s.wedged) {
    // Also removes the job's clients (PMIx_server_deregister_client is for exceptions only).
    auto rc = BoundedOp::run(
        [&](pmix_op_cbfunc_t cb, void* cbd) {
          PMIx_server_deregister_nspace(job->nspace, cb, cbd);
          return PMIX_SUCCESS;
        },
        bound);
    if (!rc) {
      s.wedged = true;
      result = fail(Errc::internal, "PMIx on " + s.where() + ": PMIx_server_deregister_nspace(" +
                                        job->layout.nspace + ") did not complete in time; libpmix is stuck",
                    "restart the daemon before the next job");
    }
  }
  const bool tmp_gone = removeTree(job->layout.job_tmpdir);
  const bool shm_gone = removeTree(job->shm_dir);
  if (result && (!tmp_gone || !shm_gone))
    result = fail(Errc::io, "PMIx on " + s.where() + ": could not remove " +
                                (tmp_gone ? job->shm_dir : job->layout.job_tmpdir));
  return result;
}

PmixServer::~PmixServer() {
  Impl& s = *impl_;
  if (s.job) (void)deregisterJob(s.config.op_bound);

  bool finished = false;
  if (!s.wedged) {
    // Finalize on a helper thread: libpmix 4.2.2 can block forever here (PMIX.md §1.3).
    auto promise = std::make_shared<std::promise<void>>();
    auto future = promise->get_future();
    std::thread finalizer([promise] {
      PMIx_server_finalize();
      promise->set_value();
    });
    finished = future.wait_for(s.config.op_bound) == std::future_status::ready;
    if (finished)
      finalizer.join();
    else
      finalizer.detach();
  }
  if (s.tmpdir_created) removeTree(s.config.tmpdir);
  std::lock_guard lock(registry().mutex);
  registry().current.reset();
  registry().initialised = !finished;
  registry().wedged = !finished;
}

}  // namespace tlaunch
