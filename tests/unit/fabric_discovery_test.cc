// Fabric discovery over the real sysfs captures (extracted at test time) and small trees
// written by the test. Live state is injected, as a network namespace would provide it.
#include <catch2/catch.hpp>

#include "binding/fabric/fabric_discovery.h"
#include "fabric_test_support.h"

using namespace tlaunch;
using namespace tlaunch::testing;

namespace {

const RdmaDevice* findDevice(const NodeFabric& f, const std::string& name) {
  for (const auto& d : f.devices)
    if (d.name == name) return &d;
  return nullptr;
}

const NetInterface* findIf(const NodeFabric& f, const std::string& name) {
  for (const auto& i : f.interfaces)
    if (i.name == name) return &i;
  return nullptr;
}

}  // namespace

TEST_CASE("mlx4 capture: the FDR port, its GID and its IPoIB netdev ib0 are found") {
  TempDir tmp{"tlaunch-capture", manyFilesBase()};
  auto root = extractCapture(kMlx4Tarball, tmp.path());
  if (!root) {
    FAIL("fixture " << kMlx4Tarball << " missing under " << fixturesDir() << " (tests/fixtures is part of the repository)");
  }
  auto fabric = discoverFabric(root->string(), {liveIf("ib0", "10.1.0.5", 16), liveIf("lo", "127.0.0.1", 8)});
  REQUIRE(fabric);

  const RdmaDevice* mlx4 = findDevice(*fabric, "mlx4_0");
  REQUIRE(mlx4);
  CHECK(mlx4->pci_address == "0000:82:00.0");
  REQUIRE(mlx4->ports.size() == 1);
  const RdmaPort& port = mlx4->ports[0];
  CHECK(port.number == 1);
  CHECK(port.state == kPortStateActive);
  CHECK(port.state_name == "ACTIVE");
  CHECK(port.phys_state == kPhysStateLinkUp);
  CHECK(port.phys_state_name == "LinkUp");
  CHECK(port.link_layer == LinkLayer::infiniband);
  CHECK(port.rate == "56 Gb/sec (4X FDR)");
  CHECK(port.rate_gbps == 56);
  CHECK(port.has_lid);
  CHECK(port.lid == 0x3a4);
  // 128 entries in gids/, one configured; the rest are fe80:: with a zero tail.
  REQUIRE(port.gids.size() == 1);
  CHECK(port.gids[0].index == 0);
  CHECK(port.gids[0].gid == "fe80:0000:0000:0000:0002:c903:00f9:bfa1");
  CHECK(port.gids[0].type == GidType::unknown);  // this 2013 kernel has no gid_attrs
  CHECK_FALSE(port.gids[0].ipv4_mapped);
  CHECK(port.netdev == "ib0");
  CHECK(port.pkeys == std::vector<PkeyEntry>{{0, 0xffff}});  // 128 entries, one valid: the default partition

  const NetInterface* ib0 = findIf(*fabric, "ib0");
  REQUIRE(ib0);
  CHECK(ib0->pkey == 0xffff);
  CHECK(ib0->type == kArphrdInfiniband);  // from the capture, though the live ib0 is Ethernet
  CHECK(ib0->in_sysfs);
  CHECK(ib0->live);
  CHECK(ib0->up);
  CHECK(ib0->running);
  CHECK(ib0->rdma_device == "mlx4_0");
  CHECK(ib0->rdma_port == 1);
  CHECK(ib0->dev_port == 0);  // dev_id on this old kernel
  CHECK(ib0->ipoib_mode == "connected");
  CHECK(ib0->pci_address == "0000:82:00.0");
  REQUIRE(ib0->ipv4.size() == 1);
  CHECK(ib0->ipv4[0].address == "10.1.0.5");
  CHECK(ib0->ipv4[0].prefix == 16);

  // Interfaces of the capture that are not live here are kept, marked not live.
  const NetInterface* eth0 = findIf(*fabric, "eth0");
  REQUIRE(eth0);
  CHECK(eth0->type == kArphrdEther);
  CHECK_FALSE(eth0->live);
  CHECK_FALSE(eth0->up);
  CHECK(eth0->ipv4.empty());
  // Live-only interfaces keep their live facts.
  const NetInterface* lo = findIf(*fabric, "lo");
  REQUIRE(lo);
  CHECK(lo->live);
  CHECK(lo->loopback);
  // scif0 is a link into a part of /sys the capture left out: noted, not a device.
  CHECK(findDevice(*fabric, "scif0") == nullptr);
  bool noted = false;
  for (const auto& n : fabric->notes) noted = noted || n.rfind("scif0:", 0) == 0;
  CHECK(noted);
}

