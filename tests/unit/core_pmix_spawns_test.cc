// PMIx_Spawn at the frontend: placement over the job's nodes (round robin, named hosts, nodes
// that have ended), the numbering of spawned procs after the job's ranks, and the wire codec
// with hostile input.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "bootstrap/pmix_spawn_wire.h"
#include "bootstrap/rank_env.h"
#include "daemon/rank_launches.h"
#include "launcher/pmix_spawns.h"
#include "tlaunch/node_launch.h"

using namespace tlaunch;

namespace {

PmixSpawnRequest request(int requester, std::vector<int> counts, std::vector<std::vector<std::string>> hosts = {}) {
  PmixSpawnRequest r;
  r.requester = requester;
  for (size_t i = 0; i < counts.size(); ++i) {
    PmixSpawnApp a;
    a.argv = {"/bin/app" + std::to_string(i), "--flag"};
    a.env = {"OMPI_PARENT_PORT=1.0:77"};
    a.maxprocs = counts[i];
    if (i < hosts.size()) a.hosts = hosts[i];
    r.apps.push_back(a);
  }
  return r;
}

const auto kAll = [](int) { return true; };

}  // namespace

TEST_CASE("pmix spawns: processes go round robin over the job's nodes and are numbered after its ranks") {
  PmixSpawns spawns("tlaunch.j1", 8, {"n0", "n1", "n2", "n3"});
  auto s = spawns.place(request(5, {6}), kAll);
  REQUIRE(s);
  CHECK(s->id == 1);
  CHECK(s->nspace == "tlaunch.j1.spawn1");
  CHECK(s->base == 8);
  CHECK(s->parent_nspace == "tlaunch.j1");
  CHECK(s->parent_rank == 5);
  CHECK(s->nodes == std::vector<int>{0, 1, 2, 3});
  CHECK(s->ranks_by_node == std::vector<std::vector<int>>{{0, 4}, {1, 5}, {2}, {3}});
  CHECK(spawns.nodeOf(8) == 0);
  CHECK(spawns.nodeOf(13) == 1);
  CHECK(spawns.nodeOf(14) == -1);  // beyond the spawned namespace
  CHECK(spawns.nodeOf(3) == -1);   // a job rank: the plan's, not ours
  CHECK(spawns.label(12) == "spawn1:4");
  CHECK(spawns.describe(12) == "rank 4 of spawned namespace tlaunch.j1.spawn1");
  CHECK(spawns.describe(2) == "rank 2");

  // A second spawn, by a spawned process: numbered after the first, its parent is that namespace.
  auto t = spawns.place(request(9, {1, 2}, {{"n2"}, {"n3", "n1"}}), kAll);
  REQUIRE(t);
  CHECK(t->base == 14);
  CHECK(t->parent_nspace == "tlaunch.j1.spawn1");
  CHECK(t->parent_rank == 1);
  CHECK(t->app_of_rank == std::vector<int>{0, 1, 1});
  CHECK(t->nodes == std::vector<int>{1, 2, 3});  // the job's order
  CHECK(t->ranks_by_node == std::vector<std::vector<int>>{{2}, {0}, {1}});
  CHECK(spawns.nodeOf(14) == 2);
  CHECK(spawns.nodeOf(15) == 3);
  CHECK(spawns.nodeOf(16) == 1);
  CHECK(t->apps[1].hosts.empty());  // placed: the hosts are not sent on
}

