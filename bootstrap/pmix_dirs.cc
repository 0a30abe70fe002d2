#include "bootstrap/pmix_dirs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>
#include <system_error>

namespace tlaunch {

Result<void> makeRankDir(const std::string& dir, uint32_t uid, uint32_t gid, const std::string& node) {
  const std::string where = "node " + node + ": PMIx directory " + dir;
  // Its parent is never made: a missing TMPDIR is a mistake to name (daemon/stale_job_files.h,
  // checkNodeTmpBase), not a path to create.
  // /tmp and /dev/shm are shared with other users: a directory or symlink planted there under
  // our name must be refused, never used or followed. mkdir does not follow a final symlink;
  // what exists already is opened without following one and checked on its descriptor.
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return fail(Errc::io, where + ": cannot create it: " + std::strerror(errno),
                "check that the parent directory exists and is writable by the daemon");
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return fail(Errc::io, where + ": refused: " + (e == ELOOP || e == ENOTDIR ? "it is a symlink or not a directory" : std::strerror(e)),
                "something else created that name first; remove it if it is not yours");
  }
  struct stat st {};
  std::string error;
  if (::fstat(fd, &st) != 0) {
    error = std::string("cannot stat it: ") + std::strerror(errno);
  } else if (st.st_uid != ::geteuid() && !(::geteuid() == 0 && st.st_uid == uid)) {
    error = "refused: it belongs to uid " + std::to_string(st.st_uid) + ", not to this daemon's user (uid " +
            std::to_string(::geteuid()) + ")";
  } else if (::fchmod(fd, 0700) != 0) {
    error = std::string("cannot chmod it: ") + std::strerror(errno);
  } else if (::geteuid() == 0 && (uid != 0 || gid != 0) && ::fchown(fd, uid, gid) != 0) {
    error = "cannot chown it to " + std::to_string(uid) + ":" + std::to_string(gid) + ": " + std::strerror(errno);
  }
  ::close(fd);
  if (!error.empty())
    return fail(Errc::io, where + ": " + error, "another user may have created that name first; remove it if it is not yours");
  return {};
}

bool removeTree(const std::string& dir) noexcept {
  // A rank that is still dying (or libpmix's own thread) may create a file while we remove the
  // tree: try again a few times before calling it a failure.
  std::error_code ec;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
    std::filesystem::remove_all(dir, ec);
    if (!std::filesystem::exists(std::filesystem::symlink_status(dir, ec))) return true;
  }
  return false;
}

}  // namespace tlaunch
