#pragma once
// Whether the kernel's OOM killer ran on this node: a rank killed by SIGKILL that tlaunch did
// not kill is most often its victim (a memory cgroup's limit, or the node's memory), and the
// user should hear "out of memory", not only "signal 9".
#include <optional>
#include <string>

namespace tlaunch {

// The node's count of OOM kills so far (/proc/vmstat's oom_kill, Linux 4.13 and later; memory
// cgroups' OOM kills included); nullopt where the file or the field is missing.
std::optional<long long> oomKillCount(const std::string& vmstat_path = "/proc/vmstat");

}  // namespace tlaunch
