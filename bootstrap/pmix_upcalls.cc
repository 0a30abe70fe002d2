// The libpmix side of PmixServer: module functions run on libpmix's progress thread and only
// copy and post; their strand-side handlers do the work and call libpmix's completions.
#include "bootstrap/pmix_server_impl.h"

#include <cstdlib>

namespace tlaunch {

PmixRegistry& pmixRegistry() {
  static PmixRegistry r;
  return r;
}

namespace {

pmix_status_t upFence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[], size_t ninfo, char* data,
                      size_t ndata, pmix_modex_cbfunc_t cbfunc, void* cbdata) {
  // Everything libpmix passes belongs to it: copy before returning.
  std::vector<pmix_proc_t> participants(procs, procs + nprocs);
  bool collect = false;
  std::optional<std::chrono::steady_clock::time_point> give_up_at;  // the client's PMIX_TIMEOUT (Callbacks::answer_at)
  for (size_t i = 0; i < ninfo; ++i) {
    if (PMIX_CHECK_KEY(&info[i], PMIX_COLLECT_DATA)) collect = PMIX_INFO_TRUE(&info[i]);
    if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) && infoInt(info[i]) > 0)
      give_up_at = std::chrono::steady_clock::now() + std::chrono::seconds(infoInt(info[i]));
  }
  std::string blob = (data && ndata) ? std::string(data, ndata) : std::string();
  // libpmix hands the buffer over (it unloads its own and keeps no pointer): ours to free.
  std::free(data);
  ModexReply reply{cbfunc, cbdata};
  return postToStrand([participants = std::move(participants), collect, blob = std::move(blob), reply, give_up_at](
                          PmixServer::Impl& s, uint64_t gen) mutable {
    s.onFence(gen, participants, collect, std::move(blob), reply, give_up_at);
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
  pmix_proc_t from = *proc;
  std::string message = msg ? msg : "";
  OpReply reply{cbfunc, cbdata};
  return postToStrand([from, status, message, reply](PmixServer::Impl& s, uint64_t gen) {
    s.onAbort(gen, from, status, message, reply);
  });
}

pmix_status_t upClientFinalized(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  pmix_proc_t from = *proc;
  OpReply reply{cbfunc, cbdata};
  return postToStrand([from, reply](PmixServer::Impl& s, uint64_t gen) { s.onClientFinalized(gen, from, reply); });
}

// libpmix 4.2.2 passes cbfunc == NULL here and drops the client on any status other than
// PMIX_SUCCESS / PMIX_OPERATION_SUCCEEDED.
pmix_status_t upClientConnected(const pmix_proc_t* proc, void*, pmix_op_cbfunc_t cbfunc, void* cbdata) {
  pmix_proc_t from = *proc;
  OpReply reply{cbfunc, cbdata};
  pmix_status_t rc =
      postToStrand([from, reply](PmixServer::Impl& s, uint64_t gen) { s.onClientConnected(gen, from, reply); });
  return rc == PMIX_SUCCESS || cbfunc ? rc : PMIX_SUCCESS;
}

}  // namespace

pmix_server_module_t makePmixModule() {
  pmix_server_module_t m{};  // a NULL entry makes libpmix answer PMIX_ERR_NOT_SUPPORTED
  m.client_connected = upClientConnected;
  m.client_finalized = upClientFinalized;
  m.abort = upAbort;
  m.fence_nb = upFence;
  m.direct_modex = upDirectModex;
  addPubsubUpcalls(m);
  addJobControlUpcall(m);
  addGroupUpcall(m);
  addSpawnUpcall(m);
  addUnsupportedUpcalls(m);
  return m;
}

namespace {

bool isWildcardFenceOf(const std::vector<pmix_proc_t>& procs, const pmix_nspace_t nspace) {
  return procs.size() == 1 && procs[0].rank == PMIX_RANK_WILDCARD && PMIX_CHECK_NSPACE(procs[0].nspace, nspace);
}

}  // namespace

// ---- strand side ----------------------------------------------------------------------------

