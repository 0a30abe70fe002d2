// The daemon's RankSupervisor with real processes (/bin/sh ranks): output relayed per stream as
// whole lines, exit statuses and signals reported after the output, the stderr tail kept, a
// teardown that ends ranks ignoring SIGTERM, and a supervisor destroyed while its reads and
// exit watches are pending (ASan sees any use after free).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/descendants.h"
#include "daemon/rank_supervisor.h"

using namespace tlaunch;

namespace {

RankLaunch shRank(int rank, const std::string& script) {
  RankLaunch l;
  l.rank = rank;
  l.exe_path = "/bin/sh";
  l.argv = {"sh", "-c", script};
  l.env = {"PATH=/usr/bin:/bin", "R=" + std::to_string(rank)};
  l.cwd = "/";
  return l;
}

struct SupervisorEvents {
  std::map<int, std::vector<std::string>> out, err;  // by rank
  std::map<int, RankExit> exits;
  std::vector<std::string> order;  // "out:R" / "exit:R": output must come before the exit
  int all_exited = 0;
};

RankSupervisor::Events record(SupervisorEvents& s) {
  RankSupervisor::Events e;
  e.output = [&s](int rank, int stream, OutputKind, std::string_view bytes) {
    (stream == 1 ? s.out : s.err)[rank].emplace_back(bytes);
    s.order.push_back("out:" + std::to_string(rank));
  };
  e.stdin_written = [](int, size_t, bool) {};
  e.exited = [&s](const RankExit& x) {
    s.exits[x.rank] = x;
    s.order.push_back("exit:" + std::to_string(x.rank));
  };
  e.all_exited = [&s] { ++s.all_exited; };
  return e;
}

void runUntil(asio::io_context& io, const std::function<bool()>& done, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.run_one_for(std::chrono::milliseconds(20));  // one handler: nothing runs between done() and the checks
    io.restart();
  }
}

// start() of the ranks, run until its `done`: their result.
Result<void> startAll(RankSupervisor& sup, asio::io_context& io, std::vector<RankLaunch> launches) {
  std::optional<Result<void>> result;
  sup.start(std::move(launches), [&](Result<void> r) { result = std::move(r); });
  runUntil(io, [&] { return result.has_value(); }, std::chrono::seconds(20));
  REQUIRE(result);
  return *result;
}

}  // namespace

TEST_CASE("rank supervisor: each rank's lines on its own stream, then its exit status, then all exited once") {
  asio::io_context io(1);
  SupervisorEvents s;
  RankSupervisor sup(io, record(s), "test-rs-1");
  REQUIRE(startAll(sup, io, {shRank(0, "echo out-$R; echo err-$R >&2; exit 0"),
                     shRank(1, "echo out-$R; echo err-$R >&2; echo second >&2; exit 3")}));
  runUntil(io, [&] { return s.all_exited > 0; }, std::chrono::seconds(20));
  REQUIRE(s.all_exited == 1);
  CHECK(s.out[0] == std::vector<std::string>{"out-0\n"});
  CHECK(s.err[0] == std::vector<std::string>{"err-0\n"});
  CHECK(s.out[1] == std::vector<std::string>{"out-1\n"});
  CHECK(s.exits[0].code == 0);
  CHECK_FALSE(s.exits[0].signaled);
  CHECK(s.exits[1].code == 3);
  CHECK(s.exits[1].stderr_tail == std::vector<std::string>{"err-1", "second"});
  CHECK_FALSE(s.exits[1].killed_by_us);
  for (int r : {0, 1}) {  // every output of a rank before its exit
    const auto exit_at = std::find(s.order.begin(), s.order.end(), "exit:" + std::to_string(r));
    CHECK(std::find(exit_at, s.order.end(), "out:" + std::to_string(r)) == s.order.end());
  }
  CHECK(sup.allExited());
  CHECK(sup.alive() == 0);
}

