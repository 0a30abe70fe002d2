#include "daemon/stale_job_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bootstrap/auth.h"
#include "bootstrap/path_check.h"
#include "daemon/descendants.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

namespace fs = std::filesystem;

// A real directory (not a symlink) owned by this user; `at` is an open directory or AT_FDCWD.
bool ownDirectory(int at, const std::string& name) {
  struct stat st {};
  return ::fstatat(at, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid();
}

// The mark's text, read without following a symlink anywhere on the way; "" if none.
std::string readMark(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return "";
  const int fd = ::openat(dfd, kOwnerMarkFile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  ::close(dfd);
  if (fd < 0) return "";
  std::string text;
  char buf[512];
  ssize_t n;
  while (text.size() < 4096 && (n = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return text;
}

// True only for a mark of this host whose daemon is gone. Unreadable, unmarked, old-style
// (no host identity) or another host's: not ours to judge.
bool markedByDeadDaemonHere(const std::string& mark, const std::string& identity) {
  const auto nl = mark.find('\n');
  if (nl == std::string::npos || identity.empty() || mark.substr(nl + 1) != identity) return false;
  std::istringstream first(mark.substr(0, nl));
  long pid = 0;
  std::string start;
  if (!(first >> pid >> start) || pid <= 0) return false;
  return processEnded(static_cast<pid_t>(pid), start);
}

}  // namespace

std::string nodeTmpBase() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

Result<void> checkNodeTmpBase(const std::string& node_name) {
  const std::string base = nodeTmpBase();
  const char* t = std::getenv("TMPDIR");
  const std::string named = t && *t ? "TMPDIR (" + base + ")" : base;
  // Relative, it would name another directory in each process that changes its own (the ranks'
  // --chdir, libpmix's), and the PMIx server's sockets in one of them.
  if (base.front() != '/')
    return fail(Errc::usage, named + " is a relative path on node " + node_name,
                "set TMPDIR to an absolute path that exists on every node (TMPDIR=$PWD/" + base + "), or unset it");
  const auto why = pathProblem(base, PathUse::write_directory);
  if (!why) return {};
  return fail(Errc::usage, named + " " + *why + " on node " + node_name,
              t && *t ? "set TMPDIR to a writable directory that exists on every node, or unset it (then /tmp)"
                      : "make /tmp a writable directory on that node, or set TMPDIR");
}

std::string topologyCacheDir() { return nodeTmpBase() + "/tlaunch-topology-" + std::to_string(::geteuid()); }

std::string nodeNameForPaths(const std::string& node) { return node.substr(0, 128); }

std::string jobDirName(const std::string& job_id, const std::string& node) {
  return "tlaunch." + job_id + "." + nodeNameForPaths(node) + "." + hexBytes(randomBytes(4));
}

std::string shmTwinName(const std::string& job_dir_name) { return job_dir_name + "." + hexBytes(randomBytes(4)); }

std::string hostIdentity() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  struct stat ns {};
  if (boot.empty() || ::stat("/proc/self/ns/pid", &ns) != 0) return "";
  return "host " + std::string(host) + "\nboot " + boot + "\npidns " + std::to_string(ns.st_ino) + "\n";
}

bool writeOwnerMark(const std::string& dir) {
  const std::string start = processStartTime(::getpid());
  const std::string identity = hostIdentity();
  if (start.empty() || identity.empty()) return false;
  const std::string text = std::to_string(::getpid()) + " " + start + "\n" + identity;
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return false;
  const int fd = ::openat(dfd, kOwnerMarkFile, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  ::close(dfd);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  return ::close(fd) == 0 && ok;
}

std::vector<std::string> removeStaleJobDirs(const std::string& tmp_base, const std::string& shm_base) {
  const std::string identity = hostIdentity();
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(tmp_base, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("tlaunch.", 0) != 0 || !ownDirectory(AT_FDCWD, entry.path().string())) continue;
    if (markedByDeadDaemonHere(readMark(entry.path().string()), identity)) stale.push_back(entry.path());
  }
  std::vector<std::string> removed;
  if (stale.empty()) return removed;
  std::vector<std::string> shm_names;  // listed once for all the stale directories
  for (const auto& shm : fs::directory_iterator(shm_base, ec)) shm_names.push_back(shm.path().filename().string());
  for (const fs::path& dir : stale) {
    const std::string name = dir.filename().string();
    // The twins go first: once the marked directory is gone nothing vouches for them.
    std::vector<fs::path> dirs;
    for (const std::string& twin : shm_names)
      if (twin == name || (twin.size() > name.size() + 1 && twin.starts_with(name + ".")))
        dirs.push_back(fs::path(shm_base) / twin);
    dirs.push_back(dir);
    for (const fs::path& d : dirs) {
      if (!ownDirectory(AT_FDCWD, d.string())) continue;
      std::error_code rm;
      // remove_all removes symlinks inside, never what they point to.
      if (fs::remove_all(d, rm) > 0 && !rm) removed.push_back(d.string());
    }
  }
  return removed;
}

}  // namespace tlaunch
