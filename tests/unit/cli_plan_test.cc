// What the command line plans, from recorded inventories: plain-Ethernet clusters, mixed and
// required fabrics, --net tcp on a fabric, the user's MASTER_ADDR, the default ranks per node,
// and the same setup for a real run and --dry-run --offline (issue 12 items 1, 2 and 6).
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>


#include "binding/fabric/fabric_discovery.h"
#include "binding/fabric/fabric_json.h"
#include "binding/topology/hwloc_topology.h"
#include "binding/preflight/preflight_checks.h"
#include "binding/preflight/preflight_report.h"
#include "binding/topology/topology_json.h"
#include "fabric_test_builder.h"
#include "fabric_test_support.h"
#include "bootstrap/inventory_codec.h"
#include "bootstrap/rank_env.h"
#include "launcher/plan/job_plan.h"
#include "launcher/launcher_choice.h"
#include "launcher/plan/plan_render.h"
#include "launcher/job_setup.h"
#include "launcher/plan/plan_preflight.h"
#include "launcher/plan/offline_plan.h"
#include "launcher/starter_support.h"

using namespace tlaunch;
using namespace tlaunch::testing;

namespace {

const char* kCpuTopology = "topologies/jsc-jureca-booster-jrc5001_XeonPhi7250F_2xhfi1-OPA_no-gpu_hwloc1.11-v1fmt.xml";
const char* kGpuTopology = "topologies/llnl-ipa20_dell-xe8640_2xXeon8480_4xH100-SXM_4xmlx5-IB_hwloc2.12.xml";

Json topology(const char* relative) {
  auto t = loadTopology(std::string(TLAUNCH_FIXTURES_DIR) + "/" + relative);
  REQUIRE(t);
  return topologyToJson(*t);
}

PreflightOptions preflightOptions(const std::string& node) {
  PreflightOptions o;
  o.node = node;
  o.sysfs_root_is_capture = true;
  o.host.memlock = MemlockLimit{true, true, 0, true, 0};
  return o;
}

NodeReport report(int index, const std::string& name, const NodeFabric& fabric, const std::string& control_ip,
                  const char* topo = kCpuTopology) {
  Json inv = {{"topology", topology(topo)}, {"fabric", fabricToJson(fabric)}, {"free_port", 29500}};
  inv["preflight"] = preflightToJson(localPreflightChecks(fabric, preflightOptions(name)));
  auto decoded = inventoryFromJson(inv);  // through the wire codec, as the frontend receives it
  REQUIRE(decoded);
  return {index, name, *decoded, control_ip};
}

// Two Ethernet-only nodes: a data network listed first, the control network second.
std::vector<NodeReport> plainNodes() {
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i + 1);
    auto f = FabricBuilder().eth("lo", "127.0.0.1", 8).eth("eth0", "10.0.0." + n).eth("eth1", "192.168.1." + n).build();
    nodes.push_back(report(i, "node" + n, f, "192.168.1." + n));
  }
  return nodes;
}

// Two Ethernet-only nodes of the recorded 4 x H100 machine.
std::vector<NodeReport> gpuNodes() {
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i + 1);
    nodes.push_back(report(i, "g" + n, FabricBuilder().eth("eth0", "192.168.1." + n).build(), "192.168.1." + n,
                           kGpuTopology));
  }
  return nodes;
}

JobSpec cpuJob(const std::string& net = "auto") {
  JobSpec s;
  s.argv = {"true"};
  s.procs_per_node = 1;
  s.net_mode = net;
  s.bind = "none";
  return s;
}

PlanContext context() {
  PlanContext c;
  c.job_id = "tl-test";
  c.cwd = "/";
  return c;
}

const PreflightItem* item(const JobPlan& plan, const std::string& check, const std::string& node) {
  for (const auto& i : plan.preflight_items)
    if (i.check == check && i.node == node) return &i;
  return nullptr;
}

}  // namespace

TEST_CASE("no RDMA on any node: TCP on the daemons' control network and RDMA checks skipped") {
  auto plan = makePlan(cpuJob(), plainNodes(), context());
  REQUIRE(plan);
  CHECK(plan->master_addr == "192.168.1.1");
  REQUIRE(plan->network);
  CHECK(plan->network->cidr == "192.168.1.0/24");
  CHECK(renderNetwork(*plan).find("no RDMA device on any node: the job runs over TCP on 192.168.1.0/24 (the daemons' "
                                "control network)") != std::string::npos);
  const PreflightItem* dev = item(*plan, "rdma_devices", "node1");
  REQUIRE(dev);
  CHECK(dev->status == PreflightStatus::skip);
  CHECK(dev->found == "no RDMA on any node");
}

// The banner lists at most 4 nodes; the notes are the job's, and were left out with the rest.
TEST_CASE("the banner says the network's notes however many nodes it lists") {
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 6; ++i) {
    const std::string n = std::to_string(i + 1);
    auto f = FabricBuilder().eth("lo", "127.0.0.1", 8).eth("eth1", "192.168.1." + n).build();
    nodes.push_back(report(i, "node" + n, f, "192.168.1." + n));
  }
  auto plan = makePlan(cpuJob(), nodes, context());
  REQUIRE(plan);
  const std::string banner = renderBanner(*plan, cpuJob());
  CHECK_THAT(banner, Catch::Contains("(2 more nodes: tlaunch --dry-run shows all)"));
  CHECK_THAT(banner, Catch::Contains("note: no RDMA device on any node: the job runs over TCP on 192.168.1.0/24"));
}

TEST_CASE("no RDMA and net-cidr chooses another network") {
  JobSpec s = cpuJob();
  s.net_cidr = "10.0.0.0/24";
  auto plan = makePlan(s, plainNodes(), context());
  REQUIRE(plan);
  CHECK(plan->master_addr == "10.0.0.1");
}