// The supervisor kills what a rank left in its process group when it reports the rank (up to a
// second after its end, while a leftover holds the pipes). Until then the rank stays a zombie:
// reaped earlier, its pid, which is the group's id, could go to another process, and the group
// kill would hit that process's group.
TEST_CASE("rank supervisor: an exited rank is reaped only after its group is killed") {
  asio::io_context io(1);
  SupervisorEvents s;
  RankSupervisor sup(io, record(s), "test-rs-zombie");
  REQUIRE(startAll(sup, io, {shRank(0, "echo $$; sleep 30 & exit 4")}));  // sleep holds stdout, in the group
  runUntil(io, [&] { return !s.out[0].empty(); }, std::chrono::seconds(20));
  REQUIRE_FALSE(s.out[0].empty());
  const pid_t rank_pid = static_cast<pid_t>(std::stol(s.out[0].front()));
  auto state = [](pid_t pid) {
    std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    ProcEntry e;
    return parseProcStat(text, e) ? e.state : '-';
  };
  runUntil(io, [&] { return sup.alive() == 0; }, std::chrono::seconds(20));
  REQUIRE(sup.alive() == 0);
  CHECK(s.all_exited == 0);  // not reported yet: the sleep still holds stdout
  CHECK(state(rank_pid) == 'Z');
  runUntil(io, [&] { return s.all_exited > 0; }, std::chrono::seconds(20));
  REQUIRE(s.exits.count(0));
  CHECK(s.exits[0].code == 4);
  CHECK(state(rank_pid) == '-');  // reaped now
}

TEST_CASE("rank supervisor: a rank killed by a signal is reported with the signal") {
  asio::io_context io(1);
  SupervisorEvents s;
  RankSupervisor sup(io, record(s), "test-rs-2");
  REQUIRE(startAll(sup, io, {shRank(0, "kill -9 $$")}));
  runUntil(io, [&] { return s.all_exited > 0; }, std::chrono::seconds(20));
  REQUIRE(s.exits.count(0));
  CHECK(s.exits[0].signaled);
  CHECK(s.exits[0].code == SIGKILL);
  CHECK_FALSE(s.exits[0].killed_by_us);
}

// While the frontend's reader is slow (or the frontend is stopped) the daemon stops reading the
// ranks' pipes. A rank that prints its error and exits meanwhile must still have those lines
// relayed and in its stderr tail when its exit is reported (the failure summary quotes them).
TEST_CASE("rank supervisor: a rank that exits while output is paused keeps its last lines") {
  asio::io_context io(1);
  SupervisorEvents s;
  RankSupervisor sup(io, record(s), "test-rs-paused");
  sup.pauseOutput();
  REQUIRE(startAll(sup, io, {shRank(0, "echo progress; echo 'Traceback: boom' >&2; exit 1")}));
  runUntil(io, [&] { return s.all_exited > 0; }, std::chrono::seconds(20));
  REQUIRE(s.exits.count(0));
  CHECK(s.exits[0].code == 1);
  CHECK(s.exits[0].stderr_tail == std::vector<std::string>{"Traceback: boom"});
  CHECK(s.out[0] == std::vector<std::string>{"progress\n"});
  CHECK(s.err[0] == std::vector<std::string>{"Traceback: boom\n"});
  const auto exit_at = std::find(s.order.begin(), s.order.end(), "exit:0");
  CHECK(std::find(exit_at, s.order.end(), "out:0") == s.order.end());
}

// A rank blocked in one long write() while we do not read (a slow reader downstream) has not
// paused: half its line shown as a prompt came out as a cut-short extra copy of the line. A rank
// that really waits after half a line (a prompt) is shown, paused or not.
namespace {
struct SupervisorOutputKinds {
  std::vector<std::pair<OutputKind, std::string>> items;
  long unfinished() const {
    return std::count_if(items.begin(), items.end(), [](const auto& x) { return x.first == OutputKind::unfinished; });
  }
};
RankSupervisor::Events recordKinds(SupervisorOutputKinds& seen) {
  RankSupervisor::Events e;
  e.output = [&seen](int, int, OutputKind kind, std::string_view bytes) { seen.items.emplace_back(kind, bytes); };
  e.stdin_written = [](int, size_t, bool) {};
  e.exited = [](const RankExit&) {};
  e.all_exited = [] {};
  return e;
}
}  // namespace

