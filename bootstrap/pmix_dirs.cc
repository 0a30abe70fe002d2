#include "bootstrap/pmix_dirs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace tlaunch {

Result<void> makeRankDir(const std::string& dir, uint32_t uid, uint32_t gid, const std::string& node) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return fail(Errc::io, "node " + node + ": cannot create PMIx directory " + dir + ": " + ec.message(),
                "check that the parent directory exists and is writable by the daemon");
  if (::chmod(dir.c_str(), 0700) != 0)
    return fail(Errc::io, "node " + node + ": cannot chmod " + dir + ": " + std::strerror(errno));
  if (::geteuid() == 0 && (uid != 0 || gid != 0) && ::chown(dir.c_str(), uid, gid) != 0)
    return fail(Errc::io, "node " + node + ": cannot chown " + dir + " to " + std::to_string(uid) + ":" +
                              std::to_string(gid) + ": " + std::strerror(errno));
  return {};
}

bool removeTree(const std::string& dir) noexcept {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return !std::filesystem::exists(dir, ec);
}

}  // namespace tlaunch
