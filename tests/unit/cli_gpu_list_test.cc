// --include/--exclude GPU lists (issue 12): a node's ranks drive exactly the chosen GPUs, and
// the binding (nearest HCA, NUMA node, cores) follows them. Planned from a recorded JUWELS
// Booster node: 4 A100s, each in its own NUMA node, under a PCIe switch with its own HCA.
#include <catch2/catch.hpp>

#include <algorithm>

#include "binding/topology/hwloc_topology.h"
#include "binding/topology/topology_json.h"
#include "bootstrap/rank_env.h"
#include "launcher/job_setup.h"
#include "launcher/launcher_choice.h"
#include "launcher/slurm_starter.h"
#include "launcher/plan/job_plan.h"
#include "launcher/plan/plan_render.h"
#include "topology_test_fixtures.h"

using namespace tlaunch;

namespace {

const char* kJuwels = "/topologies/jsc-juwels-booster-jwb0004_2xEPYC7402_4xA100_4xmlx5-HDR_pci-only-gpus_hwloc2.2.xml";

std::vector<NodeReport> gpuNodes(int count) {
  auto topo = loadTopology(std::string(TLAUNCH_FIXTURES_DIR) + kJuwels);
  REQUIRE(topo);
  std::vector<NodeReport> nodes;
  for (int i = 0; i < count; ++i) {
    NodeInventory inv;
    inv.topology = std::make_shared<const TopologySnapshot>(*topo);
    inv.free_port = 29500;
    nodes.push_back({i, "g" + std::to_string(i + 1), std::move(inv), "127.0.0.1"});
  }
  return nodes;
}

JobSpec gpuJob(int gpus = 0) {
  JobSpec s;
  s.argv = {"true"};
  s.gpus_per_node = gpus;
  s.preflight = PreflightMode::off;
  return s;
}

// A --dry-run --offline job of the local launcher on `hosts`: nothing is started.
JobSpec offlineOn(std::string hosts) {
  JobSpec s;
  s.argv = {"true"};
  s.hosts = std::move(hosts);
  s.launcher = LauncherKind::local;
  s.dry_run = s.offline = true;
  return s;
}

PlanContext context(std::vector<GpuList> lists) {
  PlanContext c;
  c.job_id = "tl-test";
  c.cwd = "/";
  c.loopback_only = true;
  c.node_gpus = std::move(lists);
  return c;
}

// The manifest's column `key` for the ranks in order.
std::vector<std::string> column(const JobPlan& plan, const char* key) {
  std::vector<std::string> out;
  const Json all = planToJson(plan);
  for (const auto& row : all["ranks"]) out.push_back(row[key].is_string() ? row[key].get<std::string>() : row[key].dump());
  return out;
}

using S = std::vector<std::string>;

}  // namespace

TEST_CASE("lists leaving the nodes different GPU counts run one rank per chosen GPU on each, or an explicit count") {
  // DeepSpeed's --include g1:1,3@g2: two ranks on g1's GPUs 1 and 3, four on all of g2's.
  auto plan = makePlan(gpuJob(), gpuNodes(2), context({{{1, 3}, {}}, {}}));
  REQUIRE(plan);
  CHECK(plan->world_size == 6);
  CHECK(plan->ranks_source == "one per GPU (2, 4)");
  CHECK(column(*plan, "rank") == S{"0", "1", "2", "3", "4", "5"});
  CHECK(column(*plan, "node") == S{"g1", "g1", "g2", "g2", "g2", "g2"});
  CHECK(column(*plan, "local_rank") == S{"0", "1", "0", "1", "2", "3"});
  CHECK(column(*plan, "gpu_busid") ==
        S{"0000:44:00.0", "0000:c4:00.0", "0000:03:00.0", "0000:44:00.0", "0000:84:00.0", "0000:c4:00.0"});
  REQUIRE(plan->nodes.size() == 2);
  CHECK(std::find(plan->nodes[0].ranks[0].env.begin(), plan->nodes[0].ranks[0].env.end(), "LOCAL_WORLD_SIZE=2") !=
        plan->nodes[0].ranks[0].env.end());
  CHECK(std::find(plan->nodes[1].ranks[0].env.begin(), plan->nodes[1].ranks[0].env.end(), "LOCAL_WORLD_SIZE=4") !=
        plan->nodes[1].ranks[0].env.end());
  CHECK(std::find(plan->nodes[1].ranks[3].env.begin(), plan->nodes[1].ranks[3].env.end(), "RANK=5") !=
        plan->nodes[1].ranks[3].env.end());
  CHECK(std::find(plan->nodes[1].ranks[3].env.begin(), plan->nodes[1].ranks[3].env.end(), "WORLD_SIZE=6") !=
        plan->nodes[1].ranks[3].env.end());
  auto two = makePlan(gpuJob(2), gpuNodes(2), context({{{1, 3}, {}}, {}}));  // -g 2: g2 uses GPUs 0 and 1
  REQUIRE(two);
  CHECK(column(*two, "gpu_busid") == S{"0000:44:00.0", "0000:c4:00.0", "0000:03:00.0", "0000:44:00.0"});
}

