// The cross-node RDMA write test across nodes: the frontend's coordinator driving one agent per
// node through the real message codec, and the cross-node preflight that runs it.
#include "launcher/cross_node_preflight.h"
#include "preflight_pair_support.h"

using namespace tlaunch;
using namespace tlaunch::testing;

TEST_CASE("four nodes: each writes to the next over the control plane, every pair passes") {
  FakeCluster cluster(4);
  auto agents = agentsFor(cluster);
  RdmaPairCoordinator coordinator(reportedNodes(4, 1, 1.0), passingTest());
  runPairTest(coordinator, agents);
  auto items = coordinator.items();
  REQUIRE(items.size() == 4);
  const char* expected[] = {"node1", "node2", "node3", "node4"};
  for (std::size_t i = 0; i < 4; ++i) {
    INFO(items[i].found);
    CHECK(items[i].check == "rdma_pair");
    CHECK(items[i].status == PreflightStatus::pass);
    CHECK(items[i].node == expected[i]);
    CHECK(items[i].device == std::string("mlx5_0:1 -> ") + expected[(i + 1) % 4] + " mlx5_0:1");
    CHECK_THAT(items[i].found, Catch::Contains("64 KiB verified on " + std::string(expected[(i + 1) % 4])) &&
                                   Catch::Contains("Gb/s (") && Catch::Contains("% of 1 Gb/s"));
  }
  for (std::size_t n = 0; n < 4; ++n) CHECK(cluster[n].writes == 1 + 4 + 3);  // each node sent once
  for (const auto& a : agents) CHECK(a.endpointCount() == 0);
  CHECK(cluster.clean());
}

TEST_CASE("two nodes with two rails: both directions, rail by rail, on RoCE too") {
  for (bool roce : {false, true}) {
    FakeCluster cluster(2, 2, roce);
    auto agents = agentsFor(cluster);
    RdmaPairCoordinator coordinator(reportedNodes(2, 2, 1.0, roce), passingTest());
    runPairTest(coordinator, agents);
    auto items = coordinator.items();
    REQUIRE(items.size() == 4);
    CHECK(items[0].device == "mlx5_0:1 -> node2 mlx5_0:1");
    CHECK(items[1].device == "mlx5_0:2 -> node2 mlx5_0:2");
    CHECK(items[2].device == "mlx5_0:1 -> node1 mlx5_0:1");
    CHECK(items[3].device == "mlx5_0:2 -> node1 mlx5_0:2");
    for (const auto& i : items) CHECK(i.status == PreflightStatus::pass);
    CHECK(cluster.clean());
  }
}

TEST_CASE("the pair test's queue pairs send with each port's first full-membership P_Key entry") {
  FakeCluster cluster(2);
  auto agents = agentsFor(cluster);
  auto nodes = reportedNodes(2, 1, 1.0);
  // Tenant ports: the default partition only as a limited member (entry 0), their own at 3.
  for (auto& node : nodes) node.fabric.devices.at(0).ports.at(0).pkeys = {{0, 0x7fff}, {3, 0x8001}};
  RdmaPairCoordinator coordinator(nodes, passingTest());
  runPairTest(coordinator, agents);
  for (const auto& item : coordinator.items()) CHECK(item.status == PreflightStatus::pass);
  for (std::size_t n = 0; n < 2; ++n) {
    REQUIRE(cluster[n].pkey_indexes.size() == 2);  // its sending and its receiving endpoint
    for (int index : cluster[n].pkey_indexes) CHECK(index == 3);
  }
  CHECK(cluster.clean());
}

TEST_CASE("a QP that cannot connect fails its pair, naming the node and port where it failed") {
  FakeCluster cluster(4);
  cluster[2].fail_call = "qpToRtr";  // node3's first RTR: its receiving end of node2 -> node3
  auto agents = agentsFor(cluster);
  RdmaPairCoordinator coordinator(reportedNodes(4, 1, 1.0), smallTestAnyRate());
  runPairTest(coordinator, agents);
  auto items = coordinator.items();
  REQUIRE(items.size() == 4);
  CHECK(items[0].status == PreflightStatus::pass);
  CHECK(items[1].status == PreflightStatus::fail);  // node2 -> node3
  CHECK(items[1].node == "node2");
  CHECK_THAT(items[1].found, Catch::StartsWith("node3 mlx5_0:1 qp_rtr: ") && Catch::Contains("Connection timed out"));
  CHECK_THAT(items[1].fix, Catch::Contains("same fabric and rail"));
  CHECK(items[2].status == PreflightStatus::pass);  // node3 -> node4: its sending QP connected
  CHECK(items[3].status == PreflightStatus::pass);
  CHECK(cluster.clean());
}

