// The verbs probe and the loopback self-test: against a fake HCA for the state machine and
// every error path, and against the real libibverbs on this machine (which has no HCA).
#include <catch2/catch.hpp>

#include "daemon/preflight_runner.h"
#include "binding/rdma/verbs_probe.h"
#include "binding/rdma/verbs_selftest.h"
#include "fabric_test_builder.h"
#include "preflight_fake_verbs.h"
#include "preflight_item_lookup.h"

using namespace tlaunch;
using namespace tlaunch::testing;

namespace {

FakeVerbs oneIbPort() {
  FakeVerbs fake;
  fake.devices.push_back(FakeVerbs::Device{"mlx5_0", {FakeVerbs::ibPort(0x12)}, false});
  return fake;
}

SelfTestOptions small(const std::string& device = "mlx5_0") {
  SelfTestOptions o;
  o.device = device;
  o.port = 1;
  o.bytes = size_t{64} * 1024;
  o.iterations = 8;
  o.window = 4;
  o.latency_iterations = 4;
  o.timeout = std::chrono::milliseconds(50);
  return o;
}

}  // namespace

TEST_CASE("self-test on InfiniBand: two QPs connected to each other, writes verified, all released") {
  FakeVerbs fake = oneIbPort();
  SelfTestResult r = runVerbsSelfTest(fake, small());
  CHECK(r.ok);
  CHECK(r.stage.empty());
  CHECK(r.port == "mlx5_0:1");
  CHECK(r.bytes_compared == size_t{64} * 1024);
  CHECK(r.bandwidth_gbps > 0);
  CHECK(r.latency_us > 0);
  CHECK(fake.writes == 1 + 8 + 4);
  REQUIRE(fake.rtrs.size() == 2);
  CHECK(fake.rtrs[0].dest_qpn != fake.rtrs[1].dest_qpn);  // each QP points at the other
  CHECK(fake.rtrs[0].dlid == 0x12);
  CHECK_FALSE(fake.rtrs[0].global);
  CHECK(fake.rtrs[0].path_mtu == 4096);
  CHECK(fake.violations.empty());
  CHECK(fake.live.empty());

  PreflightItem item = selfTestItem(r, "node1");
  CHECK(item.status == PreflightStatus::pass);
  CHECK(item.device == "mlx5_0:1");
  CHECK(item.found.rfind("64 KiB written and verified; ", 0) == 0);
}

TEST_CASE("self-test on RoCE routes with the port's own GID at the chosen index") {
  FakeVerbs fake;
  FakeVerbs::Port port;
  port.attr = VerbsPortAttr{4, 5, LinkLayer::ethernet, 0, 1024, 4};
  port.gids = {GidBytes{0xfe, 0x80}, GidBytes{0xfe, 0x80, 1}, *parseGid("::ffff:10.3.0.5"), *parseGid("::ffff:10.3.0.5")};
  fake.devices.push_back(FakeVerbs::Device{"mlx5_0", {port}, false});

  SelfTestOptions o = small();
  o.gid_index = 3;
  SelfTestResult r = runVerbsSelfTest(fake, o);
  CHECK(r.ok);
  REQUIRE_FALSE(fake.rtrs.empty());
  CHECK(fake.rtrs[0].global);
  CHECK(fake.rtrs[0].sgid_index == 3);
  CHECK(fake.rtrs[0].path_mtu == 1024);
  CHECK(fake.live.empty());

  o.gid_index = -1;
  SelfTestResult noGid = runVerbsSelfTest(fake, o);
  CHECK_FALSE(noGid.ok);
  CHECK(noGid.stage == "query_gid");
  CHECK(fake.live.empty());
}

TEST_CASE("a failure at any step names the step and releases everything created before it") {
  struct Case {
    const char* call;
    int occurrence;
    const char* stage;
  };
  const Case cases[] = {
      {"openDevice", 1, "open_device"}, {"queryPort", 1, "query_port"}, {"allocPd", 1, "alloc_pd"},
      {"regMr", 1, "reg_mr"},           {"regMr", 2, "reg_mr"},         {"createCq", 1, "create_cq"},
      {"createRcQp", 2, "create_qp"},   {"qpToInit", 2, "qp_init"},     {"qpToRtr", 1, "qp_rtr"},
      {"qpToRts", 2, "qp_rts"},         {"postRdmaWrite", 1, "post_write"}, {"postRdmaWrite", 5, "post_write"},
      {"pollCq", 1, "poll_cq"},
  };
  for (const auto& c : cases) {
    FakeVerbs fake = oneIbPort();
    fake.fail_call = c.call;
    fake.fail_occurrence = c.occurrence;
    SelfTestResult r = runVerbsSelfTest(fake, small());
    INFO("failing " << c.call << " #" << c.occurrence);
    CHECK_FALSE(r.ok);
    CHECK(r.stage == c.stage);
    CHECK_FALSE(r.error.empty());
    CHECK(fake.live.empty());
    CHECK(fake.violations.empty());
    PreflightItem item = selfTestItem(r, "node1");
    CHECK(item.status == PreflightStatus::fail);
    CHECK(item.found.rfind(std::string(c.stage) + ": ", 0) == 0);
    CHECK_FALSE(item.fix.empty());
  }
}

