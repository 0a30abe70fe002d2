// The keeper step of warm daemons inside a Slurm allocation (launcher/slurm_keeper_step.h),
// with a fake srun: what it is asked to run, what it is told, and what tlaunch makes of what
// comes back. The real step runs in tests/cluster/test_slurm_jobs.py.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hosts_test_support.h"
#include "launcher/slurm_keeper_step.h"

using namespace tlaunch;
namespace fs = std::filesystem;
using test::TempDir;
using test::targets;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fake srun: records its argv and the line on its stdin, then runs `body` (sh). The keepers'
// deadline is long where the test waits for lines or srun's end (a loaded machine starts sh
// slowly), short only where it must run out.
SlurmKeeperStepOptions fakeSrun(const TempDir& tmp, const std::string& body, int timeout_ms = 30000) {
  const fs::path fake = tmp.path() / "srun";
  std::ofstream(fake) << "#!/bin/sh\nout=\"$(dirname \"$0\")\"\nprintf '%s\\n' \"$@\" > \"$out/argv\"\n"
                         "IFS= read -r s; printf '%s' \"$s\" > \"$out/stdin\"\necho $$ > \"$out/pid\"\n"
                      << body;
  fs::permissions(fake, fs::perms::owner_all);
  SlurmKeeperStepOptions o;
  o.srun.srun_program = fake.string();
  o.slurm_job = "4242";
  o.log_path = (tmp.path() / "keepers.log").string();
  o.keep_s = 600;
  o.timeout_ms = timeout_ms;
  return o;
}

bool running(pid_t pid) { return ::kill(pid, 0) == 0; }
}  // namespace

TEST_CASE("hosts: a keeper's line names one of the step's nodes, once, with its port, pid and start",
          "[hosts][slurm][warm]") {
  const auto nodes = targets({"gpu01", "gpu02"});
  auto e = parseKeeperLine("gpu02 40001 123 1700000000", nodes, {});
  REQUIRE(e);
  CHECK(e->node == "gpu02");
  CHECK(e->destination == "gpu02");
  CHECK(e->port == 40001);
  CHECK(e->pid == 123);
  CHECK(e->since == 1700000000);
  CHECK_FALSE(parseKeeperLine("gpu03 40001 123 1700000000", nodes, {}));           // not a node of the step
  CHECK_FALSE(parseKeeperLine("gpu02 40001 123 1700000000", nodes, {"gpu02"}));    // said twice
  CHECK_FALSE(parseKeeperLine("gpu02 70000 123 1700000000", nodes, {}));           // no such port
  CHECK_FALSE(parseKeeperLine("gpu02 0 123 1700000000", nodes, {}));
  CHECK_FALSE(parseKeeperLine("gpu02 40001 -5 1700000000", nodes, {}));
  CHECK_FALSE(parseKeeperLine("gpu02 40001 123 1700000000 extra", nodes, {}));
  CHECK_FALSE(parseKeeperLine("gpu02 40001 123", nodes, {}));
  CHECK_FALSE(parseKeeperLine("Welcome to gpu02!", nodes, {}));  // a login script's chatter
  CHECK_FALSE(parseKeeperLine("", nodes, {}));
}