TEST_CASE("the README's --include 'n1:0,1@n2': a GPU list beside a node without one leaves each count to its GPUs") {
  JobSpec s;
  s.argv = {"true"};
  s.launcher = LauncherKind::local;
  s.hosts = "n1,n2";
  s.include = "n1:0,1@n2";
  auto mixed = chooseLauncher(s, {}, true);  // was refused: "n1 has 2, n2 has none given"
  REQUIRE(mixed);
  CHECK(mixed->layout.ranks_per_node == 0);  // one per chosen GPU, from the inventories (2 and all of n2's)
  CHECK(mixed->layout.node_ranks.empty());
  s.include = "n1:0,1@n2:2,3,4";  // a list on each node: each node's list
  auto both = chooseLauncher(s, {}, true);
  REQUIRE(both);
  CHECK(both->layout.node_ranks == std::vector<int>{2, 3});
}

TEST_CASE("a GPU list sets the count when none is given, and the binding follows the chosen GPUs") {
  auto plan = makePlan(gpuJob(), gpuNodes(2), context({{{1, 3}, {}}, {{1, 3}, {}}}));
  REQUIRE(plan);
  CHECK(plan->ranks_per_node == 2);
  CHECK(plan->ranks_source == "one per GPU (2)");
  CHECK(column(*plan, "gpu_busid") == S{"0000:44:00.0", "0000:c4:00.0", "0000:44:00.0", "0000:c4:00.0"});
  CHECK(column(*plan, "hca") == S{"mlx5_1:1", "mlx5_3:1", "mlx5_1:1", "mlx5_3:1"});
  CHECK(column(*plan, "numa") == S{"1", "5", "1", "5"});
  CHECK(column(*plan, "cpuset") == S{"6-11,54-59", "30-35,78-83", "6-11,54-59", "30-35,78-83"});
  const auto& r1 = plan->nodes[0].ranks[1].env;
  CHECK(envValue(r1, "CUDA_VISIBLE_DEVICES") == "1,3");  // LOCAL_RANK 1 is CUDA device 1 of these: GPU 3
  CHECK(envValue(r1, "LOCAL_RANK") == "1");
  CHECK(envValue(r1, "TLAUNCH_GPU_BUSID") == "0000:c4:00.0");
  CHECK(envValue(r1, "UCX_NET_DEVICES") == "mlx5_3:1");
}

TEST_CASE("an exclude list g1:0 keeps GPU 0 and its HCA unused") {
  auto plan = makePlan(gpuJob(), gpuNodes(1), context({{{}, {0}}}));
  REQUIRE(plan);
  CHECK(plan->ranks_per_node == 3);
  CHECK(column(*plan, "gpu_busid") == S{"0000:44:00.0", "0000:84:00.0", "0000:c4:00.0"});
  CHECK(column(*plan, "hca") == S{"mlx5_1:1", "mlx5_2:1", "mlx5_3:1"});
  CHECK(envValue(plan->nodes[0].ranks[0].env, "CUDA_VISIBLE_DEVICES") == "1,2,3");
  auto two = makePlan(gpuJob(2), gpuNodes(1), context({{{}, {0}}}));  // -g 2: the first two left
  REQUIRE(two);
  CHECK(column(*two, "gpu_busid") == S{"0000:44:00.0", "0000:84:00.0"});
}

TEST_CASE("a GPU list of --include/--exclude on a node without GPUs is refused; a stray CUDA_VISIBLE_DEVICES is not") {
  auto topo = loadTopology(std::string(TLAUNCH_FIXTURES_DIR) +
                           "/topologies/azure-hbv4-vm_2xEPYC9V33X_mlx5_ib0-IB+mlx5_an0-AccelNet_no-gpu_hwloc2.12.xml");
  REQUIRE(topo);
  REQUIRE(topo->gpus.empty());
  NodeInventory inv;
  inv.topology = std::make_shared<const TopologySnapshot>(*topo);
  inv.free_port = 29500;
  const std::vector<NodeReport> cpuNode{{0, "c1", inv, "127.0.0.1"}};
  for (int perNode : {0, 2}) {  // the default count, and -p 2
    JobSpec s = gpuJob();
    s.procs_per_node = perNode;
    for (const GpuList& list : {GpuList{{0, 1}, {}}, GpuList{{}, {3}}}) {
      auto refused = makePlan(s, cpuNode, context({list}));
      REQUIRE_FALSE(refused);
      CHECK(refused.error().code == Errc::usage);
      CHECK(refused.error().message.find("of c1, which has no GPU") != std::string::npos);
    }
    GpuList fromShell{{0}, {}};
    fromShell.source = "CUDA_VISIBLE_DEVICES=0 (environment)";
    auto cpu = makePlan(s, cpuNode, context({fromShell}));
    REQUIRE(cpu);
    CHECK(cpu->ranks_per_node == (perNode == 0 ? 1 : perNode));
  }
}

TEST_CASE("no GPU list: every GPU, and CUDA_VISIBLE_DEVICES is left alone") {
  auto plan = makePlan(gpuJob(4), gpuNodes(1), context({}));
  REQUIRE(plan);
  CHECK(column(*plan, "hca") == S{"mlx5_0:1", "mlx5_1:1", "mlx5_2:1", "mlx5_3:1"});
  CHECK(envValue(plan->nodes[0].ranks[0].env, "CUDA_VISIBLE_DEVICES").empty());
}