TEST_CASE("rank supervisor: a line the rank is still writing while output is paused is no prompt") {
  asio::io_context io(1);
  SupervisorOutputKinds seen;
  RankSupervisor sup(io, recordKinds(seen), "test-rs-quiet-paused");
  // "partial" and 200 kB more of the same line: more than a pipe holds, so the rank blocks.
  REQUIRE(startAll(sup, io, {shRank(0, "printf 'ready\\npartial'; head -c 200000 /dev/zero | tr '\\0' x; echo; sleep 3")}));
  runUntil(io, [&] { return !seen.items.empty(); }, std::chrono::seconds(20));
  REQUIRE_FALSE(seen.items.empty());
  sup.pauseOutput();
  runUntil(io, [&] { return seen.unfinished() > 0; }, std::chrono::seconds(1));
  CHECK(seen.unfinished() == 0);
  sup.resumeOutput();
  std::string all;
  runUntil(io, [&] {
    all.clear();
    for (const auto& [kind, bytes] : seen.items) if (kind == OutputKind::lines) all += bytes;
    return all.size() >= 200000 + 14;
  }, std::chrono::seconds(10));
  CHECK(all == "ready\npartial" + std::string(200000, 'x') + "\n");
  CHECK(seen.unfinished() == 0);
  sup.terminate(std::chrono::milliseconds(100));
  runUntil(io, [] { return false; }, std::chrono::seconds(1));
}

TEST_CASE("rank supervisor: a prompt is shown while output is paused") {
  asio::io_context io(1);
  SupervisorOutputKinds seen;
  RankSupervisor sup(io, recordKinds(seen), "test-rs-quiet-prompt");
  REQUIRE(startAll(sup, io, {shRank(0, "printf 'ready\\nProceed? '; sleep 3")}));
  runUntil(io, [&] { return !seen.items.empty(); }, std::chrono::seconds(20));
  sup.pauseOutput();  // other ranks' output fills the window: this rank's prompt still counts
  runUntil(io, [&] { return seen.unfinished() > 0; }, std::chrono::seconds(2));
  REQUIRE(seen.unfinished() == 1);
  CHECK(std::find_if(seen.items.begin(), seen.items.end(), [](const auto& x) {
          return x.first == OutputKind::unfinished;
        })->second == "Proceed? ");
  sup.terminate(std::chrono::milliseconds(100));
  runUntil(io, [] { return false; }, std::chrono::seconds(1));
}

TEST_CASE("rank supervisor: terminate ends a rank that ignores SIGTERM after the grace, marked as ours") {
  asio::io_context io(1);
  SupervisorEvents s;
  RankSupervisor sup(io, record(s), "test-rs-3");
  REQUIRE(startAll(sup, io, {shRank(0, "trap '' TERM; echo ready; while :; do sleep 1; done"), shRank(1, "exec sleep 100")}));
  runUntil(io, [&] { return !s.out[0].empty(); }, std::chrono::seconds(20));
  REQUIRE(s.out[0] == std::vector<std::string>{"ready\n"});
  const auto t0 = std::chrono::steady_clock::now();
  sup.terminate(std::chrono::milliseconds(300));
  runUntil(io, [&] { return s.all_exited > 0; }, std::chrono::seconds(20));
  REQUIRE(s.all_exited == 1);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  CHECK(s.exits[0].signaled);
  CHECK(s.exits[0].code == SIGKILL);  // it ignored SIGTERM
  CHECK(s.exits[0].killed_by_us);
  CHECK(s.exits[1].signaled);
  CHECK(s.exits[1].code == SIGTERM);
  CHECK(s.exits[1].killed_by_us);
}

// A node of many ranks takes seconds to start (a fork and exec each): the event loop runs between
// slices of spawns, so that the daemon's heartbeats and the frontend's messages go on meanwhile.
TEST_CASE("rank supervisor: many ranks start in slices with the event loop running between them") {
  asio::io_context io(1);
  SupervisorEvents s;
  RankSupervisor sup(io, record(s), "test-rs-slices");
  std::vector<RankLaunch> launches;
  constexpr size_t kRanks = 300;  // hundreds of milliseconds at the least, several slices
  for (int r = 0; r < static_cast<int>(kRanks); ++r) launches.push_back(shRank(r, "exec sleep 100"));
  std::optional<Result<void>> started;
  std::vector<size_t> seen;  // ranks started, as a timer of the loop saw them
  asio::steady_timer tick(io);
  std::function<void()> arm = [&] {
    tick.expires_after(std::chrono::milliseconds(1));
    tick.async_wait([&](const asio::error_code& ec) {
      if (ec || started) return;
      seen.push_back(sup.view().size());
      arm();
    });
  };
  arm();
  sup.start(std::move(launches), [&](Result<void> r) { started = std::move(r); });
  CHECK_FALSE(started);  // never inside the call
  runUntil(io, [&] { return started.has_value(); }, std::chrono::seconds(120));
  REQUIRE(started);
  REQUIRE(*started);
  CHECK(sup.view().size() == kRanks);
  CHECK(std::any_of(seen.begin(), seen.end(), [](size_t n) { return n > 0 && n < kRanks; }));
  CHECK_FALSE(sup.allExited());
  sup.terminate(std::chrono::milliseconds(300));
  runUntil(io, [&] { return s.all_exited > 0; }, std::chrono::seconds(60));
  CHECK(s.all_exited == 1);
  CHECK(s.exits.size() == kRanks);
}

