#include "daemon/descendants.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <string_view>
#include <unordered_map>

namespace tlaunch {

bool becomeSubreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

bool parseProcStat(const std::string& stat, ProcEntry& out) {
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split at the last ')'.
  const auto open = stat.find(" (");
  const auto close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open || close + 2 >= stat.size()) return false;
  char* end = nullptr;
  const long pid = std::strtol(stat.c_str(), &end, 10);
  if (end != stat.c_str() + open || pid <= 0) return false;
  const char* p = stat.c_str() + close + 2;
  const char state = *p++;
  const long ppid = std::strtol(p, &end, 10);
  if (end == p) return false;
  p = end;
  const long pgid = std::strtol(p, &end, 10);
  if (end == p) return false;
  out.pid = static_cast<pid_t>(pid);
  out.state = state;
  out.ppid = static_cast<pid_t>(ppid);
  out.pgid = static_cast<pid_t>(pgid);
  return true;
}

bool procHidesPids(std::string_view mountinfo) {
  bool hides = false;  // the last mount on /proc is the one in force
  std::istringstream lines{std::string(mountinfo)};
  for (std::string line; std::getline(lines, line);) {
    // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS"
    std::istringstream head(line);
    std::string id, parent, device, root, mountpoint, fstype, source, super;
    const size_t dash = line.find(" - ");
    if (!(head >> id >> parent >> device >> root >> mountpoint) || mountpoint != "/proc" || dash == std::string::npos)
      continue;
    std::istringstream tail(line.substr(dash + 3));
    if (!(tail >> fstype >> source >> super) || fstype != "proc") continue;
    hides = false;
    std::istringstream options(super);
    for (std::string option; std::getline(options, option, ',');)
      if (option.starts_with("hidepid=")) hides = option != "hidepid=0" && option != "hidepid=off";
  }
  return hides;
}

namespace {
// A zombie has ended; only its parent has not read its status yet (a daemon killed a moment ago).
bool isZombie(pid_t pid) {
  char buf[512];
  const int fd = ::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  const std::string_view stat(buf, static_cast<size_t>(n));
  const size_t at = stat.rfind(')');
  return at != std::string_view::npos && at + 2 < stat.size() && stat[at + 2] == 'Z';
}
}  // namespace

bool processEnded(pid_t pid, const std::string& start) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;  // kill(2) sees through hidepid
  const std::string now = processStartTime(pid);
  return (!now.empty() && now != start) || (now == start && isZombie(pid));
}

std::string processStartTime(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[1024];
  const ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return "";
  const std::string stat(buf, static_cast<size_t>(n));
  size_t at = stat.rfind(')');
  if (at == std::string::npos) return "";
  // Fields after the command name start with the 3rd; the 22nd is 19 spaces further.
  for (int field = 3; field <= 22; ++field) {
    at = stat.find(' ', at + 1);
    if (at == std::string::npos) return "";
  }
  const size_t end = stat.find(' ', at + 1);
  return stat.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}

std::vector<ProcEntry> listProcesses(const std::string& proc_root) {
  std::vector<ProcEntry> out;
  DIR* dir = ::opendir(proc_root.c_str());
  if (!dir) return out;
  while (const dirent* d = ::readdir(dir)) {
    if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
    const std::string path = proc_root + "/" + d->d_name + "/stat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[1024];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    ProcEntry e;
    if (n > 0 && parseProcStat(std::string(buf, static_cast<size_t>(n)), e)) out.push_back(e);
  }
  ::closedir(dir);
  return out;
}

std::optional<std::vector<pid_t>> ownChildren(const std::string& task_dir) {
  DIR* dir = ::opendir(task_dir.c_str());
  if (!dir) return std::nullopt;
  std::vector<pid_t> out;
  bool readable = true;
  while (const dirent* d = ::readdir(dir)) {
    if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
    const std::string path = task_dir + "/" + d->d_name + "/children";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      readable = readable && errno != ENOENT;  // no such file: the kernel lacks it; else the thread just ended
      continue;
    }
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    ::close(fd);
    const char* p = text.c_str();
    for (char* end = nullptr;; p = end) {
      const long pid = std::strtol(p, &end, 10);
      if (end == p) break;
      if (pid > 0) out.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(dir);
  if (!readable) return std::nullopt;
  return out;
}

std::vector<ProcEntry> descendantsOf(pid_t root, const std::vector<ProcEntry>& procs,
                                     const std::function<bool(pid_t)>& prune) {
  std::unordered_multimap<pid_t, const ProcEntry*> children;
  for (const auto& p : procs) children.emplace(p.ppid, &p);
  std::vector<ProcEntry> out;
  std::vector<pid_t> todo{root};
  while (!todo.empty() && out.size() <= procs.size()) {  // the bound guards against a cycle in torn reads
    const pid_t parent = todo.back();
    todo.pop_back();
    auto [first, last] = children.equal_range(parent);
    for (auto it = first; it != last; ++it) {
      if (it->second->pid == root || (prune && prune(it->second->pid))) continue;
      out.push_back(*it->second);
      todo.push_back(it->second->pid);
    }
  }
  return out;
}

}  // namespace tlaunch
