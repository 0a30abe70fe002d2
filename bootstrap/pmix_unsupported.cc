// The upcalls tlaunch does not implement. Each answers PMIX_ERR_NOT_SUPPORTED at once (an
// immediate error status: libpmix then never expects the callback), so that no client call
// waits on its server. Explicit rather than NULL entries: the list is the record of what is
// unsupported, and a NULL entry leaves the answer to libpmix (PMIX_ERR_UNREACHABLE for a query).
//
// Left NULL on purpose: listener (NULL: libpmix listens itself), tool_connected (tool support
// is off), register_events / deregister_events (Open MPI registers handlers in MPI_Init; NULL
// makes libpmix accept them locally) and client_connected2 (client_connected is used).
#include "bootstrap/pmix_server_impl.h"

namespace tlaunch {
namespace {

pmix_status_t upNotifyEvent(pmix_status_t, const pmix_proc_t*, pmix_data_range_t, pmix_info_t[], size_t,
                            pmix_op_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

pmix_status_t upQuery(pmix_proc_t*, pmix_query_t*, size_t, pmix_info_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

// The one upcall without a return status: the answer has to go through the callback, from the
// strand like every other completion.
void upLog(const pmix_proc_t*, const pmix_info_t[], size_t, const pmix_info_t[], size_t, pmix_op_cbfunc_t cbfunc,
           void* cbdata) {
  if (!cbfunc) return;
  OpReply reply{cbfunc, cbdata};
  // Posted without a generation check: libpmix waits for this answer whatever the job.
  if (postToStrand([reply](PmixServer::Impl&, uint64_t) { reply(PMIX_ERR_NOT_SUPPORTED); }) != PMIX_SUCCESS)
    reply(PMIX_ERR_NOT_SUPPORTED);
}

pmix_status_t upAllocate(const pmix_proc_t*, pmix_alloc_directive_t, const pmix_info_t[], size_t,
                         pmix_info_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

pmix_status_t upMonitor(const pmix_proc_t*, const pmix_info_t*, pmix_status_t, const pmix_info_t[], size_t,
                        pmix_info_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

pmix_status_t upGetCredential(const pmix_proc_t*, const pmix_info_t[], size_t, pmix_credential_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

pmix_status_t upValidateCredential(const pmix_proc_t*, const pmix_byte_object_t*, const pmix_info_t[], size_t,
                                   pmix_validation_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

pmix_status_t upIofPull(const pmix_proc_t[], size_t, const pmix_info_t[], size_t, pmix_iof_channel_t,
                        pmix_op_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

pmix_status_t upPushStdin(const pmix_proc_t*, const pmix_proc_t[], size_t, const pmix_info_t[], size_t,
                          const pmix_byte_object_t*, pmix_op_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

pmix_status_t upFabric(const pmix_proc_t*, pmix_fabric_operation_t, const pmix_info_t[], size_t,
                       pmix_info_cbfunc_t, void*) {
  return PMIX_ERR_NOT_SUPPORTED;
}

}  // namespace

void addUnsupportedUpcalls(pmix_server_module_t& m) {
  m.notify_event = upNotifyEvent;
  m.query = upQuery;
  m.log = upLog;
  m.allocate = upAllocate;
  m.monitor = upMonitor;
  m.get_credential = upGetCredential;
  m.validate_credential = upValidateCredential;
  m.iof_pull = upIofPull;
  m.push_stdin = upPushStdin;
  m.fabric = upFabric;
}

}  // namespace tlaunch
