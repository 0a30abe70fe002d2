// PMIx_Group_construct / PMIx_Group_destruct. libpmix 4.2.2 calls the group upcall once per
// node, when every local member has called, with the whole membership. tlaunch runs it as a
// collective among the nodes that host members (like connect), keyed by the group's name:
//   - construct: each node's PMIX_GROUP_ENDPT_DATA (its members' modex data, packed by
//     libpmix) goes up, and the concatenation of every node's comes back, which libpmix stores
//     so that members can PMIx_Get each other's keys; with PMIX_GROUP_ASSIGN_CONTEXT_ID the
//     answer carries PMIX_GROUP_CONTEXT_ID, a number the frontend gives that collective, the
//     same on every node;
//   - destruct: a barrier among the same nodes.
// Every outcome, errors included, goes through the callback, never as the upcall's return
// status: on a synchronous error libpmix 4.2.2 releases its tracker twice and the other local
// members never hear back.
#include "bootstrap/pmix_server_impl.h"

namespace tlaunch {
namespace {

struct GroupResults {
  pmix_info_t* info = nullptr;
  size_t count = 0;
};

void releaseGroupResults(void* p) {
  auto* r = static_cast<GroupResults*>(p);
  PMIX_INFO_FREE(r->info, r->count);
  delete r;
}

pmix_status_t upGroup(pmix_group_operation_t op, char grp[], const pmix_proc_t procs[], size_t nprocs,
                      const pmix_info_t directives[], size_t ndirs, pmix_info_cbfunc_t cbfunc, void* cbdata) {
  GroupReply reply{cbfunc, cbdata, false};
  std::string endpoints;
  int timeout_s = 0;
  for (size_t i = 0; i < ndirs; ++i) {
    const pmix_info_t& d = directives[i];
    if (PMIX_CHECK_KEY(&d, PMIX_GROUP_ASSIGN_CONTEXT_ID)) {
      reply.assign_context_id = PMIX_INFO_TRUE(&d);
    } else if (PMIX_CHECK_KEY(&d, PMIX_GROUP_ENDPT_DATA) && d.value.type == PMIX_BYTE_OBJECT &&
               d.value.data.bo.bytes != nullptr) {
      endpoints.assign(d.value.data.bo.bytes, d.value.data.bo.size);
    } else if (PMIX_CHECK_KEY(&d, PMIX_TIMEOUT)) {
      timeout_s = infoInt(d);
    }
  }
  const bool known = op == PMIX_GROUP_CONSTRUCT || op == PMIX_GROUP_DESTRUCT;
  std::string kind = std::string(op == PMIX_GROUP_CONSTRUCT ? "group_construct/" : "group_destruct/") +
                     (grp != nullptr ? grp : "");
  std::vector<pmix_proc_t> members(procs, procs + nprocs);
  return postToStrand([known, kind = std::move(kind), members = std::move(members), endpoints = std::move(endpoints),
                       reply, timeout_s](PmixServer::Impl& s, uint64_t gen) mutable {
    if (!known) return reply(PMIX_ERR_NOT_SUPPORTED, {}, 0);  // PMIx 4.2 defines no other operation
    s.onCollective(gen, std::move(kind), members, std::move(endpoints), CollectiveReply{{}, {}, reply}, timeout_s);
  });
}

}  // namespace

void GroupReply::operator()(pmix_status_t status, std::string data, uint64_t context_id) const {
  if (!fn) return;
  const size_t count = status != PMIX_SUCCESS ? 0 : (assign_context_id ? 1 : 0) + (data.empty() ? 0 : 1);
  if (count == 0) {
    fn(status, nullptr, 0, cbdata, nullptr, nullptr);
    return;
  }
  // libpmix reads the results after this call returns: they live until it releases them.
  auto* results = new GroupResults;
  PMIX_INFO_CREATE(results->info, count);
  results->count = count;
  size_t n = 0;
  if (assign_context_id) {
    size_t id = context_id;
    PMIX_INFO_LOAD(&results->info[n++], PMIX_GROUP_CONTEXT_ID, &id, PMIX_SIZE);
  }
  if (!data.empty()) {
    pmix_byte_object_t bo;
    bo.bytes = data.data();
    bo.size = data.size();
    PMIX_INFO_LOAD(&results->info[n++], PMIX_GROUP_ENDPT_DATA, &bo, PMIX_BYTE_OBJECT);  // copies the bytes
  }
  fn(PMIX_SUCCESS, results->info, results->count, cbdata, releaseGroupResults, results);
}

void addGroupUpcall(pmix_server_module_t& m) { m.group = upGroup; }

}  // namespace tlaunch
