// Placement beyond the recorded machines' manifests: requests it must refuse, CPU-only ranks,
// binding modes, and hand-made machines for the cases no recording has (GPUs of unknown
// locality, two HCAs under one switch, no Core objects). The manifests of recorded machines
// and the invariants checked on every fixture are in topology_plan_test.cc.
#include <hwloc.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "binding/topology/binding_manifest.h"
#include "binding/topology/cpu_list.h"
#include "binding/topology/hwloc_topology.h"
#include "binding/topology/placement.h"
#include "topology_test_fixtures.h"

using namespace tlaunch;

namespace {

// ---- Hand-made snapshots for cases no recording has ----

GpuDevice gpuAt(const std::string& busid, std::vector<std::string> path, int numa) {
  return GpuDevice{busid, std::nullopt, "NVIDIA", "", numa, std::move(path), {}};
}

HcaDevice hcaAt(const std::string& name, std::vector<std::string> path, int numa,
                std::vector<HcaPort> ports = {{1, 0, {}}}) {
  return HcaDevice{name, "", numa, std::move(path), std::move(ports)};
}

// NUMA nodes 0..n-1 with `cores` two-PU cores each.
TopologySnapshot machine(int numa_nodes, int cores) {
  TopologySnapshot t;
  t.source = "hand-made";
  int pu = 0;
  for (int n = 0; n < numa_nodes; ++n) {
    NumaNode node{n, n, 1ull << 30, {}};
    for (int c = 0; c < cores; ++c, pu += 2) node.cores.push_back({pu, pu + 1});
    t.numa_nodes.push_back(node);
  }
  return t;
}

}  // namespace

TEST_CASE("asking for more GPUs than a node has names the node and both numbers", "[topology][plan]") {
  auto path = test::topologyFixture("llnl-ipa20");
  if (path.empty()) return;
  auto topo = loadTopology(path);
  REQUIRE(topo.has_value());
  auto plan = planNodeBinding(*topo, {8, true, BindMode::core, 0, {}}, "n1");
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().code == Errc::resources);
  CHECK(plan.error().message == "node n1 has 4 GPUs but the job asks for 8 per node (-g 8)");
  CHECK_THAT(plan.error().hint, Catch::Contains("-g 4"));
}

TEST_CASE("cores per rank: taken from the rank's share, and refused when larger than the share", "[topology][plan]") {
  auto path = test::topologyFixture("ornl-summit");
  if (path.empty()) return;
  auto topo = loadTopology(path);
  REQUIRE(topo.has_value());
  auto plan = planNodeBinding(*topo, {6, true, BindMode::core, 2, {}}, "n1");
  REQUIRE(plan.has_value());
  CHECK(formatCpuList((*plan)[0].cpus) == "0-7");  // 2 SMT4 cores at the start of its 7-core share
  CHECK(formatCpuList((*plan)[1].cpus) == "28-35");
  auto too_many = planNodeBinding(*topo, {6, true, BindMode::core, 8, {}}, "n1");
  REQUIRE_FALSE(too_many.has_value());
  CHECK(too_many.error().code == Errc::resources);
  CHECK_THAT(too_many.error().message,
             Catch::Contains("node n1") && Catch::Contains("NUMA node 0 has 21 cores for 3 ranks (7 each)"));
  CHECK_THAT(too_many.error().hint, Catch::Contains("at most 7"));
}

TEST_CASE("more CPU-only ranks than a NUMA node has cores are refused clearly", "[topology][plan]") {
  TopologySnapshot t = machine(2, 2);
  auto plan = planNodeBinding(t, {6, false, BindMode::core, 0, {}}, "n7");
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().code == Errc::resources);
  CHECK(plan.error().message == "node n7: NUMA node 0 has 2 cores but 3 ranks are placed on it");
  // The same ranks without core binding are fine.
  CHECK(planNodeBinding(t, {6, false, BindMode::none, 0, {}}, "n7").has_value());
}

TEST_CASE("CPU-only ranks spread round-robin over NUMA nodes and then split cores", "[topology][plan]") {
  TopologySnapshot t = machine(2, 4);
  auto plan = planNodeBinding(t, {4, false, BindMode::core, 0, {}}, "n1");
  REQUIRE(plan.has_value());
  std::vector<std::string> cpus;
  for (const auto& b : *plan) cpus.push_back(std::to_string(b.numa) + ":" + formatCpuList(b.cpus));
  CHECK(cpus == std::vector<std::string>{"0:0-3", "1:8-11", "0:4-7", "1:12-15"});
}

