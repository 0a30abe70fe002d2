// PmixServer's public API: server lifecycle, job registration, fork setup, completions.
#include "bootstrap/pmix_server.h"

#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <future>
#include <set>
#include <optional>
#include <string_view>
#include <thread>

#include <spdlog/spdlog.h>

#include "bootstrap/pmix_dirs.h"
#include "bootstrap/pmix_env.h"
#include "bootstrap/pmix_job_info.h"
#include "bootstrap/pmix_listener_guard.h"
#include "bootstrap/pmix_peer_guard.h"
#include "bootstrap/pmix_server_impl.h"

extern char** environ;

namespace tlaunch {
namespace {

// How long libpmix may wait for a new connection's handshake (pmix_listener_guard.h).
constexpr std::chrono::milliseconds kPmixHandshakeTimeout{2000};

std::string pmixError(const char* call, pmix_status_t rc) {
  return std::string(call) + " failed: " + PMIx_Error_string(rc);
}

// A daemon started by `srun --mpi=pmix` (or inside such a step) inherits that step's PMIx
// client variables; PMIX_SECURITY_MODE=munge among them makes PMIx_server_init half-fail
// (later calls return PMIX_ERR_INIT). Then: deterministic security without munge (PMIX.md
// §2.3). The job data goes to libpmix's shared-memory store (gds ds21, its default, as under
// srun): each rank maps it instead of receiving and unpacking its own copy of the job info and
// of every fence's data (gds hash), ~80 ms of an 8-rank MPI hello here. Its files live in the
// job's PMIX_SERVER_TMPDIR, which is per job and node and removed with the job.
void prepareEnvironment() {
  std::vector<std::string> inherited;
  for (char** e = environ; *e; ++e) {
    std::string_view entry(*e);
    std::string_view key = entry.substr(0, entry.find('='));
    if (key.starts_with("PMIX_") && !key.starts_with("PMIX_MCA_")) inherited.emplace_back(key);
  }
  for (const auto& key : inherited) unsetenv(key.c_str());
  setenv("PMIX_MCA_psec", "native", 1);
  // Every fence reaches fence_nb, also when all its ranks are on this node: libpmix would
  // otherwise complete a one-node fence among the survivors of a failed rank, where a job over
  // several nodes fails it (the frontend knows of failures; libpmix on one node does not).
  setenv("PMIX_MCA_pmix_server_fence_localonly_opt", "0", 1);
}

// libpmix's own topology: from the daemon's XML (written into the server's private directory)
// when there is one, through libpmix's topology-file parameter; else it discovers the machine.
void useTopologyFile(const PmixServerConfig& config) {
  constexpr const char* kTopoFileVar = "PMIX_MCA_pmix_hwloc_topo_file";
  unsetenv(kTopoFileVar);
  if (config.topology_xml.empty()) return;
  const std::string path = config.tmpdir + "/topology.xml";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const bool written = ::write(fd, config.topology_xml.data(), config.topology_xml.size()) ==
                       static_cast<ssize_t>(config.topology_xml.size());
  if (::close(fd) == 0 && written) setenv(kTopoFileVar, path.c_str(), 1);
}

std::string defaultShmDir(const PmixJobLayout& layout) {
  std::string base = "/dev/shm";
  if (access(base.c_str(), W_OK) != 0) return layout.job_tmpdir + "/shm";
  std::string name = layout.nspace.starts_with("tlaunch") ? layout.nspace : "tlaunch." + layout.nspace;
  name += "." + layout.node_names[layout.this_node];
  for (char& c : name)
    if (c == '/') c = '_';
  return base + "/" + name;
}

}  // namespace

Result<void> PmixServer::Impl::registerNamespace(const pmix_nspace_t nspace, int nlocal, PmixInfoList&& info) {
  if (wedged) return fail(Errc::internal, "PMIx on " + where() + ": libpmix stopped answering", "restart the daemon");
  auto rc = BoundedPmixOp::run(
      [&](pmix_op_cbfunc_t cb, void* cbd) {
        return PMIx_server_register_nspace(nspace, nlocal, info.data(), info.size(), cb, cbd);
      },
      config.op_bound);
  if (!rc) {
    new PmixInfoList(std::move(info));  // libpmix may still read it: leak it on purpose
    wedged = true;
    return fail(Errc::internal, "PMIx on " + where() + ": PMIx_server_register_nspace(" + std::string(nspace) +
                                    ") did not complete in time");
  }
  if (*rc != PMIX_SUCCESS)
    return fail(Errc::internal, "PMIx on " + where() + ": " + pmixError("PMIx_server_register_nspace", *rc));
  return {};
}

Result<void> PmixServer::Impl::registerClients(const pmix_nspace_t nspace, const std::vector<int>& ranks) {
  for (int rank : ranks) {
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, nspace, static_cast<pmix_rank_t>(rank));
    auto crc = BoundedPmixOp::run(
        [&](pmix_op_cbfunc_t cb, void* cbd) { return PMIx_server_register_client(&proc, config.uid, config.gid, nullptr, cb, cbd); },
        config.op_bound);
    if (!crc || *crc != PMIX_SUCCESS) {
      if (!crc) wedged = true;  // as registerNamespace: nothing more is asked of libpmix
      return fail(Errc::internal, "PMIx on " + where() + ": rank " + std::to_string(rank) + " of " + std::string(nspace) +
                                      ": " + (crc ? pmixError("PMIx_server_register_client", *crc) : "PMIx_server_register_client timed out"));
    }
  }
  return {};
}

