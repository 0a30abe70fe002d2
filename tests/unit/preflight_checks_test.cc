// Node-local preflight checks over the real captures and copies altered at test time.
#include <catch2/catch.hpp>

#include "binding/fabric/fabric_discovery.h"
#include "binding/preflight/preflight_checks.h"
#include "binding/preflight/preflight_host_facts.h"
#include "fabric_test_builder.h"
#include "fabric_test_support.h"
#include "preflight_item_lookup.h"

using namespace tlaunch;
using namespace tlaunch::testing;

namespace {

PreflightStatus statusOf(const std::vector<PreflightItem>& items, const std::string& check,
                         const std::string& device = "") {
  const PreflightItem* i = findItem(items, check, device);
  if (!i) FAIL("no item " << check << " " << device);
  return i->status;
}

MemlockLimit unlimited() { return MemlockLimit{true, true, 0, true, 0}; }

PreflightOptions captureOptions() {
  PreflightOptions o;
  o.node = "node1";
  o.sysfs_root_is_capture = true;
  o.host.memlock = unlimited();
  return o;
}

struct Capture {
  TempDir tmp{"tlaunch-capture", manyFilesBase()};
  std::optional<fs::path> root = extractCapture(kMlx4Tarball, tmp.path());
  NodeFabric discover(bool ib0Up = true) const {
    return discoverFabric(root->string(), {liveIf("ib0", "10.1.0.5", 16, ib0Up, ib0Up)}).value();
  }
  void set(const std::string& attr, const std::string& value) const {
    writeFile(*root / "sys/class/infiniband/mlx4_0/ports/1" / attr, value + "\n");
  }
};

}  // namespace

TEST_CASE("the mlx4 capture passes the quick checks that apply to it") {
  Capture c;
  if (!c.root) {
    FAIL("fixture " << kMlx4Tarball << " missing (tests/fixtures is part of the repository)");
  }
  PreflightOptions o = captureOptions();
  o.expect_rate_gbps = 56;
  auto items = localPreflightChecks(c.discover(), o);
  CHECK(statusOf(items, "rdma_devices") == PreflightStatus::pass);
  CHECK(findItem(items, "rdma_devices")->found == "mlx4_0");
  CHECK(statusOf(items, "port_state", "mlx4_0:1") == PreflightStatus::pass);
  CHECK(findItem(items, "port_state", "mlx4_0:1")->found == "ACTIVE (LinkUp)");
  CHECK(statusOf(items, "lid", "mlx4_0:1") == PreflightStatus::pass);
  CHECK(findItem(items, "lid", "mlx4_0:1")->found == "0x3a4");
  CHECK(statusOf(items, "rate", "mlx4_0:1") == PreflightStatus::pass);
  CHECK(statusOf(items, "netdev", "ib0") == PreflightStatus::pass);
  CHECK(findItem(items, "netdev", "ib0")->found == "ib0 10.1.0.5/16 up");
  CHECK(statusOf(items, "uverbs") == PreflightStatus::skip);  // a capture: nothing live to open
  CHECK(statusOf(items, "memlock") == PreflightStatus::pass);
  CHECK(findItem(items, "roce_gid", "mlx4_0:1") == nullptr);  // InfiniBand port
  CHECK(preflightPassed(items));
  for (const auto& i : items) {
    CHECK(i.node == "node1");
    if (i.status == PreflightStatus::pass || i.status == PreflightStatus::skip) CHECK(i.fix.empty());
  }
}