TEST_CASE("pmix spawns: the last exit of a spawn's processes is said once, so nodes can forget it") {
  PmixSpawns spawns("tlaunch.j1", 4, {"n0", "n1"});
  auto a = spawns.place(request(0, {3}), kAll);  // numbers 4..6
  auto b = spawns.place(request(1, {1}), kAll);  // number 7
  REQUIRE(a);
  REQUIRE(b);
  CHECK(spawns.running() == 4);
  CHECK_FALSE(spawns.exited(2));  // a job rank
  CHECK_FALSE(spawns.exited(5));
  CHECK_FALSE(spawns.exited(5));  // said twice: still one exit
  CHECK(spawns.running() == 3);
  CHECK_FALSE(spawns.exited(4));
  CHECK(spawns.exited(7) == 2);  // b's only process
  CHECK(spawns.exited(6) == 1);  // a's last one
  CHECK_FALSE(spawns.exited(6));  // once
  CHECK(spawns.running() == 0);
  CHECK(spawns.nodeOf(6) == 0);  // still found: its exit's output and messages name it
  CHECK(spawns.describe(6) == "rank 2 of spawned namespace tlaunch.j1.spawn1");
  CHECK(spawns.find(1)->apps.empty());  // its argv and environment are not kept

  // A spawn that never started has nothing to end.
  auto c = spawns.place(request(0, {1}), kAll);  // number 8
  REQUIRE(c);
  spawns.forget(c->id);
  CHECK(spawns.running() == 0);
  CHECK_FALSE(spawns.exited(8));
  CHECK(spawns.nodeOf(9) == -1);
}

TEST_CASE("pmix spawns: hosts outside the job, ended nodes and unknown callers are refused") {
  PmixSpawns spawns("tlaunch.j1", 4, {"n0", "n1"});
  auto outside = spawns.place(request(0, {1}, {{"elsewhere"}}), kAll);
  REQUIRE_FALSE(outside);
  CHECK(outside.error().message.find("host 'elsewhere' is not a node of this job") != std::string::npos);
  auto ended = spawns.place(request(0, {1}, {{"n1"}}), [](int n) { return n != 1; });
  REQUIRE_FALSE(ended);
  CHECK(ended.error().message.find("node n1 runs no ranks") != std::string::npos);
  CHECK_FALSE(spawns.place(request(0, {1}), [](int) { return false; }));
  CHECK_FALSE(spawns.place(request(4, {1}), kAll));  // no such process
  CHECK_FALSE(spawns.place(request(0, {kMaxSpawnProcs + 1}), kAll));
  // MPI_Comm_spawn(maxprocs=65536) on two nodes: 32,768 processes forked on each. Refused past
  // what -p allows a node, naming the node; within it, placed.
  auto many = spawns.place(request(0, {kMaxSpawnProcs}), kAll);
  REQUIRE_FALSE(many);
  CHECK(many.error().message.find("would start 32768 on node n0, more than the 4096 a node runs") != std::string::npos);
  auto most = spawns.place(request(0, {8192}), kAll);
  REQUIRE(most);
  CHECK(most->base == 4);
  spawns.forget(most->id);
  // Only nodes still running ranks get processes.
  auto s = spawns.place(request(0, {3}), [](int n) { return n == 1; });
  REQUIRE(s);
  CHECK(s->nodes == std::vector<int>{1});
  CHECK(s->base == 4 + 8192);  // the refused ones took no numbers
  spawns.forget(s->id);
  CHECK(spawns.nodeOf(4) == -1);
}

TEST_CASE("pmix spawn wire: request and placement round-trip, malformed ones are refused") {
  auto req = request(3, {2, 1}, {{"n1"}});
  req.hosts = {"n0"};
  auto back = spawnRequestFromJson(spawnRequestToJson(7, req));
  REQUIRE(back);
  CHECK(back->requester == 3);
  CHECK(back->apps.size() == 2);
  CHECK(back->apps[0].argv == req.apps[0].argv);
  CHECK(back->apps[0].env == req.apps[0].env);
  CHECK(back->apps[0].hosts == std::vector<std::string>{"n1"});
  CHECK(back->hosts == std::vector<std::string>{"n0"});

  PmixSpawns spawns("tlaunch.j1", 4, {"n0", "n1"});
  auto placed = spawns.place(req, kAll);
  REQUIRE(placed);
  auto job = spawnedJobFromJson(spawnedJobToJson(*placed), 2);
  REQUIRE(job);
  CHECK(job->nspace == placed->nspace);
  CHECK(job->base == placed->base);
  CHECK(job->nodes == placed->nodes);
  CHECK(job->ranks_by_node == placed->ranks_by_node);
  CHECK(job->app_of_rank == placed->app_of_rank);

  auto broken = [&](auto edit) {
    Json j = spawnedJobToJson(*placed);
    edit(j);
    return !spawnedJobFromJson(j, 2);
  };
  CHECK(broken([](Json& j) { j["nodes"] = {0, 5}; }));                 // not a node of the job
  CHECK(broken([](Json& j) { j["ranks"][0] = {0, 0}; }));              // a rank twice
  CHECK(broken([](Json& j) { j["ranks"][0] = Json::array(); }));      // a node without ranks
  CHECK(broken([](Json& j) { j["app_of"][0] = 9; }));                  // no such app
  CHECK(broken([](Json& j) { j["base"] = 0; }));                       // over the job's ranks
  CHECK(broken([](Json& j) { j["apps"] = Json::array(); }));           // nothing to run
  CHECK(broken([](Json& j) { j["nspace"] = 42; }));                    // wrong type
  CHECK(broken([](Json& j) { j.erase("ranks"); }));                    // missing
  Json many = spawnRequestToJson(1, request(0, {1}));
  many["apps"] = Json::array();
  for (int i = 0; i <= kMaxSpawnApps; ++i) many["apps"].push_back({{"argv", {"x"}}, {"n", 1}});
  CHECK_FALSE(spawnRequestFromJson(many));
  Json zero = spawnRequestToJson(1, request(0, {1}));
  zero["apps"][0]["n"] = 0;
  CHECK_FALSE(spawnRequestFromJson(zero));
}