TEST_CASE("GPU lists that do not fit the node are usage errors naming the node") {
  auto missing = makePlan(gpuJob(), gpuNodes(1), context({{{1, 7}, {}}}));
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == Errc::usage);
  CHECK(missing.error().message == "--include names GPU 7 of g1, which has 4 GPU(s) (0-3)");
  auto too_many = makePlan(gpuJob(3), gpuNodes(1), context({{{1, 3}, {}}}));
  REQUIRE_FALSE(too_many);
  CHECK(too_many.error().message ==
        "node g1 has 2 GPU(s) left by its GPU list (--include/--exclude or CUDA_VISIBLE_DEVICES) but the job asks for 3 per "
        "node");
  auto none_left = makePlan(gpuJob(), gpuNodes(1), context({{{}, {0, 1, 2, 3}}}));
  REQUIRE_FALSE(none_left);
  CHECK(none_left.error().message == "--exclude leaves no GPU of g1 (it has 4)");
}

TEST_CASE("ranks asked with -p are not GPU ranks: a GPU list then only counts") {
  JobSpec s = gpuJob();
  s.procs_per_node = 2;
  PlanContext c = context({{{1, 3}, {}}});
  c.cpu_ranks_asked = true;
  auto plan = makePlan(s, gpuNodes(1), c);
  REQUIRE(plan);
  CHECK(column(*plan, "gpu_busid") == S{"null", "null"});
  CHECK(envValue(plan->nodes[0].ranks[0].env, "CUDA_VISIBLE_DEVICES").empty());
}

TEST_CASE("the command line's lists reach the plan's context per node") {
  JobSpec s = offlineOn("g1,g2");
  s.include = "g1:1,3@g2:0,2";
  auto inc = setUpJob(s, {}, true);
  REQUIRE(inc);
  REQUIRE(inc->plan_context.node_gpus.size() == 2);
  CHECK(inc->plan_context.node_gpus[0].only == std::vector<int>{1, 3});
  CHECK(inc->plan_context.node_gpus[1].only == std::vector<int>{0, 2});
  CHECK(inc->spec.ranksPerNode() == 2);  // two slots each
  s.include.clear();
  s.exclude = "g2:0";
  auto exc = setUpJob(s, {}, true);
  REQUIRE(exc);
  CHECK(exc->plan_context.node_gpus[1].excluded == std::vector<int>{0});
  CHECK_FALSE(exc->plan_context.cpu_ranks_asked);
}

TEST_CASE("CUDA_VISIBLE_DEVICES read as a GPU list: leading indices, as CUDA reads them") {
  const auto list = [](std::string_view v) { return gpuListFromCudaVisible(v, "CUDA_VISIBLE_DEVICES"); };
  CHECK(list("3,1")->only == std::vector<int>{3, 1});  // CUDA's device 0 is GPU 3: the order stands
  CHECK(list(" 0, 2,x,3")->only == std::vector<int>{0, 2});  // CUDA stops at the first entry it cannot use
  CHECK(list("2,2,3")->only == std::vector<int>{2});
  CHECK(list("1,GPU-5d6c2b1e")->only == std::vector<int>{1});
  CHECK(list("-1")->none);
  CHECK(list("")->none);
  CHECK(list("99999999999")->none);
  CHECK_FALSE(list("GPU-5d6c2b1e-0f3a,GPU-77aa").has_value());  // by UUID: passed on, not a list
  CHECK_FALSE(list("MIG-4a2b").has_value());
}

namespace {
Result<JobSetup> setUpWith(const std::map<std::string, std::string>& env, int procs = 0, std::string include = {}) {
  JobSpec s = offlineOn("g1,g2");
  s.procs_per_node = procs;
  s.include = std::move(include);
  return setUpJob(s, env, true);
}
}  // namespace