TEST_CASE("hosts: the keeper step is started once, told the secret, and left running", "[hosts][slurm][warm]") {
  TempDir tmp;
  // Two keepers answer (one line split over two writes), with some chatter in between.
  auto o = fakeSrun(tmp, "printf 'localhost 40001 101 1700000000\\nmotd: hello\\n127.0.0.1 400'\n"
                         "sleep 0.1; printf '02 102 1700000001\\n'\nexec sleep 60\n");
  const auto made = startSlurmKeepers(targets({"localhost", "127.0.0.1"}), "/opt/tlaunch/bin/tlaunchd", "usersecret", o);
  CHECK(made.problem.empty());
  REQUIRE(made.entries.size() == 2);
  CHECK(made.entries[0].node == "localhost");
  CHECK(made.entries[0].host == "127.0.0.1");  // resolved here: the registry holds addresses
  CHECK(made.entries[0].port == 40001);
  CHECK(made.entries[1].port == 40002);
  CHECK(made.entries[1].pid == 102);
  for (const auto& e : made.entries) {
    CHECK(e.slurm_job == "4242");
    CHECK(e.keep_s == 600);
    CHECK(e.slurm_step.empty());  // srun's defaults
  }
  CHECK(slurp(tmp.path() / "stdin") == "usersecret");
  const std::string argv = slurp(tmp.path() / "argv");
  CHECK_THAT(argv, Catch::StartsWith("--job-name=tlaunch-keepers\n--overlap\n"));
  CHECK_THAT(argv, Catch::Contains("--nodelist=localhost,127.0.0.1\n"));
  // One keeper that dies does not end the step, and with it every node's keeper and daemons.
  CHECK_THAT(argv, Catch::Contains("--kill-on-bad-exit=0\n"));
  CHECK_THAT(argv, !Catch::Contains("--kill-on-bad-exit=1"));
  CHECK_THAT(argv, Catch::EndsWith("/opt/tlaunch/bin/tlaunchd\n--keeper\n--keep-for\n600\n--in-slurm-step\n"));
  // srun stays: the keepers live in its step after this tlaunch is gone.
  const pid_t pid = std::stoi(slurp(tmp.path() / "pid"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(running(pid));
  ::kill(pid, SIGKILL);
}

TEST_CASE("hosts: the keeper step's srun settings are written into its keepers' entries", "[hosts][slurm][warm]") {
  SlurmStarterOptions o;
  CHECK(keeperStepSettings(o).empty());
  o.slurm_args = "--container-image=A";
  o.job_gpus_per_node = 2;
  CHECK(keeperStepSettings(o) == "--container-image=A [gpus per node 2]");
  TempDir tmp;
  auto step = fakeSrun(tmp, "printf 'localhost 40001 101 1700000000\\n'\nexec sleep 60\n");
  step.srun.slurm_args = "--container-image=A";
  const auto made = startSlurmKeepers(targets({"localhost"}), "tlaunchd", "s", step);
  REQUIRE(made.entries.size() == 1);
  CHECK(made.entries[0].slurm_step == "--container-image=A");
  ::kill(std::stoi(slurp(tmp.path() / "pid")), SIGKILL);
}

TEST_CASE("hosts: a keeper step that fails or stays silent is explained", "[hosts][slurm][warm]") {
  TempDir tmp;
  SECTION("srun fails: its words from the log") {
    auto o = fakeSrun(tmp, "echo 'srun: error: Unable to create step for job 4242: Invalid generic resource' >&2\nexit 1\n");
    std::ofstream(o.log_path) << "srun: error: an older run's words\n";
    const auto made = startSlurmKeepers(targets({"gpu01"}), "tlaunchd", "s", o);
    CHECK(made.entries.empty());
    CHECK_THAT(made.problem, Catch::Contains("keeper step ended without a keeper on gpu01"));
    CHECK_THAT(made.problem, Catch::Contains("Slurm could not start the daemons' job step"));
    CHECK_THAT(made.problem, !Catch::Contains("older run"));
  }
  SECTION("srun ends after one keeper answered: none is used, the step's end is explained") {
    auto o = fakeSrun(tmp, "printf 'localhost 40001 101 1700000000\\n'\n"
                           "echo 'srun: error: 127.0.0.1: task 1: Exited with exit code 2' >&2\nexit 2\n");
    const auto made = startSlurmKeepers(targets({"localhost", "127.0.0.1"}), "tlaunchd", "s", o);
    CHECK(made.entries.empty());
    CHECK_THAT(made.problem, Catch::Contains("keeper step ended without a keeper on 127.0.0.1"));
  }
  SECTION("one of two keepers answers: it is used, the other node is named") {
    auto o = fakeSrun(tmp, "printf 'localhost 40001 101 1700000000\\n'\nexec sleep 60\n", 3000);
    const auto made = startSlurmKeepers(targets({"localhost", "127.0.0.1"}), "tlaunchd", "s", o);
    REQUIRE(made.entries.size() == 1);
    CHECK_THAT(made.problem, Catch::Contains("no keeper answered within 3 s on 127.0.0.1"));
    ::kill(std::stoi(slurp(tmp.path() / "pid")), SIGKILL);
  }
  // srun ends its whole step on SIGPIPE: a keeper's line after tlaunch stopped waiting must not
  // meet a closed pipe (the job daemons the other keepers started live in that step).
  SECTION("a keeper that answers after the deadline does not end the step") {
    auto o = fakeSrun(tmp, "printf 'localhost 40001 101 1700000000\\n'\nsleep 2\n"
                           "printf '127.0.0.1 40002 102 1700000001\\n' && echo written > \"$out/late\"\n"
                           "exec sleep 60\n", 1000);
    const auto made = startSlurmKeepers(targets({"localhost", "127.0.0.1"}), "tlaunchd", "s", o);
    REQUIRE(made.entries.size() == 1);
    const pid_t pid = std::stoi(slurp(tmp.path() / "pid"));
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    CHECK(running(pid));
    CHECK(slurp(tmp.path() / "late") == "written\n");  // its write succeeded
    ::kill(pid, SIGKILL);
  }
  SECTION("none answers: srun is ended, not left behind") {
    auto o = fakeSrun(tmp, "exec sleep 60\n", 1000);
    const auto t0 = std::chrono::steady_clock::now();
    const auto made = startSlurmKeepers(targets({"gpu01"}), "tlaunchd", "s", o);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(8));
    CHECK(made.entries.empty());
    CHECK_THAT(made.problem, Catch::Contains("no keeper answered within 1 s on gpu01"));
    CHECK_FALSE(running(std::stoi(slurp(tmp.path() / "pid"))));
  }
}

// Two tlaunch runs in one allocation start a keeper step each, with the same log (it is named
// after the allocation). Each takes only its own step's keepers: a shared lines file gave the
// slower run the faster one's keeper.
TEST_CASE("hosts: two keeper steps of one allocation each read their own keepers' lines", "[hosts][slurm][warm]") {
  TempDir a_dir, b_dir;
  auto a = fakeSrun(a_dir, "sleep 0.3; printf 'localhost 40001 101 1700000000\\n'\nexec sleep 60\n");
  auto b = fakeSrun(b_dir, "sleep 1.5; printf 'localhost 40009 109 1700000009\\n'\nexec sleep 60\n");
  b.log_path = a.log_path;
  SlurmKeepers made_a;
  std::thread first([&] { made_a = startSlurmKeepers(targets({"localhost"}), "tlaunchd", "s", a); });
  const auto made_b = startSlurmKeepers(targets({"localhost"}), "tlaunchd", "s", b);
  first.join();
  REQUIRE(made_a.entries.size() == 1);
  REQUIRE(made_b.entries.size() == 1);
  CHECK(made_a.entries[0].port == 40001);
  CHECK(made_b.entries[0].port == 40009);
  // Read and removed: nothing but the log is left beside it.
  for (const auto& e : fs::directory_iterator(a_dir.path()))
    CHECK_FALSE(e.path().extension() == ".lines");
  ::kill(std::stoi(slurp(a_dir.path() / "pid")), SIGKILL);
  ::kill(std::stoi(slurp(b_dir.path() / "pid")), SIGKILL);
}

TEST_CASE("hosts: old keeper-step logs are removed, recent ones and other files stay", "[hosts][slurm][warm]") {
  TempDir tmp;
  const auto age = [&](const char* name, long long seconds) {
    std::ofstream(tmp.path() / name) << "srun: error: something\n";
    fs::last_write_time(tmp.path() / name, fs::file_time_type::clock::now() - std::chrono::seconds(seconds));
  };
  age("keepers-100.log", 8LL * 86'400);
  age("keepers-100-a1B2c3.lines", 8LL * 86'400);  // a tlaunch killed while it waited left it
  age("keepers-200.log", 3600);
  age("node-node1.json", 30LL * 86'400);  // a registry entry: not a log
  fs::create_symlink("/etc/hostname", tmp.path() / "keepers-300.log");
  removeOldKeeperLogs(tmp.path().string(), 7LL * 86'400);
  CHECK_FALSE(fs::exists(tmp.path() / "keepers-100.log"));
  CHECK_FALSE(fs::exists(tmp.path() / "keepers-100-a1B2c3.lines"));
  CHECK(fs::exists(tmp.path() / "keepers-200.log"));
  CHECK(fs::exists(tmp.path() / "node-node1.json"));
  CHECK(fs::is_symlink(tmp.path() / "keepers-300.log"));  // not a file of ours: left alone
}
