// The Slurm starter: srun argv, failure explanations, and the step's life with a fake srun.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hosts_test_support.h"
#include "launcher/slurm_starter.h"

using namespace tlaunch;
namespace fs = std::filesystem;
using W = std::vector<std::string>;

using test::TempDir;
using test::targets;

namespace {

// An executable "srun" in `tmp` running `script`.
fs::path writeFakeSrun(const TempDir& tmp, const std::string& script) {
  fs::path fake = tmp.path() / "srun";
  std::ofstream(fake) << script;
  fs::permissions(fake, fs::perms::owner_all);
  return fake;
}

// Polls for up to 5 s; the first failures reported.
std::vector<StartFailure> firstFailures(DaemonStarter& starter) {
  std::vector<StartFailure> failures;
  for (int i = 0; i < 250 && failures.empty(); ++i) {
    failures = starter.poll();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return failures;
}

}  // namespace

TEST_CASE("hosts: srun argv inside an allocation", "[hosts][slurm]") {
  SlurmStarterOptions o;
  o.slurm_args = "--gres=gpu:8 --comment='tlaunch job'";
  DaemonCommand cmd{"/opt/tlaunch/bin/tlaunchd", {"--connect", "10.0.0.1:4000"}};
  auto argv = buildSrunArgv(o, targets({"gpu01", "gpu02", "gpu07"}), cmd);
  REQUIRE(argv);
  CHECK(*argv == W{"srun", "--overlap", "--ntasks-per-node=1", "-N", "3", "--ntasks=3",
                   "--nodelist=gpu01,gpu02,gpu07", "--kill-on-bad-exit=1", "--input=all", "--cpu-bind=none",
                   "--mpi=none", "--gres=gpu:8", "--comment=tlaunch job", "/opt/tlaunch/bin/tlaunchd", "--connect",
                   "10.0.0.1:4000"});
}

TEST_CASE("hosts: srun argv outside an allocation asks for one", "[hosts][slurm]") {
  SlurmStarterOptions o;
  o.inside_allocation = false;
  o.slurm_args = "-p gpu -t 10";
  DaemonCommand cmd{"tlaunchd", {}};
  auto argv = buildSrunArgv(o, std::vector<NodeTarget>(4), cmd);
  REQUIRE(argv);
  CHECK(*argv == W{"srun", "--ntasks-per-node=1", "-N", "4", "--ntasks=4", "--kill-on-bad-exit=1", "--input=all",
                   "--cpu-bind=none", "--mpi=none", "-p", "gpu", "-t", "10", "tlaunchd"});
  // Named nodes (from --hosts) are passed on.
  auto named = buildSrunArgv(o, targets({"a", "b"}), cmd);
  REQUIRE(named);
  CHECK(std::find(named->begin(), named->end(), "--nodelist=a,b") != named->end());
}

TEST_CASE("hosts: srun argv errors", "[hosts][slurm]") {
  SlurmStarterOptions o;
  DaemonCommand cmd{"tlaunchd", {}};
  CHECK_FALSE(buildSrunArgv(o, {}, cmd));
  CHECK_FALSE(buildSrunArgv(o, std::vector<NodeTarget>(2), cmd));  // inside: names needed
  o.slurm_args = "-p 'gpu";
  auto bad = buildSrunArgv(o, targets({"a"}), cmd);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::StartsWith("--slurm-args:"));
}

TEST_CASE("hosts: --slurm-args may not redo the daemons' step (nodes, tasks, stdin, output, MPI)", "[hosts][slurm]") {
  for (const char* words : {"-N 2", "-N2", "--nodes=3", "--nodes 3", "-p gpu -w node1", "--nodelist=a,b", "-x n3",
                            "-n 8", "-t 30 --ntasks=8", "--ntasks-per-node 4", "--mpi=pmix", "--cpu-bind=cores",
                            "-o out.txt", "--error=e", "-i none", "--pty", "--multi-prog"}) {
    INFO(words);
    auto checked = checkSlurmArgs(words);
    REQUIRE_FALSE(checked);
    CHECK(checked.error().code == Errc::usage);
    CHECK(checked.error().message.find("tlaunch sets srun's") != std::string::npos);
  }
  auto nodes = checkSlurmArgs("-p debug --nodes=3");
  REQUIRE_FALSE(nodes);
  CHECK(nodes.error().message.find("'--nodes=3'") != std::string::npos);
  CHECK(nodes.error().hint.find("-N/--nodes") != std::string::npos);
  for (const char* words : {"", "-p gpu -t 30", "-A nlp-proj --gres=gpu:8 --constraint=a100", "--exclusive",
                            "-c 16", "--time=1:00:00 --qos=high", "--nodes-are-not-an-option-x"}) {
    INFO(words);
    CHECK(checkSlurmArgs(words));
  }
  CHECK_FALSE(checkSlurmArgs("-p 'gpu"));  // unbalanced quote: refused as before
}

