#pragma once
// What the RDMA pair-test unit tests share (preflight_pair_test.cc, preflight_pair_fabric_test.cc):
// fake HCAs joined into one fabric, quick write options, the fabric a daemon would report, and a
// loop that drives the frontend's coordinator and the nodes' agents through the real codec.
#include <chrono>
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "binding/fabric/fabric_json.h"
#include "binding/rdma/rdma_pair_protocol.h"
#include "binding/rdma/verbs_api.h"
#include "bootstrap/message.h"
#include "daemon/rdma_pair_agent.h"
#include "fabric_test_builder.h"
#include "launcher/rdma_pair_coordinator.h"
#include "preflight_fake_verbs.h"

namespace tlaunch::testing {


// `count` nodes, each a fake with one HCA (mlx5_0) whose ports are InfiniBand (LIDs differ per
// node) or RoCE (a RoCE v2 GID per node at index 3).
struct FakeCluster {
  std::vector<std::unique_ptr<FakeVerbs>> hcas;
  explicit FakeCluster(int count, int ports = 1, bool roce = false) {
    std::vector<FakeVerbs*> all;
    for (int n = 0; n < count; ++n) {
      auto fake = std::make_unique<FakeVerbs>();
      FakeVerbs::Device d{"mlx5_0", {}, false};
      for (int p = 0; p < ports; ++p) {
        FakeVerbs::Port port = FakeVerbs::ibPort(static_cast<std::uint32_t>(0x100 * (n + 1) + p));
        if (roce) {
          port.attr.link_layer = LinkLayer::ethernet;
          port.attr.lid = 0;
          for (int i = 0; i < 3; ++i) port.gids.push_back(GidBytes{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, static_cast<std::uint8_t>(i)});
          port.gids.push_back(GidBytes{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, static_cast<std::uint8_t>(n), static_cast<std::uint8_t>(p)});
        }
        d.ports.push_back(port);
      }
      fake->devices.push_back(d);
      all.push_back(fake.get());
      hcas.push_back(std::move(fake));
    }
    for (std::size_t i = 0; i < hcas.size(); ++i) hcas[i]->joinFabric(all, static_cast<std::uint32_t>(i));
  }
  FakeVerbs& operator[](std::size_t i) { return *hcas[i]; }
  bool clean() const {
    for (const auto& h : hcas)
      if (!h->live.empty() || !h->violations.empty()) return false;
    return true;
  }
};

inline RdmaEndpointSpec spec(int port = 1, int gid = -1) { return RdmaEndpointSpec{"mlx5_0", port, gid, 64 * 1024}; }

inline RdmaWriteOptions quick(std::uint32_t seed = 7) {
  RdmaWriteOptions o;
  o.seed = seed;
  o.iterations = 4;
  o.window = 2;
  o.latency_iterations = 3;
  o.timeout = std::chrono::milliseconds(50);
  return o;
}

// The fabric each daemon would report: IB (or RoCE) ports of mlx5_0 at `rate` Gb/s.
inline NodeFabric reportedFabric(int node, int ports, double rate, bool roce = false) {
  FabricBuilder b;
  for (int p = 1; p <= ports; ++p) {
    const std::string ip = "10." + std::to_string(p) + ".0." + std::to_string(node + 1);
    if (roce) b.roce("mlx5_0", p, "eth" + std::to_string(p), ip);
    else b.ib("mlx5_0", p, "ib" + std::to_string(p - 1), ip);
  }
  NodeFabric f = b.build();
  for (auto& d : f.devices)
    for (auto& port : d.ports) port.rate_gbps = rate;
  return f;
}

inline std::vector<PairTestNode> reportedNodes(int count, int ports, double rate, bool roce = false) {
  std::vector<PairTestNode> nodes;
  for (int n = 0; n < count; ++n) nodes.push_back({"node" + std::to_string(n + 1), reportedFabric(n, ports, rate, roce)});
  return nodes;
}

// Delivers the coordinator's messages to each node's agent and the replies back, both ways
// through the control plane's CBOR encoding, until the test is over.
inline void runPairTest(RdmaPairCoordinator& coordinator, std::vector<RdmaPairAgent>& agents) {
  auto wire = [](const nlohmann::json& m) {
    auto decoded = decodeMessage(encodeMessage(m));
    REQUIRE(decoded);
    return *decoded;
  };
  auto pending = coordinator.start();
  int rounds = 0;
  while (!pending.empty()) {
    REQUIRE(++rounds <= 4);
    std::vector<RdmaPairMessage> next;
    for (const auto& m : pending) {
      auto reply = agents[static_cast<std::size_t>(m.node)].handle(wire(m.msg));
      for (auto& n : coordinator.onReply(m.node, wire(reply))) next.push_back(std::move(n));
    }
    pending = std::move(next);
  }
  REQUIRE(coordinator.done());
}

inline std::vector<RdmaPairAgent> agentsFor(FakeCluster& cluster) {
  std::vector<RdmaPairAgent> agents;
  for (auto& h : cluster.hcas) agents.emplace_back(*h);
  return agents;
}

inline PairTestOptions smallTest() {
  PairTestOptions o;
  o.bytes = 64 * 1024;
  o.write = quick(11);
  return o;
}

// For tests that expect every pair to pass: the fake's bandwidth is this process's memcpy under
// whatever else the machine runs (ASan, a parallel ctest), so the rate bar is set where any
// machine clears it, and completions get time. The rate warning has its own test.
inline PairTestOptions passingTest() {
  PairTestOptions o = smallTest();
  o.min_rate_fraction = 1e-4;
  o.write.timeout = std::chrono::seconds(5);
  return o;
}

// For tests where one pair fails by design and the others must pass: the same rate bar as
// passingTest, the short write timeout of smallTest.
inline PairTestOptions smallTestAnyRate() {
  PairTestOptions o = smallTest();
  o.min_rate_fraction = 1e-4;
  return o;
}


}  // namespace tlaunch::testing
