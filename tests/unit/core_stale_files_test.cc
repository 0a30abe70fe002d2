// A daemon killed with -9 leaves its job's directories; the next daemon on the node removes
// them, and only them: never another user's, another host's, an unmarked one or a symlink.
#include <catch2/catch.hpp>

#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "daemon/stale_job_files.h"
#include "temp_dir.h"

namespace fs = std::filesystem;
using namespace tlaunch;

using tlaunch::testing::TempDir;

namespace {

fs::path makeDir(const fs::path& p) {
  fs::create_directories(p);
  std::ofstream(p / "payload") << "x";
  return p;
}

}  // namespace

TEST_CASE("a node's job directory name cannot be predicted from the job id in ps") {
  const std::string a = jobDirName("tl-0123456789", "node7"), b = jobDirName("tl-0123456789", "node7");
  CHECK(a.rfind("tlaunch.tl-0123456789.node7.", 0) == 0);
  CHECK(a.size() == std::string("tlaunch.tl-0123456789.node7.").size() + 8);
  CHECK(a.find_first_not_of("0123456789abcdef", a.size() - 8) == std::string::npos);
  CHECK(a != b);
}

TEST_CASE("stale job directories: a dead daemon's are removed, with their /dev/shm namesakes") {
  TempDir root{"tlaunch-stale-test"};
  const fs::path tmp = root.path() / "tmp", shm = root.path() / "shm";
  const std::string dead_name = jobDirName("tl-dead", "node1");  // as a daemon names it
  const fs::path dead = makeDir(tmp / dead_name), dead_shm = makeDir(shm / dead_name);
  // Its twins as a daemon names them, the job's and a spawned job's; and a name that only
  // begins like them (another job's) stays.
  const std::string twin = shmTwinName(dead_name);
  REQUIRE(twin.size() == dead_name.size() + 9);
  CHECK(twin != shmTwinName(dead_name));  // not to be guessed from the /tmp name
  const fs::path dead_twin = makeDir(shm / twin), dead_spawn_twin = makeDir(shm / (twin + ".spawn1"));
  const fs::path lookalike = makeDir(shm / (dead_name + "0"));
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
  std::ofstream(reused / kOwnerMarkFile) << ::getpid() << " 1\n" << hostIdentity();

  auto removed = removeStaleJobDirs(tmp.string(), shm.string());
  std::sort(removed.begin(), removed.end());
  std::vector<std::string> expected{dead_shm.string(), dead_twin.string(), dead_spawn_twin.string(), dead.string(),
                                    reused.string()};
  std::sort(expected.begin(), expected.end());
  CHECK(removed == expected);
  CHECK_FALSE(fs::exists(dead));
  CHECK_FALSE(fs::exists(dead_shm));
  CHECK_FALSE(fs::exists(dead_twin));
  CHECK(fs::exists(lookalike / "payload"));
  CHECK_FALSE(fs::exists(reused));
  CHECK(fs::exists(alive / "payload"));
  CHECK(fs::exists(alive_shm / "payload"));
  CHECK(fs::exists(unmarked / "payload"));  // not marked yet: its daemon may be starting
  CHECK(fs::exists(foreign / "payload"));   // not a tlaunch job directory
  CHECK(removeStaleJobDirs((root.path() / "missing").string(), shm.string()).empty());
}

namespace {
// A dead daemon's mark (a pid that exited) with the given host identity.
void markDead(const fs::path& dir, const std::string& identity) {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) _exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  std::ofstream(dir / kOwnerMarkFile) << child << " 12345\n" << identity;
}
}  // namespace

