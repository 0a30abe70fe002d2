#pragma once
// NCCL's interface/HCA list grammar (NCCL_SOCKET_IFNAME, NCCL_IB_HCA), pure:
//   "ib"            prefix: any name starting with "ib"
//   "=ib0,ib1"      exact names
//   "^docker,lo"    every name except those prefixes;  "^=docker0" except that exact name
//   "mlx5_0:1"      device prefix + port (HCA lists)
// As in NCCL (src/os/linux.cc, src/misc/utils.cc): '^' first, then '=', then a comma list.
#include <string>
#include <string_view>
#include <vector>

namespace tlaunch {

struct NcclIfEntry {
  std::string prefix;
  int port = -1;  // -1: any port
};

struct NcclIfList {
  bool negate = false;  // leading '^'
  bool exact = false;   // '=' (after any '^')
  std::vector<NcclIfEntry> entries;
};

NcclIfList parseNcclIfList(std::string_view value);

// Whether NCCL would use the interface (port -1) or the HCA port `name:port` given this list.
// An empty list matches everything (negated: nothing), as in NCCL.
bool ncclIfListSelects(const NcclIfList& list, std::string_view name, int port = -1);

}  // namespace tlaunch
