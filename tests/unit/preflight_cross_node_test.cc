// Cross-node consistency: rails, rates, MTUs and subnets, naming who differs.
#include <catch2/catch.hpp>

#include "binding/fabric/fabric_discovery.h"
#include "binding/preflight/cross_node_checks.h"
#include "fabric_test_builder.h"
#include "fabric_test_support.h"

using namespace tlaunch;
using namespace tlaunch::testing;

namespace {

// The first item of `check`, whatever its device.
const PreflightItem* firstOf(const std::vector<PreflightItem>& items, const std::string& check) {
  for (const auto& i : items)
    if (i.check == check) return &i;
  return nullptr;
}

std::vector<const PreflightItem*> all(const std::vector<PreflightItem>& items, const std::string& check) {
  std::vector<const PreflightItem*> out;
  for (const auto& i : items)
    if (i.check == check) out.push_back(&i);
  return out;
}

CrossNodeInput hdrNode(const std::string& name, const std::string& last) {
  return CrossNodeInput{name,
                        FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0." + last).ib("mlx5_1", 1, "ib1", "10.2.0." + last).build(),
                        {}};
}

}  // namespace

TEST_CASE("identical nodes pass every cross-node check") {
  std::vector<CrossNodeInput> nodes{hdrNode("node1", "1"), hdrNode("node2", "2"), hdrNode("node3", "3")};
  auto items = crossNodeChecks(nodes);
  REQUIRE(items.size() == 4);
  for (const auto& i : items) CHECK(i.status == PreflightStatus::pass);
  CHECK(firstOf(items, "cross_rails")->found == "InfiniBand x2");
  CHECK(firstOf(items, "cross_rate")->found == "200 Gb/sec (4X HDR) x2");
  CHECK(firstOf(items, "cross_mtu")->found == "IPoIB 2044");
  CHECK(firstOf(items, "cross_subnets")->found == "10.1.0.0/16, 10.2.0.0/16");
}

TEST_CASE("one node that differs is named, with what the others have") {
  std::vector<CrossNodeInput> nodes{hdrNode("node1", "1"), hdrNode("node2", "2"), hdrNode("node3", "3")};
  nodes[2].fabric.devices[1].ports[0].state = 1;                   // node3: one rail down
  nodes[1].fabric.interfaces[0].mtu = 65520;                       // node2: IPoIB connected-mode MTU
  auto items = crossNodeChecks(nodes);

  auto rails = all(items, "cross_rails");
  REQUIRE(rails.size() == 1);
  CHECK(rails[0]->status == PreflightStatus::warn);
  CHECK(rails[0]->node == "node3");
  CHECK(rails[0]->found == "InfiniBand x1");
  CHECK(rails[0]->expected == "InfiniBand x2 (as on node1,node2)");

  auto mtu = all(items, "cross_mtu");
  REQUIRE(mtu.size() == 1);
  CHECK(mtu[0]->status == PreflightStatus::fail);
  CHECK(mtu[0]->node == "node2");
  CHECK(mtu[0]->found == "IPoIB 2044, IPoIB 65520");
  CHECK_FALSE(mtu[0]->fix.empty());

  CHECK(firstOf(items, "cross_subnets")->node == "node3");  // its ib1 subnet is no longer a data port's
}

TEST_CASE("the two real captures: FDR and QDR nodes form two rate groups, both named") {
  TempDir tmp{"tlaunch-capture", manyFilesBase()};
  fs::create_directories(tmp.path() / "a");
  fs::create_directories(tmp.path() / "b");
  auto a = extractCapture(kMlx4Tarball, tmp.path() / "a");
  auto b = extractCapture(kQibTarball, tmp.path() / "b");
  if (!a || !b) {
    FAIL("sysfs fixtures missing (tests/fixtures is part of the repository)");
  }
  auto fdr1 = discoverFabric(a->string(), {liveIf("ib0", "10.1.0.1", 16)}).value();
  auto fdr2 = discoverFabric(a->string(), {liveIf("ib0", "10.1.0.2", 16)}).value();
  auto qdr1 = discoverFabric(b->string(), {liveIf("ib0", "10.1.0.3", 16)}).value();
  auto qdr2 = discoverFabric(b->string(), {liveIf("ib0", "10.1.0.4", 16)}).value();
  std::vector<CrossNodeInput> nodes{{"n1", fdr1, {}}, {"n2", fdr2, {}}, {"n3", qdr1, {}}, {"n4", qdr2, {}}};
  auto items = crossNodeChecks(nodes);
  auto rate = all(items, "cross_rate");
  REQUIRE(rate.size() == 1);
  CHECK(rate[0]->status == PreflightStatus::warn);
  CHECK(rate[0]->node == "n1,n2,n3,n4");
  CHECK(rate[0]->found == "n1,n2: 56 Gb/sec (4X FDR) x1; n3,n4: 40 Gb/sec (4X QDR) x1");
  CHECK(firstOf(items, "cross_rails")->status == PreflightStatus::pass);
  CHECK(firstOf(items, "cross_subnets")->status == PreflightStatus::pass);

  SECTION("three FDR nodes and one QDR: the QDR node is named") {
    nodes[2].fabric = fdr1;
    auto three = crossNodeChecks(nodes);
    auto r = all(three, "cross_rate");
    REQUIRE(r.size() == 1);
    CHECK(r[0]->node == "n4");
    CHECK(r[0]->expected == "56 Gb/sec (4X FDR) x1 (as on n1,n2,n3)");
  }
}