TEST_CASE("no RDMA, the control network not common: the fallback is a real subnet, never docker0's") {
  // docker0 172.17.0.1/16 on every Docker host, listed first (interfaces are in name order);
  // each node reached the frontend over a subnet of its own.
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i + 1);
    auto f = FabricBuilder()
                 .eth("docker0", "172.17.0.1", 16)
                 .eth("eth0", "10.0.0." + n)
                 .eth("eth1", "192.168." + n + ".1")
                 .build();
    nodes.push_back(report(i, "node" + n, f, "192.168." + n + ".1"));
  }
  auto plan = makePlan(cpuJob(), nodes, context());
  REQUIRE(plan);
  CHECK(plan->master_addr == "10.0.0.1");
  CHECK(plan->network->nodes[1].ifname == "eth0");

  SECTION("--net-cidr forcing docker0's subnet is refused, naming both nodes and the address") {
    JobSpec s = cpuJob();
    s.net_cidr = "172.17.0.0/16";
    auto refused = makePlan(s, nodes, context());
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("node1 and node2 both have 172.17.0.1 (docker0)") != std::string::npos);
  }
}

TEST_CASE("no RDMA, host addresses (/32, cloud VMs): the network the daemons reached the frontend over") {
  // Each VM's only address is a /32, with docker0 beside it; no subnet is common.
  std::vector<NodeReport> nodes;
  const char* addresses[] = {"10.128.0.5", "10.128.0.9", "10.128.0.12"};
  for (int i = 0; i < 3; ++i) {
    auto f = FabricBuilder().eth("docker0", "172.17.0.1", 16).eth("ens4", addresses[i], 32).build();
    nodes.push_back(report(i, "vm" + std::to_string(i + 1), f, addresses[i]));
  }
  auto plan = makePlan(cpuJob(), nodes, context());
  REQUIRE(plan);
  CHECK(plan->master_addr == "10.128.0.5");
  REQUIRE(plan->network);
  CHECK(plan->network->cidr == "10.128.0.0/28");
  CHECK(plan->network->nodes[2].ifname == "ens4");
  CHECK(renderNetwork(*plan).find("runs over TCP on 10.128.0.0/28 (the daemons' control network)") != std::string::npos);

  SECTION("a daemon seen from an address that is not its own (NAT): refused, suggesting --net-cidr") {
    nodes[2].control_ip = "192.0.2.7";
    auto refused = makePlan(cpuJob(), nodes, context());
    REQUIRE_FALSE(refused);
    CHECK(refused.error().message.find("--net-cidr 10.128.0.0/28 or wider") != std::string::npos);
  }
}

TEST_CASE("net ib requires the fabric: refused without RDMA") {
  auto plan = makePlan(cpuJob("ib"), plainNodes(), context());
  REQUIRE_FALSE(plan);
  CHECK((plan.error().code == Errc::preflight || plan.error().code == Errc::fabric));
}

TEST_CASE("RDMA on some nodes and not others is refused naming both sides") {
  std::vector<NodeReport> nodes;
  nodes.push_back(report(0, "a", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").eth("eth0", "192.168.1.1").build(),
                         "192.168.1.1"));
  nodes.push_back(report(1, "b", FabricBuilder().eth("eth0", "192.168.1.2").build(), "192.168.1.2"));
  JobSpec s = cpuJob();
  s.preflight = PreflightMode::off;  // the network choice itself refuses
  auto plan = makePlan(s, nodes, context());
  REQUIRE_FALSE(plan);
  CHECK(plan.error().code == Errc::fabric);
  CHECK(plan.error().message.find("RDMA devices on a but none on b") != std::string::npos);
  JobSpec checked = cpuJob();
  auto withPreflight = makePlan(checked, nodes, context());
  REQUIRE_FALSE(withPreflight);  // b's rdma_devices check fails: not everyone lacks RDMA
  CHECK(withPreflight.error().code == Errc::preflight);
}

TEST_CASE("net tcp on the recorded mlx4 capture: allowed with a warning") {
  TempDir tmp{"tlaunch-capture", manyFilesBase()};
  auto root = extractCapture(kMlx4Tarball, tmp.path());
  if (!root) FAIL("fixture " << kMlx4Tarball << " missing");
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i + 5);
    auto fabric = discoverFabric(root->string(), {liveIf("ib0", "10.1.0." + n), liveIf("eth0", "192.168.1." + n, 24)});
    REQUIRE(fabric);
    nodes.push_back(report(i, "node" + n, *fabric, "192.168.1." + n));
  }
  JobSpec s = cpuJob("tcp");
  s.preflight_skip = {"uverbs", "verbs_devices"};  // a capture: nothing live to open
  auto plan = makePlan(s, nodes, context());
  REQUIRE(plan);
  bool warned = false;
  for (const auto& w : plan->warnings) warned = warned || w.find("--net tcp: 2 node(s) have RDMA devices") == 0;
  CHECK(warned);
  // NCCL, UCX and Open MPI would take the HCA they find on their own: each is kept off it.
  for (const auto& node : plan->nodes)
    for (const auto& rank : node.ranks) {
      CHECK(envValue(rank.env, "NCCL_IB_DISABLE") == "1");
      CHECK(envValue(rank.env, "NCCL_NET") == "Socket");
      CHECK(envValue(rank.env, "NCCL_IB_HCA").empty());
      CHECK(envValue(rank.env, "UCX_NET_DEVICES") == "ib0");
      CHECK(envValue(rank.env, "OMPI_MCA_btl") == "^openib,uct,ofi");
    }
  auto fabric = makePlan(cpuJob(), nodes, context());  // auto on the same capture: the fabric, no warning
  if (fabric) {
    CHECK(fabric->warnings.empty());
    const auto& env = fabric->nodes[0].ranks[0].env;
    CHECK(envValue(env, "NCCL_IB_DISABLE") == "0");
    CHECK(envValue(env, "UCX_NET_DEVICES") == "mlx4_0:1");
    CHECK(envValue(env, "OMPI_MCA_btl").empty());
  }
}