// One rank on an 8-NUMA-node machine (SNC4 x 2 packages) was bound to NUMA node 0: 1/8 of the
// cores, and --cpus-per-rank could not ask for more.
TEST_CASE("fewer CPU-only ranks than NUMA nodes get equal runs of whole NUMA nodes", "[topology][plan]") {
  TopologySnapshot t = machine(8, 2);  // NUMA n has PUs 4n .. 4n+3
  auto one = planNodeBinding(t, {1, false, BindMode::core, 0, {}}, "n1");
  REQUIRE(one.has_value());
  CHECK(formatCpuList((*one)[0].cpus) == "0-31");
  CHECK((*one)[0].mem_nodes == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK((*one)[0].numa == -1);
  auto two = planNodeBinding(t, {2, false, BindMode::core, 0, {}}, "n1");
  REQUIRE(two.has_value());
  CHECK(formatCpuList((*two)[0].cpus) == "0-15");
  CHECK(formatCpuList((*two)[1].cpus) == "16-31");
  CHECK((*two)[1].mem_nodes == std::vector<int>{4, 5, 6, 7});
  auto three = planNodeBinding(t, {3, false, BindMode::core, 0, {}}, "n1");  // 2 NUMA nodes each, 2 left free
  REQUIRE(three.has_value());
  CHECK(formatCpuList((*three)[2].cpus) == "16-23");
  auto cores = planNodeBinding(t, {1, false, BindMode::core, 12, {}}, "n1");  // 12 of its 16 cores
  REQUIRE(cores.has_value());
  CHECK(formatCpuList((*cores)[0].cpus) == "0-23");
  auto too_many = planNodeBinding(t, {2, false, BindMode::core, 9, {}}, "n1");
  REQUIRE_FALSE(too_many.has_value());
  CHECK_THAT(too_many.error().message, Catch::Contains("local rank 0's NUMA nodes have 8 cores"));
  // As many ranks as NUMA nodes: one each, as before.
  auto eight = planNodeBinding(t, {8, false, BindMode::core, 0, {}}, "n1");
  REQUIRE(eight.has_value());
  CHECK((*eight)[7].numa == 7);
}

TEST_CASE("BindMode numa gives the whole NUMA node, none binds nothing but still pairs HCAs", "[topology][plan]") {
  auto path = test::topologyFixture("ornl-summit");
  if (path.empty()) return;
  auto topo = loadTopology(path);
  REQUIRE(topo.has_value());
  auto numa = planNodeBinding(*topo, {6, true, BindMode::numa, 0, {}}, "n1");
  REQUIRE(numa.has_value());
  CHECK(formatCpuList((*numa)[1].cpus) == "0-83");
  CHECK(formatCpuList((*numa)[4].cpus) == "88-171");
  CHECK((*numa)[4].mem_nodes == std::vector<int>{8});
  auto none = planNodeBinding(*topo, {6, true, BindMode::none, 0, {}}, "n1");
  REQUIRE(none.has_value());
  for (const auto& b : *none) {
    CHECK(b.cpus.empty());
    CHECK(b.mem_nodes.empty());
    CHECK(b.hca.has_value());
  }
}

TEST_CASE("two GPUs under one switch with two HCAs get different HCAs", "[topology][plan]") {
  TopologySnapshot t = machine(1, 8);
  const std::vector<std::string> sw{"hb:0000:00-0f", "0000:00:01.0", "0000:01:00.0"};
  auto below = [&](const std::string& port) {
    auto p = sw;
    p.push_back(port);
    return p;
  };
  t.gpus = {gpuAt("0000:03:00.0", below("0000:02:00.0"), 0), gpuAt("0000:04:00.0", below("0000:02:01.0"), 0),
            gpuAt("0000:07:00.0", below("0000:02:04.0"), 0), gpuAt("0000:08:00.0", below("0000:02:05.0"), 0)};
  t.hcas = {hcaAt("mlx5_0", below("0000:02:02.0"), 0), hcaAt("mlx5_1", below("0000:02:03.0"), 0)};
  auto two = planNodeBinding(t, {2, true, BindMode::core, 0, {}}, "n1");
  REQUIRE(two.has_value());
  CHECK((*two)[0].hca == std::optional<std::string>("mlx5_0:1"));
  CHECK((*two)[1].hca == std::optional<std::string>("mlx5_1:1"));
  CHECK((*two)[0].path == "PIX");
  auto four = planNodeBinding(t, {4, true, BindMode::core, 0, {}}, "n1");
  REQUIRE(four.has_value());
  std::map<std::string, int> uses;
  for (const auto& b : *four) ++uses[*b.hca];
  CHECK(uses == std::map<std::string, int>{{"mlx5_0:1", 2}, {"mlx5_1:1", 2}});
}

TEST_CASE("PCI distance classes follow the bridges", "[topology][plan]") {
  const std::string hb = "hb:0000:00-0f";
  // Same switch (downstream ports of one upstream port).
  CHECK(pciDistance({hb, "rp", "us", "ds1"}, 0, {hb, "rp", "us", "ds2"}, 0) == PciDistance::pix);
  // Two functions of one card behind one bridge.
  CHECK(pciDistance({hb, "rp"}, 0, {hb, "rp"}, 0) == PciDistance::pix);
  // One side behind a second-level switch.
  CHECK(pciDistance({hb, "rp", "us", "ds1", "us2", "ds3"}, 0, {hb, "rp", "us", "ds2"}, 0) == PciDistance::pxb);
  // Different root ports of one host bridge.
  CHECK(pciDistance({hb, "rp1"}, 0, {hb, "rp2", "us"}, 0) == PciDistance::phb);
  // Different host bridges.
  CHECK(pciDistance({hb}, 1, {"hb:0000:40-4f"}, 1) == PciDistance::node);
  CHECK(pciDistance({hb}, 0, {"hb:0000:40-4f"}, 1) == PciDistance::sys);
  CHECK(pciDistance({hb}, -1, {"hb:0000:40-4f"}, -1) == PciDistance::sys);
}

TEST_CASE("the HCA port is the first ACTIVE one, HCAs without an ACTIVE port are avoided", "[topology][plan]") {
  TopologySnapshot t = machine(1, 4);
  t.gpus = {gpuAt("0000:03:00.0", {"hb:0000:00-0f", "0000:00:01.0"}, 0)};
  t.hcas = {hcaAt("mlx5_0", {"hb:0000:00-0f", "0000:00:01.0"}, 0, {{1, 1, {}}}),
            hcaAt("mlx5_1", {"hb:0000:40-4f"}, 0, {{1, 1, {}}, {2, 4, {"ib1"}}})};
  auto plan = planNodeBinding(t, {1, true, BindMode::core, 0, {}}, "n1");
  REQUIRE(plan.has_value());
  CHECK((*plan)[0].hca == std::optional<std::string>("mlx5_1:2"));
  CHECK((*plan)[0].path == "NODE");
  // When no port is ACTIVE anywhere, the nearest HCA is still named (preflight reports the state).
  t.hcas[1].ports[1].state = 1;
  plan = planNodeBinding(t, {1, true, BindMode::core, 0, {}}, "n1");
  REQUIRE(plan.has_value());
  CHECK((*plan)[0].hca == std::optional<std::string>("mlx5_0:1"));
  CHECK((*plan)[0].path == "PIX");
}

TEST_CASE("GPUs of unknown locality go to the least-loaded NUMA node and stay disjoint", "[topology][plan]") {
  TopologySnapshot t = machine(2, 4);
  t.gpus = {gpuAt("0000:03:00.0", {}, 0), gpuAt("0000:04:00.0", {}, -1), gpuAt("0000:05:00.0", {}, -1)};
  auto plan = planNodeBinding(t, {3, true, BindMode::core, 0, {}}, "n1");
  REQUIRE(plan.has_value());
  CHECK((*plan)[0].numa == 0);
  CHECK((*plan)[1].numa == 1);
  CHECK((*plan)[2].numa == 0);
  CHECK(formatCpuList((*plan)[0].cpus) == "0-3");
  CHECK(formatCpuList((*plan)[2].cpus) == "4-7");
  CHECK(formatCpuList((*plan)[1].cpus) == "8-15");
}

TEST_CASE("a machine without Core objects binds PUs, one without CPUs fails unless binding is off",
          "[topology][plan]") {
  hwloc_topology_t raw = nullptr;
  hwloc_topology_init(&raw);
  REQUIRE(hwloc_topology_set_synthetic(raw, "pack:2 pu:3") == 0);
  REQUIRE(hwloc_topology_load(raw) == 0);
  const auto xml = std::filesystem::temp_directory_path() / ("tlaunch-nocore-" + std::to_string(getpid()) + ".xml");
  REQUIRE(hwloc_topology_export_xml(raw, xml.c_str(), 0) == 0);
  hwloc_topology_destroy(raw);
  auto topo = loadTopology(xml.string());
  std::filesystem::remove(xml);
  REQUIRE(topo.has_value());
  auto plan = planNodeBinding(*topo, {6, false, BindMode::core, 0, {}}, "n1");
  REQUIRE(plan.has_value());
  std::set<int> pus;
  for (const auto& b : *plan) {
    REQUIRE(b.cpus.size() == 1);
    pus.insert(b.cpus.front());
  }
  CHECK(pus.size() == 6);

  TopologySnapshot empty;
  empty.numa_nodes.push_back({0, 0, 0, {}});
  auto no_cpus = planNodeBinding(empty, {1, false, BindMode::core, 0, {}}, "n3");
  REQUIRE_FALSE(no_cpus.has_value());
  CHECK(no_cpus.error().code == Errc::topology);
  CHECK_THAT(no_cpus.error().message, Catch::Contains("node n3"));
  CHECK(planNodeBinding(empty, {1, false, BindMode::none, 0, {}}, "n3").has_value());
}

TEST_CASE("bad requests are usage errors", "[topology][plan]") {
  TopologySnapshot t = machine(1, 2);
  CHECK(planNodeBinding(t, {0, false, BindMode::core, 0, {}}, "n1").error().code == Errc::usage);
  CHECK(planNodeBinding(t, {1, false, BindMode::core, -1, {}}, "n1").error().code == Errc::usage);
  auto no_gpu = planNodeBinding(t, {1, true, BindMode::core, 0, {}}, "n1");
  REQUIRE_FALSE(no_gpu.has_value());
  CHECK(no_gpu.error().message == "node n1 has 0 GPUs but the job asks for 1 per node (-g 1)");
}
