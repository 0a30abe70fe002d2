// PMIx_Spawn (MPI_Comm_spawn, mpi4py.futures): the upcall copies the apps and posts; the
// control plane places and starts them (Callbacks::spawn) and registers the new namespace on
// every node (registerSpawned); completeSpawn answers the caller with its name.
//
// Also the numbering of procs across namespaces: the job's ranks are 0..N-1 and each spawned
// namespace's ranks follow at the base the frontend gave it, so that the control plane (fences,
// direct modex, exits, output) deals in one kind of number.
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "bootstrap/pmix_dirs.h"
#include "bootstrap/pmix_job_info.h"
#include "bootstrap/pmix_server_impl.h"
#include "tlaunch/strings.h"

namespace tlaunch {
namespace {

// PMIX_HOST / PMIX_ADD_HOST: a comma-separated list of host names.
void addHosts(const pmix_info_t& info, std::vector<std::string>& hosts) {
  if (info.value.type != PMIX_STRING || info.value.data.string == nullptr) return;
  std::string list = info.value.data.string;
  for (size_t start = 0; start <= list.size();) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string host(trimBlanks(list.substr(start, end - start)));
    if (!host.empty()) hosts.push_back(host);
    start = end + 1;
  }
}

bool isHostKey(const pmix_info_t& info) {
  return PMIX_CHECK_KEY(&info, PMIX_HOST) || PMIX_CHECK_KEY(&info, PMIX_ADD_HOST);
}

// Copies what tlaunch uses of one pmix_app_t. Mapping, binding and other directives are
// tlaunch's own (the children are placed and bound like the job's ranks).
PmixSpawnApp copyApp(const pmix_app_t& app) {
  PmixSpawnApp out;
  out.cmd = app.cmd ? app.cmd : "";
  for (char** a = app.argv; a && *a; ++a) out.argv.emplace_back(*a);
  if (out.argv.empty() && !out.cmd.empty()) out.argv.push_back(out.cmd);
  for (char** e = app.env; e && *e; ++e) out.env.emplace_back(*e);
  out.cwd = app.cwd ? app.cwd : "";
  out.maxprocs = app.maxprocs;
  for (size_t i = 0; i < app.ninfo && app.info; ++i) {
    const pmix_info_t& info = app.info[i];
    if (isHostKey(info)) {
      addHosts(info, out.hosts);
    } else if (PMIX_CHECK_KEY(&info, PMIX_WDIR) && info.value.type == PMIX_STRING && info.value.data.string) {
      out.cwd = info.value.data.string;
    } else if (PMIX_CHECK_KEY(&info, PMIX_SET_ENVAR) && info.value.type == PMIX_ENVAR &&
               info.value.data.envar.envar && info.value.data.envar.value) {
      out.env.push_back(std::string(info.value.data.envar.envar) + "=" + info.value.data.envar.value);
    }
  }
  return out;
}

pmix_status_t upSpawn(const pmix_proc_t* proc, const pmix_info_t job_info[], size_t ninfo, const pmix_app_t apps[],
                      size_t napps, pmix_spawn_cbfunc_t cbfunc, void* cbdata) {
  if (napps == 0 || apps == nullptr) return PMIX_ERR_BAD_PARAM;
  PmixSpawnRequest request;
  for (size_t i = 0; i < napps; ++i) request.apps.push_back(copyApp(apps[i]));
  for (size_t i = 0; i < ninfo && job_info; ++i)
    if (isHostKey(job_info[i])) addHosts(job_info[i], request.hosts);
  const pmix_proc_t requester = *proc;
  SpawnReply reply{cbfunc, cbdata};
  return postToStrand([requester, request = std::move(request), reply](PmixServer::Impl& s, uint64_t gen) mutable {
    s.onSpawn(gen, requester, std::move(request), reply);
  });
}

}  // namespace

void addSpawnUpcall(pmix_server_module_t& m) { m.spawn = upSpawn; }

void SpawnReply::operator()(pmix_status_t status, const std::string& nspace) const {
  if (!fn) return;
  pmix_nspace_t ns;
  PMIX_LOAD_NSPACE(ns, nspace.c_str());
  fn(status, ns, cbdata);
}