TEST_CASE("altered copies of the capture: port DOWN, LID 0, rate changed, ib0 down") {
  Capture c;
  if (!c.root) {
    FAIL("fixture missing (tests/fixtures is part of the repository)");
  }
  PreflightOptions o = captureOptions();

  SECTION("port DOWN: the only port, so the node fails") {
    c.set("state", "1: DOWN");
    c.set("phys_state", "2: Polling");
    auto items = localPreflightChecks(c.discover(), o);
    const PreflightItem* port = findItem(items, "port_state", "mlx4_0:1");
    REQUIRE(port);
    CHECK(port->status == PreflightStatus::fail);
    CHECK(port->found == "DOWN (Polling)");
    CHECK(port->expected == "ACTIVE (LinkUp)");
    CHECK(port->fix == "no link on mlx4_0:1: check the cable and the switch port (ibstat mlx4_0)");
    CHECK_FALSE(preflightPassed(items));
  }
  SECTION("INIT with the link up: no subnet manager") {
    c.set("state", "2: INIT");
    auto items = localPreflightChecks(c.discover(), o);
    CHECK(findItem(items, "port_state", "mlx4_0:1")->fix ==
          "the link is up but no subnet manager has configured mlx4_0:1: check opensm or the switch SM (sminfo)");
  }
  SECTION("LID 0") {
    c.set("lid", "0x0");
    auto items = localPreflightChecks(c.discover(), o);
    const PreflightItem* lid = findItem(items, "lid", "mlx4_0:1");
    REQUIRE(lid);
    CHECK(lid->status == PreflightStatus::fail);
    CHECK(lid->found == "0x0");
  }
  SECTION("LID 0xffff (unassigned)") {
    c.set("lid", "0xffff");
    CHECK(statusOf(localPreflightChecks(c.discover(), o), "lid", "mlx4_0:1") == PreflightStatus::fail);
  }
  SECTION("rate below --expect-rate is a warning") {
    c.set("rate", "40 Gb/sec (4X QDR)");
    o.expect_rate_gbps = 56;
    auto items = localPreflightChecks(c.discover(), o);
    const PreflightItem* rate = findItem(items, "rate", "mlx4_0:1");
    REQUIRE(rate);
    CHECK(rate->status == PreflightStatus::warn);
    CHECK(rate->found == "40 Gb/sec (4X QDR)");
    CHECK(rate->expected == "56 Gb/s (--expect-rate)");
    CHECK(preflightPassed(items));
  }
  SECTION("ib0 down: the node has no fabric address") {
    auto items = localPreflightChecks(c.discover(false), o);
    const PreflightItem* netdev = findItem(items, "netdev", "ib0");
    REQUIRE(netdev);
    CHECK(netdev->status == PreflightStatus::fail);
    CHECK(netdev->found == "ib0 is down");
    CHECK(netdev->fix == "ip link set ib0 up and give it an address on the fabric subnet");
  }
}

TEST_CASE("rates differing between a node's ports: the slower port is warned") {
  FabricBuilder b = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").ib("mlx5_1", 1, "ib1", "10.2.0.1");
  b.port("mlx5_1", 1).rate = "100 Gb/sec (4X EDR)";
  b.port("mlx5_1", 1).rate_gbps = 100;
  PreflightOptions o;
  o.host.memlock = unlimited();
  auto items = localPreflightChecks(b.build(), o);
  CHECK(statusOf(items, "rate", "mlx5_0:1") == PreflightStatus::pass);
  CHECK(statusOf(items, "rate", "mlx5_1:1") == PreflightStatus::warn);
  CHECK(findItem(items, "rate", "mlx5_1:1")->expected == "200 Gb/s (the node's fastest port)");
}

TEST_CASE("one DOWN port beside an ACTIVE one is a warning: NCCL skips it silently") {
  NodeFabric f = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").ib("mlx5_1", 1, "ib1", "", 16, 1).build();
  PreflightOptions o;
  o.host.memlock = unlimited();
  auto items = localPreflightChecks(f, o);
  CHECK(statusOf(items, "port_state", "mlx5_1:1") == PreflightStatus::warn);
  CHECK(findItem(items, "port_state", "mlx5_1:1")->fix.find("NCCL skips this port silently") != std::string::npos);
  CHECK(findItem(items, "lid", "mlx5_1:1") == nullptr);  // not checked on a port that is not ACTIVE
}

