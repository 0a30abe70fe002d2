#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "binding/topology/hwloc_topology.h"
#include "bootstrap/rank_env.h"
#include "binding/topology/topology_json.h"
#include "daemon/rank_launches.h"
#include "launcher/job_environment.h"
#include "launcher/plan/job_plan.h"
#include "launcher/plan/plan_render.h"
#include "launcher/plan/rank_env_builder.h"
#include "tlaunch/result.h"

using namespace tlaunch;

namespace {
// The inventory a daemon on this machine would send.
NodeInventory inventory(int free_port, int probe_port = 0) {
  auto topo = loadTopology("");
  REQUIRE(topo);
  NodeInventory inv;
  inv.free_port = free_port;
  inv.probe_port = probe_port;
  inv.topology = std::make_shared<const TopologySnapshot>(*topo);
  return inv;
}
std::string valueIn(const std::vector<std::string>& env, const std::string& k) { return envValue(env, k); }

// A node of two single-thread cores, as hwloc would report it.
NodeInventory twoCpuInventory() {
  auto topo = std::make_shared<TopologySnapshot>();
  topo->source = "test";
  topo->numa_nodes.push_back(NumaNode{0, 0, 0, {{0}, {1}}});
  NodeInventory inv;
  inv.free_port = 29500;
  inv.topology = topo;
  return inv;
}

// One node "n0" of `inv` on this host, `ranks` ranks there bound to nothing, started from the
// environment `env` with `exports` as -x.
Result<JobPlan> planOneNode(NodeInventory inv, int ranks, const std::map<std::string, std::string>& env,
                            const std::vector<std::string>& exports) {
  auto f = forwardEnvironment(env, exports);
  if (!f) return tl::unexpected(f.error());
  JobSpec spec;
  spec.argv = {"./program"};
  spec.procs_per_node = ranks;
  spec.bind = "none";
  PlanContext ctx;
  ctx.job_id = "j";
  ctx.cwd = "/";
  ctx.base_env = f->base_env;
  ctx.user_set = f->user_set;
  ctx.loopback_only = true;
  return makePlan(spec, {{0, "n0", std::move(inv), "127.0.0.1"}}, ctx);
}

Result<JobPlan> planOnTwoCpus(int ranks, const std::vector<std::string>& exports = {}) {
  return planOneNode(twoCpuInventory(), ranks, {{"PATH", "/usr/bin"}}, exports);
}
}  // namespace