// AWS EFA alone (p4d, p5): no IP on the fabric, so the job's sockets run on the ENA Ethernet and
// NCCL reaches EFA through aws-ofi-nccl. Refused before ("link layer unknown"), and the --net tcp
// it suggested set NCCL_NET=Socket, which keeps NCCL off that plugin.
TEST_CASE("nodes whose only RDMA device is EFA run on their Ethernet, NCCL left to its EFA plugin") {
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i + 1);
    nodes.push_back(report(i, "p" + n, FabricBuilder().efa("rdmap197s0").eth("eth0", "10.20.0." + n).build(),
                           "10.20.0." + n));
  }
  auto plan = makePlan(cpuJob(), nodes, context());
  REQUIRE(plan);
  REQUIRE(plan->network);
  CHECK(plan->network->cidr == "10.20.0.0/24");
  CHECK(plan->master_addr == "10.20.0.1");
  const auto& env = plan->nodes[1].ranks[0].env;
  CHECK(envValue(env, "NCCL_SOCKET_IFNAME") == "=eth0");
  CHECK(envValue(env, "NCCL_NET").empty());
  CHECK(envValue(env, "NCCL_IB_DISABLE").empty());
  bool said = false;
  for (const auto& note : plan->network->notes) said = said || note.starts_with("EFA on every node");
  CHECK(said);
  // --net tcp on them is still a choice of sockets: NCCL kept off the plugin too.
  auto sockets = makePlan(cpuJob("tcp"), nodes, context());
  REQUIRE(sockets);
  CHECK(envValue(sockets->nodes[0].ranks[0].env, "NCCL_NET") == "Socket");
  bool warned = false;  // EFA left unused is said, as HCAs are
  for (const auto& w : sockets->warnings) warned = warned || w.starts_with("--net tcp: 2 node(s) have RDMA devices (p1, p2)");
  CHECK(warned);
}

TEST_CASE("the user's MASTER_ADDR and MASTER_PORT win over tlaunch's as the dry run says") {
  PlanContext c = context();
  c.user_env["MASTER_ADDR"] = {"10.9.9.9", "-x"};
  c.user_env["MASTER_PORT"] = {"12345", "-x"};
  c.user_set = {"MASTER_ADDR", "MASTER_PORT"};
  c.base_env = {"MASTER_ADDR=10.9.9.9", "MASTER_PORT=12345"};
  auto plan = makePlan(cpuJob(), plainNodes(), c);
  REQUIRE(plan);
  CHECK(plan->master_addr == "10.9.9.9");
  CHECK(plan->master_port == 12345);
  for (const auto& n : plan->nodes)
    for (const auto& r : n.ranks)
      for (const auto& kv : r.env) {
        CHECK(kv.rfind("MASTER_ADDR=", 0) != 0);
        CHECK(kv.rfind("MASTER_PORT=", 0) != 0);
      }
  CHECK(renderNetwork(*plan).find("MASTER_ADDR=192.168.1.1  (yours wins: 10.9.9.9 from -x)") != std::string::npos);
  CHECK(renderPlanText(*plan).find("MASTER_ADDR=10.9.9.9 MASTER_PORT=12345") != std::string::npos);
  bool warned = false;
  for (const auto& w : plan->warnings)
    warned = warned || w == "MASTER_ADDR 10.9.9.9 is not on the job's network 192.168.1.0/24 (rank 0's address there is "
                            "192.168.1.1)";
  CHECK(warned);
  for (const auto& w : plan->warnings)  // said once
    CHECK(w.find("MASTER_ADDR=10.9.9.9 (-x) conflicts") == std::string::npos);
}

// 244 nodes oversubscribed alike printed 244 lines of one warning.
TEST_CASE("the same binding warning of several nodes is said once, naming them all") {
  JobSpec s = cpuJob();
  s.bind = "core";
  s.procs_per_node = 100;  // more than the recorded CPU machine's 68 cores
  auto plan = makePlan(s, plainNodes(), context());
  REQUIRE(plan);
  const auto over = std::count_if(plan->warnings.begin(), plan->warnings.end(),
                                  [](const std::string& w) { return w.find("oversubscribed") != std::string::npos; });
  CHECK(over == 1);
  CHECK(std::any_of(plan->warnings.begin(), plan->warnings.end(),
                    [](const std::string& w) { return w.rfind("nodes node[1-2]: ", 0) == 0; }));
  // What it costs, said as it is: every rank there loses its own cores, not only one NUMA node's.
  CHECK(std::any_of(plan->warnings.begin(), plan->warnings.end(), [](const std::string& w) {
    return w.find("every rank of the node is bound to its whole NUMA node") != std::string::npos;
  }));
}

TEST_CASE("no count given: one rank per GPU on GPU nodes as the plan says") {
  const std::vector<NodeReport> nodes = gpuNodes();
  JobSpec s = cpuJob();
  s.procs_per_node = 0;
  auto plan = makePlan(s, nodes, context());
  REQUIRE(plan);
  CHECK(plan->ranks_per_node == 4);
  CHECK(plan->world_size == 8);
  CHECK(plan->ranks_source == "one per GPU (4)");
  CHECK(renderPlanText(*plan).find("ranks per node: 4 (one per GPU (4))") != std::string::npos);
  CHECK(planToJson(*plan)["ranks_per_node_from"] == "one per GPU (4)");
}

TEST_CASE("Open MPI's PML: ob1 for CPU ranks over TCP, Open MPI's own choice for RDMA or GPU ranks") {
  auto pml = [](const Result<JobPlan>& plan) {
    REQUIRE(plan);
    return envValue(plan->nodes[1].ranks[0].env, "OMPI_MCA_pml");
  };
  CHECK(pml(makePlan(cpuJob(), plainNodes(), context())) == "ob1");
  std::vector<NodeReport> ib;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i + 1);
    auto f = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0." + n).eth("eth0", "192.168.1." + n).build();
    ib.push_back(report(i, "node" + n, f, "192.168.1." + n));
  }
  JobSpec fabric = cpuJob();
  fabric.preflight = PreflightMode::off;  // recorded values, nothing live to check
  auto rdma = makePlan(fabric, ib, context());
  REQUIRE(rdma);
  REQUIRE(rdma->network);
  CHECK(rdma->network->rdma);
  CHECK(pml(rdma).empty());  // UCX on the HCAs, as Open MPI picks by itself
  JobSpec tcp = cpuJob("tcp");
  tcp.preflight = PreflightMode::off;
  CHECK(pml(makePlan(tcp, ib, context())) == "ob1");  // --net tcp: MPI keeps off the HCAs too
  JobSpec gpus = cpuJob();
  gpus.procs_per_node = 0;  // one rank per GPU
  CHECK(pml(makePlan(gpus, gpuNodes(), context())).empty());  // CUDA-aware UCX stays Open MPI's choice
}

