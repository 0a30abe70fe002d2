// Job directories in shared places (/tmp, /dev/shm): what another user planted under the name
// is refused, never used or followed.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bootstrap/pmix_dirs.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace tlaunch;

using tlaunch::testing::TempDir;

namespace {
const uint32_t kUid = static_cast<uint32_t>(::getuid()), kGid = static_cast<uint32_t>(::getgid());
}  // namespace

TEST_CASE("makeRankDir creates a private directory, and reuses our own") {
  TempDir root{"tlaunch-dirs-test"};
  const fs::path dir = root.path() / "tlaunch.tl-1.n1";
  REQUIRE(makeRankDir(dir.string(), kUid, kGid, "n1"));
  struct stat st {};
  REQUIRE(::lstat(dir.c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  CHECK((st.st_mode & 07777) == 0700);
  CHECK(st.st_uid == ::geteuid());
  // Ours already, with loose permissions: tightened and reused.
  ::chmod(dir.c_str(), 0777);
  REQUIRE(makeRankDir(dir.string(), kUid, kGid, "n1"));
  REQUIRE(::lstat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0700);
}

TEST_CASE("makeRankDir refuses a planted symlink, and leaves its target alone") {
  TempDir root{"tlaunch-dirs-test"};
  const fs::path target = root.path() / "attacker";
  fs::create_directory(target);
  ::chmod(target.c_str(), 0755);
  const fs::path dir = root.path() / "tlaunch.tl-2.n1";
  fs::create_directory_symlink(target, dir);
  auto r = makeRankDir(dir.string(), kUid, kGid, "n1");
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("symlink") != std::string::npos);
  struct stat st {};
  REQUIRE(::stat(target.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0755);  // not chmod'ed through the link
  // A dangling symlink is no better.
  const fs::path dangling = root.path() / "tlaunch.tl-3.n1";
  fs::create_symlink(root.path() / "nothing-here", dangling);
  CHECK_FALSE(makeRankDir(dangling.string(), kUid, kGid, "n1"));
  CHECK_FALSE(fs::exists(root.path() / "nothing-here"));
  // A plain file under the name.
  const fs::path file = root.path() / "tlaunch.tl-4.n1";
  std::ofstream(file) << "x";
  CHECK_FALSE(makeRankDir(file.string(), kUid, kGid, "n1"));
}

TEST_CASE("makeRankDir refuses a directory another user created first") {
  if (::geteuid() != 0) {
    WARN("needs root to make a directory owned by another user");
    return;
  }
  TempDir root{"tlaunch-dirs-test"};
  const fs::path dir = root.path() / "tlaunch.tl-5.n1";
  fs::create_directory(dir);
  REQUIRE(::chown(dir.c_str(), 65534, 65534) == 0);
  ::chmod(dir.c_str(), 0777);
  auto r = makeRankDir(dir.string(), kUid, kGid, "n1");
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("belongs to uid 65534") != std::string::npos);
  struct stat st {};
  REQUIRE(::stat(dir.c_str(), &st) == 0);
  CHECK(st.st_uid == 65534u);  // untouched
  CHECK((st.st_mode & 07777) == 0777);
}