TEST_CASE("corrupted data is caught by the target's compare, naming the target") {
  FakeCluster cluster(3);
  cluster[1].completion = FakeVerbs::Completion::corrupt;  // node2's writes land damaged on node3
  auto agents = agentsFor(cluster);
  RdmaPairCoordinator coordinator(reportedNodes(3, 1, 1.0), smallTestAnyRate());
  runPairTest(coordinator, agents);
  auto items = coordinator.items();
  REQUIRE(items.size() == 3);
  CHECK(items[0].status == PreflightStatus::pass);
  REQUIRE(items[1].status == PreflightStatus::fail);
  CHECK_THAT(items[1].found, Catch::StartsWith("node3 mlx5_0:1 compare: byte "));
  CHECK(items[2].status == PreflightStatus::pass);
  CHECK(cluster.clean());
}

TEST_CASE("a device that will not open fails its pairs at open and everything is still released") {
  FakeCluster cluster(2);
  cluster[1].devices[0].open_fails = true;
  auto agents = agentsFor(cluster);
  RdmaPairCoordinator coordinator(reportedNodes(2, 1, 1.0), smallTest());
  runPairTest(coordinator, agents);
  auto items = coordinator.items();
  REQUIRE(items.size() == 2);
  for (const auto& i : items) {
    CHECK(i.status == PreflightStatus::fail);
    CHECK_THAT(i.found, Catch::StartsWith("node2 mlx5_0:1 open_device: "));
    CHECK_THAT(i.fix, Catch::Contains("/dev/infiniband"));
  }
  CHECK(cluster.clean());
  for (const auto& a : agents) CHECK(a.endpointCount() == 0);
}

TEST_CASE("bandwidth far below the port rate is a warning with the numbers") {
  FakeCluster cluster(2);
  auto agents = agentsFor(cluster);
  RdmaPairCoordinator coordinator(reportedNodes(2, 1, 1e9), smallTest());  // no fake reaches 1e9 Gb/s
  runPairTest(coordinator, agents);
  for (const auto& i : coordinator.items()) {
    CHECK(i.status == PreflightStatus::warn);
    CHECK_THAT(i.expected, Catch::Contains(">= 80% of 1000000000 Gb/s"));
    CHECK_THAT(i.fix, Catch::Contains("perfquery"));
  }
}

TEST_CASE("a node that does not answer for its endpoint fails the pair instead of hanging") {
  FakeCluster cluster(2);
  auto agents = agentsFor(cluster);
  RdmaPairCoordinator coordinator(reportedNodes(2, 1, 1.0), smallTest());
  auto first = coordinator.start();
  REQUIRE(first.size() == 2);
  for (const auto& m : first) {
    auto reply = agents[static_cast<std::size_t>(m.node)].handle(m.msg);
    if (m.node == 1) reply["eps"] = nlohmann::json::array();  // node2 says nothing about its endpoints
    auto next = coordinator.onReply(m.node, reply);
    if (m.node == 1) {
      // Nothing left to test: straight to the stage that releases node1's endpoints.
      REQUIRE(next.size() == 2);
      CHECK(next[0].msg["t"] == "rdma_verify");
    }
  }
  CHECK(coordinator.waitingFor() == std::vector<std::string>{"node1", "node2"});
  CHECK_THAT(coordinator.items()[0].found, Catch::Contains("no reply"));
}

TEST_CASE("nothing to pair: one node, no ports, or a reason given, each said as a skipped item") {
  RdmaPairCoordinator one(reportedNodes(1, 1, 100), {});
  CHECK(one.start().empty());
  CHECK(one.done());
  REQUIRE(one.items().size() == 1);
  CHECK(one.items()[0].status == PreflightStatus::skip);

  auto nodes = reportedNodes(3, 1, 100);
  nodes[1].fabric.devices.clear();
  RdmaPairCoordinator bare(nodes, {});
  auto first = bare.start();
  REQUIRE(first.size() == 2);  // node3 -> node1 is still tested
  auto items = bare.items();
  REQUIRE(items.size() == 3);
  CHECK(items[0].status == PreflightStatus::skip);
  CHECK(items[0].found == "node2 has no ACTIVE RDMA port to test");
  CHECK(items[1].status == PreflightStatus::skip);

  PairTestOptions capture;
  capture.skip_reason = "--sysfs-root points at a capture: no live HCA to write with";
  RdmaPairCoordinator skipped(reportedNodes(4, 1, 100), capture);
  CHECK(skipped.start().empty());
  REQUIRE(skipped.items().size() == 1);
  CHECK(skipped.items()[0].found == capture.skip_reason);
}