TEST_CASE("RoCE GID table with and without a RoCE v2 IPv4 entry (crafted sysfs)") {
  TempDir tmp;
  SysfsTree t(tmp.path());
  t.addDevice("mlx5_0", "0000:3b:00.0");
  t.addPort("mlx5_0", 1, "Ethernet", "4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)", "0x0");
  t.addGid("mlx5_0", 1, 0, "fe80:0000:0000:0000:0ac0:ebff:fe12:3456", "IB/RoCE v1", "ens1f0");
  t.addGid("mlx5_0", 1, 1, "fe80:0000:0000:0000:0ac0:ebff:fe12:3456", "RoCE v2", "ens1f0");
  t.addGid("mlx5_0", 1, 2, ipv4Gid(10, 3, 0, 5), "IB/RoCE v1", "ens1f0");
  t.addNetdev("ens1f0", kArphrdEther, "0000:3b:00.0", 0, "08:c0:eb:12:34:56", 9000);
  PreflightOptions o;
  o.host.memlock = unlimited();
  o.sysfs_root_is_capture = true;
  std::vector<LiveInterface> live{liveIf("ens1f0", "10.3.0.5", 24)};

  auto without = localPreflightChecks(discoverFabric(tmp.path().string(), live).value(), o);
  const PreflightItem* gid = findItem(without, "roce_gid", "mlx5_0:1");
  REQUIRE(gid);
  CHECK(gid->status == PreflightStatus::fail);
  CHECK(gid->found == "no RoCE v2 IPv4 GID (1 IPv4 RoCE v1, 2 IPv6/link-local)");
  CHECK(findItem(without, "lid", "mlx5_0:1") == nullptr);  // no LID on RoCE

  t.addGid("mlx5_0", 1, 3, ipv4Gid(10, 3, 0, 5), "RoCE v2", "ens1f0");
  auto with = localPreflightChecks(discoverFabric(tmp.path().string(), live).value(), o);
  CHECK(statusOf(with, "roce_gid", "mlx5_0:1") == PreflightStatus::pass);
  CHECK(findItem(with, "roce_gid", "mlx5_0:1")->found == "index 3 (RoCE v2, 10.3.0.5)");
  CHECK(statusOf(with, "netdev", "ens1f0") == PreflightStatus::pass);

  auto down = localPreflightChecks(discoverFabric(tmp.path().string(), {liveIf("ens1f0", "10.3.0.5", 24, false, false)}).value(), o);
  CHECK(statusOf(down, "netdev", "ens1f0") == PreflightStatus::fail);  // RoCE traffic needs its netdev
}

// The Azure HBv4 fixture (azure-hbv4-vm_*.xml): IPoIB on the IB HCA, and mlx5_an0, the
// accelerated-networking VF: Ethernet, ACTIVE, no GID, its netdev without IPv4 by design.
TEST_CASE("an ACTIVE Ethernet port without IPv4 beside a healthy IB port is ignored, not a failure") {
  Capture c;
  if (!c.root) {
    FAIL("fixture missing (tests/fixtures is part of the repository)");
  }
  SysfsTree t(*c.root);
  t.addDevice("mlx5_an0", "8f23:00:02.0");
  t.addPort("mlx5_an0", 1, "Ethernet", "4: ACTIVE", "5: LinkUp", "50 Gb/sec (2X HDR)", "0x0");
  t.addNetdev("enP36643s1", kArphrdEther, "8f23:00:02.0", 0, "00:0d:3a:f4:12:34", 1500);
  PreflightOptions o = captureOptions();
  auto discover = [&](bool ib0Addressed) {
    return discoverFabric(c.root->string(), {liveIf("ib0", ib0Addressed ? "10.1.0.5" : "", 16),
                                             liveIf("enP36643s1")}).value();
  };

  auto items = localPreflightChecks(discover(true), o);
  const PreflightItem* an = findItem(items, "roce_gid", "mlx5_an0:1");
  REQUIRE(an);
  CHECK(an->status == PreflightStatus::skip);
  CHECK(an->found == "not usable for RoCE: enP36643s1 has no IPv4 address; ignored, the job uses mlx4_0:1");
  CHECK(findItem(items, "netdev", "enP36643s1") == nullptr);
  CHECK(findItem(items, "rate", "mlx5_an0:1") == nullptr);
  CHECK(statusOf(items, "netdev", "ib0") == PreflightStatus::pass);
  CHECK(preflightPassed(items));

  SECTION("the IB port cannot carry the job either: the Ethernet port's failure stands") {
    auto none = localPreflightChecks(discover(false), o);
    CHECK(statusOf(none, "roce_gid", "mlx5_an0:1") == PreflightStatus::fail);
    CHECK(statusOf(none, "netdev", "enP36643s1") == PreflightStatus::fail);
    CHECK_FALSE(preflightPassed(none));
  }
  SECTION("the IB port DOWN: its state fails, the Ethernet port does not stand in for it") {
    c.set("state", "1: DOWN");
    auto down = localPreflightChecks(discover(true), o);
    CHECK(statusOf(down, "port_state", "mlx4_0:1") == PreflightStatus::fail);
    CHECK_FALSE(preflightPassed(down));
  }
  SECTION("--net tcp: no RDMA wanted, the port is ignored") {
    o.expect_rdma = false;
    auto tcp = localPreflightChecks(discover(false), o);
    CHECK(statusOf(tcp, "roce_gid", "mlx5_an0:1") == PreflightStatus::skip);
    CHECK(findItem(tcp, "roce_gid", "mlx5_an0:1")->found ==
          "not usable for RoCE: enP36643s1 has no IPv4 address; ignored (the job does not use RDMA)");
  }
}