TEST_CASE("hosts: nodesInSrunErrors finds the nodes srun blames", "[hosts][slurm]") {
  const std::string text =
      "srun: error: gpu02: task 1: Exited with exit code 2\n"
      "srun: error: Unable to create step for job 12: Requested node configuration is not available\n"
      "srun: error: gpu07: tasks 2-3: Killed\n"
      "srun: error: gpu02: task 1: Exited with exit code 2\n";
  CHECK(nodesInSrunErrors(text) == W{"gpu02", "gpu07"});
  CHECK(nodesInSrunErrors("srun: fatal: Could not establish a configuration source\n").empty());
  // Recorded on the namespace cluster: tlaunchd missing on node3 only. The others' tasks were
  // ended by --kill-on-bad-exit: victims, named only when nobody else is to blame (scancel).
  const std::string missing =
      "slurmstepd-node3: error: execve(): /tmp/tlaunchd: No such file or directory\n"
      "slurmstepd-node1: error: *** STEP 9.0 ON node1 CANCELLED AT 2026-11-29T17:52:01 ***\n"
      "srun: error: node3: task 2: Exited with exit code 2\n"
      "srun: error: node1: task 0: Terminated\n"
      "srun: error: node2: task 1: Terminated\n"
      "srun: error: node4: task 3: Exited with exit code 143\n"
      "srun: Force Terminated StepId=9.0\n";
  CHECK(nodesInSrunErrors(missing) == W{"node3"});
  CHECK(nodeOfExecFailure("slurmstepd-node3: error: execve(): /tmp/tlaunchd: No such file or directory") == "node3");
  CHECK(nodeOfExecFailure("slurmstepd-node1: error: *** STEP 9.0 ON node1 CANCELLED ***").empty());
  CHECK(nodesInSrunErrors("srun: error: node1: task 0: Terminated\nsrun: error: node2: task 1: Terminated\n") ==
        W{"node1", "node2"});
}