TEST_CASE("the user's CUDA_VISIBLE_DEVICES chooses every node's GPUs and the binding follows them") {
  auto setup = setUpWith({{"CUDA_VISIBLE_DEVICES", "3,1"}, {"HOME", "/root"}});
  REQUIRE(setup);
  const PlanContext& ctx = setup->plan_context;
  REQUIRE(ctx.every_node_gpus);
  CHECK(ctx.every_node_gpus->only == std::vector<int>{3, 1});
  CHECK(ctx.every_node_gpus->source == "CUDA_VISIBLE_DEVICES=3,1 (environment)");
  CHECK_FALSE(ctx.user_env.contains("CUDA_VISIBLE_DEVICES"));  // a GPU rank's value comes from the plan
  PlanContext c = ctx;
  c.job_id = "tl-test";
  auto plan = makePlan(gpuJob(), gpuNodes(2), c);
  REQUIRE(plan);
  CHECK(plan->ranks_per_node == 2);  // one per visible GPU, as torch.cuda.device_count() says
  // LOCAL_RANK 0 is CUDA's device 0, GPU 3, as under torchrun: bound to GPU 3's HCA and cores.
  CHECK(column(*plan, "gpu_busid") == S{"0000:c4:00.0", "0000:44:00.0", "0000:c4:00.0", "0000:44:00.0"});
  CHECK(column(*plan, "hca") == S{"mlx5_3:1", "mlx5_1:1", "mlx5_3:1", "mlx5_1:1"});
  const auto env = mergeEnv(plan->nodes[1].base_env, plan->nodes[1].ranks[1].env);
  CHECK(envValue(env, "CUDA_VISIBLE_DEVICES") == "3,1");  // LOCAL_RANK 1 is CUDA device 1: GPU 1
  CHECK(envValue(env, "TLAUNCH_GPU_BUSID") == "0000:44:00.0");
  // --dry-run lists it with the exports, though the plan sets it per node.
  const auto listed = std::find_if(plan->exports.begin(), plan->exports.end(),
                                   [](const ExportedVar& e) { return e.name == "CUDA_VISIBLE_DEVICES"; });
  CHECK(listed == plan->exports.end());  // from the environment: not an export of the user's
  c.gpu_list_export.emplace("3,1", "-x");
  auto exported = makePlan(gpuJob(), gpuNodes(2), c);
  REQUIRE(exported);
  const auto shown = std::find_if(exported->exports.begin(), exported->exports.end(),
                                  [](const ExportedVar& e) { return e.name == "CUDA_VISIBLE_DEVICES"; });
  REQUIRE(shown != exported->exports.end());
  CHECK(shown->value == "3,1");
  CHECK(shown->source.starts_with("-x"));
  // A node where hwloc found no GPU: its ranks keep the user's value.
  auto cpu_node = gpuNodes(1);
  auto bare = std::make_shared<TopologySnapshot>(*cpu_node[0].inventory.topology);
  bare->gpus.clear();
  cpu_node[0].inventory.topology = bare;
  c.node_gpus.resize(1);
  auto cpu_plan = makePlan(gpuJob(), cpu_node, c);
  REQUIRE(cpu_plan);
  CHECK(envValue(mergeEnv(cpu_plan->nodes[0].base_env, cpu_plan->nodes[0].ranks[0].env), "CUDA_VISIBLE_DEVICES") ==
        "3,1");
}

TEST_CASE("CUDA_VISIBLE_DEVICES is left to the ranks for CPU ranks and for MIG instances") {
  auto cpu = setUpWith({{"CUDA_VISIBLE_DEVICES", "3,1"}}, 2);
  REQUIRE(cpu);
  CHECK_FALSE(cpu->plan_context.every_node_gpus);
  CHECK(cpu->plan_context.user_env.contains("CUDA_VISIBLE_DEVICES"));
  auto mig = setUpWith({{"CUDA_VISIBLE_DEVICES", "MIG-5d6c2b1e-0f3a"}});
  REQUIRE(mig);
  CHECK(mig->plan_context.user_env.at("CUDA_VISIBLE_DEVICES").value == "MIG-5d6c2b1e-0f3a");
}

TEST_CASE("CUDA_VISIBLE_DEVICES that does not fit the job is a usage error naming it") {
  auto both = setUpWith({{"CUDA_VISIBLE_DEVICES", "0"}}, 0, "g1:1");
  REQUIRE_FALSE(both);
  CHECK(both.error().code == Errc::usage);
  CHECK(both.error().message == "CUDA_VISIBLE_DEVICES=0 (environment) and --include/--exclude both choose GPUs");

  auto none = setUpWith({{"CUDA_VISIBLE_DEVICES", ""}});
  REQUIRE(none);
  PlanContext c = none->plan_context;
  c.job_id = "tl-test";
  auto plan = makePlan(gpuJob(), gpuNodes(1), c);
  REQUIRE_FALSE(plan);
  CHECK(plan.error().code == Errc::usage);
  CHECK(plan.error().message ==
        "CUDA_VISIBLE_DEVICES= (environment) leaves CUDA no GPU of g1, but the job asks for GPU ranks");

  auto missing = setUpWith({{"CUDA_VISIBLE_DEVICES", "7"}});
  REQUIRE(missing);
  c = missing->plan_context;
  c.job_id = "tl-test";
  auto seven = makePlan(gpuJob(), gpuNodes(1), c);
  REQUIRE_FALSE(seven);
  CHECK(seven.error().message == "CUDA_VISIBLE_DEVICES=7 (environment) names GPU 7 of g1, which has 4 GPU(s) (0-3)");
}

namespace {
// Two nodes of a shared Slurm cluster: another job holds GPUs 0 and 1 of g1, so Slurm gave this
// job GPUs 2,3 there and 0,1 on g2 (what each daemon's step had in CUDA_VISIBLE_DEVICES).
std::vector<NodeReport> sharedSlurmNodes() {
  auto nodes = gpuNodes(2);
  nodes[0].inventory.slurm_gpus = "2,3";
  nodes[1].inventory.slurm_gpus = "0,1";
  return nodes;
}

// The plan of -p `procs` (CPU ranks) on `nodes`.
Result<JobPlan> cpuRanksPlan(const std::vector<NodeReport>& nodes, int procs) {
  JobSpec cpu = gpuJob();
  cpu.procs_per_node = procs;
  PlanContext c = context({});
  c.cpu_ranks_asked = true;
  return makePlan(cpu, nodes, c);
}
}  // namespace

