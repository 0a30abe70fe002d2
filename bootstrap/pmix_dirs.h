#pragma once
// The PMIx glue's private directories: created for the ranks' user, removed with their contents.
#include <cstdint>
#include <string>

#include "tlaunch/result.h"

namespace tlaunch {

// Creates `dir` (and missing parents); `dir` itself gets mode 0700 and owner uid:gid (chown only
// when running as root). An existing directory is reused only if it is a real directory (not a
// symlink) owned by this user: in /tmp or /dev/shm one planted by another user is refused.
// `node` names the node in errors.
Result<void> makeRankDir(const std::string& dir, uint32_t uid, uint32_t gid, const std::string& node);

// rm -rf, ignoring errors; false if something is left behind.
bool removeTree(const std::string& dir) noexcept;

}  // namespace tlaunch