TEST_CASE("a hostfile of slots=8 plans 8 ranks per node offline and online alike") {
  TempDir tmp;
  const std::string hostfile = (tmp.path() / "hosts").string();
  writeFile(hostfile, "n1 slots=8\nn2 slots=8\n");
  for (bool offline : {true, false}) {
    JobSpec s;
    s.argv = {"true"};
    s.hostfile = hostfile;
    s.launcher = LauncherKind::local;  // online too: nothing here may resolve n1
    s.dry_run = offline;
    s.offline = offline;
    auto setup = setUpJob(s, {}, offline);
    REQUIRE(setup);
    CHECK(setup->spec.ranksPerNode() == 8);
    CHECK(setup->choice.nodes.size() == 2);
    CHECK(setup->plan_context.ranks_source == "slots=8 in --hostfile");
  }
}

TEST_CASE("an offline plan of other hosts does not claim they are this host's loopback") {
  for (const bool local : {false, true}) {  // --hosts a,b (or -H gpu1) --offline; --launcher local -N 2 --offline
    JobSpec s;
    s.argv = {"true"};
    s.launcher = local ? LauncherKind::local : LauncherKind::ssh;
    if (local) s.nodes = 2;
    else s.hosts = "gpu1";
    s.offline = true;
    s.dry_run = true;
    s.topology_xml = std::string(TLAUNCH_FIXTURES_DIR) + "/" + kCpuTopology;
    auto setup = setUpJob(s, {}, true);
    REQUIRE(setup);
    INFO("local " << local);
    CHECK(setup->plan_context.network_unasked == !local);
    JobSpec planned = cpuJob();
    planned.offline = true;
    auto plan = makePlan(planned, plainNodes(), setup->plan_context);
    REQUIRE(plan);
    CHECK(renderNetwork(*plan).find(local ? "network: loopback (every node is this host)" : "network: not chosen offline") == 0);
  }
}

// max_slots is Open MPI's hard limit: the ranks per node decided when planning (one per GPU)
// obey it as a count from -p or slots does. It was passed over: 4 ranks on a max_slots=2 node.
TEST_CASE("a hostfile's max_slots caps the default of one rank per GPU") {
  TempDir tmp;
  const std::string hostfile = (tmp.path() / "hosts").string();
  writeFile(hostfile, "n1 max_slots=4\nn2 max_slots=2\n");
  JobSpec s;
  s.argv = {"true"};
  s.hostfile = hostfile;
  s.launcher = LauncherKind::local;
  auto setup = setUpJob(s, {}, false);
  REQUIRE(setup);
  CHECK(setup->plan_context.node_max_slots == std::vector<int>{4, 2});
  PlanContext ctx = context();
  ctx.node_max_slots = setup->plan_context.node_max_slots;
  JobSpec gpus = cpuJob();
  gpus.procs_per_node = 0;  // one rank per GPU: 4
  auto plan = makePlan(gpus, gpuNodes(), ctx);
  REQUIRE_FALSE(plan);
  CHECK(plan.error().code == Errc::usage);
  CHECK_THAT(plan.error().message, Catch::Contains("has max_slots=2 in the hostfile, fewer than the 4 ranks per node "
                                                   "of the default, one per GPU (4)"));
  CHECK_THAT(plan.error().hint, Catch::Contains("at most 2"));
  ctx.node_max_slots = {4, 4};
  CHECK(makePlan(gpus, gpuNodes(), ctx));
}

// ssh runs the daemon's path in the node's home directory, where srun and the local launcher
// run it here: `--daemon-path bin/tlaunchd` worked with those and was "not found" over ssh.
TEST_CASE("a relative --daemon-path is this directory's, ~/ this user's home, for every launcher") {
  CHECK(daemonPathFromHere("", "/w", "/home/u").empty());  // the default: next to tlaunch
  CHECK(daemonPathFromHere("/opt/tl/tlaunchd", "/w", "/home/u") == "/opt/tl/tlaunchd");
  CHECK(daemonPathFromHere("bin/tlaunchd", "/w/proj", "/home/u") == "/w/proj/bin/tlaunchd");
  CHECK(daemonPathFromHere("./build/bin/tlaunchd", "/w", "/home/u") == "/w/build/bin/tlaunchd");
  CHECK(daemonPathFromHere("./tlaunchd", "/", "/home/u") == "/tlaunchd");
  CHECK(daemonPathFromHere("tlaunchd", "/w", "/home/u") == "tlaunchd");  // a name: each node's PATH
  CHECK(daemonPathFromHere("~/bin/tlaunchd", "/w", "/home/u") == "/home/u/bin/tlaunchd");
  CHECK(daemonPathFromHere("~/bin/tlaunchd", "/w", "") == "~/bin/tlaunchd");  // no HOME: left as given
  JobSpec s;
  s.argv = {"true"};
  s.hosts = "n1,n2";
  s.daemon_path = "bin/tlaunchd";
  s.dry_run = s.offline = true;
  auto setup = setUpJob(s, {{"HOME", "/home/u"}}, true);
  REQUIRE(setup);
  CHECK(setup->spec.daemon_path.front() == '/');
  CHECK_THAT(setup->spec.daemon_path, Catch::EndsWith("/bin/tlaunchd"));
}

