// The pieces of process containment and descriptor hygiene that can be tested without a job:
// /proc parsing and descendant walks, the close-range fallback, the saved RLIMIT_NOFILE.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "bootstrap/close_fds.h"
#include "bootstrap/process_hygiene.h"
#include "daemon/descendants.h"

using namespace tlaunch;

TEST_CASE("parseProcStat reads state, parent and group, whatever the command name") {
  ProcEntry e;
  REQUIRE(parseProcStat("1234 (we ird) (name)) S 1 1234 1234 0 -1 4194560 107 0", e));
  CHECK(e.pid == 1234);
  CHECK(e.state == 'S');
  CHECK(e.ppid == 1);
  CHECK(e.pgid == 1234);
  REQUIRE(parseProcStat("77 (sleep) Z 12 70 70 0", e));
  CHECK(e.state == 'Z');
  CHECK(e.ppid == 12);
  CHECK_FALSE(parseProcStat("", e));
  CHECK_FALSE(parseProcStat("abc (x) S 1 2", e));
  CHECK_FALSE(parseProcStat("12 (x)", e));
}

TEST_CASE("descendantsOf follows parent links, not process groups or sessions") {
  std::vector<ProcEntry> procs{{1, 0, 1, 'S'},   {10, 1, 10, 'S'}, {11, 10, 11, 'S'}, {12, 11, 99, 'S'},
                               {13, 10, 13, 'Z'}, {20, 1, 20, 'S'}, {21, 20, 21, 'S'}};
  auto d = descendantsOf(10, procs);
  std::vector<pid_t> pids;
  for (const auto& p : d) pids.push_back(p.pid);
  std::sort(pids.begin(), pids.end());
  CHECK(pids == std::vector<pid_t>{11, 12, 13});
  CHECK(descendantsOf(21, procs).empty());
  // The live system: a child of ours is found.
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();
    _exit(0);
  }
  auto mine = descendantsOf(::getpid(), listProcesses());
  CHECK(std::any_of(mine.begin(), mine.end(), [&](const ProcEntry& p) { return p.pid == child && p.ppid == ::getpid(); }));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_CASE("closeListedFds closes every listed descriptor but the one kept (close_range fallback)") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const int extra = ::dup(p[0]);
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (!closeListedFds(3, p[1])) _exit(2);
    bool ok = ::fcntl(p[0], F_GETFD) < 0 && ::fcntl(extra, F_GETFD) < 0 && ::fcntl(p[1], F_GETFD) >= 0 &&
              ::fcntl(0, F_GETFD) >= 0;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  ::close(p[0]);
  ::close(p[1]);
  ::close(extra);
}

TEST_CASE("markCloseOnExec sets FD_CLOEXEC") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  CHECK_FALSE(::fcntl(p[0], F_GETFD) & FD_CLOEXEC);
  markCloseOnExec(p[0]);
  CHECK(::fcntl(p[0], F_GETFD) & FD_CLOEXEC);
  ::close(p[0]);
  ::close(p[1]);
}

TEST_CASE("restoreUserNofile puts back the soft limit, keeping the hard one") {
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    struct rlimit lim {};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    if (lim.rlim_max < 64) _exit(0);
    struct rlimit user = lim;
    user.rlim_cur = 64;
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
    restoreUserNofile(user);
    struct rlimit now {};
    ::getrlimit(RLIMIT_NOFILE, &now);
    _exit(now.rlim_cur == 64 && now.rlim_max == lim.rlim_max ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
