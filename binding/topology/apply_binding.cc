#include "binding/topology/apply_binding.h"

#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <string>

namespace tlaunch {

Result<PreparedBinding> prepareBinding(const RankBinding& binding) {
  PreparedBinding p;
  CPU_ZERO(&p.cpus);
  for (int cpu : binding.cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE)
      return fail(Errc::topology,
                  "CPU " + std::to_string(cpu) + " of local rank " + std::to_string(binding.local_rank) +
                      " is outside the " + std::to_string(CPU_SETSIZE) + " CPUs tlaunch can bind",
                  "run with --bind none on this machine");
    CPU_SET(cpu, &p.cpus);
    p.bind_cpus = true;
  }
  constexpr int kBitsPerWord = int(sizeof(unsigned long) * CHAR_BIT);
  constexpr int kMaxNodes = int(PreparedBinding::kNodeMaskWords) * kBitsPerWord;
  for (int node : binding.mem_nodes) {
    if (node < 0 || node >= kMaxNodes)
      return fail(Errc::topology,
                  "NUMA node " + std::to_string(node) + " of local rank " + std::to_string(binding.local_rank) +
                      " is outside the " + std::to_string(kMaxNodes) + " nodes tlaunch can bind",
                  "run with --bind none on this machine");
    p.nodemask[node / kBitsPerWord] |= 1ul << (node % kBitsPerWord);
    p.bind_memory = true;
  }
  // The kernel reads maxnode - 1 bits.
  p.maxnode = p.bind_memory ? (unsigned long)kMaxNodes + 1 : 0;
  return p;
}

int applyPreparedBinding(const PreparedBinding& p) noexcept {
  if (p.bind_cpus && syscall(SYS_sched_setaffinity, 0, sizeof(cpu_set_t), &p.cpus) != 0) return errno;
  if (p.bind_memory && syscall(SYS_set_mempolicy, MPOL_BIND, p.nodemask, p.maxnode) != 0) {
    int err = errno;
    if (err != EINVAL && err != ENOSYS && err != EPERM) return err;
  }
  return 0;
}

}  // namespace tlaunch