// DeepSpeed's hostfile (`node1 slots=4`) on 4-GPU nodes means one rank per GPU. The ranks were
// CPU ranks: no GPU each, bound to NUMA node 0 while cuda:0 sits on another.
TEST_CASE("slots on GPU nodes plan one GPU per rank, as DeepSpeed's hostfile means") {
  PlanContext ctx = context();
  ctx.ranks_source = "slots=4 in --hostfile";
  ctx.ranks_from_slots = true;
  JobSpec s = cpuJob();
  s.procs_per_node = 4;  // as setUpJob makes the slots the count
  auto plan = makePlan(s, gpuNodes(), ctx);
  REQUIRE(plan);
  REQUIRE(plan->node_gpus.size() == 2);
  CHECK(plan->node_gpus[0].gpu_ranks);
  std::set<std::string> gpus;  // one each, four different ones per node
  for (const auto& row : plan->manifest)
    if (row.node == plan->manifest.front().node && row.binding.gpu_busid) gpus.insert(*row.binding.gpu_busid);
  CHECK(gpus.size() == 4);
  // More slots than GPUs: CPU ranks, said.
  s.procs_per_node = 6;
  ctx.ranks_source = "slots=6 in --hostfile";
  auto six = makePlan(s, gpuNodes(), ctx);
  REQUIRE(six);
  CHECK_FALSE(six->node_gpus[0].gpu_ranks);
  CHECK(std::any_of(six->warnings.begin(), six->warnings.end(),
                    [](const std::string& w) { return w.find("4 GPU(s) for 6 ranks") != std::string::npos; }));
  // -p is a request for CPU ranks: it stays one.
  ctx.cpu_ranks_asked = true;
  s.procs_per_node = 4;
  auto cpu = makePlan(s, gpuNodes(), ctx);
  REQUIRE(cpu);
  CHECK_FALSE(cpu->node_gpus[0].gpu_ranks);
}

// `--hosts localhost,vm,127.0.0.1` on the machine named vm: three "nodes" sharing every GPU.
TEST_CASE("two nodes that are one machine are refused, naming both; namespaces and simulated nodes are not") {
  std::vector<NodeReport> nodes = gpuNodes();
  for (auto& n : nodes) {
    n.inventory.hostname = "vm";
    n.inventory.boot_id = "6c1a3f3e-0d6e-4b87-9f0b-1d2a3c4b5e6f";
  }
  JobSpec s = cpuJob();
  auto twice = makePlan(s, nodes, context());
  REQUIRE_FALSE(twice);
  CHECK(twice.error().code == Errc::usage);
  CHECK_THAT(twice.error().message, Catch::Contains("nodes " + nodes[0].name + " and " + nodes[1].name +
                                                    " are one machine (vm)"));
  CHECK_THAT(twice.error().hint, Catch::Contains("name each machine once"));
  PlanContext simulated = context();
  simulated.simulated_nodes = true;  // --launcher local -N 2: one host by design
  CHECK(makePlan(s, nodes, simulated));
  nodes[1].inventory.hostname = "vm-ns2";  // a network namespace (or container) of its own name
  CHECK(makePlan(s, nodes, context()));
  nodes[1].inventory.hostname = "vm";
  nodes[1].inventory.pid_ns = "4026532999";  // a container on the host's name and network, its own GPUs
  CHECK(makePlan(s, nodes, context()));
  nodes[1].inventory.pid_ns.clear();
  nodes[1].inventory.hostname = "vm";
  nodes[1].inventory.boot_id = "0f5d8a7e-1111-4b87-9f0b-1d2a3c4b5e6f";  // another machine of the same name
  CHECK(makePlan(s, nodes, context()));
}

TEST_CASE("per-rank variables cannot be exported but job-wide ones can") {
  JobSpec s = cpuJob();
  s.launcher = LauncherKind::local;
  s.exports = {"RANK=3"};
  auto bad = setUpJob(s, {}, false);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == Errc::usage);
  s.exports = {"MASTER_PORT=http"};
  CHECK_FALSE(setUpJob(s, {}, false));
  s.exports = {"MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"};
  CHECK(setUpJob(s, {}, false));
  JobSpec both = cpuJob();
  both.procs_per_node = 0;
  both.launcher = LauncherKind::local;
  both.nproc_per_node_word = "gpu";
  both.total_ranks = 8;
  CHECK_FALSE(setUpJob(both, {}, false));
}

namespace {

// A two-node Slurm allocation's environment, with its SLURM_NTASKS_PER_NODE.
std::map<std::string, std::string> slurmAllocation(const std::string& ntasks_per_node) {
  return {{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "gpu[01-02]"}, {"SLURM_NTASKS_PER_NODE", ntasks_per_node}};
}

JobSpec offlineDryRun() {
  JobSpec s;
  s.argv = {"true"};
  s.dry_run = true;
  s.offline = true;
  return s;
}

}  // namespace

TEST_CASE("inside a Slurm allocation the offline plan uses its nodes and its ntasks-per-node") {
  const auto env = slurmAllocation("4");
  JobSpec s = offlineDryRun();
  auto setup = setUpJob(s, env, true);
  REQUIRE(setup);
  REQUIRE(setup->choice.nodes.size() == 2);
  CHECK(setup->choice.nodes[1].name == "gpu02");
  CHECK(setup->spec.procs_per_node == 4);
  CHECK(setup->plan_context.ranks_source == "slots=4 in SLURM_NTASKS_PER_NODE");
  s.gpus_per_node = 8;  // an explicit count is not capped by the allocation's tasks
  auto gpus = setUpJob(s, env, true);
  REQUIRE(gpus);
  CHECK(gpus->spec.ranksPerNode() == 8);
}

