#pragma once
// A per-boot cache of the live machine's hwloc topology. hwloc's discovery reads sysfs and the
// configuration space of every PCI device (in a VM each read traps to the hypervisor: 10 ms of a
// 2-vCPU VM's CPU per daemon, a fifth of a daemon's start), in every daemon of every job, for a
// machine that has not changed. The first daemon of a boot stores the whole machine, CPUs its
// cgroup does not allow included, in a file named by what the topology depends on; later ones
// load that XML, and hwloc applies their own process's restrictions to it
// (HWLOC_TOPOLOGY_FLAG_THISSYSTEM_ALLOWED_RESOURCES), so a Slurm step's cpuset is honoured.
#include <optional>
#include <string>

namespace tlaunch {

// What the live topology depends on besides the process's restrictions: tlaunchd's and hwloc's
// versions, this boot and host, the CPUs and NUMA nodes online, and the PCI, network (with
// addresses), InfiniBand (with port states), DRM, block and DMA devices present. nullopt when a
// HWLOC_* variable changes hwloc's discovery, or the boot cannot be told apart (no boot id).
std::optional<std::string> liveTopologyFacts();

// The cache file for `facts` in `dir`. The file holds the facts: a name clash is a miss.
std::string topologyCacheFile(const std::string& dir, const std::string& facts);

// The cached XML, when `file` is this user's regular file (not a symlink), writable by no one
// else, at most 64 MiB, in a directory of this user's closed to others, and was written for
// `facts`. Never blocks (a FIFO in its place is refused).
std::optional<std::string> readCachedTopology(const std::string& file, const std::string& facts);

// Best effort (a cache that cannot be written costs the next daemon a discovery): creates `dir`
// 0700; writes nothing into one that is a symlink, another user's, or open to others; replaces
// `file` atomically; removes the directory's other cache files (another boot's or machine's).
void storeCachedTopology(const std::string& dir, const std::string& file, const std::string& facts,
                         const std::string& xml);

}  // namespace tlaunch
