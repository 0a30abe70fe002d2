#pragma once
// Internal to the PMIx glue (includes libpmix): owned pmix_info_t arrays, and the info array
// that PMIx_server_register_nspace gets for a job.
#include <pmix.h>
#include <pmix_server.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/pmix_job_geometry.h"
#include "bootstrap/pmix_server.h"
#include "tlaunch/result.h"

namespace tlaunch {

// An array of pmix_info_t that owns its values (PMIX_INFO_LOAD copies them in). Keep it alive
// until libpmix has called back for any call it was passed to: libpmix does not copy it.
class PmixInfoList {
 public:
  PmixInfoList() = default;
  PmixInfoList(PmixInfoList&& other) noexcept : infos_(std::move(other.infos_)) { other.infos_.clear(); }
  PmixInfoList& operator=(PmixInfoList&& other) noexcept;
  PmixInfoList(const PmixInfoList&) = delete;
  PmixInfoList& operator=(const PmixInfoList&) = delete;
  ~PmixInfoList();

  void addString(const char* key, const std::string& value);
  void addUint32(const char* key, uint32_t value);
  void addUint16(const char* key, uint16_t value);
  void addRank(const char* key, pmix_rank_t value);
  void addBool(const char* key, bool value);
  void addProc(const char* key, const std::string& nspace, pmix_rank_t rank);
  void addRegex(const char* key, const char* regex);  // PMIX_REGEX: as Slurm and PRRTE pass maps
  void addArray(const char* key, PmixInfoList& array);  // PMIX_DATA_ARRAY of PMIX_INFO (deep copy)

  pmix_info_t* data() { return infos_.empty() ? nullptr : infos_.data(); }
  size_t size() const { return infos_.size(); }

 private:
  pmix_info_t* append();  // a constructed entry; PMIx_Info_load fills key and value
  void clear();
  std::vector<pmix_info_t> infos_;  // pmix_info_t is a trivially copyable C struct
};

// The register_nspace info: node and proc maps plus the recommended set of job, node and
// per-rank keys (PMIX.md §1.2). Needs an initialised libpmix (PMIx_generate_regex).
Result<PmixInfoList> buildJobInfo(const PmixJobLayout& layout, const PmixJobGeometry& geometry);

}  // namespace tlaunch