TEST_CASE("Slurm's GPUs, node by node: the plan uses the GPUs each node's step was given") {
  auto plan = makePlan(gpuJob(), sharedSlurmNodes(), context({}));
  REQUIRE(plan);
  CHECK(plan->ranks_per_node == 2);  // one rank per GPU of the allocation, not per GPU of the node
  CHECK(column(*plan, "gpu_busid") == S{"0000:84:00.0", "0000:c4:00.0", "0000:03:00.0", "0000:44:00.0"});
  CHECK(column(*plan, "hca") == S{"mlx5_2:1", "mlx5_3:1", "mlx5_0:1", "mlx5_1:1"});
  CHECK(envValue(plan->nodes[0].ranks[1].env, "CUDA_VISIBLE_DEVICES") == "2,3");
  CHECK(envValue(plan->nodes[1].ranks[0].env, "CUDA_VISIBLE_DEVICES") == "0,1");

  // More ranks than Slurm gave GPUs: refused naming the node and Slurm's allocation.
  auto four = makePlan(gpuJob(4), sharedSlurmNodes(), context({}));
  REQUIRE_FALSE(four);
  CHECK(four.error().code == Errc::resources);
  CHECK(four.error().message == "node g1 has 2 GPU(s) left by Slurm's allocation on g1 (CUDA_VISIBLE_DEVICES=2,3 in "
                                "its step) but the job asks for 4 there");
  CHECK(four.error().hint.find("--gres=gpu:N") != std::string::npos);

  // CPU ranks see the node's allocation, as srun's tasks do.
  auto cpu_plan = cpuRanksPlan(sharedSlurmNodes(), 1);
  REQUIRE(cpu_plan);
  CHECK(envValue(cpu_plan->nodes[0].ranks[0].env, "CUDA_VISIBLE_DEVICES") == "2,3");
  CHECK(envValue(cpu_plan->nodes[1].ranks[0].env, "CUDA_VISIBLE_DEVICES") == "0,1");
}

TEST_CASE("Slurm's GPUs: the user's GPU list chooses among them") {
  // --include g1:3 and g2:0 (each node its own list) inside the allocation.
  auto inside = makePlan(gpuJob(), sharedSlurmNodes(), context({{{3}, {}}, {{0}, {}}}));
  REQUIRE(inside);
  CHECK(column(*inside, "gpu_busid") == S{"0000:c4:00.0", "0000:03:00.0"});
  CHECK(envValue(inside->nodes[0].ranks[0].env, "CUDA_VISIBLE_DEVICES") == "3");

  // --exclude alone: Slurm's GPUs less the excluded ones.
  auto less = makePlan(gpuJob(), sharedSlurmNodes(), context({{{}, {2}}, {{}, {0}}}));
  REQUIRE(less);
  CHECK(column(*less, "gpu_busid") == S{"0000:c4:00.0", "0000:44:00.0"});

  // A GPU Slurm did not give the job on that node.
  GpuList everywhere({0}, {});
  everywhere.source = "CUDA_VISIBLE_DEVICES=0 (-x)";
  auto outside = makePlan(gpuJob(), sharedSlurmNodes(), context({everywhere, everywhere}));
  REQUIRE_FALSE(outside);
  CHECK(outside.error().code == Errc::usage);
  CHECK(outside.error().message ==
        "CUDA_VISIBLE_DEVICES=0 (-x) names GPU 0 of g1, which Slurm did not give this job (it has GPU(s) 2,3 there)");
  auto none = makePlan(gpuJob(), sharedSlurmNodes(), context({{{}, {2, 3}}, {{}, {}}}));
  REQUIRE_FALSE(none);
  CHECK(none.error().message == "--exclude leaves none of the GPUs Slurm gave this job on g1 (2,3)");
}