TEST_CASE("completion errors, lost completions and corrupted data are caught") {
  SECTION("error status") {
    FakeVerbs fake = oneIbPort();
    fake.completion = FakeVerbs::Completion::error;
    SelfTestResult r = runVerbsSelfTest(fake, small());
    CHECK(r.stage == "poll_cq");
    CHECK(r.error == "write 0 completed with status: transport retry counter exceeded");
    CHECK(fake.live.empty());
  }
  SECTION("no completion before the timeout") {
    FakeVerbs fake = oneIbPort();
    fake.completion = FakeVerbs::Completion::never;
    SelfTestResult r = runVerbsSelfTest(fake, small());
    CHECK(r.stage == "poll_cq");
    CHECK(r.error == "timed out waiting for 1 of 1 completions");
    CHECK(fake.live.empty());
  }
  SECTION("data differs after the write") {
    FakeVerbs fake = oneIbPort();
    fake.completion = FakeVerbs::Completion::corrupt;
    SelfTestResult r = runVerbsSelfTest(fake, small());
    CHECK(r.stage == "compare");
    CHECK(r.error == "byte 32768 of 65536 differs after the write");
    CHECK(fake.live.empty());
  }
}

TEST_CASE("a port that is not ACTIVE, or has no LID, stops the self-test before any QP") {
  FakeVerbs fake;
  fake.devices.push_back(FakeVerbs::Device{"mlx5_0", {FakeVerbs::ibPort(0x12, 1), FakeVerbs::ibPort(0)}, false});
  SelfTestResult down = runVerbsSelfTest(fake, small());
  CHECK(down.stage == "port_state");
  CHECK(down.error == "port state is 1, not ACTIVE (4)");
  SelfTestOptions o = small();
  o.port = 2;
  SelfTestResult noLid = runVerbsSelfTest(fake, o);
  CHECK(noLid.stage == "port_state");
  CHECK(noLid.error == "no LID assigned");
  CHECK(fake.live.empty());
}

TEST_CASE("self-test targets: ACTIVE ports, RoCE with NCCL's GID index") {
  NodeFabric f = FabricBuilder()
                     .ib("mlx5_0", 1, "ib0", "10.1.0.1")
                     .ib("mlx5_1", 1, "ib1", "10.2.0.1", 16, 1)
                     .roce("mlx5_2", 1, "ens1f0", "10.3.0.1")
                     .roce("mlx5_an0", 1, "enP1s1", "")  // no IPv4, no RoCE v2 GID: not the job's port
                     .build();
  auto targets = selfTestTargets(f);
  REQUIRE(targets.size() == 2);
  CHECK(targets[0].device == "mlx5_0");
  CHECK(targets[0].gid_index == -1);
  CHECK(targets[1].device == "mlx5_2");
  CHECK(targets[1].gid_index == 3);
}

TEST_CASE("self-test targets on InfiniBand send with the first full-membership P_Key entry") {
  NodeFabric f = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").ib("mlx5_1", 1, "ib1", "10.2.0.1").build();
  // A tenant's port: the default partition as a limited member at entry 0, its own partition at 2.
  f.devices[1].ports[0].pkeys = {{0, 0x7fff}, {2, 0x8001}};
  auto targets = selfTestTargets(f);
  REQUIRE(targets.size() == 2);
  CHECK(targets[0].pkey_index == 0);
  CHECK(targets[1].pkey_index == 2);

  FakeVerbs fake = oneIbPort();
  SelfTestOptions o = small();
  o.pkey_index = targets[1].pkey_index;
  CHECK(runVerbsSelfTest(fake, o).ok);
  CHECK(fake.pkey_indexes == std::vector<int>{2, 2});  // both QPs
}