TEST_CASE("rank env: torchrun's and Open MPI's variables, node-major numbering", "[env]") {
  JobSpec spec;
  spec.argv = {"python3", "train.py"};
  spec.procs_per_node = 2;
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 3; ++i)
    nodes.push_back({i, "n" + std::to_string(i), inventory(29500 + i, 40000 + i),
                     "10.0.0." + std::to_string(i + 1)});
  PlanContext ctx;
  ctx.job_id = "tl-abc";
  ctx.cwd = "/work";
  ctx.base_env = {"PATH=/usr/bin"};
  ctx.user_set = {"PATH"};
  ctx.loopback_only = true;
  auto plan = makePlan(spec, nodes, ctx);
  REQUIRE(plan);
  REQUIRE(plan->world_size == 6);
  const auto& r3 = plan->nodes[1].ranks[1];
  auto env = mergeEnv(plan->nodes[1].base_env, r3.env);
  CHECK(valueIn(env, "RANK") == "3");
  CHECK(valueIn(env, "LOCAL_RANK") == "1");
  CHECK(valueIn(env, "WORLD_SIZE") == "6");
  CHECK(valueIn(env, "LOCAL_WORLD_SIZE") == "2");
  CHECK(valueIn(env, "GROUP_RANK") == "1");
  CHECK(valueIn(env, "NODE_RANK") == "1");
  CHECK(valueIn(env, "ROLE_RANK") == "3");
  CHECK(valueIn(env, "ROLE_WORLD_SIZE") == "6");
  CHECK(valueIn(env, "ROLE_NAME") == "default");
  CHECK(valueIn(env, "MASTER_ADDR") == "10.0.0.1");  // rank 0's node, an IP
  CHECK(valueIn(env, "MASTER_PORT") == "29500");     // the port node 0 found free
  CHECK(valueIn(env, "TORCHELASTIC_RUN_ID") == "tl-abc");
  CHECK(valueIn(env, "TORCHELASTIC_RESTART_COUNT") == "0");
  CHECK(valueIn(env, "TORCHELASTIC_MAX_RESTARTS") == "0");
  CHECK(valueIn(env, "OMP_NUM_THREADS") == "1");
  CHECK(valueIn(env, "OMPI_COMM_WORLD_RANK") == "3");
  CHECK(valueIn(env, "OMPI_COMM_WORLD_SIZE") == "6");
  CHECK(valueIn(env, "OMPI_COMM_WORLD_LOCAL_RANK") == "1");
  CHECK(valueIn(env, "OMPI_COMM_WORLD_LOCAL_SIZE") == "2");
  CHECK(valueIn(env, "OMPI_COMM_WORLD_NODE_RANK") == "1");
  // Open MPI's node rank is the place on the node: rank 2, first on node 1, is 0 (not the node's 1).
  const auto& r2 = plan->nodes[1].ranks[0];
  CHECK(valueIn(mergeEnv(plan->nodes[1].base_env, r2.env), "OMPI_COMM_WORLD_NODE_RANK") == "0");
  CHECK(valueIn(env, "TLAUNCH_JOB_ID") == "tl-abc");
  CHECK(valueIn(env, "PATH") == "/usr/bin");
  // Every node is this host: every socket layer on lo, not each on its own pick.
  CHECK(valueIn(env, "NCCL_SOCKET_IFNAME") == "=lo");
  CHECK(valueIn(env, "NCCL_SOCKET_FAMILY") == "AF_INET");
  CHECK(valueIn(env, "GLOO_SOCKET_IFNAME") == "lo");
  CHECK(valueIn(env, "TP_SOCKET_IFNAME") == "lo");
  CHECK(renderNetwork(*plan).find("on lo") != std::string::npos);
  // Reachability ring: each node probes the next.
  REQUIRE(plan->nodes[2].reach.size() == 1);
  CHECK(plan->nodes[2].reach[0].addr == "10.0.0.1");
  CHECK(plan->nodes[2].reach[0].port == 40000);
  CHECK(plan->nodes[2].reach[0].node == "n0");
  spec.check_reachability = "all";
  auto all = makePlan(spec, nodes, ctx);
  REQUIRE(all);
  CHECK(all->nodes[0].reach.size() == 2);  // all-pairs: every other node
  // Deterministic.
  auto again = makePlan(spec, nodes, ctx);
  CHECK(planToJson(*again).dump() == planToJson(*plan).dump());
}

TEST_CASE("rank env: the user's OMP_NUM_THREADS wins, identity variables do not", "[env]") {
  auto plan = planOneNode(inventory(1234), 1, {{"OMP_NUM_THREADS", "8"}, {"RANK", "99"}, {"HOME", "/root"}},
                          {"FOO=bar baz", "NCCL_SOCKET_IFNAME=eth1"});
  REQUIRE(plan);
  auto env = mergeEnv(plan->nodes[0].base_env, plan->nodes[0].ranks[0].env);
  CHECK(valueIn(env, "OMP_NUM_THREADS") == "8");
  CHECK(valueIn(env, "RANK") == "0");  // an inherited RANK is not forwarded
  CHECK(valueIn(env, "FOO") == "bar baz");
  CHECK(valueIn(env, "HOME") == "/root");
  CHECK(valueIn(env, "NCCL_SOCKET_IFNAME") == "eth1");  // the user's choice over lo
  CHECK(valueIn(env, "GLOO_SOCKET_IFNAME") == "lo");
}

TEST_CASE("rank env: more ranks than the node's CPUs, Open MPI's ranks yield and PMIx says so", "[env]") {
  auto over = planOnTwoCpus(3);
  REQUIRE(over);
  CHECK(over->nodes[0].pmix.oversubscribed);  // the node's PMIx server sets PMIX_NODE_OVERSUBSCRIBED
  for (const auto& r : over->nodes[0].ranks)
    CHECK(valueIn(mergeEnv(over->nodes[0].base_env, r.env), "OMPI_MCA_mpi_yield_when_idle") == "1");
  auto fits = planOnTwoCpus(2);
  REQUIRE(fits);
  CHECK_FALSE(fits->nodes[0].pmix.oversubscribed);
  const auto& alone = fits->nodes[0];
  CHECK(valueIn(mergeEnv(alone.base_env, alone.ranks[0].env), "OMPI_MCA_mpi_yield_when_idle").empty());
  // The user's setting wins.
  auto busy = planOnTwoCpus(3, {"OMPI_MCA_mpi_yield_when_idle=0"});
  REQUIRE(busy);
  CHECK(valueIn(mergeEnv(busy->nodes[0].base_env, busy->nodes[0].ranks[2].env), "OMPI_MCA_mpi_yield_when_idle") == "0");
}