TEST_CASE("Slurm's own CUDA_VISIBLE_DEVICES in tlaunch's environment is not a choice for every node") {
  // sbatch's script runs on the first node with that node's GPUs in CUDA_VISIBLE_DEVICES and
  // GPU_DEVICE_ORDINAL: when srun starts the daemons, neither goes to the other nodes' ranks.
  const std::map<std::string, std::string> batch_env = {{"CUDA_VISIBLE_DEVICES", "2"}, {"GPU_DEVICE_ORDINAL", "2"},
                                                        {"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "g[1-2]"}};
  JobSpec s;
  s.argv = {"true"};
  s.dry_run = s.offline = true;
  auto batch = setUpJob(s, batch_env, true);
  REQUIRE(batch);
  REQUIRE(batch->choice.kind == LauncherKind::slurm);
  const PlanContext& ctx = batch->plan_context;
  CHECK_FALSE(ctx.every_node_gpus);
  CHECK_FALSE(ctx.user_env.contains("CUDA_VISIBLE_DEVICES"));
  CHECK(envValue(ctx.base_env, "CUDA_VISIBLE_DEVICES").empty());
  CHECK(envValue(ctx.base_env, "GPU_DEVICE_ORDINAL").empty());

  // The user's own choice: another value than Slurm's, or outside a Slurm job, or daemons that
  // srun does not start (this host's own, or over ssh: they see no Slurm step).
  auto own = setUpJob(s, {{"CUDA_VISIBLE_DEVICES", "0"}, {"GPU_DEVICE_ORDINAL", "2"}, {"SLURM_JOB_ID", "7"},
                          {"SLURM_JOB_NODELIST", "g[1-2]"}}, true);
  REQUIRE(own);
  CHECK(own->plan_context.every_node_gpus->only == std::vector<int>{0});
  auto outside = setUpWith({{"CUDA_VISIBLE_DEVICES", "2"}, {"GPU_DEVICE_ORDINAL", "2"}});
  REQUIRE(outside);
  CHECK(outside->plan_context.every_node_gpus->only == std::vector<int>{2});
  auto local = setUpWith(batch_env);  // --launcher local --hosts g1,g2
  REQUIRE(local);
  CHECK(local->plan_context.every_node_gpus->only == std::vector<int>{2});
}

TEST_CASE("Slurm's GPUs: a step given no GPU (NoDevFiles) refuses GPU ranks, and CPU ranks get Slurm's value") {
  auto nodes = gpuNodes(1);
  nodes[0].inventory.slurm_gpus = "NoDevFiles";
  auto refused = makePlan(gpuJob(), nodes, context({}));
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message ==
        "Slurm's allocation on g1 (CUDA_VISIBLE_DEVICES=NoDevFiles in its step) leaves CUDA no GPU of g1, but the job "
        "asks for GPU ranks");
  CHECK(refused.error().hint.find("--gres=gpu:N") != std::string::npos);
  auto cpu_plan = cpuRanksPlan(nodes, 2);
  REQUIRE(cpu_plan);
  CHECK(envValue(cpu_plan->nodes[0].ranks[1].env, "CUDA_VISIBLE_DEVICES") == "NoDevFiles");
}

TEST_CASE("the daemons' srun step asks for the job's GPUs when the job asked for them per task") {
  CHECK(slurmPerTaskGpus({{"SLURM_GPUS_PER_TASK", "1"}, {"SLURM_GPUS_ON_NODE", "4"}}) == 4);
  CHECK(slurmPerTaskGpus({{"SLURM_GPUS_ON_NODE", "4"}}) == 0);  // --gres, --gpus-per-node: the step has them all
  CHECK(slurmPerTaskGpus({{"SLURM_GPUS_PER_TASK", "1"}, {"SLURM_GPUS_ON_NODE", "x"}}) == 0);
  CHECK(slurmPerTaskGpus({{"SLURM_GPUS_PER_TASK", "1"}, {"SLURM_GPUS_ON_NODE", "-3"}}) == 0);
  SlurmStarterOptions o;
  o.job_gpus_per_node = 4;
  std::vector<NodeTarget> nodes(2);
  nodes[0].name = "g1";
  nodes[1].index = 1;
  nodes[1].name = "g2";
  DaemonCommand daemon;
  daemon.daemon_path = "/usr/bin/tlaunchd";
  auto argv = buildSrunArgv(o, nodes, daemon);
  REQUIRE(argv);
  CHECK(std::count(argv->begin(), argv->end(), "--gres=gpu:4") == 1);
  o.slurm_args = "--gpus-per-node=2";  // the user's own GPU request for the step wins
  argv = buildSrunArgv(o, nodes, daemon);
  REQUIRE(argv);
  CHECK(std::count(argv->begin(), argv->end(), "--gres=gpu:4") == 0);
  o.slurm_args = "-A gpu-proj --comment 'gres later'";  // words that only mention GPUs ask for none
  argv = buildSrunArgv(o, nodes, daemon);
  REQUIRE(argv);
  CHECK(std::count(argv->begin(), argv->end(), "--gres=gpu:4") == 1);
}

TEST_CASE("withinSlurmAllocation: a node without Slurm's GPUs keeps the user's list") {
  GpuList user({1}, {});
  auto kept = withinSlurmAllocation(user, "", "n1");
  REQUIRE(kept);
  CHECK(kept->only == std::vector<int>{1});
  CHECK(kept->slurm.empty());
  // GPUs Slurm named by UUID: CUDA resolves them; the value still reaches the ranks.
  auto uuid = withinSlurmAllocation(GpuList{}, "GPU-5d6c2b1e-0f3a", "n1");
  REQUIRE(uuid);
  CHECK_FALSE(uuid->given());
  CHECK(uuid->slurm == "GPU-5d6c2b1e-0f3a");
}

namespace {
// An AWS g4dn.metal: eight T4s, with the UUIDs NVML gave hwloc (GPU 2 0000:35:00.0, GPU 6 0000:f4:00.0).
const char* kG4dn = "/topologies/aws-g4dn.metal_2xXeon8259CL_8xT4_1xEFA_hwloc2.8.xml";
const std::string kUuid2 = "GPU-541de847-535a-023c-84c0-5bead20b12e0";
const std::string kUuid6 = "GPU-cbe0afec-aa16-5bc7-8379-8e739474cec1";

TopologySnapshot g4dn() {
  auto topo = loadTopology(std::string(TLAUNCH_FIXTURES_DIR) + kG4dn);
  REQUIRE(topo);
  REQUIRE(topo->gpus.size() == 8);
  return *topo;
}

std::vector<int> resolved(std::string_view visible, const TopologySnapshot& topo) {
  auto list = gpuUuidListFromCudaVisible(visible, "CUDA_VISIBLE_DEVICES");
  REQUIRE(list);
  auto out = resolveGpuUuids(*list, topo);
  REQUIRE(out);
  CHECK(out->uuids.empty());
  return out->none ? std::vector<int>{-1} : out->only;
}
}  // namespace

TEST_CASE("CUDA_VISIBLE_DEVICES by UUID: matched on the node as CUDA matches it") {
  const TopologySnapshot topo = g4dn();
  CHECK(resolved(kUuid6 + "," + kUuid2, topo) == std::vector<int>{6, 2});  // in the order given, as CUDA
  CHECK(resolved("GPU-cbe0afec, GPU-541DE847", topo) == std::vector<int>{6, 2});  // unique starts, any case
  // CUDA ignores everything from the first entry it cannot use: no GPU, several, or a repeat.
  CHECK(resolved("GPU-541de847,GPU-ffff," + kUuid6, topo) == std::vector<int>{2});
  CHECK(resolved("GPU-541de847,GPU-541de847," + kUuid6, topo) == std::vector<int>{2});
  auto twins = topo;  // GPU 0's UUID starts as GPU 2's does: "GPU-541d" names no one GPU
  twins.gpus[0].uuid = "GPU-541d0000-0000-0000-0000-000000000001";
  CHECK(resolved("GPU-541d," + kUuid6, twins) == std::vector<int>{-1});
  CHECK(resolved("GPU-541de," + kUuid6, twins) == std::vector<int>{2, 6});
  CHECK(resolved("GPU-ffff", topo) == std::vector<int>{-1});
  // Not a UUID list: indices, MIG instances. Nothing after "GPU-": CUDA sees no GPU.
  CHECK_FALSE(gpuUuidListFromCudaVisible("0,1", "x"));
  CHECK_FALSE(gpuUuidListFromCudaVisible("MIG-4a2b", "x"));
  CHECK(gpuUuidListFromCudaVisible("GPU-", "x")->none);
  // GPUs hwloc alone found, without UUIDs: cannot be matched.
  auto bare = topo;
  for (auto& g : bare.gpus) g.uuid.reset();
  CHECK_FALSE(resolveGpuUuids(*gpuUuidListFromCudaVisible(kUuid2, "x"), bare));
}

TEST_CASE("CUDA_VISIBLE_DEVICES by UUID: the plan binds each rank to the GPU it names, node by node") {
  auto setup = setUpWith({{"CUDA_VISIBLE_DEVICES", kUuid6 + "," + kUuid2}});
  REQUIRE(setup);
  PlanContext c = setup->plan_context;
  c.job_id = "tl-test";
  CHECK_FALSE(c.user_env.contains("CUDA_VISIBLE_DEVICES"));
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 2; ++i) {
    NodeInventory inv;
    inv.topology = std::make_shared<const TopologySnapshot>(g4dn());
    inv.free_port = 29500;
    nodes.push_back({i, "g" + std::to_string(i + 1), std::move(inv), "127.0.0.1"});
  }
  auto plan = makePlan(gpuJob(), nodes, c);
  REQUIRE(plan);
  CHECK(plan->ranks_per_node == 2);
  CHECK(column(*plan, "gpu_busid") == S{"0000:f4:00.0", "0000:35:00.0", "0000:f4:00.0", "0000:35:00.0"});
  CHECK(envValue(plan->nodes[0].ranks[1].env, "CUDA_VISIBLE_DEVICES") == "6,2");
  CHECK(envValue(plan->nodes[0].ranks[1].env, "TLAUNCH_GPU_UUID") == kUuid2);

  // g2 is another machine, whose GPUs have other UUIDs: CUDA would see none of the list there.
  auto other = std::make_shared<TopologySnapshot>(g4dn());
  for (auto& g : other->gpus) g.uuid = "GPU-99" + g.uuid->substr(6);
  nodes[1].inventory.topology = other;
  auto refused = makePlan(gpuJob(), nodes, c);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Errc::usage);
  CHECK(refused.error().message == "CUDA_VISIBLE_DEVICES=" + kUuid6 + "," + kUuid2 +
                                       " (environment) leaves CUDA no GPU of g2, but the job asks for GPU ranks");

  // A node whose GPUs have no known UUID: the value reaches its ranks unchanged, with one warning.
  auto bare = std::make_shared<TopologySnapshot>(g4dn());
  for (auto& g : bare->gpus) g.uuid.reset();
  nodes[0].inventory.topology = nodes[1].inventory.topology = bare;
  nodes[1].inventory.slurm_gpus = "0,1,2,3";  // Slurm's list must not replace the user's choice there
  auto passed = makePlan(gpuJob(1), nodes, c);
  REQUIRE(passed);
  CHECK(envValue(mergeEnv(passed->nodes[1].base_env, passed->nodes[1].ranks[0].env), "CUDA_VISIBLE_DEVICES") ==
        kUuid6 + "," + kUuid2);
  CHECK(std::count_if(passed->warnings.begin(), passed->warnings.end(), [](const std::string& w) {
          return w.find("goes unchanged to the ranks of 2 nodes (g1, g2)") != std::string::npos;
        }) == 1);
}