TEST_CASE("a RoCE port without a v2 GID beside a healthy RoCE port is ignored") {
  NodeFabric f = FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.5").roce("mlx5_1", 1, "ens1f1", "").build();
  PreflightOptions o;
  o.host.memlock = unlimited();
  auto items = localPreflightChecks(f, o);
  CHECK(statusOf(items, "roce_gid", "mlx5_0:1") == PreflightStatus::pass);
  CHECK(statusOf(items, "roce_gid", "mlx5_1:1") == PreflightStatus::skip);
  CHECK(findItem(items, "roce_gid", "mlx5_1:1")->found ==
        "not usable for RoCE: ens1f1 has no IPv4 address; ignored, the job uses mlx5_0:1");
  CHECK(preflightPassed(items));
  // The only RoCE port: the fabric would be RoCE on that very port, so it fails.
  NodeFabric only = FabricBuilder().roce("mlx5_1", 1, "ens1f1", "").build();
  CHECK(statusOf(localPreflightChecks(only, o), "roce_gid", "mlx5_1:1") == PreflightStatus::fail);
}

// The job's address on a pkey child (ib0.8001) of the IPoIB parent, which has none: the
// network choice takes the child (it scans every IPoIB netdev of the port), so preflight must too.
TEST_CASE("an IPv4 address on a pkey child interface of the port passes the netdev check") {
  Capture c;
  if (!c.root) {
    FAIL("fixture missing (tests/fixtures is part of the repository)");
  }
  const fs::path parent = *c.root / "sys/class/net/ib0";
  const fs::path child = *c.root / "sys/class/net/ib0.8001";
  writeFile(child / "type", "32\n");
  writeFile(child / "mtu", "2044\n");
  writeFile(child / "dev_id", "0x0\n");
  writeFile(child / "mode", "datagram\n");
  writeFile(child / "address", readFile(parent / "address"));
  fs::create_directory_symlink(fs::canonical(parent / "device"), child / "device");
  auto fabric = discoverFabric(c.root->string(), {liveIf("ib0"), liveIf("ib0.8001", "10.1.0.5", 16)}).value();
  REQUIRE(fabric.findInterface("ib0.8001"));
  REQUIRE(fabric.findInterface("ib0.8001")->rdma_device == "mlx4_0");

  auto items = localPreflightChecks(fabric, captureOptions());
  const PreflightItem* netdev = findItem(items, "netdev", "ib0.8001");
  REQUIRE(netdev);
  CHECK(netdev->status == PreflightStatus::pass);
  CHECK(netdev->found == "ib0.8001 10.1.0.5/16 up");
  CHECK(findItem(items, "netdev", "ib0") == nullptr);
  CHECK(preflightPassed(items));
}

