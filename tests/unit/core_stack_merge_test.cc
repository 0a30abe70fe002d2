// The stack merge of `tlaunch stacks`: gdb's output as it looks on Debian 12 (gdb 13).
#include <catch2/catch.hpp>

#include "launcher/stack_merge.h"
#include "tlaunch/strings.h"

using namespace tlaunch;

namespace {

// `thread apply all bt` of an Open MPI rank in MPI_Barrier; `poll_at` is where its progress
// loop happened to be (it differs from rank to rank and moment to moment).
std::string barrierRank(const std::string& poll_at, const std::string& addr) {
  return "[Thread debugging using libthread_db enabled]\n"
         "Using host libthread_db library \"/lib/x86_64-linux-gnu/libthread_db.so.1\".\n"
         "0x00007f3c1a2e8d56 in epoll_wait (epfd=5, events=0x55d, maxevents=32, timeout=-1) at ../sysdeps/unix/sysv/linux/epoll_wait.c:30\n"
         "\n"
         "Thread 2 (Thread 0x7f3c19a5e6c0 (LWP 4242) \"async\"):\n"
         "#0  0x00007f3c1a2e8d56 in epoll_wait (epfd=5, events=0x55d, maxevents=32, timeout=-1) at ../sysdeps/unix/sysv/linux/epoll_wait.c:30\n"
         "#1  0x00007f3c19f6c1a9 in ?? () from /lib/x86_64-linux-gnu/libevent_core-2.1.so.7\n"
         "#2  0x00007f3c19f6c2aa in event_base_loop () from /lib/x86_64-linux-gnu/libevent_core-2.1.so.7\n"
         "#3  0x00007f3c19d7a0e1 in ?? () from /lib/x86_64-linux-gnu/libopen-pal.so.40\n"
         "#4  0x00007f3c1a26b044 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442\n"
         "#5  0x00007f3c1a2eb61c in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81\n"
         "\n"
         "Thread 1 (Thread 0x7f3c1a5c8740 (LWP 4240) \"stuck_mpi\"):\n"
         "#0  " + addr + " in " + poll_at + " () from /lib/x86_64-linux-gnu/libopen-pal.so.40\n"
         "#1  0x00007f3c19d3b0a4 in opal_progress () from /lib/x86_64-linux-gnu/libopen-pal.so.40\n"
         "#2  0x00007f3c1a40e5b5 in ompi_request_default_wait () from /lib/x86_64-linux-gnu/libmpi.so.40\n"
         "#3  0x00007f3c1a45d0f2 in ompi_coll_base_barrier_intra_recursivedoubling () from /lib/x86_64-linux-gnu/libmpi.so.40\n"
         "#4  0x00007f3c1a425a4d in PMPI_Barrier () from /lib/x86_64-linux-gnu/libmpi.so.40\n"
         "#5  0x000055d0a1c0b2c9 in main (argc=1, argv=0x7ffd1c2a6f18) at stuck_mpi.c:31\n"
         "[Inferior 1 (process 4240) detached]\n";
}

const char* kSleepyRank =
    "Thread 2 (Thread 0x7f3c19a5e6c0 (LWP 4252) \"async\"):\n"
    "#0  0x00007f3c1a2e8d56 in epoll_wait (epfd=5, events=0x55d, maxevents=32, timeout=-1) at ../sysdeps/unix/sysv/linux/epoll_wait.c:30\n"
    "#1  0x00007f3c19f6c1a9 in ?? () from /lib/x86_64-linux-gnu/libevent_core-2.1.so.7\n"
    "#2  0x00007f3c19f6c2aa in event_base_loop () from /lib/x86_64-linux-gnu/libevent_core-2.1.so.7\n"
    "#3  0x00007f3c19d7a0e1 in ?? () from /lib/x86_64-linux-gnu/libopen-pal.so.40\n"
    "#4  0x00007f3c1a26b044 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442\n"
    "#5  0x00007f3c1a2eb61c in clone3 () at ../sysdeps/unix/sysv/linux/x86_64/clone3.S:81\n"
    "\n"
    "Thread 1 (Thread 0x7f3c1a5c8740 (LWP 4250) \"stuck_mpi\"):\n"
    "#0  0x00007f3c1a2b3e13 in __GI___clock_nanosleep (clock_id=0, flags=0, req=0x7ffd, rem=0x7ffd) at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:78\n"
    "#1  0x00007f3c1a2b8a43 in __GI___nanosleep (req=<optimized out>, rem=<optimized out>) at ../sysdeps/unix/sysv/linux/nanosleep.c:25\n"
    "#2  0x00007f3c1a2b895a in __sleep (seconds=0) at ../sysdeps/posix/sleep.c:55\n"
    "#3  0x000055d0a1c0b1f0 in rank_five_sleeps_here (seconds=600) at stuck_mpi.c:12\n"
    "#4  0x000055d0a1c0b2b0 in main (argc=1, argv=0x7ffd1c2a6f18) at stuck_mpi.c:29\n";

}  // namespace