TEST_CASE("Slurm's GPUs: what --exclude left of a hostfile's slot count is Slurm's GPUs less the excluded") {
  JobSpec s = offlineOn("g1:4,g2:4");
  s.exclude = "g1:0@g2:2";
  auto setup = setUpJob(s, {}, true);
  REQUIRE(setup);
  const auto& lists = setup->plan_context.node_gpus;
  REQUIRE(lists.size() == 2);
  CHECK(lists[0].only == std::vector<int>{1, 2, 3});
  CHECK(lists[0].only_from_exclude);
  PlanContext c = setup->plan_context;
  c.job_id = "tl-test";
  auto plan = makePlan(gpuJob(), sharedSlurmNodes(), c);  // Slurm gave g1 GPUs 2,3 and g2 0,1
  REQUIRE(plan);
  CHECK(column(*plan, "gpu_busid") == S{"0000:84:00.0", "0000:c4:00.0", "0000:03:00.0", "0000:44:00.0"});
  c.node_gpus[0].only = {1};  // --exclude g1:0,2,3 of 4 slots: none of Slurm's GPUs is left
  auto none = makePlan(gpuJob(), sharedSlurmNodes(), c);
  REQUIRE_FALSE(none);
  CHECK(none.error().message == "--exclude leaves none of the GPUs Slurm gave this job on g1 (2,3)");
}

