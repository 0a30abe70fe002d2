#include "bootstrap/pmix_job_info.h"

#include <cstdlib>
#include <utility>

namespace tlaunch {

PmixInfoList& PmixInfoList::operator=(PmixInfoList&& other) noexcept {
  if (this != &other) {
    clear();
    infos_ = std::move(other.infos_);
    other.infos_.clear();
  }
  return *this;
}

PmixInfoList::~PmixInfoList() { clear(); }

void PmixInfoList::clear() {
  for (auto& info : infos_) PMIX_INFO_DESTRUCT(&info);
  infos_.clear();
}

pmix_info_t* PmixInfoList::append() {
  pmix_info_t& info = infos_.emplace_back();
  PMIX_INFO_CONSTRUCT(&info);
  return &info;
}

// PMIx_Info_load copies the value (strings are strdup'ed, data arrays deep-copied); it only
// fails on allocation failure or an unknown type, neither of which a caller can handle.
void PmixInfoList::addString(const char* key, const std::string& value) {
  (void)PMIx_Info_load(append(), key, value.c_str(), PMIX_STRING);
}
void PmixInfoList::addUint32(const char* key, uint32_t value) {
  (void)PMIx_Info_load(append(), key, &value, PMIX_UINT32);
}
void PmixInfoList::addUint16(const char* key, uint16_t value) {
  (void)PMIx_Info_load(append(), key, &value, PMIX_UINT16);
}
void PmixInfoList::addRank(const char* key, pmix_rank_t value) {
  (void)PMIx_Info_load(append(), key, &value, PMIX_PROC_RANK);
}
void PmixInfoList::addBool(const char* key, bool value) {
  (void)PMIx_Info_load(append(), key, &value, PMIX_BOOL);
}
void PmixInfoList::addProc(const char* key, const std::string& nspace, pmix_rank_t rank) {
  pmix_proc_t proc;
  PMIX_PROC_LOAD(&proc, nspace.c_str(), rank);
  (void)PMIx_Info_load(append(), key, &proc, PMIX_PROC);
}
void PmixInfoList::addRegex(const char* key, const char* regex) {
  (void)PMIx_Info_load(append(), key, regex, PMIX_REGEX);
}
void PmixInfoList::addArray(const char* key, PmixInfoList& array) {
  pmix_data_array_t da;
  da.type = PMIX_INFO;
  da.size = array.size();
  da.array = array.data();
  (void)PMIx_Info_load(append(), key, &da, PMIX_DATA_ARRAY);
}

namespace {

// PMIx_generate_regex / _ppn return malloc'ed strings.
Result<std::string> generate(pmix_status_t (*fn)(const char*, char**), const std::string& input, const char* what) {
  char* out = nullptr;
  pmix_status_t rc = fn(input.c_str(), &out);
  if (rc != PMIX_SUCCESS || out == nullptr) {
    free(out);
    return fail(Errc::internal, std::string("PMIx could not encode the job's ") + what + ": " + PMIx_Error_string(rc));
  }
  std::string s(out);
  free(out);
  return s;
}

// Everything a rank may ask about another rank. RANK must come first in a PROC_DATA array.
// `leader`: the first rank of the rank's app (MPI_Comm_spawn_multiple gives apps consecutive ranks).
PmixInfoList procData(const PmixJobLayout& layout, const PmixJobGeometry& g, uint32_t rank, uint32_t leader) {
  uint32_t node = g.node_of_rank[rank];
  const uint32_t app = layout.appnum_of_rank.empty() ? 0 : layout.appnum_of_rank[rank];
  PmixInfoList p;
  p.addRank(PMIX_RANK, rank);
  p.addUint32(PMIX_APPNUM, app);
  p.addRank(PMIX_APPLDR, leader);
  p.addRank(PMIX_GLOBAL_RANK, rank);
  p.addRank(PMIX_APP_RANK, rank - leader);
  // Any PROC_DATA switches off libpmix's derivation of these from the maps, so always send them.
  p.addUint16(PMIX_LOCAL_RANK, g.local_rank_of_rank[rank]);
  p.addUint16(PMIX_NODE_RANK, g.local_rank_of_rank[rank]);
  p.addUint32(PMIX_NODEID, layout.node_ids.empty() ? node : layout.node_ids[node]);
  p.addString(PMIX_HOSTNAME, layout.node_names[node]);
  return p;
}

}  // namespace

Result<PmixInfoList> buildJobInfo(const PmixJobLayout& layout, const PmixJobGeometry& g) {
  auto node_map = generate(PMIx_generate_regex, g.node_list, "node map");
  if (!node_map) return tl::unexpected(node_map.error());
  auto proc_map = generate(PMIx_generate_ppn, g.ppn_list, "process map");
  if (!proc_map) return tl::unexpected(proc_map.error());

  const auto num_nodes = static_cast<uint32_t>(layout.node_names.size());
  const auto local_size = static_cast<uint32_t>(g.local_ranks.size());
  PmixInfoList info;
  info.addRegex(PMIX_NODE_MAP, node_map->c_str());
  info.addRegex(PMIX_PROC_MAP, proc_map->c_str());
  // Job level.
  info.addUint32(PMIX_UNIV_SIZE, g.job_size);
  info.addUint32(PMIX_JOB_SIZE, g.job_size);
  info.addUint32(PMIX_MAX_PROCS, g.job_size);
  info.addUint32(PMIX_NUM_NODES, num_nodes);
  info.addString(PMIX_JOBID, layout.nspace);
  const bool spawned = !layout.parent_nspace.empty();
  info.addBool(PMIX_SPAWNED, spawned);
  if (spawned) info.addProc(PMIX_PARENT_ID, layout.parent_nspace, layout.parent_rank);
  info.addString(PMIX_TMPDIR, layout.job_tmpdir);
  info.addString(PMIX_NSDIR, layout.job_tmpdir);
  info.addBool(PMIX_TDIR_RMCLEAN, true);  // we remove job_tmpdir; Open MPI leaves files there
  if (!layout.topology_xml.empty()) info.addString(PMIX_HWLOC_XML_V2, layout.topology_xml);
  // This node.
  info.addUint32(PMIX_LOCAL_SIZE, local_size);
  info.addUint32(PMIX_NODE_SIZE, local_size);
  if (!g.local_peers.empty()) info.addString(PMIX_LOCAL_PEERS, g.local_peers);
  if (!g.local_ranks.empty()) info.addRank(PMIX_LOCALLDR, static_cast<pmix_rank_t>(g.local_ranks.front()));
  if (layout.oversubscribed) info.addBool(PMIX_NODE_OVERSUBSCRIBED, true);
  // Every rank.
  uint32_t leader = 0;
  for (uint32_t r = 0; r < g.job_size; ++r) {
    if (r > 0 && !layout.appnum_of_rank.empty() && layout.appnum_of_rank[r] != layout.appnum_of_rank[r - 1]) leader = r;
    PmixInfoList p = procData(layout, g, r, leader);
    info.addArray(PMIX_PROC_DATA, p);
  }
  return info;
}

}  // namespace tlaunch