TEST_CASE("verbs probe compared with sysfs") {
  NodeFabric sysfs = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").ib("mlx5_1", 1, "ib1", "10.2.0.1").build();
  sysfs.devices[0].ports[0].lid = 0x12;
  FakeVerbs fake;
  fake.devices.push_back(FakeVerbs::Device{"mlx5_0", {FakeVerbs::ibPort(0x12)}, false});
  fake.devices.push_back(FakeVerbs::Device{"mlx5_1", {FakeVerbs::ibPort(0x11)}, true});
  VerbsProbe probe = probeVerbs(fake);
  REQUIRE(probe.devices.size() == 2);
  CHECK(probe.devices[0].opened);
  CHECK(probe.devices[0].ports.at(0).attr.active_mtu == 4096);
  CHECK(portMtus(probe) == std::map<std::string, int>{{"mlx5_0:1", 4096}});
  CHECK(fake.live.empty());  // every opened device is closed again

  auto items = verbsProbeItems(probe, sysfs, "node1", false, true);
  REQUIRE(findItem(items, "verbs_devices"));
  CHECK(findItem(items, "verbs_devices")->status == PreflightStatus::pass);
  REQUIRE(findItem(items, "verbs_port", "mlx5_0:1"));
  CHECK(findItem(items, "verbs_port", "mlx5_0:1")->status == PreflightStatus::pass);
  REQUIRE(findItem(items, "verbs_devices", "mlx5_1"));
  CHECK(findItem(items, "verbs_devices", "mlx5_1")->status == PreflightStatus::fail);
  CHECK(findItem(items, "verbs_devices", "mlx5_1")->found == "ibv_open_device(mlx5_1) failed: Permission denied");

  SECTION("a port DOWN in verbs but ACTIVE in sysfs is flagged") {
    fake.devices[0].ports[0].attr.state = 1;
    auto changed = verbsProbeItems(probeVerbs(fake), sysfs, "node1", false, true);
    CHECK(findItem(changed, "verbs_port", "mlx5_0:1")->status == PreflightStatus::warn);
    CHECK(findItem(changed, "verbs_port", "mlx5_0:1")->found == "DOWN, InfiniBand, LID 0x12, MTU 4096");
  }
  SECTION("sysfs lists HCAs that libibverbs cannot see: the container trap") {
    FakeVerbs empty;
    auto trap = verbsProbeItems(probeVerbs(empty), sysfs, "node1", false, true);
    REQUIRE(trap.size() == 1);
    CHECK(trap[0].status == PreflightStatus::fail);
    CHECK(trap[0].found == "no RDMA device");
    CHECK(trap[0].expected == "libibverbs sees mlx5_0, mlx5_1 (listed in sysfs)");
  }
  SECTION("on a capture root the probe is reported, not compared") {
    auto skipped = verbsProbeItems(probe, sysfs, "node1", true, true);
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0].status == PreflightStatus::skip);
  }
}

TEST_CASE("the real libibverbs on this machine reports no RDMA device, cleanly") {
  auto api = makeIbverbsApi();
  VerbsProbe probe = probeVerbs(*api);
  if (!probe.devices.empty()) {
    WARN("this machine has RDMA devices; the no-device case is not exercised here");
    return;
  }
  CHECK(probe.no_device_reason.rfind("no RDMA device", 0) == 0);
  NodeFabric none;
  none.sysfs_root = "/";
  auto items = verbsProbeItems(probe, none, "node1", false, true);
  REQUIRE(items.size() == 1);
  CHECK(items[0].check == "verbs_devices");
  CHECK(items[0].status == PreflightStatus::fail);
  CHECK(items[0].found.rfind("no RDMA device", 0) == 0);
  auto tcp = verbsProbeItems(probe, none, "node1", false, false);
  CHECK(tcp[0].status == PreflightStatus::skip);

  SECTION("full preflight over no device: nothing to self-test, nothing crashes") {
    PreflightOptions o;
    o.node = "node1";
    o.level = PreflightLevel::full;
    o.expect_rdma = false;
    auto all = runNodePreflight(none, o, *api);
    CHECK(preflightPassed(all));
    CHECK(findItem(all, "rdma_devices")->status == PreflightStatus::skip);
    CHECK(findItem(all, "verbs_selftest") == nullptr);
  }
}

TEST_CASE("full preflight runs the self-test on each ACTIVE port through the given API") {
  NodeFabric f = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").build();
  f.devices[0].ports[0].lid = 0x12;
  FakeVerbs fake = oneIbPort();
  PreflightOptions o;
  o.node = "node1";
  o.level = PreflightLevel::full;
  o.host.memlock = MemlockLimit{true, true, 0, true, 0};
  VerbsProbe probe;
  auto items = runNodePreflight(f, o, fake, &probe);
  const PreflightItem* st = findItem(items, "verbs_selftest", "mlx5_0:1");
  REQUIRE(st);
  CHECK(st->status == PreflightStatus::pass);
  CHECK(probe.devices.size() == 1);
  CHECK(fake.live.empty());

  o.sysfs_root_is_capture = true;
  auto capture = runNodePreflight(f, o, fake);
  const PreflightItem* skipped = findItem(capture, "verbs_selftest");
  REQUIRE(skipped);
  CHECK(skipped->status == PreflightStatus::skip);
  CHECK(skipped->found.find("is a capture") != std::string::npos);
}