TEST_CASE("qib capture: the QDR port and ib0 are found, and ib0 absent live is not up") {
  TempDir tmp{"tlaunch-capture", manyFilesBase()};
  auto root = extractCapture(kQibTarball, tmp.path());
  if (!root) {
    FAIL("fixture " << kQibTarball << " missing (tests/fixtures is part of the repository)");
  }
  auto fabric = discoverFabric(root->string(), {});
  REQUIRE(fabric);
  const RdmaDevice* qib = findDevice(*fabric, "qib0");
  REQUIRE(qib);
  REQUIRE(qib->ports.size() == 1);
  CHECK(qib->ports[0].rate == "40 Gb/sec (4X QDR)");
  CHECK(qib->ports[0].rate_gbps == 40);
  CHECK(qib->ports[0].lid == 0x12a);
  CHECK(qib->ports[0].netdev == "ib0");
  const NetInterface* ib0 = findIf(*fabric, "ib0");
  REQUIRE(ib0);
  CHECK(ib0->rdma_device == "qib0");
  CHECK(ib0->in_sysfs);
  CHECK_FALSE(ib0->live);
  CHECK_FALSE(ib0->up);
  CHECK(ib0->mtu == 2044);  // from sysfs when not live
}

TEST_CASE("IPoIB netdevs are matched to their port by GID before dev_port") {
  TempDir tmp;
  SysfsTree t(tmp.path());
  t.addDevice("mlx5_0", "0000:17:00.0");
  t.addPort("mlx5_0", 1, "InfiniBand");
  t.addPort("mlx5_0", 2, "InfiniBand");
  const std::string gid1 = "fe80:0000:0000:0000:b859:9f03:00d4:1a01";
  const std::string gid2 = "fe80:0000:0000:0000:b859:9f03:00d4:1a02";
  t.addGid("mlx5_0", 1, 0, gid1);
  t.addGid("mlx5_0", 2, 0, gid2);
  // dev_port says port 1 for both, but the addresses carry each port's GID 0.
  t.addNetdev("ibp23s0", kArphrdInfiniband, "0000:17:00.0", 0, ipoibAddress(gid1));
  t.addNetdev("ibp23s0d1", kArphrdInfiniband, "0000:17:00.0", 0, ipoibAddress(gid2));
  // A pkey child copies its parent's address: same port, the parent stays the port's netdev.
  t.addNetdev("ibp23s0.8001", kArphrdInfiniband, "0000:17:00.0", 0, ipoibAddress(gid1));

  auto fabric = discoverFabric(tmp.path().string(), {});
  REQUIRE(fabric);
  CHECK(findIf(*fabric, "ibp23s0")->rdma_port == 1);
  CHECK(findIf(*fabric, "ibp23s0d1")->rdma_port == 2);
  CHECK(findIf(*fabric, "ibp23s0.8001")->rdma_port == 1);
  const RdmaDevice* dev = findDevice(*fabric, "mlx5_0");
  CHECK(dev->ports[0].netdev == "ibp23s0");
  CHECK(dev->ports[1].netdev == "ibp23s0d1");
}

TEST_CASE("without a GID in the address, dev_port + 1 names the port") {
  TempDir tmp;
  SysfsTree t(tmp.path());
  t.addDevice("mlx5_0", "0000:17:00.0");
  t.addPort("mlx5_0", 1, "InfiniBand");
  t.addPort("mlx5_0", 2, "InfiniBand");
  t.addNetdev("ib1", kArphrdInfiniband, "0000:17:00.0", 1, "");
  auto fabric = discoverFabric(tmp.path().string(), {});
  REQUIRE(fabric);
  CHECK(findIf(*fabric, "ib1")->rdma_device == "mlx5_0");
  CHECK(findIf(*fabric, "ib1")->rdma_port == 2);
}

TEST_CASE("an IPoIB netdev on another PCI function with no matching GID stays unmatched, with a note") {
  TempDir tmp;
  SysfsTree t(tmp.path());
  t.addDevice("mlx5_0", "0000:17:00.0");
  t.addPort("mlx5_0", 1, "InfiniBand");
  t.addGid("mlx5_0", 1, 0, "fe80:0000:0000:0000:b859:9f03:00d4:1a01");
  t.addNetdev("ib7", kArphrdInfiniband, "0000:99:00.0", 0, ipoibAddress("fe80:0000:0000:0000:0000:0000:0000:0777"));
  auto fabric = discoverFabric(tmp.path().string(), {});
  REQUIRE(fabric);
  CHECK(findIf(*fabric, "ib7")->rdma_device.empty());
  CHECK(findDevice(*fabric, "mlx5_0")->ports[0].netdev.empty());
  bool noted = false;
  for (const auto& n : fabric->notes) noted = noted || n.find("ib7: IPoIB interface matches no HCA port") == 0;
  CHECK(noted);
}

