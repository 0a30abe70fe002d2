// A daemon killed with -9 leaves its job's directories; the next daemon on the node removes
// them, and only them.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "daemon/stale_job_files.h"

namespace fs = std::filesystem;
using namespace tlaunch;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char pattern[] = "/tmp/tlaunch-stale-test-XXXXXX";
    path = ::mkdtemp(pattern);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

fs::path makeDir(const fs::path& p) {
  fs::create_directories(p);
  std::ofstream(p / "payload") << "x";
  return p;
}

}  // namespace

TEST_CASE("stale job directories: a dead daemon's are removed, with their /dev/shm namesakes") {
  TempDir root;
  const fs::path tmp = root.path / "tmp", shm = root.path / "shm";
  const fs::path dead = makeDir(tmp / "tlaunch.tl-dead.node1"), dead_shm = makeDir(shm / "tlaunch.tl-dead.node1");
  const fs::path alive = makeDir(tmp / "tlaunch.tl-alive.node1"), alive_shm = makeDir(shm / "tlaunch.tl-alive.node1");
  const fs::path unmarked = makeDir(tmp / "tlaunch.tl-new.node1");
  const fs::path reused = makeDir(tmp / "tlaunch.tl-reused.node1");
  const fs::path foreign = makeDir(tmp / "other.tl-dead.node1");

  // A daemon that marked its directory and then died.
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(writeOwnerMark(dead.string()) && writeOwnerMark(foreign.string()) ? 0 : 1);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(writeOwnerMark(alive.string()));
  // Our pid with another start time: the daemon that wrote it is gone, the pid was reused.
  std::ofstream(reused / kOwnerMarkFile) << ::getpid() << " 1\n";

  auto removed = removeStaleJobDirs(tmp.string(), shm.string());
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> expected{dead_shm.string(), dead.string(), reused.string()};
  std::sort(expected.begin(), expected.end());
  CHECK(removed == expected);
  CHECK_FALSE(fs::exists(dead));
  CHECK_FALSE(fs::exists(dead_shm));
  CHECK_FALSE(fs::exists(reused));
  CHECK(fs::exists(alive / "payload"));
  CHECK(fs::exists(alive_shm / "payload"));
  CHECK(fs::exists(unmarked / "payload"));  // not marked yet: its daemon may be starting
  CHECK(fs::exists(foreign / "payload"));   // not a tlaunch job directory
  CHECK(removeStaleJobDirs((root.path / "missing").string(), shm.string()).empty());
}
