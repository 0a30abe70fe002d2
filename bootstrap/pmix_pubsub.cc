// Publish / lookup / unpublish and connect / disconnect: the upcalls copy their arguments and
// post; the strand side hands them to the control plane (Callbacks) and answers libpmix when
// the frontend's reply comes back (complete*).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "bootstrap/pmix_server_impl.h"

namespace tlaunch {

int infoInt(const pmix_info_t& info) {
  const pmix_value_t& v = info.value;
  switch (v.type) {
    case PMIX_BOOL: return v.data.flag ? 1 : 0;
    case PMIX_INT: return v.data.integer;
    case PMIX_UINT8: return v.data.uint8;  // also PMIX_DATA_RANGE / PMIX_PERSIST
    case PMIX_DATA_RANGE: return v.data.range;
    case PMIX_PERSIST: return v.data.persist;
    case PMIX_UINT32: return static_cast<int>(v.data.uint32);
    case PMIX_INT32: return v.data.int32;
    case PMIX_SIZE: return static_cast<int>(v.data.size);
    default: return -1;
  }
}

namespace {

// One key and value, packed for the frontend (which never looks inside).
std::string packInfo(const pmix_info_t& info) {
  pmix_data_buffer_t buf;
  PMIX_DATA_BUFFER_CONSTRUCT(&buf);
  std::string out;
  if (PMIx_Data_pack(nullptr, &buf, const_cast<pmix_info_t*>(&info), 1, PMIX_INFO) == PMIX_SUCCESS) {
    pmix_byte_object_t bo;
    PMIX_BYTE_OBJECT_CONSTRUCT(&bo);
    PMIx_Data_unload(&buf, &bo);
    out.assign(bo.bytes ? bo.bytes : "", bo.size);
    PMIX_BYTE_OBJECT_DESTRUCT(&bo);
  }
  PMIX_DATA_BUFFER_DESTRUCT(&buf);
  return out;
}

// The value of a packed pmix_info_t into `out`; false if the bytes are not one.
bool unpackInto(const std::string& bytes, pmix_value_t* out) {
  pmix_data_buffer_t buf;
  PMIX_DATA_BUFFER_CONSTRUCT(&buf);
  pmix_byte_object_t bo;
  bo.bytes = static_cast<char*>(malloc(bytes.empty() ? 1 : bytes.size()));  // the buffer takes it
  memcpy(bo.bytes, bytes.data(), bytes.size());
  bo.size = bytes.size();
  PMIx_Data_load(&buf, &bo);
  pmix_info_t info;
  PMIX_INFO_CONSTRUCT(&info);
  int32_t count = 1;
  bool ok = PMIx_Data_unpack(nullptr, &buf, &info, &count, PMIX_INFO) == PMIX_SUCCESS && count == 1;
  if (ok) ok = PMIx_Value_xfer(out, &info.value) == PMIX_SUCCESS;
  PMIX_INFO_DESTRUCT(&info);
  PMIX_DATA_BUFFER_DESTRUCT(&buf);
  return ok;
}

std::vector<std::string> keyList(char** keys) {
  std::vector<std::string> out;
  for (char** k = keys; k && *k; ++k) out.emplace_back(*k);
  return out;
}

// Keys starting with "pmix." are directives (range, persistence, the user id libpmix adds);
// everything else is data.
bool isDirective(const pmix_info_t& info) { return strncmp(info.key, "pmix.", 5) == 0; }

pmix_status_t upPublish(const pmix_proc_t* proc, const pmix_info_t info[], size_t ninfo, pmix_op_cbfunc_t cbfunc,
                        void* cbdata) {
  PmixPublish req;
  req.rank = static_cast<int>(proc->rank);
  for (size_t i = 0; i < ninfo; ++i) {
    if (PMIX_CHECK_KEY(&info[i], PMIX_RANGE)) {
      req.range = infoInt(info[i]);
    } else if (PMIX_CHECK_KEY(&info[i], PMIX_PERSISTENCE)) {
      req.persistence = infoInt(info[i]);
    } else if (!isDirective(info[i])) {
      req.values.emplace_back(info[i].key, packInfo(info[i]));
    }
  }
  OpReply reply{cbfunc, cbdata};
  const pmix_proc_t from = *proc;
  return postToStrand([from, req = std::move(req), reply](PmixServer::Impl& s, uint64_t gen) mutable {
    s.onPublish(gen, from, std::move(req), reply);
  });
}

pmix_status_t upLookup(const pmix_proc_t* proc, char** keys, const pmix_info_t info[], size_t ninfo,
                       pmix_lookup_cbfunc_t cbfunc, void* cbdata) {
  PmixLookup req;
  req.rank = static_cast<int>(proc->rank);
  req.keys = keyList(keys);
  for (size_t i = 0; i < ninfo; ++i) {
    if (PMIX_CHECK_KEY(&info[i], PMIX_RANGE)) {
      req.range = infoInt(info[i]);
    } else if (PMIX_CHECK_KEY(&info[i], PMIX_WAIT)) {
      // PMIx 4 defines an int (how many keys, 0: all); clients also send a bool.
      if (info[i].value.type == PMIX_BOOL) req.wait = PMIX_INFO_TRUE(&info[i]) ? 0 : -1;
      else req.wait = infoInt(info[i]);
    } else if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT)) {
      req.timeout_s = infoInt(info[i]);
    }
  }
  LookupReply reply{cbfunc, cbdata};
  const pmix_proc_t from = *proc;
  return postToStrand([from, req = std::move(req), reply](PmixServer::Impl& s, uint64_t gen) mutable {
    s.onLookup(gen, from, std::move(req), reply);
  });
}