Result<void> PmixServer::Impl::deregisterNamespace(const pmix_nspace_t nspace, std::chrono::milliseconds bound) {
  if (wedged) return {};  // nothing more can be asked of libpmix; the caller removes the files
  auto rc = BoundedPmixOp::run(
      [&](pmix_op_cbfunc_t cb, void* cbd) {
        PMIx_server_deregister_nspace(nspace, cb, cbd);
        return PMIX_SUCCESS;
      },
      bound);
  if (rc) return {};
  wedged = true;
  return fail(Errc::internal, "PMIx on " + where() + ": PMIx_server_deregister_nspace(" + std::string(nspace) +
                                  ") did not complete in time; libpmix is stuck",
              "restart the daemon before the next job");
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
  // `started` stays set once PMIx_server_init has been called, whatever it returned.
  {
    std::lock_guard lock(pmixRegistry().mutex);
    if (pmixRegistry().started)
      return fail(Errc::internal, "PMIx server on " + where + ": a PMIx server was already started in this process",
                  "libpmix 4.2.2 can start its server once per process: keep one PmixServer for all jobs");
    pmixRegistry().started = true;
    pmixRegistry().current = impl;
  }
  auto undo = [&](bool init_called) {
    std::lock_guard lock(pmixRegistry().mutex);
    pmixRegistry().current.reset();
    pmixRegistry().started = init_called;
  };

  const bool existed = access(config.tmpdir.c_str(), F_OK) == 0;
  if (auto ok = makeRankDir(config.tmpdir, config.uid, config.gid, config.node_name); !ok) {
    undo(false);
    return tl::unexpected(ok.error());
  }
  impl->tmpdir_created = !existed;

  prepareEnvironment();
  useTopologyFile(config);

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

  static pmix_server_module_t module = makePmixModule();
  const std::set<ino_t> listening_before = listeningSockets();
  // Only the job's user may connect (pmix_peer_guard.h): libpmix would believe any local user,
  // from the moment its listener runs, inside PMIx_server_init.
  beginGuardingPmixListeners(listening_before, geteuid() == 0 && config.uid != 0 ? config.uid : geteuid());
  pmix_status_t rc = PMIx_server_init(&module, info.data(), info.size());
  const int guarded = endGuardingPmixListeners();
  if (rc != PMIX_SUCCESS) {
    if (impl->tmpdir_created) removeTree(config.tmpdir);
    undo(true);
    return fail(Errc::internal, "PMIx server on " + where + ": " + pmixError("PMIx_server_init", rc));
  }
  // Before any rank exists (pmix_listener_guard.h): a stranger's idle connection to its port
  // holds the ranks' PMIx calls for kPmixHandshakeTimeout at most, not for ever.
  if (handshakeReadUnbounded(PMIx_Get_version()) && boundHandshakeReads(listening_before, kPmixHandshakeTimeout) == 0)
    spdlog::warn("PMIx server on {}: found no listening socket of libpmix to bound its handshake reads; an idle "
                 "connection to its port would hold the ranks' PMIx calls", where);
  if (guarded == 0 && pmixAcceptChecked())
    spdlog::warn("PMIx server on {}: found no listening socket of libpmix to guard; another local user could "
                 "connect to it as the job's owner", where);
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

  // Only what makeRankDir accepted is removed on failure: a directory it refused is someone
  // else's (planted in /tmp or /dev/shm under our name) and is left as it is.
  std::vector<std::string> ours;
  auto removeDirs = [&] {
    for (const auto& dir : ours) removeTree(dir);
  };
  for (const std::string& dir : {layout.job_tmpdir, job->shm_dir}) {
    if (auto ok = makeRankDir(dir, s.config.uid, s.config.gid, s.config.node_name); !ok) {
      removeDirs();
      return tl::unexpected(ok.error());
    }
    ours.push_back(dir);
  }
  auto info = buildJobInfo(layout, job->geometry);
  if (!info) {
    removeDirs();
    return tl::unexpected(info.error());
  }

  const auto nlocal = static_cast<int>(job->geometry.local_ranks.size());
  if (auto registered = s.registerNamespace(job->nspace, nlocal, std::move(*info)); !registered) {
    removeDirs();
    return registered;
  }
  s.generation++;
  s.job = std::move(job);

  // Every local client before any fork: a client fencing before its siblings are registered
  // can hang the fence (openpmix#89).
  if (auto clients = s.registerClients(s.job->nspace, s.job->geometry.local_ranks); !clients) {
    (void)deregisterJob(s.config.op_bound);
    return clients;
  }
  for (auto& [rank, reply] : std::exchange(s.held_serves, {})) serveDirectModex(rank, std::move(reply));
  return {};
}