void PmixServer::Impl::onFence(uint64_t gen, const std::vector<pmix_proc_t>& procs, bool collect, std::string blob,
                               ModexReply reply, std::optional<std::chrono::steady_clock::time_point> give_up_at) {
  if (isStale(gen)) return;
  if (!job) return reply(PMIX_ERR_NOT_FOUND, {});
  // A fence over some ranks (Open MPI's MPI_Comm_disconnect) is not seen by every node, so it
  // cannot share the job-wide sequence numbers: it runs as a collective of its own.
  if (!isWildcardFenceOf(procs, job->nspace))
    return onCollective(gen, "fence", procs, std::move(blob), {reply, {}, {}}, 0, give_up_at);
  const uint64_t seq = job->next_fence_seq++;
  if (auto early = job->early_completions.find(seq); early != job->early_completions.end()) {
    auto [status, all] = std::move(early->second);
    job->early_completions.erase(early);
    reply(status, std::move(all));
    return;
  }
  job->fences.emplace(seq, reply);
  // Every node's fences still complete in order: a later completion of this one is a duplicate.
  answerTimeoutAt(give_up_at, [seq](Impl& s) {
    if (auto node = s.job->fences.extract(seq)) node.mapped()(PMIX_ERR_TIMEOUT, {});
  });
  if (callbacks.fence_contribution) callbacks.fence_contribution(seq, std::move(blob), collect);
}

void PmixServer::Impl::answerTimeoutAt(std::optional<std::chrono::steady_clock::time_point> at,
                                       std::function<void(Impl&)> answer) {
  if (!at || !callbacks.answer_at) return;
  std::weak_ptr<Impl> weak;
  {
    std::lock_guard lock(pmixRegistry().mutex);
    weak = pmixRegistry().current;
  }
  const uint64_t gen = generation.load();
  callbacks.answer_at(*at, [weak, gen, answer = std::move(answer)] {
    if (auto s = weak.lock(); s && !s->isStale(gen) && s->job) answer(*s);
  });
}

void PmixServer::Impl::onDirectModex(uint64_t gen, pmix_proc_t proc, ModexReply reply) {
  if (isStale(gen)) return;
  const int target = job ? numberOf(proc) : -1;
  if (target < 0) return reply(PMIX_ERR_NOT_FOUND, {});
  const uint64_t id = job->next_request_id++;
  job->modex_requests.emplace(id, reply);
  if (callbacks.direct_modex_request) callbacks.direct_modex_request(id, target);
}

void PmixServer::Impl::onAbort(uint64_t gen, pmix_proc_t proc, int status, std::string message, OpReply reply) {
  if (isStale(gen)) return;
  if (const int rank = numberOf(proc); rank >= 0 && callbacks.abort) callbacks.abort(rank, status, std::move(message));
  reply(PMIX_SUCCESS);  // releases the client, which then exits with `status`
}

void PmixServer::Impl::onClientFinalized(uint64_t gen, pmix_proc_t proc, OpReply reply) {
  if (isStale(gen)) return;
  if (const int rank = numberOf(proc); rank >= 0 && callbacks.client_finalized) callbacks.client_finalized(rank);
  reply(PMIX_SUCCESS);  // the client blocks in PMIx_Finalize until this
}

void PmixServer::Impl::onClientConnected(uint64_t gen, pmix_proc_t proc, OpReply reply) {
  if (isStale(gen)) return;
  if (const int rank = numberOf(proc); rank >= 0 && callbacks.client_connected) callbacks.client_connected(rank);
  reply(PMIX_SUCCESS);
}

void PmixServer::Impl::failOutstanding(pmix_status_t status) {
  if (!job) return;
  auto fences = std::move(job->fences);
  auto requests = std::move(job->modex_requests);
  auto publishes = std::exchange(job->publishes, {});
  auto unpublishes = std::exchange(job->unpublishes, {});
  auto lookups = std::exchange(job->lookups, {});
  auto collectives = std::exchange(job->collectives, {});
  auto job_controls = std::exchange(job->job_controls, {});
  auto spawns = std::exchange(job->spawns, {});
  job->fences.clear();
  job->modex_requests.clear();
  for (auto& [seq, reply] : fences) reply(status, {});
  for (auto& [id, reply] : requests) reply(status, {});
  for (auto& [id, reply] : publishes) reply(status);
  for (auto& [id, reply] : unpublishes) reply(status);
  for (auto& [id, reply] : lookups) reply(status);
  for (auto& [id, reply] : collectives) reply(status, {});
  for (auto& [id, reply] : job_controls) reply(status);
  for (auto& [id, reply] : spawns) reply(status);
}

}  // namespace tlaunch