// `salloc -N2 -n3`, `#SBATCH --ntasks=64`: srun and mpirun run the allocation's tasks there; tlaunch
// ran one rank per node and said "no slots". Without -n (SLURM_NTASKS unset) the per-node count
// is a CPU count (--exclusive), and one task per node is a torchrun-style script's: neither taken.
TEST_CASE("inside a Slurm allocation of -n tasks, the ranks are its tasks, node by node") {
  const std::map<std::string, std::string> env = {
      {"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "gpu[01-02]"}, {"SLURM_NTASKS", "3"},
      {"SLURM_TASKS_PER_NODE", "2,1"}};
  auto setup = setUpJob(offlineDryRun(), env, true);
  REQUIRE(setup);
  CHECK(setup->spec.ranks_by_node == std::vector<int>{2, 1});
  CHECK(setup->plan_context.ranks_source.find("the allocation's tasks (SLURM_NTASKS=3)") != std::string::npos);
  auto cpus = env;
  cpus.erase("SLURM_NTASKS");
  cpus["SLURM_TASKS_PER_NODE"] = "4(x2)";  // --exclusive: CPUs, not tasks
  auto exclusive = setUpJob(offlineDryRun(), cpus, true);
  REQUIRE(exclusive);
  CHECK(exclusive->plan_context.ranks_source.find("tasks") == std::string::npos);
  auto per_node = env;
  per_node["SLURM_NTASKS"] = "2";
  per_node["SLURM_TASKS_PER_NODE"] = "1(x2)";
  auto torchrun_style = setUpJob(offlineDryRun(), per_node, true);
  REQUIRE(torchrun_style);
  CHECK(torchrun_style->plan_context.ranks_source.find("tasks") == std::string::npos);
}

TEST_CASE("--ntasks-per-node=1 (one launcher per node, torchrun's way) and GPU lists leave the count to the GPUs") {
  // README: under Slurm with GPUs and without -g/-p, one rank per GPU given. The allocation of
  // a torchrun script has one task per node; it was taken as one rank per node.
  auto one = setUpJob(offlineDryRun(), slurmAllocation("1"), true);
  REQUIRE(one);
  CHECK(one->spec.procs_per_node == 0);
  CHECK(one->plan_context.ranks_source.find("SLURM_NTASKS_PER_NODE") == std::string::npos);
  // A GPU list of yours says the count more precisely than the allocation's tasks.
  JobSpec listed = offlineDryRun();
  listed.include = "gpu01:2,3";
  auto chosen = setUpJob(listed, slurmAllocation("4"), true);
  REQUIRE(chosen);
  CHECK(chosen->plan_context.ranks_source.find("SLURM_NTASKS_PER_NODE") == std::string::npos);
}

TEST_CASE("a SLURM_NTASKS_PER_NODE that is not a sane count is not taken as the slots") {
  // Slurm writes "8(x3),4" when the nodes differ: its first count is taken. Anything else
  // unusable (garbage, zero, beyond the per-node bound, beyond int) is ignored: the count is
  // left to the plan's default, as without the variable.
  for (const auto& [value, taken] : std::vector<std::pair<std::string, bool>>{
           {"8(x3),4", true}, {"abc", false}, {"2abc", false}, {"0", false}, {"-4", false}, {"4097", false},
           {"99999999999999999999", false}, {"", false}}) {
    INFO("SLURM_NTASKS_PER_NODE=" << value);
    auto setup = setUpJob(offlineDryRun(), slurmAllocation(value), true);
    REQUIRE(setup);
    CHECK(setup->spec.procs_per_node == (taken ? 8 : 0));
    CHECK((setup->plan_context.ranks_source.find("SLURM_NTASKS_PER_NODE") != std::string::npos) == taken);
  }
}

TEST_CASE("stdin goes to a rank of the job") {
  JobSpec s = cpuJob();
  s.stdin_rank = 2;  // two nodes x one rank: ranks 0-1
  auto plan = makePlan(s, plainNodes(), context());
  REQUIRE_FALSE(plan);
  CHECK(plan.error().code == Errc::usage);
  CHECK(plan.error().message == "--stdin 2: the job has ranks 0-1");
  s.stdin_rank = 1;
  CHECK(makePlan(s, plainNodes(), context()));
}

TEST_CASE("total ranks with an uneven last node: node-major and each node's own local size") {
  JobSpec s = cpuJob();
  s.procs_per_node = 2;
  s.total_ranks = 3;
  auto plan = makePlan(s, plainNodes(), context());
  REQUIRE(plan);
  CHECK(plan->world_size == 3);
  CHECK(plan->ranks_per_node == 2);
  REQUIRE(plan->nodes.size() == 2);
  REQUIRE(plan->nodes[1].ranks.size() == 1);
  const RankSpec& last = plan->nodes[1].ranks[0];
  CHECK(last.rank == 2);
  CHECK(last.rank / plan->ranks_per_node == 1);  // the session's dmodex routing: node of rank r
  CHECK(envValue(last.env, "LOCAL_WORLD_SIZE") == "1");
  CHECK(envValue(last.env, "WORLD_SIZE") == "3");
  CHECK(envValue(plan->nodes[0].ranks[1].env, "LOCAL_WORLD_SIZE") == "2");
  CHECK(plan->pmix.ranks_by_node[1] == std::vector<int>{2});
  CHECK(plan->nodes[1].pmix.this_node == 1);
  CHECK(plan->nodes[1].pmix.node_names.empty());  // the geometry is the plan's, sent once
  CHECK(renderPlanText(*plan).find("2 node(s) x 2 rank(s) (1 on the last), world size 3") != std::string::npos);
  s.total_ranks = 5;  // does not fit 2 nodes of 2
  CHECK_FALSE(makePlan(s, plainNodes(), context()));
}

TEST_CASE("RDMA present but broken is still refused: the recorded mlx4 capture with its port DOWN") {
  TempDir tmp{"tlaunch-capture", manyFilesBase()};
  auto root = extractCapture(kMlx4Tarball, tmp.path());
  if (!root) FAIL("fixture " << kMlx4Tarball << " missing");
  writeFile(*root / "sys/class/infiniband/mlx4_0/ports/1/state", "1: DOWN\n");
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i + 5);
    auto fabric = discoverFabric(root->string(), {liveIf("ib0", "10.1.0." + n), liveIf("eth0", "192.168.1." + n, 24)});
    REQUIRE(fabric);
    nodes.push_back(report(i, "node" + n, *fabric, "192.168.1." + n));
  }
  JobSpec s = cpuJob();
  s.preflight = PreflightMode::off;
  auto plan = makePlan(s, nodes, context());
  REQUIRE_FALSE(plan);
  CHECK(plan.error().code == Errc::fabric);
  CHECK(plan.error().message.find("mlx4_0:1") != std::string::npos);
  auto checked = makePlan(cpuJob(), nodes, context());
  REQUIRE_FALSE(checked);
  CHECK(checked.error().code == Errc::preflight);
}