TEST_CASE("the daemon's agent over the real libibverbs: no device here, a clean failure at open") {
  auto api = makeIbverbsApi();
  auto names = api->deviceNames();
  if (names && !names->empty()) {
    WARN("this machine has RDMA devices; the no-device path is not exercised here");
    return;
  }
  RdmaPairAgent agent(*api);
  nlohmann::json open = {{"t", "rdma_open"},
                         {"eps", {{{"id", "p0s"}, {"device", "mlx5_0"}, {"port", 1}, {"gid_index", -1}, {"bytes", 4096}}}}};
  auto reply = agent.handle(open);
  CHECK(reply["t"] == "rdma_open_done");
  REQUIRE(reply["eps"].size() == 1);
  RdmaReply r = rdmaReplyFromJson(reply["eps"][0]);
  CHECK(r.id == "p0s");
  CHECK_FALSE(r.ok);
  CHECK(r.stage == "open_device");
  CHECK_FALSE(r.error.empty());
  CHECK(agent.endpointCount() == 0);
  // Later stages for an endpoint that never opened are refused, not crashed on.
  auto write = agent.handle({{"t", "rdma_write"}, {"eps", {{{"id", "p0s"}, {"seed", 1}}}}});
  CHECK(rdmaReplyFromJson(write["eps"][0]).stage == "protocol");
}

namespace {

std::vector<NodeReport> reportsWithFabric(int count) {
  std::vector<NodeReport> reports;
  for (int n = 0; n < count; ++n) {
    NodeReport r;
    r.index = n;
    r.name = "node" + std::to_string(n + 1);
    // Rate unknown (0): the fake's bandwidth is this process's memcpy, and this test is about
    // the order of the checks and the probes' rows, not the rate bar (tested above).
    r.inventory.fabric = reportedFabric(n, 1, 0);
    r.inventory.probe_port = 4000 + n;
    reports.push_back(std::move(r));
  }
  return reports;
}

}  // namespace

TEST_CASE("cross-node preflight: the RDMA pair test first, then tlaunch preflight's probes, as rows") {
  JobSpec spec;
  spec.preflight = PreflightMode::full;
  spec.preflight_only = true;
  spec.check_reachability = "all";
  PlanContext context;
  CrossNodePreflight cross(spec, context, nlohmann::json::object(), reportsWithFabric(3));
  auto first = cross.start();
  REQUIRE_FALSE(cross.done());
  REQUIRE(first.size() == 3);
  for (const auto& m : first) CHECK(m.msg["t"] == "rdma_open");
  CHECK_THAT(cross.waitingFor(), Catch::StartsWith("the RDMA write test (node1, node2, node3"));

  // Run the pair test against fakes, then answer the probes: node2 cannot reach node3.
  FakeCluster cluster(3);
  auto agents = agentsFor(cluster);
  std::vector<RdmaPairMessage> pending = first, probes;
  while (!pending.empty()) {
    std::vector<RdmaPairMessage> next;
    for (const auto& m : pending) {
      if (m.msg["t"] == "reach") {
        probes.push_back(m);
        continue;
      }
      for (auto& n : cross.onMessage(m.node, agents[static_cast<std::size_t>(m.node)].handle(m.msg))) next.push_back(n);
    }
    pending = std::move(next);
  }
  REQUIRE(probes.size() == 3);
  CHECK_THAT(cross.waitingFor(), Catch::StartsWith("the reachability probes"));
  for (const auto& p : probes) {
    const auto& targets = p.msg["targets"];
    REQUIRE(targets.size() == 2);  // all pairs: both other nodes, at their fabric addresses
    nlohmann::json results = nlohmann::json::array();
    for (const auto& t : targets) {
      CHECK_THAT(t["addr"].get<std::string>(), Catch::StartsWith("10.1.0."));
      const bool broken = p.node == 1 && t["node"] == "node3";
      results.push_back({{"node", t["node"]}, {"addr", t["addr"]}, {"port", t["port"]}, {"error", broken ? "timed out" : ""}});
    }
    CHECK(cross.onMessage(p.node, {{"t", "reached"}, {"results", results}}).empty());
  }
  REQUIRE(cross.done());
  std::vector<PreflightItem> pairs, reach;
  for (const auto& i : cross.items()) (i.check == "rdma_pair" ? pairs : reach).push_back(i);
  CHECK(pairs.size() == 3);
  for (const auto& p : pairs) CHECK(p.status == PreflightStatus::pass);
  REQUIRE(reach.size() == 3);
  for (const auto& r : reach) {
    INFO(r.node << ": " << r.found);
    if (r.node == "node2") {
      CHECK(r.status == PreflightStatus::fail);
      CHECK_THAT(r.found, Catch::StartsWith("cannot reach node3 at 10.1.0.3:4002 (timed out)"));
    } else {
      CHECK(r.status == PreflightStatus::pass);
    }
  }
}

TEST_CASE("cross-node preflight: a quick job asks the daemons nothing") {
  JobSpec spec;  // quick, a job: reachability is probed at prepare, not here
  PlanContext context;
  CrossNodePreflight cross(spec, context, nlohmann::json::object(), reportsWithFabric(2));
  CHECK(cross.start().empty());
  CHECK(cross.done());
  CHECK(cross.items().empty());
}
