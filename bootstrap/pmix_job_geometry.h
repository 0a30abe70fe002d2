#pragma once
// Pure: where every rank of a PMIx job lives, derived from a PmixJobLayout and validated.
#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/pmix_server.h"
#include "tlaunch/result.h"

namespace tlaunch {

struct PmixJobGeometry {
  uint32_t job_size = 0;
  std::vector<uint32_t> node_of_rank;        // global rank -> node index
  std::vector<uint16_t> local_rank_of_rank;  // global rank -> position in its node's list
  std::vector<int> local_ranks;              // this node's ranks, in local-rank order
  std::string node_list;                     // "nodeA,nodeB": input of PMIx_generate_regex
  std::string ppn_list;                      // "0,1;2,3": input of PMIx_generate_ppn
  std::string local_peers;                   // "0,1": this node's ranks (PMIX_LOCAL_PEERS)

  bool isLocal(int rank) const;
};

// Errors name the offending node or rank. Rules: every node hosts at least one rank, the ranks
// are exactly 0..N-1, node names are unique and usable in a PMIx regex, directories absolute.
Result<PmixJobGeometry> planPmixJob(const PmixJobLayout& layout);

}  // namespace tlaunch