TEST_CASE("-n with an uneven last node: that node's ranks get its cores split among them only") {
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i + 1);
    nodes.push_back(report(i, "node" + n, FabricBuilder().eth("eth0", "192.168.1." + n).build(), "192.168.1." + n));
  }
  JobSpec s = cpuJob();
  s.procs_per_node = 2;
  s.total_ranks = 3;
  s.bind = "core";
  auto plan = makePlan(s, nodes, context());
  REQUIRE(plan);
  REQUIRE(plan->world_size == 3);
  REQUIRE(plan->nodes[1].ranks.size() == 1);
  const auto& full = plan->nodes[0].ranks;
  const auto& last = plan->nodes[1].ranks.front();
  // Same topology on both nodes: the lone rank has what the two ranks of node1 have together.
  std::vector<int> both = full[0].cpus;
  both.insert(both.end(), full[1].cpus.begin(), full[1].cpus.end());
  std::sort(both.begin(), both.end());
  std::vector<int> alone = last.cpus;
  std::sort(alone.begin(), alone.end());
  CHECK(alone == both);
  CHECK(full[0].cpus.size() == full[1].cpus.size());
}

TEST_CASE("a relative --chdir is below the directory tlaunch runs in, on every node") {
  PlanContext ctx = context();
  ctx.cwd = "/proj/exp";
  JobSpec s = cpuJob();
  s.chdir = "run42/out";
  auto plan = makePlan(s, plainNodes(), ctx);
  REQUIRE(plan);
  REQUIRE_FALSE(plan->nodes.empty());
  for (const auto& n : plan->nodes) CHECK(n.cwd == "/proj/exp/run42/out");
  s.chdir = "/scratch/run42";
  plan = makePlan(s, plainNodes(), ctx);
  REQUIRE(plan);
  for (const auto& n : plan->nodes) CHECK(n.cwd == "/scratch/run42");
  s.chdir.clear();
  plan = makePlan(s, plainNodes(), ctx);
  REQUIRE(plan);
  for (const auto& n : plan->nodes) CHECK(n.cwd == "/proj/exp");
}

TEST_CASE("tlaunch topo: the map is shown even when the default plan does not fit") {
  // 16 V100s on 2 NUMA nodes of 2 cores each (trimmed): one rank per GPU does not fit.
  auto topo = loadTopology(std::string(TLAUNCH_FIXTURES_DIR) +
                           "/topologies/nvidia-dgx2h_16xV100-SXM3_nvml_trimmed-no-nics_hwloc-testsuite.xml");
  REQUIRE(topo);
  TopoView view = topoView(*topo, {});
  REQUIRE(view.plan_error);
  CHECK(view.plan_error->message ==
        "the default plan (16 ranks, one per GPU) does not fit this node: NUMA node 0 has 2 cores but 8 ranks are "
        "placed on it");
  CHECK(view.plan_error->hint.find("--dry-run --offline --topology-xml") != std::string::npos);  // flags topo lacks: not offered
  CHECK(view.report.find("NUMA") != std::string::npos);
  CHECK(view.report.find("GPU15") != std::string::npos);

  auto fits = loadTopology(std::string(TLAUNCH_FIXTURES_DIR) + "/" + kGpuTopology);
  REQUIRE(fits);
  CHECK_FALSE(topoView(*fits, {}).plan_error);
}

TEST_CASE("RoCE: the management ConnectX the daemons came in over is not the job's network or a data port") {
  // mlx5_0 eth0 192.168.1.x/24 at 25G (management, enumerated first), mlx5_1 eth2 10.10.0.x/16 at 400G.
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i + 5);
    FabricBuilder b =
        FabricBuilder().roce("mlx5_0", 1, "eth0", "192.168.1." + n).roce("mlx5_1", 1, "eth2", "10.10.0." + n, 16);
    b.port("mlx5_0", 1).rate_gbps = 25;
    b.port("mlx5_0", 1).rate = "25 Gb/sec (1X EDR)";
    b.port("mlx5_1", 1).rate_gbps = 400;
    b.port("mlx5_1", 1).rate = "400 Gb/sec (4X NDR)";
    nodes.push_back(report(i, "node" + n, b.build(), "192.168.1." + n));
  }
  JobSpec s = cpuJob();
  s.preflight_strict = true;  // a warning would refuse the job
  auto plan = makePlan(s, nodes, context());
  REQUIRE(plan);
  CHECK(plan->network->cidr == "10.10.0.0/16");
  CHECK(plan->master_addr == "10.10.0.5");
  const auto& env = plan->nodes[1].ranks[0].env;
  CHECK(envValue(env, "NCCL_IB_HCA") == "=mlx5_1:1");
  CHECK(envValue(env, "NCCL_SOCKET_IFNAME") == "=eth2");
  CHECK(envValue(env, "UCX_NET_DEVICES") == "mlx5_1:1");
  CHECK(envValue(env, "NCCL_IB_ADDR_RANGE") == "10.10.0.0/16");
  // The daemon judged mlx5_0:1's 25G against its 400G port; it is no data port of the job.
  const PreflightItem* slow = nullptr;
  for (const auto& i : plan->preflight_items)
    if (i.check == "rate" && i.node == "node6" && i.device == "mlx5_0:1") slow = &i;
  REQUIRE(slow);
  CHECK(slow->status == PreflightStatus::skip);
  CHECK(slow->found == "25 Gb/sec (1X EDR) (not a data port of the job's network 10.10.0.0/16)");
  CHECK(slow->fix.empty());
  CHECK(renderPlanText(*plan).find("check the cable") == std::string::npos);
}