void PmixServer::Impl::onSpawn(uint64_t gen, pmix_proc_t requester, PmixSpawnRequest request, SpawnReply reply) {
  if (isStale(gen)) return;
  if (!job) return reply(PMIX_ERR_NOT_FOUND);
  if (!callbacks.spawn) return reply(PMIX_ERR_NOT_SUPPORTED);
  if ((request.requester = numberOf(requester)) < 0) return reply(PMIX_ERR_NOT_FOUND);
  for (const auto& app : request.apps)
    if (app.argv.empty() || app.maxprocs < 1) return reply(PMIX_ERR_BAD_PARAM);
  const uint64_t id = job->next_op_id++;
  job->spawns.emplace(id, reply);
  callbacks.spawn(id, std::move(request));
}

void PmixServer::completeSpawn(uint64_t request_id, PmixReply status, const std::string& nspace) {
  Impl& s = *impl_;
  if (!s.job) return;
  auto node = s.job->spawns.extract(request_id);
  if (!node) return;
  if (status != PmixReply::ok) return node.mapped()(status == PmixReply::not_found ? PMIX_ERR_JOB_FAILED_TO_LAUNCH
                                                                                    : pmixStatusOf(status));
  node.mapped()(PMIX_SUCCESS, nspace);
}

Result<void> PmixServer::registerSpawned(const PmixJobLayout& layout, int base) {
  Impl& s = *impl_;
  const std::string where = s.where();
  if (!s.job) return fail(Errc::internal, "PMIx on " + where + ": no job to spawn into");
  if (s.wedged) return fail(Errc::internal, "PMIx on " + where + ": libpmix stopped answering", "restart the daemon");
  if (layout.parent_nspace.empty()) return fail(Errc::internal, "PMIx on " + where + ": a spawned namespace needs its parent");
  auto geometry = planPmixJob(layout);
  if (!geometry) return tl::unexpected(geometry.error());
  const auto job_size = static_cast<long long>(s.job->geometry.job_size);
  long long first_free = job_size;
  for (const auto& other : s.job->spawned) {
    if (other->layout.nspace == layout.nspace)
      return fail(Errc::internal, "PMIx on " + where + ": namespace " + layout.nspace + " is registered already");
    first_free = std::max(first_free, static_cast<long long>(other->base) + other->geometry.job_size);
  }
  // Numbers never overlap: each spawn's follow the last one's.
  if (base < first_free || static_cast<long long>(base) + geometry->job_size > std::numeric_limits<int>::max())
    return fail(Errc::internal, "PMIx on " + where + ": namespace " + layout.nspace + " at " + std::to_string(base) +
                                    " overlaps the procs numbered before it");
  if (layout.this_node >= 0 && layout.node_names[static_cast<size_t>(layout.this_node)] != s.config.node_name)
    return fail(Errc::internal, "PMIx on " + where + ": spawned namespace " + layout.nspace + " places this daemon at " +
                                    layout.node_names[static_cast<size_t>(layout.this_node)]);

  auto spawned = std::make_unique<Impl::Spawned>();
  spawned->layout = layout;
  spawned->geometry = std::move(*geometry);
  spawned->base = base;
  PMIX_LOAD_NSPACE(spawned->nspace, layout.nspace.c_str());
  if (auto ok = makeRankDir(layout.job_tmpdir, s.config.uid, s.config.gid, s.config.node_name); !ok)
    return tl::unexpected(ok.error());
  auto info = buildJobInfo(layout, spawned->geometry);
  if (!info) return tl::unexpected(info.error());
  const auto nlocal = static_cast<int>(spawned->geometry.local_ranks.size());
  if (auto registered = s.registerNamespace(spawned->nspace, nlocal, std::move(*info)); !registered) return registered;
  // Registered now: deregisterJob removes it with the job, whatever happens next.
  Impl::Spawned& ns = *s.job->spawned.emplace_back(std::move(spawned));
  return s.registerClients(ns.nspace, ns.geometry.local_ranks);
}