Result<void> PmixServer::setupFork(int rank, std::vector<std::string>& env) {
  Impl& s = *impl_;
  pmix_proc_t proc;
  if (!s.job || !s.isLocal(rank) || !s.procOf(rank, proc))
    return fail(Errc::internal, "PMIx on " + s.where() + ": rank " + std::to_string(rank) + " is not registered here");
  dropInheritedPmixVars(env);

  // PMIx_server_setup_fork appends to / replaces in a malloc'ed NULL-terminated array.
  char** envp = static_cast<char**>(calloc(env.size() + 1, sizeof(char*)));
  for (size_t i = 0; i < env.size(); ++i) envp[i] = strdup(env[i].c_str());
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

  // Shared-memory segments are named after the host name: per node, per job directory, which
  // only this node knows. Every other Open MPI setting (OMPI_MCA_schizo, btl_tcp_if_include)
  // is the plan's (launcher/plan/rank_env_builder).
  setEnv(env, "OMPI_MCA_btl_vader_backing_directory", s.job->shm_dir);
  return {};
}

namespace {

void completeFenceWith(PmixServer::Impl& s, uint64_t fence_seq, pmix_status_t status, std::string all_blobs) {
  if (!s.job) return;
  auto it = s.job->fences.find(fence_seq);
  if (it == s.job->fences.end()) {
    // Not entered locally yet: keep it for onFence. A completion for an old fence is a duplicate.
    if (fence_seq >= s.job->next_fence_seq) s.job->early_completions[fence_seq] = {status, std::move(all_blobs)};
    return;
  }
  ModexReply reply = it->second;
  s.job->fences.erase(it);
  reply(status, std::move(all_blobs));
}

}  // namespace

