// --max-restarts: which failures restart the job, which nodes are dropped (launcher/
// restart_policy.h), the spare node a dropped one is replaced by, and --nnodes MIN:MAX running
// on fewer nodes (launcher/launcher_choice.h) — the decisions, without running a job.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "bootstrap/rank_env.h"
#include "cli_test_support.h"
#include "launcher/launcher_choice.h"
#include "launcher/restart_policy.h"

using namespace tlaunch;

namespace {

AttemptEnd rankFailedOn(const std::string& node) {
  AttemptEnd e;
  e.restartable = true;
  e.failed_node = node;
  e.summary = "rank 1 on node " + node + " exited with status 1";
  return e;
}

AttemptEnd lost(const std::string& node) {
  AttemptEnd e = rankFailedOn(node);
  e.node_lost = true;
  return e;
}

std::vector<std::string> chosenNodes(const JobSpec& spec) {
  auto c = chooseLauncher(spec, {}, /*resolve_only=*/true);
  REQUIRE(c);
  std::vector<std::string> out;
  for (const auto& n : c->nodes) out.push_back(n.name);
  return out;
}

}  // namespace

TEST_CASE("restart policy: a failed rank restarts the job but not when tlaunch was interrupted meanwhile") {
  RestartPolicy p(3);
  AttemptEnd e = rankFailedOn("n2");
  e.interrupted = true;  // Ctrl-C while the failed attempt was ending
  auto d = p.afterAttempt(e);
  CHECK_FALSE(d.restart);
  CHECK(d.reason == "not restarted: tlaunch was interrupted");
  CHECK(p.afterAttempt(rankFailedOn("n2")).restart);
}

TEST_CASE("restarts: a failed rank restarts until --max-restarts is spent, success and other failures never") {
  RestartPolicy p(2);
  AttemptEnd ok;
  ok.success = true;
  CHECK_FALSE(p.afterAttempt(ok).restart);
  AttemptEnd interrupted;  // SIGINT, --time-limit, a preflight refusal: not a rank's failure
  interrupted.summary = "tlaunch was interrupted by SIGINT";
  auto d = p.afterAttempt(interrupted);
  CHECK_FALSE(d.restart);
  CHECK(d.reason.find("only a failed rank or a lost node") != std::string::npos);
  CHECK(p.afterAttempt(rankFailedOn("n1")).restart);
  CHECK(p.afterAttempt(rankFailedOn("n2")).restart);
  CHECK(p.restarts() == 2);
  d = p.afterAttempt(rankFailedOn("n3"));
  CHECK_FALSE(d.restart);
  CHECK(d.reason == "no restart left (--max-restarts 2)");
  CHECK(p.dropped().empty());  // failures on different nodes drop none
}

TEST_CASE("restarts: --max-restarts 0 never restarts and says nothing more") {
  RestartPolicy p(0);
  auto d = p.afterAttempt(rankFailedOn("n1"));
  CHECK_FALSE(d.restart);
  CHECK(d.reason.empty());
}

TEST_CASE("restarts: a lost node is dropped at once, a node whose rank failed twice in a row then") {
  RestartPolicy p(10);
  auto d = p.afterAttempt(lost("n3"));
  CHECK(d.restart);
  CHECK(d.drop == std::vector<std::string>{"n3"});
  CHECK(d.reason == "its daemon was lost");
  d = p.afterAttempt(rankFailedOn("n1"));
  CHECK(d.restart);
  CHECK(d.drop.empty());  // once is bad luck
  d = p.afterAttempt(rankFailedOn("n2"));
  CHECK(d.drop.empty());  // another node: the count starts again
  d = p.afterAttempt(rankFailedOn("n2"));
  CHECK(d.drop == std::vector<std::string>{"n2"});
  CHECK(d.reason == "a rank failed there in two attempts in a row");
  d = p.afterAttempt(rankFailedOn("n2"));  // already dropped (a stale name): nothing more to drop
  CHECK(d.drop.empty());
  CHECK(p.dropped() == std::vector<std::string>{"n3", "n2"});
  AttemptEnd unknown;  // srun chose the nodes and one of them failed unnamed
  unknown.restartable = true;
  CHECK(p.afterAttempt(unknown).drop.empty());
}