TEST_CASE("no RDMA device: a failure when RDMA is expected, a clean skip otherwise") {
  NodeFabric none;
  none.sysfs_root = "/";
  PreflightOptions o;
  o.node = "node7";
  auto expected = localPreflightChecks(none, o);
  const PreflightItem* dev = findItem(expected, "rdma_devices");
  REQUIRE(dev);
  CHECK(dev->status == PreflightStatus::fail);
  CHECK(dev->found == "no RDMA device");
  CHECK(dev->node == "node7");
  o.expect_rdma = false;
  auto tcp = localPreflightChecks(none, o);
  CHECK(statusOf(tcp, "rdma_devices") == PreflightStatus::skip);
  CHECK(findItem(tcp, "memlock") == nullptr);
  CHECK(preflightPassed(tcp));
}

TEST_CASE("memlock below the minimum fails with the fix that applies") {
  NodeFabric f = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").build();
  PreflightOptions o;
  o.host.memlock = MemlockLimit{true, false, 8u << 20, false, 8u << 20};
  const PreflightItem* m = nullptr;
  auto items = localPreflightChecks(f, o);
  m = findItem(items, "memlock");
  REQUIRE(m);
  CHECK(m->status == PreflightStatus::fail);
  CHECK(m->found == "8 MiB (hard 8 MiB)");
  CHECK(m->expected == "unlimited (at least 1024 MiB)");
  CHECK(m->fix.find("/etc/security/limits.conf") != std::string::npos);
  CHECK(m->fix.find("PropagateResourceLimitsExcept=MEMLOCK") != std::string::npos);

  o.host.memlock = MemlockLimit{true, false, 64u << 10, true, 0};
  items = localPreflightChecks(f, o);
  CHECK(findItem(items, "memlock")->fix == "run `ulimit -l unlimited` before tlaunch (the hard limit allows it)");

  o.host.memlock = MemlockLimit{true, false, std::uint64_t{4} << 30, false, std::uint64_t{4} << 30};
  CHECK(statusOf(localPreflightChecks(f, o), "memlock") == PreflightStatus::pass);

  CHECK(readMemlockLimit().known);  // this process's real limit can be read
}

TEST_CASE("GPUs against -g, and GPUDirect RDMA when GPUs and HCAs share the node") {
  Capture c;
  if (!c.root) {
    FAIL("fixture missing (tests/fixtures is part of the repository)");
  }
  PreflightOptions o = captureOptions();
  o.gpus_required = 8;
  o.gpus_found = 4;
  o.host.gpudirect_modules = findGpudirectModules(c.root->string());
  auto items = localPreflightChecks(c.discover(), o);
  CHECK(statusOf(items, "gpus") == PreflightStatus::fail);
  CHECK(findItem(items, "gpus")->found == "4 GPUs");
  CHECK(findItem(items, "gpus")->expected == "8 (-g 8)");
  CHECK(findItem(items, "gpus")->fix.find("at most 4 GPUs per node with -g") != std::string::npos);
  CHECK(statusOf(items, "gpudirect") == PreflightStatus::warn);  // the capture has no peermem
  o.gpus_found = 0;  // no GPU at all: "at most 0 GPUs" would be no advice
  CHECK(findItem(localPreflightChecks(c.discover(), o), "gpus")->fix.find("run CPU ranks with -p N") == 0);
  // No topology (a --topology-xml that cannot be read): that is the failure, not the driver.
  o.topology_error = "cannot read topology XML '/x.xml': No such file or directory";
  auto blind = localPreflightChecks(c.discover(), o);
  CHECK(statusOf(blind, "topology") == PreflightStatus::fail);
  CHECK(findItem(blind, "topology")->found == o.topology_error);
  CHECK(statusOf(blind, "gpus") == PreflightStatus::skip);
  o.topology_error.clear();
  o.gpus_found = 4;

  fs::create_directories(*c.root / "sys/module/nvidia_peermem");
  o.host.gpudirect_modules = findGpudirectModules(c.root->string());
  CHECK(o.host.gpudirect_modules == std::vector<std::string>{"nvidia_peermem (/sys/module/nvidia_peermem)"});
  o.gpus_required = 4;
  items = localPreflightChecks(c.discover(), o);
  CHECK(statusOf(items, "gpus") == PreflightStatus::pass);
  CHECK(statusOf(items, "gpudirect") == PreflightStatus::pass);

  fs::remove_all(*c.root / "sys/module/nvidia_peermem");
  writeFile(*c.root / "proc/modules", "ib_core 434176 8 - Live 0x0000000000000000\nnv_peer_mem 16384 0 - Live 0x0\n");
  CHECK(findGpudirectModules(c.root->string()) == std::vector<std::string>{"nv_peer_mem (/proc/modules)"});

  o.gpus_found = 0;
  o.gpus_required = 0;
  items = localPreflightChecks(c.discover(), o);
  CHECK(statusOf(items, "gpus") == PreflightStatus::skip);
  CHECK(statusOf(items, "gpudirect") == PreflightStatus::skip);
}