TEST_CASE("RoCE GID table: types, IPv4-mapped entries, ndevs, empty and unreadable entries") {
  TempDir tmp;
  SysfsTree t(tmp.path());
  t.addDevice("mlx5_0", "0000:3b:00.0");
  t.addPort("mlx5_0", 1, "Ethernet", "4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)", "0x0");
  t.addGid("mlx5_0", 1, 0, "fe80:0000:0000:0000:0ac0:ebff:fe12:3456", "IB/RoCE v1", "ens1f0");
  t.addGid("mlx5_0", 1, 1, "fe80:0000:0000:0000:0ac0:ebff:fe12:3456", "RoCE v2", "ens1f0");
  t.addGid("mlx5_0", 1, 2, ipv4Gid(10, 3, 0, 5), "IB/RoCE v1", "ens1f0");
  t.addGid("mlx5_0", 1, 3, ipv4Gid(10, 3, 0, 5), "RoCE v2", "ens1f0");
  t.addGid("mlx5_0", 1, 4, "0000:0000:0000:0000:0000:0000:0000:0000", "unreadable");
  t.addGid("mlx5_0", 1, 5, ipv4Gid(10, 3, 0, 6), "unreadable", "ens1f0");
  t.addNetdev("ens1f0", kArphrdEther, "0000:3b:00.0", 0, "08:c0:eb:12:34:56", 9000);

  auto fabric = discoverFabric(tmp.path().string(), {liveIf("ens1f0", "10.3.0.5", 24)});
  REQUIRE(fabric);
  const RdmaPort& port = findDevice(*fabric, "mlx5_0")->ports.at(0);
  CHECK(port.link_layer == LinkLayer::ethernet);
  REQUIRE(port.gids.size() == 5);  // the empty index 4 is left out
  CHECK(port.gids[0].type == GidType::ib_roce_v1);
  CHECK(port.gids[1].type == GidType::roce_v2);
  CHECK_FALSE(port.gids[1].ipv4_mapped);
  CHECK(port.gids[3].index == 3);
  CHECK(port.gids[3].type == GidType::roce_v2);
  CHECK(port.gids[3].ipv4_mapped);
  CHECK(port.gids[3].ipv4 == "10.3.0.5");
  CHECK(port.gids[3].ndev == "ens1f0");
  CHECK(port.gids[4].index == 5);
  CHECK(port.gids[4].type == GidType::unknown);  // read failed
  CHECK(port.netdev == "ens1f0");
  const NetInterface* ens = findIf(*fabric, "ens1f0");
  CHECK(ens->rdma_device == "mlx5_0");
  CHECK(ens->rdma_port == 1);
  CHECK(ens->mtu == 1500);  // the live MTU wins over sysfs
}

TEST_CASE("a sysfs root that is not a directory is an error naming it") {
  auto fabric = discoverFabric("/nonexistent/tlaunch-sysfs", {});
  REQUIRE_FALSE(fabric);
  CHECK(fabric.error().code == Errc::fabric);
  CHECK(fabric.error().message.find("/nonexistent/tlaunch-sysfs") != std::string::npos);
}

TEST_CASE("an empty root has no RDMA devices and keeps the live interfaces") {
  TempDir tmp;
  auto fabric = discoverFabric(tmp.path().string(), {liveIf("eth0", "192.168.1.5", 24)});
  REQUIRE(fabric);
  CHECK(fabric->devices.empty());
  REQUIRE(fabric->interfaces.size() == 1);
  CHECK(fabric->interfaces[0].type == kArphrdEther);
  CHECK_FALSE(fabric->interfaces[0].in_sysfs);
}

TEST_CASE("listLiveInterfaces reads this machine: loopback with 127.0.0.1/8") {
  auto live = listLiveInterfaces();
  REQUIRE(live);
  bool sawLo = false;
  for (const auto& l : *live) {
    if (l.name != "lo") continue;
    sawLo = true;
    CHECK(l.loopback);
    CHECK(l.up);
    CHECK(l.type == kArphrdLoopback);
    CHECK(l.mtu > 0);
    REQUIRE_FALSE(l.ipv4.empty());
    CHECK(l.ipv4[0].address == "127.0.0.1");
    CHECK(l.ipv4[0].prefix == 8);
  }
  CHECK(sawLo);
}

TEST_CASE("naturalLess orders device names by their numbers") {
  CHECK(naturalLess("mlx5_2", "mlx5_10"));
  CHECK_FALSE(naturalLess("mlx5_10", "mlx5_2"));
  CHECK(naturalLess("ib0", "ib0.8001"));
  CHECK(naturalLess("eth1", "ib0"));
}
