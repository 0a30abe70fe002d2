#include "daemon/job_marked_processes.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

namespace tlaunch {

namespace {

// Whether the NUL-separated list `env_text` holds `entry` as one of its strings.
bool holdsEntry(std::string_view env_text, std::string_view entry) {
  for (size_t at = 0; at < env_text.size();) {
    const size_t end = std::min(env_text.find('\0', at), env_text.size());
    if (env_text.substr(at, end - at) == entry) return true;
    at = end + 1;
  }
  return false;
}

}  // namespace

std::vector<std::string> jobMarksOf(const NodeLaunch& launch) {
  if (launch.ranks.empty()) return {};
  std::vector<std::string> marks{"TLAUNCH_JOB_ID=" + launch.job_id};
  for (const auto& e : launch.ranks.front().env)
    if (e.starts_with("TLAUNCH_NODE_RANK=")) marks.push_back(e);
  return marks;
}

std::vector<pid_t> processesWithEnvironmentEntries(const std::vector<std::string>& entries, uid_t uid, pid_t self,
                                                   const std::string& proc_root) {
  std::vector<pid_t> out;
  if (entries.empty()) return out;
  DIR* dir = ::opendir(proc_root.c_str());
  if (!dir) return out;
  std::string env_text;
  while (const dirent* d = ::readdir(dir)) {
    if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
    const pid_t pid = static_cast<pid_t>(std::atol(d->d_name));
    if (pid == self) continue;
    const std::string base = proc_root + "/" + d->d_name;
    struct stat st {};
    if (::stat(base.c_str(), &st) != 0 || st.st_uid != uid) continue;
    const int fd = ::open((base + "/environ").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    env_text.clear();
    char buf[65536];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0 && env_text.size() < (8u << 20);)
      env_text.append(buf, static_cast<size_t>(n));
    ::close(fd);
    if (std::all_of(entries.begin(), entries.end(), [&](const std::string& e) { return holdsEntry(env_text, e); }))
      out.push_back(pid);
  }
  ::closedir(dir);
  return out;
}

void killMarkedProcesses(const std::vector<std::string>& marks) {
  for (int round = 0; round < 100; ++round) {
    const auto pids = processesWithEnvironmentEntries(marks, ::geteuid(), ::getpid());
    if (pids.empty()) return;
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    ::usleep(20000);
  }
}

}  // namespace tlaunch