TEST_CASE("pmix spawn: spawned processes get the job's variables, not a rank's identity") {
  const std::vector<std::string> one_rank_job = {
      "RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=1", "MASTER_ADDR=10.1.0.1", "TLAUNCH_HCA=mlx5_0:1",
      "TLAUNCH_GPU_BUSID=0000:07:00.0", "OMPI_MCA_btl_tcp_if_include=10.1.0.0/16", "CUDA_VISIBLE_DEVICES=0,1",
      "UCX_NET_DEVICES=mlx5_0:1"};
  CHECK(withoutRankIdentity(one_rank_job) == std::vector<std::string>{"OMPI_MCA_btl_tcp_if_include=10.1.0.0/16",
                                                                      "CUDA_VISIBLE_DEVICES=0,1",
                                                                      "UCX_NET_DEVICES=mlx5_0:1"});
}

// Without a cgroup the daemon's watcher finds the job's processes by TLAUNCH_JOB_ID and
// TLAUNCH_NODE_RANK in their environment: a spawned process had neither (they were taken out
// with the rank's identity), so what it detached outlived a daemon killed with -9.
TEST_CASE("pmix spawn: spawned processes carry the job's marks") {
  NodeLaunch launch;
  launch.job_id = "tl-marks";
  launch.node_name = "n1";
  launch.cwd = "/";
  launch.pmix.this_node = 1;
  RankSpec r;
  r.rank = 2;
  r.env = {"RANK=2", "TLAUNCH_JOB_ID=tl-marks", "TLAUNCH_NODE_RANK=1"};
  launch.ranks.push_back(r);
  SpawnedJob job;
  job.id = 1;
  job.base = 4;
  job.nodes = {1};
  job.ranks_by_node = {{0}};
  PmixSpawnApp app;
  app.argv = {"/bin/true"};
  app.maxprocs = 1;
  job.apps = {app};
  job.app_of_rank = {0};
  auto launches = buildSpawnedLaunches(job, launch, withoutRankIdentity(r.env));
  REQUIRE(launches);
  REQUIRE(launches->size() == 1);
  const auto& env = launches->front().env;
  CHECK(envLookup(env, "TLAUNCH_JOB_ID") == std::optional<std::string>("tl-marks"));
  CHECK(envLookup(env, "TLAUNCH_NODE_RANK") == std::optional<std::string>("1"));
  CHECK_FALSE(envLookup(env, "RANK"));
  // Its place in the spawned job's MPI_COMM_WORLD, as under mpirun (it had none).
  CHECK(envLookup(env, "OMPI_COMM_WORLD_RANK") == std::optional<std::string>("0"));
  CHECK(envLookup(env, "OMPI_COMM_WORLD_SIZE") == std::optional<std::string>("1"));
  CHECK(envLookup(env, "OMPI_COMM_WORLD_LOCAL_SIZE") == std::optional<std::string>("1"));
}