TEST_CASE("port MTUs from the verbs probe take part in the MTU check") {
  std::vector<CrossNodeInput> nodes{hdrNode("node1", "1"), hdrNode("node2", "2")};
  nodes[0].port_mtu = {{"mlx5_0:1", 4096}, {"mlx5_1:1", 4096}};
  nodes[1].port_mtu = {{"mlx5_0:1", 4096}, {"mlx5_1:1", 2048}};
  auto items = crossNodeChecks(nodes);
  const PreflightItem* mtu = firstOf(items, "cross_mtu");
  REQUIRE(mtu);
  CHECK(mtu->status == PreflightStatus::fail);
  CHECK(mtu->node == "node1,node2");  // two nodes, two values: both groups named
  CHECK(mtu->found == "node1: IPoIB 2044, port 4096; node2: IPoIB 2044, port 2048, port 4096");
}

TEST_CASE("an Ethernet port without a RoCE v2 GID on some nodes is no rail and its MTU does not count") {
  std::vector<CrossNodeInput> nodes{hdrNode("node1", "1"), hdrNode("node2", "2")};
  // node2 also has Azure's accelerated-networking VF: ACTIVE, no IPv4, netdev MTU 1500.
  FabricBuilder b;
  b.ib("mlx5_0", 1, "ib0", "10.1.0.2").ib("mlx5_1", 1, "ib1", "10.2.0.2").roce("mlx5_an0", 1, "enP1s1", "");
  nodes[1].fabric = b.build();
  auto items = crossNodeChecks(nodes);
  for (const auto& i : items) CHECK(i.status == PreflightStatus::pass);
  CHECK(firstOf(items, "cross_rails")->found == "InfiniBand x2");
  CHECK(firstOf(items, "cross_mtu")->found == "IPoIB 2044");
}

TEST_CASE("MTUs: a pkey child's with an address count, an IPoIB interface without one does not") {
  std::vector<CrossNodeInput> nodes{hdrNode("node1", "1"), hdrNode("node2", "2"), hdrNode("node3", "3")};
  for (auto& node : nodes) {  // the job's address moves from ib0 to its child ib0.8001
    NetInterface& ib0 = node.fabric.interfaces[0];
    REQUIRE(ib0.name == "ib0");
    NetInterface child = ib0;
    child.name = "ib0.8001";
    child.mtu = 4092;
    ib0.ipv4.clear();
    node.fabric.interfaces.push_back(child);
  }
  nodes[0].fabric.interfaces[0].mtu = 65520;     // node1's parent, which carries nothing: no matter
  nodes[2].fabric.interfaces.back().mtu = 2044;  // node3's child: what the job's IP traffic uses
  auto items = crossNodeChecks(nodes);
  auto mtu = all(items, "cross_mtu");
  REQUIRE(mtu.size() == 1);
  CHECK(mtu[0]->status == PreflightStatus::fail);
  CHECK(mtu[0]->node == "node3");
  CHECK(mtu[0]->found == "IPoIB 2044");
  CHECK(mtu[0]->expected == "IPoIB 2044, IPoIB 4092 (as on node1,node2)");
}

TEST_CASE("a fabric address on a pkey child (ib0.8001) counts among the node's subnets") {
  std::vector<CrossNodeInput> nodes{hdrNode("node1", "1"), hdrNode("node2", "2")};
  // node2: no address on ib0, the same subnet on its pkey child instead.
  NetInterface& ib0 = nodes[1].fabric.interfaces[0];
  REQUIRE(ib0.name == "ib0");
  NetInterface child = ib0;
  child.name = "ib0.8001";
  ib0.ipv4.clear();
  nodes[1].fabric.interfaces.push_back(child);
  auto items = crossNodeChecks(nodes);
  CHECK(firstOf(items, "cross_subnets")->status == PreflightStatus::pass);
  CHECK(firstOf(items, "cross_subnets")->found == "10.1.0.0/16, 10.2.0.0/16");
}