TEST_CASE("hosts: explainSrunFailure: typical srun errors", "[hosts][slurm]") {
  const std::string path = "/opt/tlaunch/bin/tlaunchd";
  struct Case {
    int status;
    const char* text;
    const char* says;
  };
  const Case cases[] = {
      // Recorded on this machine (Slurm 22.05 client, no controller configured).
      {1,
       "srun: error: resolve_ctls_from_dns_srv: res_nsearch error: Unknown host\n"
       "srun: error: fetch_config: DNS SRV lookup failed\n"
       "srun: error: _establish_config_source: failed to fetch config\n"
       "srun: fatal: Could not establish a configuration source\n",
       "cannot reach the Slurm controller"},
      {1, "srun: error: Unable to allocate resources: Invalid partition name specified\n", "partition"},
      {1, "srun: error: Unable to allocate resources: Invalid account or account/partition combination specified\n",
       "account"},
      {1, "srun: error: Unable to create step for job 1234: Requested node configuration is not available\n",
       "must belong to it"},
      {1,
       "srun: error: Unable to confirm allocation for job 1234: Invalid job id specified\n"
       "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 1234\n",
       "allocation is gone"},
      {1, "srun: error: Unable to create step for job 1234: Job/step already completing or completed\n",
       "allocation is gone"},
      {143,
       "slurmstepd: error: *** STEP 1234.0 ON gpu01 CANCELLED AT 2024-05-01T10:00:00 ***\n"
       "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
       "srun: error: gpu01: task 0: Terminated\n"
       "srun: Force Terminated job step 1234.0\n",
       "cancelled"},
      {143, "slurmstepd: error: *** JOB 1234 ON gpu01 CANCELLED AT 2024-05-01T10:00:00 DUE TO TIME LIMIT ***\n",
       "time limit"},
      {2,
       "slurmstepd: error: execve(): /opt/tlaunch/bin/tlaunchd: No such file or directory\n"
       "srun: error: gpu02: task 1: Exited with exit code 2\n",
       "tlaunchd not found at /opt/tlaunch/bin/tlaunchd on gpu02: install tlaunch there or pass --daemon-path"},
      // Recorded on the namespace cluster: tlaunchd missing on node3, and srun ended the step before
      // it relayed slurmstepd's execve() line; --kill-on-bad-exit's "Force Terminated" follows.
      {2,
       "srun: error: node3: task 2: Exited with exit code 2\n"
       "srun: launch/slurm: _step_signal: Terminating StepId=6.0\n"
       "srun: error: node2: task 1: Terminated\n"
       "srun: error: node1: task 0: Terminated\n"
       "srun: Force Terminated StepId=6.0\n",
       "tlaunchd not found at /opt/tlaunch/bin/tlaunchd on node3: install tlaunch there or pass --daemon-path"},
      {13,
       "srun: error: node3: task 2: Exited with exit code 13\nsrun: Force Terminated StepId=6.0\n",
       "tlaunchd at /opt/tlaunch/bin/tlaunchd on node3 cannot be executed"},
      // A daemon that failed by itself, not a cancelled step: its node is the reason.
      {1,
       "slurmstepd-node1: error: *** STEP 7.0 ON node1 CANCELLED AT 2026-11-29T17:52:01 ***\n"
       "srun: error: node3: task 2: Exited with exit code 1\n"
       "srun: error: node1: task 0: Exited with exit code 143\n"
       "srun: Force Terminated StepId=7.0\n",
       "tlaunchd on node3 ended before connecting"},
      {1, "srun: unrecognized option '--bogus'\nTry \"srun --help\" for more information\n", "--slurm-args"},
      {1, "srun: error: gpu03: task 2: Exited with exit code 1\n", "tlaunchd on gpu03 ended"},
      {-9, "", "killed by signal 9"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK_THAT(explainSrunFailure(c.status, c.text, path), Catch::Contains(c.says));
  }
  // Once every daemon had connected, the step's end is not a failure to start.
  CHECK_THAT(explainSrunFailure(1, "srun: error: gpu03: task 2: Exited with exit code 1\n", path),
             Catch::StartsWith("tlaunchd on gpu03 ended before connecting to this frontend (srun exited with status 1)"));
  CHECK_THAT(explainSrunFailure(1, "srun: error: gpu03: task 2: Exited with exit code 1\n", path, true),
             Catch::StartsWith("tlaunchd on gpu03 ended during the job (srun exited with status 1)"));
  // A cancelled step whose daemons all ended on its SIGTERM (143) blames none of them.
  CHECK(!firstOwnTaskExit("srun: error: node1: task 0: Exited with exit code 143\n"
                          "srun: error: node2: tasks 1-2: Terminated\n"));
  const auto own = firstOwnTaskExit("srun: error: node9: tasks 4-7: Exited with exit code 69\n");
  REQUIRE(own);
  CHECK(own->node == "node9");
  CHECK(own->code == 69);
  CHECK(!firstOwnTaskExit("srun: error: node9: task 4: Exited with exit code 6x\n"));
  CHECK_THAT(explainSrunFailure(1, "", path, true),
             Catch::StartsWith("the daemons' srun step ended during the job (srun exited with status 1)"));
  CHECK_THAT(explainSrunFailure(1, "srun: error: Unable to allocate resources: Invalid partition name specified\n", path),
             Catch::Contains("srun said: srun: error: Unable to allocate resources: Invalid partition name specified"));
}

TEST_CASE("hosts: SlurmStarter: the step gets the secret, a failed step is explained", "[hosts][slurm]") {
  TempDir tmp;
  // A fake srun that behaves like one daemon per node: it records its argv and stdin, and
  // fails like slurmstepd when the daemon path does not exist.
  const std::string script =
      "#!/bin/sh\nout=\"$(dirname \"$0\")\"\nprintf '%s\\n' \"$@\" > \"$out/argv\"\n"
      "IFS= read -r s; printf '%s' \"$s\" > \"$out/stdin\"\n"
      "for last; do :; done\n"
      "if [ ! -e \"$last\" ]; then\n"
      "  echo \"slurmstepd: error: execve(): $last: No such file or directory\" >&2\n"
      "  echo 'srun: error: gpu02: task 1: Exited with exit code 2' >&2; exit 2\nfi\n"
      "exec sleep 60\n";
  const fs::path fake = writeFakeSrun(tmp, script);

  SlurmStarterOptions o;
  o.srun_program = fake.string();
  {
    SlurmStarter starter(o);
    REQUIRE(starter.start(targets({"gpu01", "gpu02"}), DaemonCommand{"/nonexistent/tlaunchd", {}}, "key"));
    const std::vector<StartFailure> failures = firstFailures(starter);
    REQUIRE(failures.size() == 1);
    CHECK(failures[0].node_index == 1);
    CHECK_THAT(failures[0].message, Catch::StartsWith("tlaunchd not found at /nonexistent/tlaunchd on gpu02"));
    std::ifstream in(tmp.path() / "stdin");
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(ss.str() == "key");
  }
  {
    SlurmStarter starter(o);
    REQUIRE(starter.start(targets({"gpu01"}), DaemonCommand{"/bin/sh", {}}, "key"));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(starter.poll().empty());  // still running
    const auto before = std::chrono::steady_clock::now();
    starter.stop(2000);
    CHECK(std::chrono::steady_clock::now() - before < std::chrono::seconds(3));
    CHECK(starter.poll().empty());
  }
}

// srun's words (Slurm 22.05, seen on the namespace cluster) for a job queued on a busy cluster
// and a step waiting for busy nodes, and for the end of that wait.
TEST_CASE("hosts: srunWaitOf reads srun's pending and granted lines", "[hosts][slurm]") {
  CHECK(srunWaitOf("srun: job 4 queued and waiting for resources") == SrunWait::waiting);
  CHECK(srunWaitOf("srun: Job 7 step creation temporarily disabled, retrying (Requested nodes are busy)") ==
        SrunWait::waiting);
  CHECK(srunWaitOf("srun: Job 7 step creation still disabled, retrying (Requested nodes are busy)") ==
        SrunWait::waiting);
  CHECK(srunWaitOf("srun: job 4 has been allocated resources") == SrunWait::granted);
  CHECK(srunWaitOf("srun: Step created for job 7") == SrunWait::granted);
  CHECK(srunWaitOf("srun: Step created for StepId=7.1") == SrunWait::granted);
  CHECK(srunWaitOf("srun: error: node2: task 1: Exited with exit code 2") == SrunWait::none);
  // A daemon's own line that quotes srun's words is not srun's.
  CHECK(srunWaitOf("tlaunchd: job 4 queued and waiting for resources") == SrunWait::none);
}

// While Slurm holds the step back the starter says so (the session's connect clock waits), and
// the user is told why nothing happens, once, then when it ends.
TEST_CASE("hosts: SlurmStarter: a queued job is waiting, said once, until srun says it got the nodes", "[hosts][slurm]") {
  TempDir tmp;
  const fs::path go = tmp.path() / "go";
  const std::string script =
      std::string("#!/bin/sh\necho 'srun: Requested partition configuration not available now' >&2\n") +
      "echo 'srun: job 12 queued and waiting for resources' >&2\n" +
      "echo 'srun: job 12 queued and waiting for resources' >&2\n"
      "while [ ! -e '" + go.string() + "' ]; do sleep 0.05; done\n"
      "echo 'srun: job 12 has been allocated resources' >&2\nexec sleep 60\n";
  const fs::path fake = writeFakeSrun(tmp, script);
  SlurmStarterOptions o;
  o.srun_program = fake.string();
  o.inside_allocation = false;
  SlurmStarter starter(o);
  REQUIRE(starter.start(targets({"", ""}), DaemonCommand{"/bin/sh", {}}, "key"));
  CHECK_FALSE(starter.waitingForResources());
  auto pollUntil = [&](auto done) {
    for (int i = 0; i < 500 && !done(); ++i) {
      CHECK(starter.poll().empty());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  pollUntil([&] { return starter.waitingForResources(); });
  CHECK(starter.waitingForResources());
  auto notes = starter.takeNotes();
  // srun's reason comes first: it may say the wait never ends (a partition smaller than -N).
  REQUIRE(notes.size() == 2);
  CHECK_FALSE(notes[0].verbose_only);
  CHECK(notes[0].text == "srun: Requested partition configuration not available now");
  CHECK_THAT(notes[1].text, Catch::StartsWith("srun: job 12 queued and waiting for resources (the daemons start once"));
  std::ofstream(go) << "";
  pollUntil([&] { return !starter.waitingForResources(); });
  CHECK_FALSE(starter.waitingForResources());
  notes = starter.takeNotes();
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0].text, Catch::StartsWith("srun: job 12 has been allocated resources (after "));
  starter.stop(1000);
}

// A step that waited for busy nodes, was created, then failed: the wait is history, not the
// cause ("Requested nodes are busy" would read as one). The step is over: nothing more starts.
TEST_CASE("hosts: SlurmStarter: a failure after a wait is explained by the failure", "[hosts][slurm]") {
  TempDir tmp;
  const std::string script =
      "#!/bin/sh\n"
      "echo 'srun: Job 7 step creation temporarily disabled, retrying (Requested nodes are busy)' >&2\n"
      "echo 'srun: Step created for job 7' >&2\n"
      "echo 'srun: error: gpu02: task 1: Exited with exit code 1' >&2; exit 1\n";
  const fs::path fake = writeFakeSrun(tmp, script);
  SlurmStarterOptions o;
  o.srun_program = fake.string();
  SlurmStarter starter(o);
  REQUIRE(starter.start(targets({"gpu01", "gpu02"}), DaemonCommand{"/bin/sh", {}}, "key"));
  const std::vector<StartFailure> failures = firstFailures(starter);
  REQUIRE(failures.size() == 1);
  CHECK(failures[0].starter_done);
  CHECK(failures[0].node_index == 1);
  CHECK_THAT(failures[0].message, Catch::StartsWith("tlaunchd on gpu02 ended before connecting to this frontend"));
  CHECK(failures[0].message.find("busy") == std::string::npos);
}