pmix_status_t upUnpublish(const pmix_proc_t* proc, char** keys, const pmix_info_t info[], size_t ninfo,
                          pmix_op_cbfunc_t cbfunc, void* cbdata) {
  PmixUnpublish req;
  req.rank = static_cast<int>(proc->rank);
  req.keys = keyList(keys);
  for (size_t i = 0; i < ninfo; ++i)
    if (PMIX_CHECK_KEY(&info[i], PMIX_RANGE)) req.range = infoInt(info[i]);
  OpReply reply{cbfunc, cbdata};
  const pmix_proc_t from = *proc;
  return postToStrand([from, req = std::move(req), reply](PmixServer::Impl& s, uint64_t gen) mutable {
    s.onUnpublish(gen, from, std::move(req), reply);
  });
}

template <const char* Kind>
pmix_status_t upConnectOrDisconnect(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[], size_t ninfo,
                                    pmix_op_cbfunc_t cbfunc, void* cbdata) {
  std::vector<pmix_proc_t> participants(procs, procs + nprocs);
  int timeout_s = 0;
  for (size_t i = 0; i < ninfo; ++i)
    if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT)) timeout_s = infoInt(info[i]);
  OpReply reply{cbfunc, cbdata};
  // libpmix arms a timer of its own right after a connect's upcall returns (not a
  // disconnect's): ours must answer first (Callbacks::answer_at).
  std::optional<std::chrono::steady_clock::time_point> give_up_at;
  if (timeout_s > 0 && std::string_view(Kind) == "connect")
    give_up_at = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s) - PmixServer::Impl::kAheadOfLibpmix;
  return postToStrand([participants, reply, timeout_s, give_up_at](PmixServer::Impl& s, uint64_t gen) {
    s.onCollective(gen, Kind, participants, {}, {{}, reply, {}}, timeout_s, give_up_at);
  });
}

constexpr char kConnect[] = "connect";
constexpr char kDisconnect[] = "disconnect";

}  // namespace

pmix_status_t pmixStatusOf(PmixReply r) {
  switch (r) {
    case PmixReply::ok: return PMIX_SUCCESS;
    case PmixReply::not_found: return PMIX_ERR_NOT_FOUND;
    case PmixReply::timeout: return PMIX_ERR_TIMEOUT;
    case PmixReply::duplicate: return PMIX_ERR_DUPLICATE_KEY;
    case PmixReply::bad_param: return PMIX_ERR_BAD_PARAM;
    case PmixReply::not_supported: return PMIX_ERR_NOT_SUPPORTED;
    case PmixReply::proc_lost: return PMIX_ERR_LOST_CONNECTION;
    case PmixReply::no_room: return PMIX_ERR_OUT_OF_RESOURCE;
  }
  return PMIX_ERROR;
}

void addPubsubUpcalls(pmix_server_module_t& m) {
  m.publish = upPublish;
  m.lookup = upLookup;
  m.unpublish = upUnpublish;
  m.connect = upConnectOrDisconnect<kConnect>;
  m.disconnect = upConnectOrDisconnect<kDisconnect>;
}

// ---- strand side ----------------------------------------------------------------------------

void PmixServer::Impl::onPublish(uint64_t gen, pmix_proc_t from, PmixPublish request, OpReply reply) {
  if (isStale(gen)) return;
  if (!job) return reply(PMIX_ERR_NOT_FOUND);
  if (!callbacks.publish) return reply(PMIX_ERR_NOT_SUPPORTED);
  if ((request.rank = numberOf(from)) < 0) return reply(PMIX_ERR_NOT_FOUND);
  if (request.values.empty()) return reply(PMIX_ERR_BAD_PARAM);
  const uint64_t id = job->next_op_id++;
  job->publishes.emplace(id, reply);
  callbacks.publish(id, std::move(request));
}

void PmixServer::Impl::onLookup(uint64_t gen, pmix_proc_t from, PmixLookup request, LookupReply reply) {
  if (isStale(gen)) return;
  if (!job) return reply(PMIX_ERR_NOT_FOUND);
  if (!callbacks.lookup) return reply(PMIX_ERR_NOT_SUPPORTED);
  if ((request.rank = numberOf(from)) < 0) return reply(PMIX_ERR_NOT_FOUND);
  if (request.keys.empty()) return reply(PMIX_ERR_BAD_PARAM);
  const uint64_t id = job->next_op_id++;
  job->lookups.emplace(id, reply);
  callbacks.lookup(id, std::move(request));
}

