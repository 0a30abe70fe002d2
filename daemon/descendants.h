#pragma once
// The daemon's view of the processes its ranks started, from /proc: tlaunchd is a child
// subreaper, so whatever a rank leaves behind (setsid, a double fork) re-parents to the daemon
// and stays its descendant. No names are trusted: only parent links.
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tlaunch {

struct ProcEntry {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;
  char state = '?';  // 'Z': a zombie waiting for its parent
};

// Makes this process a child subreaper (PR_SET_CHILD_SUBREAPER); false if the kernel refused.
bool becomeSubreaper();

// Every process under `proc_root` (/proc), from each /proc/<pid>/stat. Processes that vanish
// while it reads are skipped.
std::vector<ProcEntry> listProcesses(const std::string& proc_root = "/proc");

// This process's own children (of every thread: orphans re-parent to any of them), from
// <task_dir>/<tid>/children: a file per thread instead of every process's stat. nullopt where
// the kernel has no such files (CONFIG_PROC_CHILDREN). A hint, as the kernel says: a child
// forked or re-parented while it reads may be missing.
std::optional<std::vector<pid_t>> ownChildren(const std::string& task_dir = "/proc/self/task");

// Every process below `root` by parent links (children, their children, ...), not `root`.
// With `prune`: a process for which it is true is left out, and so is everything below it.
std::vector<ProcEntry> descendantsOf(pid_t root, const std::vector<ProcEntry>& procs,
                                     const std::function<bool(pid_t)>& prune = {});

// Field 22 of /proc/<pid>/stat (clock ticks after boot): with the pid, it names one process even
// after the pid is reused. "" when there is no such process.
std::string processStartTime(pid_t pid);

// True only when the process that had `pid` and started at `start` (processStartTime) has
// surely ended: no process has the pid, the one that has it started at another time, or it is
// a zombie (ended, its status not yet read by its parent). One
// /proc does not show (mounted with hidepid: tlaunchd is not dumpable, so even its own user's
// other processes cannot read its entry) is taken as alive: "not seen" is not "gone".
bool processEnded(pid_t pid, const std::string& start);

// Whether /proc, as this mountinfo text (/proc/self/mountinfo) shows it, is mounted with hidepid
// (1, 2, invisible, noaccess, ptraceable): then another user's processes, and this user's that
// are not dumpable, are missing from it. Pure.
bool procHidesPids(std::string_view mountinfo);

// Parses the text of /proc/<pid>/stat; false if it is not one.
bool parseProcStat(const std::string& stat, ProcEntry& out);

}  // namespace tlaunch