TEST_CASE("rank env: simulated nodes (--launcher local) share this host's CPUs: their ranks count together", "[env]") {
  auto twoNodes = [](bool simulated) {
    JobSpec spec;
    spec.argv = {"./program"};
    spec.procs_per_node = 2;  // 2 ranks on each 2-CPU node: 4 on this host's 2 CPUs when simulated
    spec.bind = "none";
    PlanContext ctx;
    ctx.job_id = "j";
    ctx.cwd = "/";
    ctx.base_env = {"PATH=/usr/bin"};
    ctx.loopback_only = true;
    ctx.simulated_nodes = simulated;
    return makePlan(spec, {{0, "local0", twoCpuInventory(), "127.0.0.1"}, {1, "local1", twoCpuInventory(), "127.0.0.1"}},
                    ctx);
  };
  auto simulated = twoNodes(true);
  REQUIRE(simulated);
  for (const auto& n : simulated->nodes) {
    CHECK(n.pmix.oversubscribed);
    CHECK(valueIn(mergeEnv(n.base_env, n.ranks[0].env), "OMPI_MCA_mpi_yield_when_idle") == "1");
  }
  auto real = twoNodes(false);  // two machines of 2 CPUs, 2 ranks each: nobody waits
  REQUIRE(real);
  for (const auto& n : real->nodes) CHECK_FALSE(n.pmix.oversubscribed);
}

TEST_CASE("rank env: CPU ranks without RDMA run Open MPI's ob1 unless the user chose a PML", "[env]") {
  auto plan = planOnTwoCpus(2);
  REQUIRE(plan);
  CHECK(valueIn(mergeEnv(plan->nodes[0].base_env, plan->nodes[0].ranks[1].env), "OMPI_MCA_pml") == "ob1");
  auto ucx = planOnTwoCpus(2, {"OMPI_MCA_pml=ucx"});
  REQUIRE(ucx);
  CHECK(valueIn(mergeEnv(ucx->nodes[0].base_env, ucx->nodes[0].ranks[1].env), "OMPI_MCA_pml") == "ucx");
}

TEST_CASE("env forwarding: -x VAR, -x VAR=VALUE, errors, and what stays local", "[env]") {
  std::map<std::string, std::string> env{{"A", "1"}, {"SLURM_PROCID", "5"}, {"OMPI_COMM_WORLD_RANK", "2"},
                                         {"OMPI_MCA_btl", "self,tcp"}, {"SSH_CONNECTION", "x"},
                                         {"SLURM_JOB_ID", "77"}, {"SLURM_ARRAY_TASK_ID", "3"},
                                         {"SLURM_NTASKS", "8"}, {"SLURM_STEP_ID", "0"}, {"SLURM_NODELIST", "n[1-2]"},
                                         {"NCCL_COMM_ID", "10.0.0.1:5000"}};
  auto f = forwardEnvironment(env, {"A", "B=2", "SLURM_PROCID"});
  REQUIRE(f);
  auto has = [&](const std::string& kv) {
    return std::find(f->base_env.begin(), f->base_env.end(), kv) != f->base_env.end();
  };
  CHECK(has("A=1"));
  CHECK(has("B=2"));
  CHECK(has("OMPI_MCA_btl=self,tcp"));  // MCA settings are the user's
  CHECK_FALSE(has("OMPI_COMM_WORLD_RANK=2"));
  CHECK_FALSE(has("SSH_CONNECTION=x"));
  CHECK(has("SLURM_PROCID=5"));  // explicitly exported: the user's choice
  // No Slurm variable passes unasked, the job's id neither: a program that sees SLURM_JOB_ID
  // takes itself for an srun task and reads SLURM_PROCID (DINOv2 does).
  CHECK_FALSE(has("SLURM_JOB_ID=77"));
  CHECK_FALSE(has("SLURM_ARRAY_TASK_ID=3"));
  CHECK_FALSE(has("SLURM_NTASKS=8"));
  CHECK_FALSE(has("SLURM_STEP_ID=0"));
  CHECK_FALSE(has("SLURM_NODELIST=n[1-2]"));
  CHECK_FALSE(has("NCCL_COMM_ID=10.0.0.1:5000"));  // another job's bootstrap root: NCCL would go there
  auto bad = forwardEnvironment(env, {"NOT_SET_ANYWHERE"});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == Errc::usage);
  CHECK_THAT(bad.error().message, Catch::Contains("NOT_SET_ANYWHERE is not set"));
}