TEST_CASE("rank ranges are compact and sorted") {
  CHECK(formatRankRanges({}) == "");
  CHECK(formatRankRanges({7}) == "7");
  CHECK(formatRankRanges({3, 0, 1, 2, 2, 5, 6, 9}) == "0-3, 5-6, 9");
  CHECK(formatRankRanges({0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15}) == "0-6, 8-15");
}

TEST_CASE("gdb frames lose addresses and arguments and come outermost first") {
  auto threads = parseGdbStacks(kSleepyRank);
  REQUIRE(threads.size() == 2);
  CHECK(threads[0] == Stack{"main", "rank_five_sleeps_here", "__sleep", "__GI___nanosleep", "__GI___clock_nanosleep"});
  // Thread start-up frames go; an unknown frame keeps its library's name.
  CHECK(threads[1] == Stack{"?? [libopen-pal.so.40]", "event_base_loop", "?? [libevent_core-2.1.so.7]", "epoll_wait"});
}

TEST_CASE("an MPI rank's stack ends at the MPI entry point, wherever its progress loop was") {
  auto a = parseGdbStacks(barrierRank("mca_btl_vader_component_progress", "0x00007f3c19d3a001"));
  auto b = parseGdbStacks(barrierRank("opal_timer_linux_get_cycles_sys_timer", "0x00007f3c19d3a777"));
  REQUIRE(a.size() == 2);
  CHECK(a[0] == Stack{"main", "PMPI_Barrier"});
  CHECK(a == b);
}

TEST_CASE("a 4x2 MPI job with one sleeping rank merges into two classes") {
  std::vector<RankStacks> ranks;
  for (int r = 0; r < 8; ++r) {
    RankStacks s;
    s.rank = r;
    s.node = "node" + std::to_string(r / 2);
    s.gdb_output = r == 5 ? std::string(kSleepyRank)
                          : barrierRank(r % 2 ? "opal_progress_events" : "mca_pml_ob1_progress", "0x00007f3c19d3a0" + std::to_string(r));
    ranks.push_back(s);
  }
  auto classes = mergeStacks(ranks);
  REQUIRE(classes.size() == 2);
  CHECK(classes[0].ranks == std::vector<int>{0, 1, 2, 3, 4, 6, 7});
  CHECK(classes[1].ranks == std::vector<int>{5});
  REQUIRE(classes[1].threads.size() == 2);
  CHECK(classes[1].threads[0].stack[1] == "rank_five_sleeps_here");  // the main thread first
  const std::string report = formatStackReport(ranks);
  CHECK(report.find("stacks of 8 rank(s): 2 classes\n") == 0);
  CHECK(report.find("ranks 0-4, 6-7:\n    main > PMPI_Barrier\n") != std::string::npos);
  CHECK(report.find("rank 5:\n    main > rank_five_sleeps_here > __sleep") != std::string::npos);
}

TEST_CASE("processes a PMIx_Spawn started are named as spawned, not as more ranks") {
  std::vector<RankStacks> ranks(4);  // a job of 2 ranks; 2 and 3 are spawn1's processes 0 and 1
  for (int r = 0; r < 4; ++r) {
    ranks[r].rank = r;
    ranks[r].gdb_output = kSleepyRank;
  }
  const auto label = [](int n) { return n >= 2 ? "spawn1:" + std::to_string(n - 2) : std::string(); };
  const std::string report = formatStackReport(ranks, label);
  CHECK(report.find("ranks 0-1, spawn1:0, spawn1:1:\n") != std::string::npos);
  CHECK(formatStackReport(ranks).find("ranks 0-3:\n") != std::string::npos);  // without names: numbers
}

