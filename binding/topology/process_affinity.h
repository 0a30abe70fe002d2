#pragma once
// The CPUs this process may run on, applied to a live topology snapshot.
#include "tlaunch/topology.h"

namespace tlaunch {

// Leaves out the CPUs this process may not run on (taskset, numactl --physcpubind, a systemd
// CPUAffinity): hwloc leaves out only what the cgroup's cpuset forbids. The daemon's affinity is
// what its ranks may use (srun starts it with --cpu-bind=none: its step's CPUs on the node).
// Cores left without a CPU go; a NUMA node may be left without cores.
void keepAffinityOnly(TopologySnapshot& snap);

}  // namespace tlaunch