void PmixServer::completeFence(uint64_t fence_seq, bool ok, std::string all_blobs) {
  completeFenceWith(*impl_, fence_seq, ok ? PMIX_SUCCESS : PMIX_ERROR, std::move(all_blobs));
}

void PmixServer::completeFence(uint64_t fence_seq, PmixReply status, std::string all_blobs) {
  completeFenceWith(*impl_, fence_seq, pmixStatusOf(status), std::move(all_blobs));
}

void PmixServer::serveDirectModex(int rank, std::function<void(bool ok, std::string data)> reply) {
  Impl& s = *impl_;
  if (!s.job && !s.job_ended) {  // another node's ranks run already; this one has not registered the job yet
    s.held_serves.emplace_back(rank, std::move(reply));
    return;
  }
  pmix_proc_t proc;
  if (!s.isLocal(rank) || !s.procOf(rank, proc)) {
    s.post([reply = std::move(reply)] { reply(false, {}); });
    return;
  }
  struct Request {
    std::weak_ptr<Impl> server;
    std::function<void(bool, std::string)> reply;
  };
  auto* req = new Request{impl_, std::move(reply)};
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

void PmixServer::completeDirectModex(uint64_t request_id, PmixReply status, std::string data) {
  Impl& s = *impl_;
  if (!s.job) return;
  auto it = s.job->modex_requests.find(request_id);
  if (it == s.job->modex_requests.end()) return;
  ModexReply reply = it->second;
  s.job->modex_requests.erase(it);
  reply(pmixStatusOf(status), std::move(data));
}

Result<void> PmixServer::deregisterJob(std::chrono::milliseconds bound) {
  Impl& s = *impl_;
  if (!s.job) return {};
  s.failOutstanding(PMIX_ERR_TIMEOUT);
  std::unique_ptr<Impl::Job> job = std::move(s.job);
  s.job_ended = true;
  for (auto& [rank, reply] : std::exchange(s.held_serves, {})) s.post([reply = std::move(reply)] { reply(false, {}); });
  s.generation++;

  // Namespaces the job spawned first, then the job's.
  Result<void> result;
  for (const auto& spawned : job->spawned)
    if (result) result = s.deregisterNamespace(spawned->nspace, bound);
  if (result) result = s.deregisterNamespace(job->nspace, bound);
  auto removed = s.removeDirs(job->layout.job_tmpdir, job->shm_dir);
  return result ? removed : result;
}

Result<void> PmixServer::Impl::removeDirs(const std::string& tmpdir, const std::string& shm_dir) const {
  const bool tmp_gone = removeTree(tmpdir);
  const bool shm_gone = shm_dir.empty() || removeTree(shm_dir);
  if (tmp_gone && shm_gone) return {};
  return fail(Errc::io, "PMIx on " + where() + ": could not remove " + (tmp_gone ? shm_dir : tmpdir));
}

PmixServer::~PmixServer() {
  Impl& s = *impl_;
  if (s.job) (void)deregisterJob(s.config.op_bound);

  if (!s.wedged) {
    // Finalize on a helper thread: libpmix 4.2.2 can block forever here (PMIX.md §1.3).
    auto promise = std::make_shared<std::promise<void>>();
    auto future = promise->get_future();
    std::thread finalizer([promise] {
      PMIx_server_finalize();
      promise->set_value();
    });
    if (future.wait_for(s.config.op_bound) == std::future_status::ready)
      finalizer.join();
    else
      finalizer.detach();  // abandoned; the daemon should _exit rather than run static destructors
  }
  if (s.tmpdir_created) removeTree(s.config.tmpdir);
  std::lock_guard lock(pmixRegistry().mutex);
  pmixRegistry().current.reset();
}

}  // namespace tlaunch