void PmixServer::Impl::onUnpublish(uint64_t gen, pmix_proc_t from, PmixUnpublish request, OpReply reply) {
  if (isStale(gen)) return;
  if (!job) return reply(PMIX_ERR_NOT_FOUND);
  if (!callbacks.unpublish) return reply(PMIX_ERR_NOT_SUPPORTED);
  if ((request.rank = numberOf(from)) < 0) return reply(PMIX_ERR_NOT_FOUND);
  const uint64_t id = job->next_op_id++;
  job->unpublishes.emplace(id, reply);
  callbacks.unpublish(id, std::move(request));
}

void PmixServer::Impl::onCollective(uint64_t gen, std::string kind, const std::vector<pmix_proc_t>& procs,
                                    std::string blob, CollectiveReply reply, int timeout_s,
                                    std::optional<std::chrono::steady_clock::time_point> give_up_at) {
  if (isStale(gen)) return;
  if (!job) return reply(PMIX_ERR_NOT_FOUND, {});
  // The job's ranks and those of namespaces it spawned. The job's wildcard is {-1} (all of
  // it), spelled out only when procs of a spawned namespace take part too.
  std::vector<int> ranks;
  bool whole_job = false;
  for (const auto& p : procs) {
    std::vector<int> numbers;
    if (!numbersOf(p, numbers)) return reply(knowsNamespace(p.nspace) ? PMIX_ERR_BAD_PARAM : PMIX_ERR_NOT_SUPPORTED, {});
    if (numbers == std::vector<int>{-1}) whole_job = true;
    else ranks.insert(ranks.end(), numbers.begin(), numbers.end());
  }
  const auto job_size = static_cast<int>(job->geometry.job_size);
  if (whole_job && std::all_of(ranks.begin(), ranks.end(), [job_size](int r) { return r < job_size; })) {
    ranks = {-1};
  } else if (whole_job) {
    for (int r = 0; r < job_size; ++r) ranks.push_back(r);
  }
  if (ranks.empty()) return reply(PMIX_ERR_BAD_PARAM, {});
  if (!callbacks.collective) return reply(PMIX_ERR_NOT_SUPPORTED, {});
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  const uint64_t id = job->next_op_id++;
  job->collectives.emplace(id, reply);
  answerTimeoutAt(give_up_at, [id](Impl& s) {
    if (auto node = s.job->collectives.extract(id)) node.mapped()(PMIX_ERR_TIMEOUT, {});
  });
  callbacks.collective(id, PmixCollective{std::move(kind), std::move(ranks), std::move(blob), std::max(0, timeout_s)});
}

// ---- completions from the control plane -----------------------------------------------------

void PmixServer::completePublish(uint64_t request_id, PmixReply status) {
  Impl& s = *impl_;
  if (!s.job) return;
  if (auto node = s.job->publishes.extract(request_id)) node.mapped()(pmixStatusOf(status));
}

void PmixServer::completeUnpublish(uint64_t request_id, PmixReply status) {
  Impl& s = *impl_;
  if (!s.job) return;
  if (auto node = s.job->unpublishes.extract(request_id)) node.mapped()(pmixStatusOf(status));
}

void PmixServer::completeLookup(uint64_t request_id, PmixReply status, const std::vector<PmixFound>& found) {
  Impl& s = *impl_;
  if (!s.job) return;
  auto node = s.job->lookups.extract(request_id);
  if (!node) return;
  if (status != PmixReply::ok || found.empty())
    return node.mapped()(status == PmixReply::ok ? PMIX_ERR_NOT_FOUND : pmixStatusOf(status));
  pmix_pdata_t* data = nullptr;
  const size_t count = found.size();
  PMIX_PDATA_CREATE(data, count);
  if (data == nullptr) return node.mapped()(PMIX_ERR_NOMEM);
  size_t n = 0;
  for (const auto& f : found) {
    if (!unpackInto(f.value, &data[n].value)) continue;
    if (!s.procOf(f.publisher, data[n].proc)) {
      PMIX_VALUE_DESTRUCT(&data[n].value);  // the next entry takes its place
      continue;
    }
    PMIX_LOAD_KEY(data[n].key, f.key.c_str());
    ++n;
  }
  node.mapped()(n ? PMIX_SUCCESS : PMIX_ERR_NOT_FOUND, n ? data : nullptr, n);
  PMIX_PDATA_FREE(data, count);
}

void PmixServer::completeCollective(uint64_t request_id, PmixReply status, std::string all_blobs,
                                    uint64_t context_id) {
  Impl& s = *impl_;
  if (!s.job) return;
  if (auto node = s.job->collectives.extract(request_id))
    node.mapped()(pmixStatusOf(status), std::move(all_blobs), context_id);
}

}  // namespace tlaunch
