#include "daemon/job_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "bootstrap/spawn.h"
#include "daemon/descendants.h"
#include "daemon/job_marked_processes.h"

namespace tlaunch {

namespace {

std::string readSmallFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool writeSmallFile(const std::string& path, const char* text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const auto len = static_cast<ssize_t>(std::strlen(text));
  const bool ok = ::write(fd, text, static_cast<size_t>(len)) == len;
  ::close(fd);
  return ok;
}

std::string pidNamespace() {
  struct stat ns {};
  return ::stat("/proc/self/ns/pid", &ns) == 0 ? std::to_string(ns.st_ino) : "0";
}

// "<pidns>-<pid>-<start>" for this process: who made a cgroup, judged like stale_job_files.h.
std::string daemonSuffix() {
  return pidNamespace() + "-" + std::to_string(::getpid()) + "-" + processStartTime(::getpid());
}

bool populatedAt(const std::string& path) {
  return readSmallFile(path + "/cgroup.events").find("populated 1") != std::string::npos;
}

// The tlaunch cgroups in `parent` made by a daemon of this pid namespace and user that is gone.
void removeStaleCgroups(const std::string& parent) {
  DIR* dir = ::opendir(parent.c_str());
  if (!dir) return;
  const std::string pidns = pidNamespace();
  std::vector<std::string> stale;
  while (const dirent* d = ::readdir(dir)) {
    const std::string name = d->d_name;
    const auto dot = name.rfind('.');
    if (name.rfind("tlaunch.", 0) != 0 || dot == std::string::npos) continue;
    std::istringstream suffix(name.substr(dot + 1));
    std::string ns, pid, start;
    if (!std::getline(suffix, ns, '-') || !std::getline(suffix, pid, '-') || !std::getline(suffix, start) || ns != pidns)
      continue;
    struct stat st {};
    const std::string path = parent + "/" + name;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    const long owner = std::strtol(pid.c_str(), nullptr, 10);
    if (owner > 0 && processEnded(static_cast<pid_t>(owner), start)) stale.push_back(path);
  }
  ::closedir(dir);
  for (const auto& path : stale) killAndRemoveCgroup(path);
}

}  // namespace

void killAndRemoveCgroup(const std::string& path) {
  if (populatedAt(path)) writeSmallFile(path + "/cgroup.kill", "1");
  for (int i = 0; i < 50 && populatedAt(path); ++i) ::usleep(20000);
  ::rmdir(path.c_str());
}

int watchJobForParent(const std::string& cgroup_path, const std::vector<std::string>& marks) {
  // Only the end of the daemon ends this wait: its end of our stdin closes however it exits.
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGINT, SIG_IGN);
  char byte = 0;
  bool clean = false;  // the daemon said so before closing: nothing of its job is left
  for (;;) {
    const ssize_t n = ::read(0, &byte, 1);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
    if (n == 1 && byte == kWatcherCleanEnd) clean = true;
  }
  if (!cgroup_path.empty()) killAndRemoveCgroup(cgroup_path);  // gone already after a clean teardown
  killMarkedProcesses(marks);
  return clean ? 0 : 1;
}

std::string ownCgroupV2Dir() {
  std::string rel;
  {
    std::ifstream f("/proc/self/cgroup");
    for (std::string line; std::getline(f, line);)
      if (line.rfind("0::", 0) == 0) rel = line.substr(3);
  }
  if (rel.empty() || rel.find("(deleted)") != std::string::npos) return "";
  // mountinfo: "id parent maj:min root mountpoint opts ... - fstype source superopts".
  std::ifstream f("/proc/self/mountinfo");
  for (std::string line; std::getline(f, line);) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream in(line.substr(0, dash));
    std::string id, parent, dev, root, mountpoint;
    if (!(in >> id >> parent >> dev >> root >> mountpoint)) continue;
    // A mount of a sub-tree (a cgroup namespace seen from outside) shows only what lies below its root.
    if (root != "/") {
      if (rel.rfind(root, 0) != 0) continue;
      rel = rel.substr(root.size());
    }
    while (!rel.empty() && rel.back() == '/') rel.pop_back();
    return mountpoint + rel;
  }
  return "";
}

std::unique_ptr<JobCgroup> JobCgroup::create(const std::string& prefix, std::string& why_not) {
  const std::string own = ownCgroupV2Dir();
  if (own.empty()) {
    why_not = "no cgroup v2 hierarchy";
    return nullptr;
  }
  if (::access(own.c_str(), W_OK) == 0) removeStaleCgroups(own);
  const std::string path = own + "/" + prefix + "." + daemonSuffix();
  if (::mkdir(path.c_str(), 0700) != 0) {
    why_not = "cannot create a cgroup in " + own + " (" + std::strerror(errno) + "; not delegated to this user)";
    return nullptr;
  }
  struct stat st {};
  const int procs = ::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (procs < 0 || ::stat((path + "/cgroup.kill").c_str(), &st) != 0 || ::access((path + "/cgroup.kill").c_str(), W_OK) != 0) {
    why_not = procs < 0 ? "the cgroup's cgroup.procs is not writable" : "the kernel has no cgroup.kill (Linux < 5.14)";
    if (procs >= 0) ::close(procs);
    ::rmdir(path.c_str());
    return nullptr;
  }
  // Ranks are born inside where the kernel lets them live; else (-1) they join through cgroup.procs.
  int dir = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0 && !childSurvivesBirthIn(dir)) {
    ::close(dir);
    dir = -1;
  }
  return std::unique_ptr<JobCgroup>(new JobCgroup(path, procs, dir));
}

JobCgroup::~JobCgroup() {
  if (procs_fd_ >= 0) ::close(procs_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
  if (removed_) return;
  if (populated()) {
    killAll();
    for (int i = 0; i < 100 && populated(); ++i) ::usleep(20000);
  }
  remove();
}

std::vector<pid_t> JobCgroup::members() const {
  std::vector<pid_t> out;
  std::ifstream f(path_ + "/cgroup.procs");
  for (long pid; f >> pid;) out.push_back(static_cast<pid_t>(pid));
  return out;
}

bool JobCgroup::killAll() const { return writeSmallFile(path_ + "/cgroup.kill", "1"); }

bool JobCgroup::populated() const {
  const std::string events = readSmallFile(path_ + "/cgroup.events");
  return events.find("populated 1") != std::string::npos;
}

bool JobCgroup::remove() {
  if (removed_) return true;
  removed_ = ::rmdir(path_.c_str()) == 0 || errno == ENOENT;
  return removed_;
}

}  // namespace tlaunch