Result<void> PmixServer::deregisterSpawned(const std::string& nspace) {
  Impl& s = *impl_;
  if (!s.job) return {};
  auto& spawned = s.job->spawned;
  auto it = std::find_if(spawned.begin(), spawned.end(), [&](const auto& ns) { return ns->layout.nspace == nspace; });
  if (it == spawned.end()) return {};  // not registered here, or forgotten already
  std::unique_ptr<Impl::Spawned> ns = std::move(*it);
  spawned.erase(it);
  Impl::Job::Retired retired;
  PMIX_LOAD_NSPACE(retired.nspace, ns->nspace);
  retired.base = ns->base;
  retired.size = static_cast<int>(ns->geometry.job_size);
  s.job->retired.push_back(retired);
  // Not waited for, unlike deregisterJob's: the daemon's thread goes on (heartbeats, relays),
  // and a libpmix slow to answer now is not taken for a stuck one. libpmix orders it before
  // anything asked of it later.
  if (!s.wedged) PMIx_server_deregister_nspace(ns->nspace, [](pmix_status_t, void*) {}, nullptr);
  return s.removeDirs(ns->layout.job_tmpdir, ns->layout.shm_dir);
}

// ---- numbering ------------------------------------------------------------------------------

std::optional<PmixServer::Impl::NamespaceView> PmixServer::Impl::namespaceNamed(const pmix_nspace_t nspace) const {
  if (!job) return std::nullopt;
  if (PMIX_CHECK_NSPACE(nspace, job->nspace)) return NamespaceView{job->nspace, &job->geometry, 0, true};
  for (const auto& ns : job->spawned)
    if (PMIX_CHECK_NSPACE(nspace, ns->nspace)) return NamespaceView{ns->nspace, &ns->geometry, ns->base, false};
  return std::nullopt;
}

std::optional<PmixServer::Impl::NamespaceView> PmixServer::Impl::namespaceOfNumber(int number) const {
  if (!job || number < 0) return std::nullopt;
  if (number < static_cast<int>(job->geometry.job_size)) return NamespaceView{job->nspace, &job->geometry, 0, true};
  for (const auto& ns : job->spawned)
    if (number >= ns->base && number - ns->base < static_cast<int>(ns->geometry.job_size))
      return NamespaceView{ns->nspace, &ns->geometry, ns->base, false};
  return std::nullopt;
}

bool PmixServer::Impl::knowsNamespace(const pmix_nspace_t nspace) const { return namespaceNamed(nspace).has_value(); }

int PmixServer::Impl::numberOf(const pmix_proc_t& proc) const {
  const auto ns = namespaceNamed(proc.nspace);
  if (!ns || proc.rank == PMIX_RANK_WILDCARD || proc.rank >= ns->geometry->job_size) return -1;
  return ns->base + static_cast<int>(proc.rank);
}

bool PmixServer::Impl::numbersOf(const pmix_proc_t& proc, std::vector<int>& out) const {
  out.clear();
  const auto ns = namespaceNamed(proc.nspace);
  if (!ns) return false;
  if (proc.rank != PMIX_RANK_WILDCARD) {
    const int n = numberOf(proc);
    if (n >= 0) out.push_back(n);
    return n >= 0;
  }
  if (ns->is_job) {
    out = {-1};
    return true;
  }
  for (uint32_t r = 0; r < ns->geometry->job_size; ++r) out.push_back(ns->base + static_cast<int>(r));
  return true;
}

bool PmixServer::Impl::procOf(int number, pmix_proc_t& out) const {
  if (const auto ns = namespaceOfNumber(number)) {
    PMIX_PROC_LOAD(&out, ns->nspace, static_cast<pmix_rank_t>(number - ns->base));
    return true;
  }
  if (!job) return false;
  for (const auto& r : job->retired) {  // a proc of an ended spawn: its name only
    if (number >= r.base && number - r.base < r.size) {
      PMIX_PROC_LOAD(&out, r.nspace, static_cast<pmix_rank_t>(number - r.base));
      return true;
    }
  }
  return false;
}

bool PmixServer::Impl::isLocal(int number) const {
  const auto ns = namespaceOfNumber(number);
  return ns && ns->geometry->isLocal(number - ns->base);
}

}  // namespace tlaunch