// The driver check reads what NVML said, not the fabric: a node without RDMA devices will do.
TEST_CASE("the NVIDIA driver: absent or not starting fails a GPU job and warns otherwise") {
  const NodeFabric fabric;
  PreflightOptions o;
  o.gpus_found = 1;
  auto items = localPreflightChecks(fabric, o);
  CHECK(findItem(items, "gpu_driver") == nullptr);  // no NVIDIA GPU on a live machine: nothing to say

  o.gpu_driver.consulted = true;
  o.gpu_driver.nvidia_gpus = 1;
  o.gpu_driver.nvml.state = NvmlReport::State::not_loaded;
  o.gpu_driver.nvml.error = "libnvidia-ml.so.1: cannot open shared object file: No such file or directory";
  o.gpus_required = 1;
  items = localPreflightChecks(fabric, o);
  CHECK(statusOf(items, "gpu_driver") == PreflightStatus::fail);
  CHECK(findItem(items, "gpu_driver")->found ==
        "1 NVIDIA GPU(s) on PCI, but NVML does not load: libnvidia-ml.so.1: cannot open shared object file: No such "
        "file or directory");
  CHECK(findItem(items, "gpu_driver")->fix.find("nvidia-smi") != std::string::npos);
  o.gpus_required = 0;  // ranks without GPUs (-p) can still run
  CHECK(statusOf(localPreflightChecks(fabric, o), "gpu_driver") == PreflightStatus::warn);

  o.gpu_driver.nvml.state = NvmlReport::State::init_failed;
  o.gpu_driver.nvml.error = "Driver/library version mismatch";
  o.gpus_required = 1;
  items = localPreflightChecks(fabric, o);
  CHECK(statusOf(items, "gpu_driver") == PreflightStatus::fail);
  CHECK(findItem(items, "gpu_driver")->found == "NVML does not start: Driver/library version mismatch");
  CHECK(findItem(items, "gpu_driver")->fix.find("reboot") != std::string::npos);
}

TEST_CASE("the NVIDIA driver: answering GPUs pass, GPUs it cannot query warn and are named") {
  const NodeFabric fabric;
  PreflightOptions o;
  o.gpus_required = 2;
  o.gpus_found = 3;
  o.gpu_driver.consulted = true;
  o.gpu_driver.nvml.state = NvmlReport::State::ok;
  o.gpu_driver.nvml.driver_version = "580.159.04";
  o.gpu_driver.nvidia_gpus = 4;
  o.gpu_driver.unlisted = {"0000:ca:00.0"};  // hidden from this container, or failed at boot
  auto items = localPreflightChecks(fabric, o);
  CHECK(statusOf(items, "gpu_driver") == PreflightStatus::pass);
  CHECK(findItem(items, "gpu_driver")->found ==
        "3 GPU(s) answer driver 580.159.04; 1 more on PCI that NVML does not list, left out: 0000:ca:00.0");
  CHECK(statusOf(items, "gpus") == PreflightStatus::pass);

  o.gpu_driver.nvml.device_errors = {"NVML device 3: GPU is lost"};
  items = localPreflightChecks(fabric, o);
  CHECK(statusOf(items, "gpu_driver") == PreflightStatus::warn);
  CHECK(findItem(items, "gpu_driver")->found.ends_with("; NVML device 3: GPU is lost"));
  CHECK(findItem(items, "gpu_driver")->fix.find("Xid") != std::string::npos);
  o.gpus_required = 4;  // more than answer: the GPU count fails the job
  CHECK(statusOf(localPreflightChecks(fabric, o), "gpus") == PreflightStatus::fail);
}