TEST_CASE("rank supervisor: a terminate while ranks start: those started end as ours, the rest never start") {
  asio::io_context io(1);
  SupervisorEvents s;
  RankSupervisor sup(io, record(s), "test-rs-stop-start");
  std::vector<RankLaunch> launches;
  constexpr size_t kRanks = 300;
  for (int r = 0; r < static_cast<int>(kRanks); ++r) launches.push_back(shRank(r, "exec sleep 100"));
  std::optional<Result<void>> started;
  sup.start(std::move(launches), [&](Result<void> r) { started = std::move(r); });
  runUntil(io, [&] { return started.has_value() || !sup.view().empty(); }, std::chrono::seconds(60));
  REQUIRE_FALSE(started);  // the first slice ran, not the last
  sup.terminate(std::chrono::milliseconds(300));
  runUntil(io, [&] { return s.all_exited > 0; }, std::chrono::seconds(60));
  REQUIRE(started);
  CHECK(*started);
  const size_t ran = sup.view().size();
  CHECK(ran < kRanks);
  CHECK(s.all_exited == 1);
  CHECK(s.exits.size() == ran);
  for (const auto& [rank, e] : s.exits) CHECK(e.killed_by_us);
  std::optional<Result<void>> late;  // a PMIx_Spawn arriving now is refused
  sup.add({shRank(1000, "exit 0")}, [&](Result<void> r) { late = std::move(r); });
  runUntil(io, [&] { return late.has_value(); }, std::chrono::seconds(20));
  REQUIRE(late);
  CHECK_FALSE(*late);
}

TEST_CASE("rank supervisor: a terminate before any rank started still ends in all_exited, once") {
  asio::io_context io(1);
  SupervisorEvents s;
  RankSupervisor sup(io, record(s), "test-rs-stop-first");
  std::optional<Result<void>> started;
  sup.start({shRank(0, "exec sleep 100"), shRank(1, "exec sleep 100")},
            [&](Result<void> r) { started = std::move(r); });
  sup.terminate(std::chrono::milliseconds(300));  // read in the same turn as the start
  runUntil(io, [&] { return s.all_exited > 0; }, std::chrono::seconds(20));
  REQUIRE(started);
  CHECK(sup.view().empty());  // none started
  CHECK(s.all_exited == 1);   // the daemon's "drained" hangs on it
  CHECK(sup.allExited());
  std::optional<Result<void>> spawn;  // a spawn after that starts nothing, and says so; all_exited is not said again
  sup.add({shRank(5, "exit 0")}, [&](Result<void> r) { spawn = std::move(r); });
  runUntil(io, [&] { return spawn.has_value(); }, std::chrono::seconds(20));
  REQUIRE(spawn);
  CHECK_FALSE(*spawn);
  io.run_for(std::chrono::milliseconds(50));
  CHECK(s.all_exited == 1);
}

TEST_CASE("rank supervisor: destroyed while ranks run and their reads are pending, it ends them and touches nothing after") {
  asio::io_context io(1);
  SupervisorEvents s;
  std::vector<pid_t> pids;
  {
    RankSupervisor sup(io, record(s), "test-rs-4");
    REQUIRE(startAll(sup, io, {shRank(0, "exec sleep 100"), shRank(1, "exec sleep 100")}));
    io.run_for(std::chrono::milliseconds(50));
    io.restart();
    for (const auto& v : sup.view()) pids.push_back(v.pid);
    sup.killAll();
  }
  io.run_for(std::chrono::milliseconds(200));  // the aborted handlers run now: none may touch a rank
  REQUIRE(pids.size() == 2);
  for (pid_t p : pids) CHECK((::kill(p, 0) != 0 || ::waitpid(p, nullptr, WNOHANG) == p));
  CHECK(s.exits.empty());  // nothing reported from a destroyed supervisor
}

