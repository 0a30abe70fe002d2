// Event notification: a failed rank of the job becomes a PMIx event for the local clients that
// registered for it (PMIx_Register_event_handler), so that fault-aware programs can react
// before the job is torn down (or, with --keep-going, go on without it).

#include "bootstrap/pmix_server_impl.h"

namespace tlaunch {

void PmixServer::notifyRankFailed(int rank, bool aborted, int exit_status) {
  Impl& s = *impl_;
  pmix_proc_t failed;
  if (!s.job || !s.procOf(rank, failed)) return;
  pmix_info_t info[2];
  PMIX_INFO_LOAD(&info[0], PMIX_EVENT_AFFECTED_PROC, &failed, PMIX_PROC);
  PMIX_INFO_LOAD(&info[1], PMIX_EXIT_CODE, &exit_status, PMIX_INT);
  // The failed rank is the source: libpmix then never sends the event back to it, and does not
  // hand it up to our notify_event upcall (only events this server sources itself go there).
  // libpmix copies the info before it returns and answers later on its own thread; there is
  // nothing to wait for.
  const pmix_status_t status = aborted ? PMIX_ERR_PROC_ABORTED : PMIX_PROC_TERMINATED;
  (void)PMIx_Notify_event(status, &failed, PMIX_RANGE_NAMESPACE, info, 2, nullptr, nullptr);
  PMIX_INFO_DESTRUCT(&info[0]);
  PMIX_INFO_DESTRUCT(&info[1]);
}

void PmixServer::forgetFailedRank(int rank) {
  Impl& s = *impl_;
  pmix_proc_t proc;
  if (!s.job || s.wedged || !s.isLocal(rank) || !s.procOf(rank, proc)) return;
  // Asynchronous; its answer carries nothing we need (deregisterJob later removes the rest).
  PMIx_server_deregister_client(&proc, [](pmix_status_t, void*) {}, nullptr);
}

}  // namespace tlaunch