// AMD GPUs: HIP numbers them in the driver's order, not the PCI bus order the plan binds by
// (on the recorded LLNL Corona node ROCm-SMI's rsmi0..7 are not in bus order). Each node's
// ranks see their GPUs by UUID, in local-rank order, so HIP's device r is local rank r's GPU.
TEST_CASE("AMD GPUs are steered with ROCR_VISIBLE_DEVICES by UUID, in the plan's order") {
  auto topo = loadTopology(test::topologyFixture("llnl-corona282"));  // 8 MI50, ROCm-SMI UUIDs
  REQUIRE(topo);
  auto node = [&] {
    NodeInventory inv;
    inv.topology = std::make_shared<const TopologySnapshot>(*topo);
    inv.free_port = 29500;
    return std::vector<NodeReport>{{0, "corona1", std::move(inv), "127.0.0.1"}};
  };
  auto env = [](const JobPlan& plan, size_t rank, const char* name) {
    return envValue(plan.nodes[0].ranks[rank].env, name);
  };
  auto plan = makePlan(gpuJob(8), node(), context({}));
  REQUIRE(plan);
  std::string expected;
  for (int r = 0; r < 8; ++r) {
    const std::string uuid = env(*plan, static_cast<size_t>(r), kRankGpuUuidVar);
    REQUIRE_FALSE(uuid.empty());
    expected += (r ? ",GPU-" : "GPU-") + uuid;
  }
  for (size_t r = 0; r < 8; ++r) {
    CHECK(env(*plan, r, "ROCR_VISIBLE_DEVICES") == expected);
    CHECK(env(*plan, r, "CUDA_VISIBLE_DEVICES").empty());  // indices HIP would apply on top
  }
  CHECK(expected.starts_with("GPU-4c04714172e6268f,"));  // bus 0000:03 is rsmi2: not HIP's device 0 by itself
  // As ROCr names them, 16 hex digits: hwloc recorded "f62596172e6212b" and "ce888172edb11f".
  CHECK(expected.find(",GPU-0f62596172e6212b,") != std::string::npos);
  CHECK(expected.find(",GPU-00ce888172edb11f") != std::string::npos);
  // Chosen GPUs (--include corona1:5,1): only they, in the order listed.
  auto chosen = makePlan(gpuJob(), node(), context({GpuList{{5, 1}, {}}}));
  REQUIRE(chosen);
  REQUIRE(chosen->world_size == 2);
  CHECK(env(*chosen, 0, "ROCR_VISIBLE_DEVICES") ==
        "GPU-" + env(*chosen, 0, kRankGpuUuidVar) + ",GPU-" + env(*chosen, 1, kRankGpuUuidVar));
  // A numbering of the user's (or Slurm's) is left alone: HIP would apply it on top of ours.
  PlanContext users = context({});
  users.base_env = {"HIP_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"};
  auto left = makePlan(gpuJob(8), node(), users);
  REQUIRE(left);
  CHECK(env(*left, 0, "ROCR_VISIBLE_DEVICES").empty());
  // NVIDIA GPUs get no ROCR_VISIBLE_DEVICES.
  auto nvidia = makePlan(gpuJob(4), gpuNodes(1), context({}));
  REQUIRE(nvidia);
  CHECK(env(*nvidia, 0, "ROCR_VISIBLE_DEVICES").empty());
}