TEST_CASE("env forwarding: an export given twice with another value is used as the later one, and said", "[env]") {
  const std::map<std::string, std::string> env{{"A", "1"}};
  auto f = forwardEnvironment(env, {"FOO=1", "A", "FOO=2", "A=1", "MASTER_PORT=1234", "MASTER_PORT=2345"});
  REQUIRE(f);
  CHECK(std::count(f->base_env.begin(), f->base_env.end(), "FOO=2") == 1);
  CHECK(std::count(f->base_env.begin(), f->base_env.end(), "MASTER_PORT=2345") == 1);
  // The same value twice (a bare -x A and -x A=1 here) is no conflict.
  CHECK(f->overridden ==
        std::vector<std::string>{"FOO=1 is replaced by FOO=2", "MASTER_PORT=1234 is replaced by MASTER_PORT=2345"});
  // A terminal escape in a value is quoted, not sent to the user's terminal.
  auto escaped = forwardEnvironment(env, {"BAR=\x1b]0;owned\x07", "BAR=2"});
  REQUIRE(escaped);
  CHECK(escaped->overridden == std::vector<std::string>{"BAR=\\x1b]0;owned\\x07 is replaced by BAR=2"});
}

TEST_CASE("env merge keeps one value per name, the override winning", "[env]") {
  auto m = mergeEnv({"A=1", "B=2"}, {"B=3", "C=4", "A=0"});
  REQUIRE(m == std::vector<std::string>{"A=0", "B=3", "C=4"});
}

TEST_CASE("exit status mapping: launcher failures stay clear of rank and signal codes", "[exit]") {
  CHECK(exitStatusFor(Errc::usage) == 64);
  CHECK(exitStatusFor(Errc::program_missing) == 127);
  CHECK(exitStatusFor(Errc::program_not_executable) == 126);
  CHECK(exitStatusFor(Errc::node_unreachable) == 69);
  CHECK(exitStatusFor(Errc::node_lost) == 69);
  CHECK(exitStatusFor(Errc::protocol) == 76);
  CHECK(exitStatusFor(Errc::preflight) == 78);
  for (auto c : {Errc::usage, Errc::node_lost, Errc::protocol, Errc::fabric, Errc::internal, Errc::io})
    CHECK(exitStatusFor(c) < 128);
}