TEST_CASE("/dev/infiniband/uverbs* found through sysfs and opened for real") {
  Capture c;
  if (!c.root) {
    FAIL("fixture missing (tests/fixtures is part of the repository)");
  }
  TempDir dev;
  NodeFabric f = c.discover();
  auto missing = findUverbsNodes(f, c.root->string(), dev.path().string());
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].path == (dev.path() / "uverbs0").string());
  CHECK_FALSE(missing[0].accessible);
  CHECK(missing[0].error == "No such file or directory");

  writeFile(dev.path() / "uverbs0", "");
  auto present = findUverbsNodes(f, c.root->string(), dev.path().string());
  CHECK(present[0].accessible);

  PreflightOptions o = captureOptions();
  o.sysfs_root_is_capture = false;  // judge the facts as if they were live
  o.host.uverbs = missing;
  auto items = localPreflightChecks(f, o);
  CHECK(statusOf(items, "uverbs", "mlx4_0") == PreflightStatus::fail);
  CHECK(findItem(items, "uverbs", "mlx4_0")->fix.find("--device=/dev/infiniband") != std::string::npos);
  o.host.uverbs = present;
  CHECK(statusOf(localPreflightChecks(f, o), "uverbs", "mlx4_0") == PreflightStatus::pass);
}

TEST_CASE("NCCL environment traps: IB disabled, sockets forced, NCCL_SOCKET_IFNAME naming nothing") {
  NodeFabric f = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").eth("eth0", "192.168.1.1").build();
  PreflightOptions o;
  o.node = "node1";
  o.host.memlock = unlimited();
  o.nccl_conf = parseNcclConf("NCCL_IB_DISABLE=1\n", "/etc/nccl.conf");
  o.environment = {{"NCCL_NET", {"Socket", "environment"}}, {"NCCL_SOCKET_IFNAME", {"=ib9", "-x"}}};
  auto items = localPreflightChecks(f, o);
  std::vector<const PreflightItem*> traps;
  for (const auto& i : items)
    if (i.check == "nccl_env") traps.push_back(&i);
  REQUIRE(traps.size() == 2);
  CHECK(traps[0]->status == PreflightStatus::warn);
  CHECK(traps[0]->found == "NCCL_IB_DISABLE=1 (/etc/nccl.conf:1)");
  CHECK(traps[1]->found == "NCCL_NET=Socket (environment)");
  const PreflightItem* ifname = findItem(items, "nccl_socket_ifname");
  REQUIRE(ifname);
  CHECK(ifname->status == PreflightStatus::fail);
  CHECK(ifname->found == "NCCL_SOCKET_IFNAME==ib9 (-x) matches no running interface");

  o.environment = {{"NCCL_SOCKET_IFNAME", {"^docker,lo", "environment"}}};
  auto ok = localPreflightChecks(f, o);
  CHECK(findItem(ok, "nccl_socket_ifname")->found == "NCCL_SOCKET_IFNAME=^docker,lo (environment) selects ib0,eth0");

  o.environment.clear();
  o.nccl_conf = parseNcclConf("NCCL_SOCKET_IFNAME=eth9\n", "/etc/nccl.conf");
  CHECK(statusOf(localPreflightChecks(f, o), "nccl_socket_ifname") == PreflightStatus::skip);  // tlaunch overrides
  o.launcher_sets_nccl_env = false;
  CHECK(statusOf(localPreflightChecks(f, o), "nccl_socket_ifname") == PreflightStatus::fail);
}
