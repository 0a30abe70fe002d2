#pragma once
// [pure] The binding manifest: one row per rank (rank, node, GPU, HCA:port, PCI path, NUMA, cpuset),
// printed by --dry-run and hashed so two runs can be compared.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "tlaunch/topology.h"

namespace tlaunch {

struct ManifestRow {
  int rank = 0;
  std::string node;
  RankBinding binding;
};

// Aligned columns: rank node local_rank gpu (with UUID when known) hca path numa cpuset; "-" for none.
std::string renderManifestTable(const std::vector<ManifestRow>& rows);

// Array of {rank, node, local_rank, gpu_busid, gpu_uuid, hca, path, numa, cpuset, mem_nodes};
// absent values are null, cpuset is list form ("0-7,112-119"), mem_nodes an array of NUMA OS indices.
nlohmann::json manifestToJson(const std::vector<ManifestRow>& rows);

// First 16 hex digits of the SHA-256 of the manifest without host names and GPU UUIDs, rows by rank:
// identical machines with the same options give the same fingerprint.
std::string manifestFingerprint(const std::vector<ManifestRow>& rows);

// Left-aligned columns separated by two spaces, no trailing blanks; each line starts with indent.
std::string alignColumns(const std::vector<std::vector<std::string>>& rows, const std::string& indent = "");

}  // namespace tlaunch