// OMP_NUM_THREADS=1 for every rank took a rank bound to 8 cores (--cpus-per-rank, one rank per
// node) down to one thread; Python's prints sat in an 8 KiB buffer of the rank's stdout pipe.
TEST_CASE("rank env: OMP_NUM_THREADS follows the rank's own CPUs, PYTHONUNBUFFERED is set, the user's values win", "[env]") {
  RankEnvInput in;
  in.identity.local_world_size = 1;
  in.own_cpus = 4;
  auto env = buildRankEnv(in, {});
  CHECK(envLookup(env, "OMP_NUM_THREADS") == std::optional<std::string>("4"));
  CHECK(envLookup(env, "PYTHONUNBUFFERED") == std::optional<std::string>("1"));
  CHECK(envLookup(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING") == std::optional<std::string>("1"));
  CHECK(envLookup(env, "NCCL_ASYNC_ERROR_HANDLING") == std::optional<std::string>("1"));  // PyTorch < 2.2's name
  // No CPUs of its own: 1 when ranks share the node (as torchrun), unset for one rank per node.
  in.own_cpus = 0;
  in.identity.local_world_size = 2;
  CHECK(envLookup(buildRankEnv(in, {}), "OMP_NUM_THREADS") == std::optional<std::string>("1"));
  in.identity.local_world_size = 1;
  CHECK_FALSE(envLookup(buildRankEnv(in, {}), "OMP_NUM_THREADS"));
  in.own_cpus = 4;
  UserEnv user{{"OMP_NUM_THREADS", {"2", "-x"}}, {"PYTHONUNBUFFERED", {"", "environment"}}};
  env = buildRankEnv(in, user);
  CHECK_FALSE(envLookup(env, "OMP_NUM_THREADS"));  // the rank keeps the user's, from its base environment
  CHECK_FALSE(envLookup(env, "PYTHONUNBUFFERED"));
  // NCCL's async error handling under either name is one setting: the user's 0 is not met by
  // tlaunch's 1 under the other name.
  env = buildRankEnv(in, UserEnv{{"TORCH_NCCL_ASYNC_ERROR_HANDLING", {"0", "-x"}}});
  CHECK_FALSE(envLookup(env, "NCCL_ASYNC_ERROR_HANDLING"));
  CHECK_FALSE(envLookup(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING"));
}

// A rank's CPUs are its own only with core binding, applied, and no other rank on them: ranks
// that share a NUMA node's CPUs (--bind numa, more ranks than cores) each counted them all (6
// ranks on 2 CPUs got OMP_NUM_THREADS=2 each).
TEST_CASE("rank env: OMP_NUM_THREADS counts only CPUs no other rank of the node is bound to", "[env]") {
  auto topo = std::make_shared<TopologySnapshot>();
  topo->source = "live";
  topo->live = true;
  topo->numa_nodes.push_back(NumaNode{0, 0, 0, {{0}, {1}, {2}, {3}}});
  const auto omp = [&](int ranks, const std::string& bind, bool live) {
    auto snap = std::make_shared<TopologySnapshot>(*topo);
    snap->live = live;
    NodeInventory inv;
    inv.free_port = 29500;
    inv.topology = snap;
    JobSpec spec;
    spec.argv = {"./program"};
    spec.procs_per_node = ranks;
    spec.bind = bind;
    PlanContext ctx;
    ctx.job_id = "j";
    ctx.cwd = "/";
    ctx.loopback_only = true;
    auto plan = makePlan(spec, {{0, "n0", std::move(inv), "127.0.0.1"}}, ctx);
    REQUIRE(plan);
    std::set<std::string> values;
    for (const auto& r : plan->nodes[0].ranks) values.insert(envLookup(r.env, "OMP_NUM_THREADS").value_or("unset"));
    return values;
  };
  CHECK(omp(2, "core", true) == std::set<std::string>{"2"});       // two cores each, their own
  CHECK(omp(1, "core", true) == std::set<std::string>{"4"});
  CHECK(omp(6, "core", true) == std::set<std::string>{"1"});       // more ranks than cores: shared
  CHECK(omp(2, "numa", true) == std::set<std::string>{"1"});       // the whole NUMA node, shared
  CHECK(omp(2, "core", false) == std::set<std::string>{"1"});      // a recorded topology: not applied
  CHECK(omp(1, "none", true) == std::set<std::string>{"unset"});
}

// Core binding gives a rank whole cores with their hardware threads: OMP_NUM_THREADS counted the
// threads (28 per rank on a 14-core share of a 2-way SMT node), where PyTorch's own default and
// torchrun's advice are the physical cores.
TEST_CASE("rank env: OMP_NUM_THREADS counts cores, not their hardware threads", "[env]") {
  auto topo = std::make_shared<TopologySnapshot>();
  topo->source = "live";
  topo->live = true;
  topo->numa_nodes.push_back(NumaNode{0, 0, 0, {{0, 4}, {1, 5}, {2, 6}, {3, 7}}});  // 4 cores, 2 threads each
  NodeInventory inv;
  inv.free_port = 29500;
  inv.topology = topo;
  JobSpec spec;
  spec.argv = {"./program"};
  spec.procs_per_node = 2;
  PlanContext ctx;
  ctx.job_id = "j";
  ctx.cwd = "/";
  ctx.loopback_only = true;
  auto plan = makePlan(spec, {{0, "n0", std::move(inv), "127.0.0.1"}}, ctx);
  REQUIRE(plan);
  for (const auto& r : plan->nodes[0].ranks) {
    CHECK(r.cpus.size() == 4);  // bound to both threads of two cores
    CHECK(envLookup(r.env, "OMP_NUM_THREADS") == std::optional<std::string>("2"));
  }
}