TEST_CASE("restarts: every node that could not be started is dropped at once, each only once") {
  RestartPolicy p(10);
  AttemptEnd e = lost("n2");
  e.lost_nodes = {"n2", "n5", "n2"};
  auto d = p.afterAttempt(e);
  CHECK(d.restart);
  CHECK(d.drop == std::vector<std::string>{"n2", "n5"});
  CHECK(d.reason == "their daemons were lost");
  e.lost_nodes = {"n5", "n7"};  // n5 is gone already
  d = p.afterAttempt(e);
  CHECK(d.drop == std::vector<std::string>{"n7"});
  e.lost_nodes = {"n8"};
  e.not_started = true;
  d = p.afterAttempt(e);
  CHECK(d.drop == std::vector<std::string>{"n8"});
  CHECK(d.reason == "it could not be started");
  CHECK(p.dropped() == std::vector<std::string>{"n2", "n5", "n7", "n8"});
  CHECK(describeRestart(1, 3, "could not start tlaunchd on 2 of 4 nodes", {"n2", "n5"}, "they could not be started",
                        {"n1", "n2", "n3", "n5"}, {"n1", "n3", "n6", "n7"}) ==
        "restart 1 of 3 after could not start tlaunchd on 2 of 4 nodes; n2, n5 dropped (they could not be started); "
        "n6, n7 added");
}

TEST_CASE("restarts: the message names the cause, the dropped node and the spare that replaces it") {
  CHECK(describeRestart(1, 3, "rank 3 on node n2 exited with status 1", {"n2"}, "its daemon was lost", {"n1", "n2"},
                        {"n1", "n3"}) ==
        "restart 1 of 3 after rank 3 on node n2 exited with status 1; n2 dropped (its daemon was lost); n3 added");
  CHECK(describeRestart(2, 3, "lost node n2", {"n2"}, "its daemon was lost", {"n1", "n2"}, {"n1"}) ==
        "restart 2 of 3 after lost node n2; n2 dropped (its daemon was lost); no spare node: 1 node(s) from now on");
  CHECK(describeRestart(1, 1, "rank 0 on node n1 exited with status 2", {}, "", {"n1"}, {"n1"}) ==
        "restart 1 of 1 after rank 0 on node n1 exited with status 2");
}

TEST_CASE("restarts: a dropped node is replaced by the next given node, the spare") {
  JobSpec spec;
  spec.argv = {"true"};
  spec.hosts = "n1,n2,n3,n4,n5";
  spec.launcher = LauncherKind::ssh;
  spec.nodes = 3;
  spec.procs_per_node = 1;
  CHECK(chosenNodes(spec) == std::vector<std::string>{"n1", "n2", "n3"});
  spec.dropped_nodes = {"n2"};
  CHECK(chosenNodes(spec) == std::vector<std::string>{"n1", "n3", "n4"});
  spec.dropped_nodes = {"n2", "n3", "n4"};
  auto c = chooseLauncher(spec, {}, true);
  CHECK_FALSE(c);  // two left where -N 3 asks for three: no restart, and the reason is the -N message
}

TEST_CASE("restarts: --nnodes MIN:MAX runs on MAX, keeps the rest as spares, and on fewer down to MIN") {
  auto parsed = test::parse({"--nnodes", "2:3", "--hosts", "n1,n2,n3,n4", "-p", "1", "--", "true"});
  REQUIRE_FALSE(parsed.exit_now);
  JobSpec spec = parsed.spec;
  CHECK(spec.min_nodes == 2);
  CHECK(spec.nodes == 3);
  CHECK(chosenNodes(spec) == std::vector<std::string>{"n1", "n2", "n3"});
  spec.dropped_nodes = {"n1"};
  CHECK(chosenNodes(spec) == std::vector<std::string>{"n2", "n3", "n4"});
  spec.dropped_nodes = {"n1", "n3"};
  CHECK(chosenNodes(spec) == std::vector<std::string>{"n2", "n4"});  // fewer than MAX, at least MIN
  spec.dropped_nodes = {"n1", "n3", "n4"};
  auto short_of_min = chooseLauncher(spec, {}, true);  // one node left, MIN is 2
  REQUIRE_FALSE(short_of_min);
  CHECK_THAT(short_of_min.error().message,
             Catch::StartsWith("--nnodes 2:3 needs at least 2 nodes, but only 1 are available (n2)"));
}

TEST_CASE("restart policy: a node kept after a drop for failed ranks counts its failures anew") {
  RestartPolicy p(5);
  CHECK_FALSE(p.afterAttempt(rankFailedOn("n1")).drop_optional);
  auto second = p.afterAttempt(rankFailedOn("n1"));
  CHECK(second.drop == std::vector<std::string>{"n1"});
  CHECK(second.drop_optional);  // it may be kept where nothing can take its place
  p.keep(second.drop);
  CHECK(p.dropped().empty());
  CHECK(p.afterAttempt(rankFailedOn("n1")).drop.empty());  // one failure since it was kept
  CHECK(p.afterAttempt(rankFailedOn("n1")).drop == std::vector<std::string>{"n1"});
  CHECK_FALSE(p.afterAttempt(lost("n2")).drop_optional);  // a lost node is not kept
}

