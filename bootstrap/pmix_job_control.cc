// PMIx_Job_control: signal, kill, terminate, pause and resume ranks of the job. The daemon's
// control plane delivers the signal on the ranks' nodes (Callbacks::job_control); any other
// directive (checkpoint, restart, provision, cancel, ...) is refused at once.
#include <signal.h>

#include <cstring>

#include "bootstrap/pmix_server_impl.h"

namespace tlaunch {
namespace {

// The signal a directive asks for: 0 for a directive that is not a request (an id, a timeout),
// -1 for one tlaunch does not carry out.
int signalOf(const pmix_info_t& info) {
  if (PMIX_CHECK_KEY(&info, PMIX_JOB_CTRL_ID)) return 0;
  if (PMIX_CHECK_KEY(&info, PMIX_JOB_CTRL_KILL)) return PMIX_INFO_TRUE(&info) ? SIGKILL : 0;
  if (PMIX_CHECK_KEY(&info, PMIX_JOB_CTRL_TERMINATE)) return PMIX_INFO_TRUE(&info) ? SIGTERM : 0;
  if (PMIX_CHECK_KEY(&info, PMIX_JOB_CTRL_PAUSE)) return PMIX_INFO_TRUE(&info) ? SIGSTOP : 0;
  if (PMIX_CHECK_KEY(&info, PMIX_JOB_CTRL_RESUME)) return PMIX_INFO_TRUE(&info) ? SIGCONT : 0;
  if (PMIX_CHECK_KEY(&info, PMIX_JOB_CTRL_SIGNAL)) {
    const pmix_value_t& v = info.value;
    int sig = v.type == PMIX_INT ? v.data.integer : v.type == PMIX_INT32 ? v.data.int32 : -1;
    return sig > 0 && sig < NSIG ? sig : -1;
  }
  // Libpmix's own bookkeeping keys, and keys optional by contract, are not requests.
  if (strncmp(info.key, "pmix.jctrl.", 11) != 0) return PMIX_INFO_IS_REQUIRED(&info) ? -1 : 0;
  return -1;
}

pmix_status_t upJobControl(const pmix_proc_t* requestor, const pmix_proc_t targets[], size_t ntargets,
                           const pmix_info_t directives[], size_t ndirs, pmix_info_cbfunc_t cbfunc, void* cbdata) {
  int signal = 0;
  for (size_t i = 0; i < ndirs; ++i) {
    const int s = signalOf(directives[i]);
    if (s < 0 || (s > 0 && signal > 0 && s != signal)) return PMIX_ERR_NOT_SUPPORTED;  // one signal per request
    if (s > 0) signal = s;
  }
  if (signal == 0) return PMIX_ERR_BAD_PARAM;
  std::vector<pmix_proc_t> procs(targets, targets + ntargets);
  const pmix_proc_t requester = *requestor;
  InfoReply reply{cbfunc, cbdata};
  return postToStrand([requester, procs, signal, reply](PmixServer::Impl& s, uint64_t gen) {
    s.onJobControl(gen, requester, procs, signal, reply);
  });
}

}  // namespace

void addJobControlUpcall(pmix_server_module_t& m) { m.job_control = upJobControl; }

void PmixServer::Impl::onJobControl(uint64_t gen, pmix_proc_t requester, const std::vector<pmix_proc_t>& targets,
                                    int signal, InfoReply reply) {
  if (isStale(gen)) return;
  if (!job) return reply(PMIX_ERR_NOT_FOUND);
  if (!callbacks.job_control) return reply(PMIX_ERR_NOT_SUPPORTED);
  const int from = numberOf(requester);
  if (from < 0) return reply(PMIX_ERR_NOT_FOUND);
  std::vector<int> ranks;
  if (targets.empty()) {  // PMIx: no targets means the requester's namespace
    pmix_proc_t all = requester;
    all.rank = PMIX_RANK_WILDCARD;
    (void)numbersOf(all, ranks);
  }
  for (const auto& p : targets) {
    std::vector<int> numbers;
    if (!numbersOf(p, numbers)) return reply(knowsNamespace(p.nspace) ? PMIX_ERR_BAD_PARAM : PMIX_ERR_NOT_SUPPORTED);
    if (numbers == std::vector<int>{-1}) {
      ranks = {-1};
      break;
    }
    ranks.insert(ranks.end(), numbers.begin(), numbers.end());
  }
  const uint64_t id = job->next_op_id++;
  job->job_controls.emplace(id, reply);
  callbacks.job_control(id, from, std::move(ranks), signal);
}

void PmixServer::completeJobControl(uint64_t request_id, PmixReply status) {
  Impl& s = *impl_;
  if (!s.job) return;
  if (auto node = s.job->job_controls.extract(request_id)) {
    pmix_status_t rc = PMIX_SUCCESS;
    if (status == PmixReply::not_found) rc = PMIX_ERR_NOT_FOUND;
    else if (status != PmixReply::ok) rc = PMIX_ERROR;
    node.mapped()(rc);
  }
}

}  // namespace tlaunch