// A rank ends while a descendant that left its process group (setsid: a logger, a server)
// keeps writing into its stdout. A second after the exit the supervisor takes what is left and
// reports; a read still under way then may already have completed (asio reads at once when
// data waits) with its handler queued. That handler ran after the pipe was drained, closed and
// its buffer freed: tlaunchd crashed on a null buffer. Now nothing of the stream comes after
// the exit, and the report comes.
TEST_CASE("rank supervisor: a rank whose setsid descendant keeps writing to its stdout is reported once it lingered") {
  asio::io_context io(1);
  SupervisorEvents s;
  pid_t writer = -1;
  {
    RankSupervisor sup(io, record(s), "test-rs-linger");
    REQUIRE(startAll(sup, io, {shRank(0, "setsid yes descendant & echo writer=$!; sleep 0.2; exit 5")}));
    runUntil(io, [&] { return s.all_exited > 0; }, std::chrono::seconds(20));
    for (const auto& line : s.out[0])
      if (line.rfind("writer=", 0) == 0) writer = static_cast<pid_t>(std::stol(line.substr(7)));
    REQUIRE(s.exits.count(0));
    CHECK(s.exits[0].code == 5);
    const auto exit_at = std::find(s.order.begin(), s.order.end(), "exit:0");
    CHECK(std::find(exit_at, s.order.end(), "out:0") == s.order.end());
    io.run_for(std::chrono::milliseconds(200));  // whatever is still queued runs: none may touch the stream
    io.restart();
    CHECK(std::find(exit_at, s.order.end(), "out:0") == s.order.end());
  }
  REQUIRE(writer > 0);
  ::kill(writer, SIGKILL);  // out of the rank's group: this test's to end, containment or not
}

// A rank a debugger holds (gdb -p: a tracer that is not its parent) is killed: its pidfd turns
// readable, but its zombie is the tracer's to see until the tracer lets go. Waiting on the
// pidfd again spun a core (thousands of handlers a second) for as long as the debugger stayed.
TEST_CASE("rank supervisor: a killed rank a debugger holds is waited for without spinning, then reported") {
  asio::io_context io(1);
  SupervisorEvents s;
  RankSupervisor sup(io, record(s), "test-rs-traced");
  REQUIRE(startAll(sup, io, {shRank(0, "echo pid=$$; exec sleep 100")}));
  runUntil(io, [&] { return !s.out[0].empty(); }, std::chrono::seconds(20));
  REQUIRE_FALSE(s.out[0].empty());
  const pid_t rank = static_cast<pid_t>(std::stol(s.out[0][0].substr(4)));
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t tracer = ::fork();
  REQUIRE(tracer >= 0);
  if (tracer == 0) {
    const char ok = ::ptrace(PTRACE_SEIZE, rank, nullptr, nullptr) == 0 ? '1' : '0';
    (void)!::write(ready[1], &ok, 1);
    ::pause();
    _exit(0);
  }
  struct EndTracer {  // on every way out of the test, a failed check included
    pid_t pid;
    ~EndTracer() {
      if (pid <= 0) return;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } end_tracer{tracer};
  char ok = 0;
  const bool told = ::read(ready[0], &ok, 1) == 1;
  ::close(ready[0]);
  ::close(ready[1]);
  REQUIRE(told);
  if (ok != '1') {
    WARN("cannot ptrace here");
    return;
  }
  ::kill(rank, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // dead, its zombie the tracer's
  const size_t handlers = io.run_for(std::chrono::milliseconds(500));
  io.restart();
  CHECK(handlers < 100);
  CHECK(s.exits.empty());  // not seen yet: the tracer holds it
  ::kill(tracer, SIGKILL);  // the debugger goes: the zombie is its parent's again
  ::waitpid(tracer, nullptr, 0);
  end_tracer.pid = -1;
  runUntil(io, [&] { return s.all_exited > 0; }, std::chrono::seconds(20));
  REQUIRE(s.exits.count(0));
  CHECK(s.exits[0].signaled);
  CHECK(s.exits[0].code == SIGKILL);
}