TEST_CASE("restarts: counted simulated nodes have no spare, named ones may") {
  JobSpec spec;
  spec.argv = {"true"};
  spec.launcher = LauncherKind::local;
  spec.nodes = 2;
  spec.dropped_nodes = {"local1"};
  auto none_left = chooseLauncher(spec, {}, true);  // -N 2 with local0 alone: no local2 made up
  REQUIRE_FALSE(none_left);
  CHECK_THAT(none_left.error().message,
             Catch::StartsWith("-N 2 asks for 2 nodes, but only 1 are available (local0)"));
  spec.min_nodes = 1;  // --nnodes 1:2: the job goes on with the rest, its ranks with it
  CHECK(chosenNodes(spec) == std::vector<std::string>{"local0"});
  spec.procs_per_node = 2;
  auto shrunk = chooseLauncher(spec, {}, true);
  REQUIRE(shrunk);
  CHECK(shrunk->layout.nodes == 1);
  spec.dropped_nodes = {"local0", "local1"};
  CHECK_FALSE(chooseLauncher(spec, {}, true));
  spec.min_nodes = 0;
  spec.procs_per_node = 0;
  spec.hosts = "local0,local1,local2";  // named: local2 is a spare
  spec.dropped_nodes = {"local1"};
  CHECK(chosenNodes(spec) == std::vector<std::string>{"local0", "local2"});
}

TEST_CASE("restarts: --max-restarts is bounded, refused with --keep-going, and counts reach the ranks") {
  CHECK(test::parse({"--max-restarts", "3", "--", "true"}).spec.max_restarts == 3);
  CHECK(test::parse({"--max_restarts", "2", "--", "true"}).spec.max_restarts == 2);  // torchrun's spelling
  for (const auto& args : {std::vector<std::string>{"--max-restarts", "1001", "--", "true"},
                    std::vector<std::string>{"--max-restarts", "-1", "--", "true"},
                    std::vector<std::string>{"--max-restarts", "1", "--keep-going", "--", "true"}}) {
    auto r = test::parse(args);
    CHECK((r.exit_now && *r.exit_now == 64));
  }
  JobIdentity j{"tl-abc-r2", "10.0.0.1", 29500, "tl-abc", 2, 3};
  const EnvList env = rankIdentityEnv(RankIdentity{}, j);
  auto value = [&](const std::string& k) {
    for (const auto& [name, v] : env)
      if (name == k) return v;
    return std::string("<unset>");
  };
  CHECK(value("TORCHELASTIC_RUN_ID") == "tl-abc");  // the same in every attempt, as torchrun's
  CHECK(value("TORCHELASTIC_RESTART_COUNT") == "2");
  CHECK(value("TORCHELASTIC_MAX_RESTARTS") == "3");
  CHECK(value("TLAUNCH_JOB_ID") == "tl-abc-r2");
}

TEST_CASE("launcher choice: a heterogeneous batch job runs on its first component, and says so") {
  const std::map<std::string, std::string> batch{{"SLURM_JOB_ID", "3"},
                                                 {"SLURM_HET_SIZE", "2"},
                                                 {"SLURM_JOB_NODELIST", "node1"},
                                                 {"SLURM_JOB_NODELIST_HET_GROUP_0", "node1"},
                                                 {"SLURM_JOB_NODELIST_HET_GROUP_1", "node2"}};
  JobSpec spec;
  spec.procs_per_node = 1;
  auto c = chooseLauncher(spec, batch, /*resolve_only=*/true);
  REQUIRE(c);
  REQUIRE(c->nodes.size() == 1);
  CHECK(c->nodes[0].name == "node1");
  REQUIRE(c->notes.size() == 1);
  CHECK_THAT(c->notes[0], Catch::Contains("heterogeneous (node1 + node2)") && Catch::Contains("--hosts"));
  // One component: nothing to say.
  auto plain = chooseLauncher(spec, {{"SLURM_JOB_ID", "4"}, {"SLURM_JOB_NODELIST", "node1"}}, true);
  REQUIRE(plain);
  CHECK(plain->notes.empty());
}

// runJob reads --hostfile once: a restart read `--hostfile <(...)`'s pipe again, found it empty
// and gave up ("names no hosts"), and an edited file changed the node set mid-job.
TEST_CASE("restarts: every attempt chooses from the hostfile as it was read once") {
  auto parsed = test::parse({"--hostfile", "/nonexistent/hosts", "-p", "1", "--", "true"});
  REQUIRE_FALSE(parsed.exit_now);
  JobSpec spec = parsed.spec;
  CHECK_FALSE(chooseLauncher(spec, {}, true));  // not read yet: the file is missing
  spec.hostfile_content = "h1 slots=2\nh2 slots=2\n";
  CHECK(chosenNodes(spec) == std::vector<std::string>{"h1", "h2"});
  spec.dropped_nodes = {"h1"};
  CHECK(chosenNodes(spec) == std::vector<std::string>{"h2"});
}