TEST_CASE("stale job directories: only this host's, only this user's, never through a symlink") {
  TempDir root{"tlaunch-stale-test"};
  const fs::path tmp = root.path() / "tmp", shm = root.path() / "shm";
  fs::create_directories(shm);
  const std::string here = hostIdentity();
  REQUIRE(here.find("host ") == 0);
  REQUIRE(here.find("\nboot ") != std::string::npos);
  REQUIRE(here.find("\npidns ") != std::string::npos);

  const fs::path mine = makeDir(tmp / "tlaunch.tl-mine.n1");
  markDead(mine, here);
  // Another node sharing TMPDIR: same names, its own (live) daemons.
  const fs::path other_host = makeDir(tmp / "tlaunch.tl-other.n1");
  markDead(other_host, "host elsewhere\nboot 00000000-0000-0000-0000-000000000000\npidns 4026531836\n");
  const fs::path other_boot = makeDir(tmp / "tlaunch.tl-boot.n1");
  std::string rebooted = here;
  rebooted.replace(rebooted.find("boot ") + 5, 1, rebooted[rebooted.find("boot ") + 5] == '0' ? "1" : "0");
  markDead(other_boot, rebooted);
  // An old-style mark names no host: it cannot be judged.
  const fs::path old_style = makeDir(tmp / "tlaunch.tl-old.n1");
  markDead(old_style, "");
  // A symlink planted under a job's name, pointing at a directory with a dead daemon's mark.
  const fs::path victim = makeDir(root.path() / "victim");
  markDead(victim, here);
  fs::create_directory_symlink(victim, tmp / "tlaunch.tl-link.n1");
  // The /dev/shm namesake of our dead job is a symlink: it is left, and so is its target.
  const fs::path shm_victim = makeDir(root.path() / "shm-victim");
  fs::create_directory_symlink(shm_victim, shm / "tlaunch.tl-mine.n1");
  // A symlink inside a stale directory is removed, its target is not.
  fs::create_directory_symlink(shm_victim, mine / "inner-link");

  std::vector<std::string> removed;
  if (::geteuid() == 0) {
    // Another user's directory with a mark that would otherwise qualify.
    const fs::path foreign = makeDir(tmp / "tlaunch.tl-foreign.n1");
    markDead(foreign, here);
    REQUIRE(::chown(foreign.c_str(), 65534, 65534) == 0);
    removed = removeStaleJobDirs(tmp.string(), shm.string());
    CHECK(fs::exists(foreign / "payload"));
  } else {
    removed = removeStaleJobDirs(tmp.string(), shm.string());
  }
  CHECK(removed == std::vector<std::string>{mine.string()});
  CHECK_FALSE(fs::exists(mine));
  CHECK(fs::exists(other_host / "payload"));
  CHECK(fs::exists(other_boot / "payload"));
  CHECK(fs::exists(old_style / "payload"));
  CHECK(fs::exists(victim / "payload"));
  CHECK(fs::is_symlink(tmp / "tlaunch.tl-link.n1"));
  CHECK(fs::is_symlink(shm / "tlaunch.tl-mine.n1"));
  CHECK(fs::exists(shm_victim / "payload"));
}

TEST_CASE("writeOwnerMark refuses a planted symlink in place of the mark") {
  TempDir root{"tlaunch-stale-test"};
  const fs::path dir = makeDir(root.path() / "tlaunch.tl-x.n1");
  const fs::path target = root.path() / "elsewhere";
  std::ofstream(target) << "keep";
  fs::create_symlink(target, dir / kOwnerMarkFile);
  CHECK_FALSE(writeOwnerMark(dir.string()));
  std::ifstream f(target);
  std::string text;
  f >> text;
  CHECK(text == "keep");
}

// /proc mounted with hidepid (common hardening on shared nodes) hides a tlaunchd (not dumpable)
// from its own user's other processes. The next job's daemon took "not in /proc" for "gone"
// and removed a live job's directories. Run as nobody in a mount namespace of its own.
TEST_CASE("stale job directories: a live daemon that /proc hides (hidepid) is not taken for dead") {
  if (::geteuid() != 0) {
    WARN("not root: cannot mount /proc with hidepid for this case");
    return;
  }
  TempDir root{"tlaunch-stale-test"};
  const fs::path tmp = root.path() / "tmp", shm = root.path() / "shm";
  const fs::path live = makeDir(tmp / jobDirName("tl-live", "node1"));
  fs::create_directories(shm);
  for (const fs::path& p : {root.path(), tmp, shm, live, live / "payload"})
    REQUIRE(::chown(p.c_str(), 65534, 65534) == 0);
  fs::permissions(root.path(), fs::perms::owner_all | fs::perms::others_exec | fs::perms::group_exec);

  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") != 0)
      _exit(77);
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(78);
    int ready[2];
    if (::pipe(ready) != 0) _exit(79);
    const pid_t daemon = ::fork();  // the live job's daemon: not dumpable, as tlaunchd makes itself
    if (daemon == 0) {
      ::prctl(PR_SET_DUMPABLE, 0);
      const char ok = writeOwnerMark(live.string()) ? '1' : '0';
      (void)!::write(ready[1], &ok, 1);
      ::pause();
      _exit(0);
    }
    char ok = 0;
    if (::read(ready[0], &ok, 1) != 1 || ok != '1') {
      ::kill(daemon, SIGKILL);
      _exit(80);
    }
    const bool hidden = ::access(("/proc/" + std::to_string(daemon) + "/stat").c_str(), R_OK) != 0;
    const auto removed = removeStaleJobDirs(tmp.string(), shm.string());
    ::kill(daemon, SIGKILL);
    ::waitpid(daemon, nullptr, 0);
    if (!hidden) _exit(81);
    _exit(removed.empty() && fs::exists(live / "payload") ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    WARN("cannot mount /proc with hidepid here");
    return;
  }
  CHECK(WEXITSTATUS(status) == 0);  // 1: the live job's directory was removed
}
