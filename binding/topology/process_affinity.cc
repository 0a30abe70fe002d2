#include "binding/topology/process_affinity.h"

#include <sched.h>

#include <vector>

namespace tlaunch {

void keepAffinityOnly(TopologySnapshot& snap) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  for (auto& numa : snap.numa_nodes) {
    for (auto& core : numa.cores)
      std::erase_if(core, [&](int pu) { return pu < 0 || pu >= CPU_SETSIZE || !CPU_ISSET(pu, &allowed); });
    std::erase_if(numa.cores, [](const std::vector<int>& core) { return core.empty(); });
  }
}

}  // namespace tlaunch
