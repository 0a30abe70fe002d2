// tlaunch status, and a rank's end: what tlaunchd reads from /proc.
#include <catch2/catch.hpp>

#include <fstream>

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "daemon/oom_kills.h"
#include "daemon/rank_end_time.h"
#include "daemon/rank_status.h"
#include "tlaunch/wall_clock.h"

TEST_CASE("tlaunch status reads state, CPU ticks, start and RSS from /proc/PID/stat") {
  // A command name with spaces and parentheses: the fields follow the last ')'.
  const char* line =
      "4242 (python3 (a) b) S 4200 4242 4200 0 -1 4194560 1234 0 0 0 150 25 0 0 20 0 3 0 987654 123456789 2048 "
      "18446744073709551615 1 1 0 0 0 0 0 16781312 2 0 0 0 17 3 0 0 0 0 0";
  tlaunch::ProcStat st;
  REQUIRE(tlaunch::parseProcStat(line, st));
  CHECK(st.state == 'S');
  CHECK(st.cpu_ticks == 175);
  CHECK(st.start_ticks == 987654);
  CHECK(st.rss_pages == 2048);
  CHECK(st.processor == 3);  // field 39: the CPU it last ran on
  tlaunch::ProcStat short_line;
  REQUIRE(tlaunch::parseProcStat("1 (x) S 0 1 1 0 -1 0 0 0 0 0 5 5 0 0 20 0 1 0 100 1000 7", short_line));
  CHECK(short_line.processor == -1);
  CHECK_FALSE(tlaunch::parseProcStat("4242 (truncated) S 1 2", st));
  CHECK_FALSE(tlaunch::parseProcStat("garbage", st));
}

TEST_CASE("the node's OOM kills come from /proc/vmstat's oom_kill") {
  char path[] = "/tmp/tlaunch-vmstat-XXXXXX";
  const int fd = ::mkstemp(path);
  REQUIRE(fd >= 0);
  const std::string text = "nr_free_pages 12345\noom_kill 7\npgfault 99\n";
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
  CHECK(tlaunch::oomKillCount(path) == 7);
  ::unlink(path);
  CHECK_FALSE(tlaunch::oomKillCount(path));  // gone: unknown, not 0
}

// A rank's end is stamped by the scheduler's clock of the CPU it last ran on: CPUs' clocks may
// disagree (a VM's steal time: 265 ms between two vCPUs here), and the stamp decides which of
// several failures tlaunch names as the first.
TEST_CASE("a rank killed on another CPU is stamped when it ended, not by that CPU's clock offset") {
  cpu_set_t allowed;
  REQUIRE(::sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  if (cpus.size() < 2) return;  // one CPU: one clock
  for (const auto& [child_cpu, own_cpu] : {std::pair{cpus[1], cpus[0]}, std::pair{cpus[0], cpus[1]}}) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(child_cpu, &one);
      ::sched_setaffinity(0, sizeof(one), &one);
      ::pause();
      ::_exit(0);
    }
    cpu_set_t mine;
    CPU_ZERO(&mine);
    CPU_SET(own_cpu, &mine);
    REQUIRE(::sched_setaffinity(0, sizeof(mine), &mine) == 0);
    ::usleep(50'000);  // the child has moved and sleeps
    const int64_t killed_at = tlaunch::wallClockMicros();
    ::kill(pid, SIGKILL);
    ::usleep(200'000);  // the daemon notices late
    siginfo_t info{};
    REQUIRE(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == 0);  // a zombie, as the daemon sees it
    const int64_t stamped = tlaunch::rankEndedAtMicros(pid);
    ::waitpid(pid, nullptr, 0);
    REQUIRE(::sched_setaffinity(0, sizeof(allowed), &allowed) == 0);
    INFO("child on CPU " << child_cpu << ", stamped on CPU " << own_cpu);
    CHECK(std::abs(stamped - killed_at) < 100'000);  // generous: the error was 265 ms, the lateness 200
  }
}

// A node starts its ranks in one batch and watches them once the last has started: a rank that
// ended while the others were still being started is seen late, and stamped when it ended, not
// when it was seen (that made a peer that failed after it the job's first failure).
TEST_CASE("a rank seen late because it was not watched yet is stamped when it ended") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  ::usleep(50'000);
  const int64_t killed_at = tlaunch::wallClockMicros();
  ::kill(pid, SIGKILL);
  ::usleep(1'500'000);  // longer than any lateness of a watching daemon
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == 0);
  const int64_t watched_late = tlaunch::rankEndedAtMicros(pid, 2000);
  const int64_t watched_all_along = tlaunch::rankEndedAtMicros(pid);
  ::waitpid(pid, nullptr, 0);
  if (!std::ifstream("/proc/self/sched")) return;  // no scheduler clock (CONFIG_SCHED_DEBUG): stamped when seen
  CHECK(std::abs(watched_late - killed_at) < 200'000);
  CHECK(watched_all_along - killed_at > 1'000'000);  // watched all along, so long an age is a thread's, not the end's
}

// tlaunch status sums a rank's memory with its processes' as PSS: forked data-loader workers
// share the rank's pages, and their RSS summed counted those pages once per worker.
TEST_CASE("a process's proportional size is read from smaps_rollup") {
  CHECK(tlaunch::pssBytesIn("00400000-7ffd [rollup]\nRss:              409600 kB\nPss:              102400 kB\n"
                            "Pss_Anon:          90000 kB\n") == 102400LL * 1024);
  CHECK(tlaunch::pssBytesIn("Rss: 5 kB\n") == -1);
  CHECK(tlaunch::pssBytesIn("Pss: x kB\n") == -1);
  const long long own = tlaunch::pssBytes(::getpid());
  if (own < 0) return;  // no smaps_rollup (kernels before 4.14)
  CHECK(own > 0);
  // A forked child that touches nothing shares all of its pages with this process: the two
  // proportional sizes together are about one process's memory, not two.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  ::usleep(100'000);
  const long long parent = tlaunch::pssBytes(::getpid()), child = tlaunch::pssBytes(pid);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  CHECK(parent + child < own * 3 / 2);
}