TEST_CASE("a user's network variable that defeats the choice is one plan warning per variable, and in the JSON") {
  // Five IB nodes beside a management eth0.
  std::vector<NodeReport> nodes;
  for (int i = 0; i < 5; ++i) {
    const std::string n = std::to_string(i + 1);
    auto f =
        FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0." + n).eth("eth0", "192.168.1." + n).eth("lo", "127.0.0.1", 8);
    nodes.push_back(report(i, "node" + n, f.build(), "192.168.1." + n));
  }
  PlanContext c = context();
  c.user_env["NCCL_SOCKET_IFNAME"] = {"^docker,lo", "environment"};
  c.user_env["GLOO_SOCKET_IFNAME"] = {"ib0,eth0", "-x"};
  c.user_env["UCX_NET_DEVICES"] = {"mlx5_0:1", "-x"};  // only the data port: no conflict
  c.user_set = {"NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "UCX_NET_DEVICES"};
  c.base_env = {"NCCL_SOCKET_IFNAME=^docker,lo", "GLOO_SOCKET_IFNAME=ib0,eth0", "UCX_NET_DEVICES=mlx5_0:1"};
  JobSpec s = cpuJob();
  s.quiet = true;  // -q hides the banner (and its per-node WARNING lines), not the plan's warnings
  auto plan = makePlan(s, nodes, c);
  REQUIRE(plan);
  CHECK(plan->network->cidr == "10.1.0.0/16");
  std::vector<std::string> conflicts;
  for (const auto& w : plan->warnings)
    if (w.find("conflicts with the job's network") != std::string::npos) conflicts.push_back(w);
  REQUIRE(conflicts.size() == 2);
  CHECK(conflicts[0] ==
        "NCCL_SOCKET_IFNAME=^docker,lo (environment) conflicts with the job's network on 5 nodes: node1, node2, node3 "
        "and 2 more: also selects eth0 (not on the job's network 10.1.0.0/16): NCCL's bootstrap takes the first match "
        "in the kernel's interface order (--dry-run shows each node)");
  CHECK(conflicts[1].starts_with("GLOO_SOCKET_IFNAME=ib0,eth0 (-x) conflicts with the job's network on 5 nodes: "
                                 "node1, node2, node3 and 2 more: also names eth0"));
  CHECK(renderPlanText(*plan).find("warning: NCCL_SOCKET_IFNAME=^docker,lo (environment) conflicts") !=
        std::string::npos);

  const Json json = planToJson(*plan);
  const Json& env = json.at("network").at("env").at(4).at("env");
  std::map<std::string, std::string> conflictOf;
  for (const auto& e : env) conflictOf[e.at("name").get<std::string>()] = e.at("conflict").get<std::string>();
  CHECK(conflictOf["GLOO_SOCKET_IFNAME"] ==
        "also names eth0 (not on the job's network 10.1.0.0/16): every interface listed is used");
  CHECK(conflictOf["UCX_NET_DEVICES"].empty());
  CHECK(conflictOf["NCCL_IB_HCA"].empty());
  CHECK(json.at("warnings").size() == plan->warnings.size());

  SECTION("nodes whose conflicts differ are named with their own") {
    nodes[4] = report(4, "node5",
                      FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.5").eth("eno1", "192.168.1.5").build(),
                      "192.168.1.5");
    auto mixed = makePlan(s, nodes, c);
    REQUIRE(mixed);
    bool named = false;
    for (const auto& w : mixed->warnings)
      named = named || w.starts_with("NCCL_SOCKET_IFNAME=^docker,lo (environment) conflicts with the job's network on "
                                     "5 nodes: node1, node2, node3 and 1 more: also selects eth0 (not on the job's "
                                     "network 10.1.0.0/16): NCCL's bootstrap takes the first match in the kernel's "
                                     "interface order; and 1 more node (--dry-run shows each node)");
    CHECK(named);
  }
}

// A batch script that lists the allocation's nodes (--hosts $(scontrol show hostnames), a
// hostfile from SLURM_JOB_NODELIST) ran its daemons over ssh, outside the job's step: Slurm's
// GPUs and cgroups did not apply. Nodes of the allocation now start with srun in it; nodes
// outside it stay on ssh, with a warning naming them.
TEST_CASE("--hosts inside a Slurm allocation: srun for its nodes, ssh and a warning for others") {
  const std::map<std::string, std::string> env = {{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_NODELIST", "localhost"}};
  JobSpec s;
  s.argv = {"true"};
  s.hosts = "localhost";
  auto inside = chooseLauncher(s, env);
  REQUIRE(inside);
  CHECK(inside->kind == LauncherKind::slurm);
  CHECK(inside->notes.empty());
  s.hosts = "127.0.0.1";  // not a node of the allocation by Slurm's name
  auto outside = chooseLauncher(s, env);
  REQUIRE(outside);
  CHECK(outside->kind == LauncherKind::ssh);
  REQUIRE(outside->notes.size() == 1);
  CHECK_THAT(outside->notes[0], Catch::Contains("127.0.0.1 is not in Slurm allocation 7: the daemons start over ssh"));
  // The node by another name of its own (Slurm's gpu01 as gpu01.cluster.example): in the
  // allocation, so no warning, but srun would not know that name: ssh. Addresses are not names.
  const std::map<std::string, std::string> gpus = {{"SLURM_JOB_ID", "8"}, {"SLURM_JOB_NODELIST", "gpu[01-02],10"}};
  std::vector<std::string> notes;
  HostEntry fqdn;
  fqdn.name = "gpu01.cluster.example";
  CHECK(launcherForHostsInAllocation({fqdn}, s, gpus, notes) == LauncherKind::ssh);
  CHECK(notes.empty());
  HostEntry slurm_name;
  slurm_name.name = "gpu02";
  CHECK(launcherForHostsInAllocation({slurm_name}, s, gpus, notes) == LauncherKind::slurm);
  HostEntry address;
  address.name = "10.0.0.5";
  CHECK(launcherForHostsInAllocation({slurm_name, address}, s, gpus, notes) == LauncherKind::ssh);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("10.0.0.5 is not in Slurm allocation 8"));
  // ssh options of the user's, or a login of a hostfile's: ssh as asked.
  s.hosts = "localhost";
  s.ssh_flags_given = {"--ssh-option"};
  auto asked = chooseLauncher(s, env);
  REQUIRE(asked);
  CHECK(asked->kind == LauncherKind::ssh);
  // Outside an allocation, --hosts is ssh as always.
  s.ssh_flags_given.clear();
  auto plain = chooseLauncher(s, {});
  REQUIRE(plain);
  CHECK(plain->kind == LauncherKind::ssh);
}
