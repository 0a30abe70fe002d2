#pragma once
// [edge] Applying a rank's CPU and memory binding between fork and exec. Everything that allocates
// happens in prepareBinding, before fork; applyPreparedBinding only makes raw system calls.
#include <sched.h>

#include <cstddef>

#include "tlaunch/result.h"
#include "tlaunch/topology.h"

namespace tlaunch {

struct PreparedBinding {
  static constexpr std::size_t kNodeMaskWords = 16;  // 1024 NUMA nodes
  bool bind_cpus = false;
  cpu_set_t cpus;
  bool bind_memory = false;
  unsigned long nodemask[kNodeMaskWords] = {};
  unsigned long maxnode = 0;  // as set_mempolicy(2) expects it
};

// Builds the masks of a RankBinding (empty cpus → no CPU binding, empty mem_nodes → no memory
// binding). Fails with Errc::topology for a CPU or node id beyond what the masks can hold.
Result<PreparedBinding> prepareBinding(const RankBinding& binding);

// Async-signal-safe: sched_setaffinity, then set_mempolicy(MPOL_BIND). Returns 0 or the errno of
// the failing call. Memory binding that the kernel or container refuses (EINVAL on single-NUMA or
// restricted-mems machines, ENOSYS without NUMA support, EPERM under seccomp) is skipped, not fatal.
int applyPreparedBinding(const PreparedBinding& prepared) noexcept;

}  // namespace tlaunch