TEST_CASE("ranks without stacks are grouped by the reason") {
  std::vector<RankStacks> ranks(4);
  for (int r = 0; r < 4; ++r) ranks[r].rank = r;
  ranks[0].gdb_output = kSleepyRank;
  ranks[1].error = "ptrace: Operation not permitted (kernel.yama.ptrace_scope=3)";
  ranks[2].error = ranks[1].error;
  ranks[3].gdb_output = kSleepyRank;
  ranks[3].note = "no Python frames: gdb has no py-bt";
  auto classes = mergeStacks(ranks);
  REQUIRE(classes.size() == 2);
  CHECK(classes[0].ranks == std::vector<int>{0, 3});
  CHECK(classes[1].error.find("ptrace") == 0);
  const std::string report = formatStackReport(ranks);
  CHECK(report.find("ranks 1-2: no stacks: ptrace: Operation not permitted") != std::string::npos);
  CHECK(report.find("note (rank 3): no Python frames") != std::string::npos);
}

TEST_CASE("py-bt frames join the thread's native frames") {
  const char* text =
      "Thread 1 (Thread 0x7f (LWP 9) \"python3\"):\n"
      "#0  0x00007f in __GI___select (nfds=0, readfds=0x0) at ../sysdeps/unix/sysv/linux/select.c:69\n"
      "#1  0x000055 in ?? () from /usr/bin/python3.11\n"
      "#2  0x000056 in ?? () from /usr/bin/python3.11\n"
      "#3  0x000057 in _PyEval_EvalFrameDefault ()\n"
      "#4  0x000058 in main ()\n"
      "\n"
      "Thread 1 (Thread 0x7f (LWP 9) \"python3\"):\n"
      "Traceback (most recent call first):\n"
      "  File \"/tmp/job/stuck.py\", line 8, in rank_one_is_stuck_here\n"
      "    select.select([], [], [])\n"
      "  File \"/tmp/job/stuck.py\", line 20, in <module>\n"
      "    rank_one_is_stuck_here()\n";
  auto threads = parseGdbStacks(text);
  REQUIRE(threads.size() == 1);
  CHECK(threads[0] == Stack{"main", "_PyEval_EvalFrameDefault", "?? [python3.11]", "__GI___select", "py:<module> (stuck.py)",
                            "py:rank_one_is_stuck_here (stuck.py)"});
  RankStacks r;
  r.gdb_output = text;
  CHECK(formatStackReport({r}).find("python: <module> (stuck.py) > rank_one_is_stuck_here (stuck.py)") != std::string::npos);
}

TEST_CASE("ranks whose thread pools differ in size stay in one class") {
  const std::string worker =
      "#0  0x00007f in __futex_abstimed_wait_common64 (private=0) at ./nptl/futex-internal.c:57\n"
      "#1  0x00007f in ___pthread_cond_wait (cond=0x55, mutex=0x55) at ./nptl/pthread_cond_wait.c:618\n"
      "#2  0x00007f in worker_loop () from /opt/lib/libpool.so\n"
      "#3  0x00007f in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442\n";
  auto rank = [&](int r, int workers) {
    RankStacks s;
    s.rank = r;
    for (int t = workers + 1; t >= 2; --t) s.gdb_output += "Thread " + std::to_string(t) + " (Thread 0x7f (LWP 5) \"w\"):\n" + worker;
    s.gdb_output += std::string("Thread 1 (Thread 0x7f (LWP 4) \"main\"):\n") +
                    "#0  0x00007f in __GI___poll (fds=0x1, nfds=1, timeout=-1) at ../sysdeps/unix/sysv/linux/poll.c:29\n"
                    "#1  0x000055 in main () at app.c:9\n";
    return s;
  };
  auto classes = mergeStacks({rank(0, 2), rank(1, 3), rank(2, 2)});
  REQUIRE(classes.size() == 1);
  REQUIRE(classes[0].threads.size() == 2);
  CHECK(classes[0].threads[0].stack == Stack{"main", "__GI___poll"});
  CHECK(classes[0].threads[1].min_threads == 2);
  CHECK(classes[0].threads[1].max_threads == 3);
  CHECK(formatStackReport({rank(0, 2), rank(1, 3)}).find(
            "ranks 0-1:\n    main > __GI___poll\n    2-3 threads: worker_loop > ___pthread_cond_wait > "
            "__futex_abstimed_wait_common64\n") != std::string::npos);
}
