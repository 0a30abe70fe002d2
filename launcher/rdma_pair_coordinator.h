#pragma once
// The frontend's side of the cross-node RDMA write test (--preflight=full). Each node sends to
// the next one in rank order (a ring: every node sends once and receives once, at the same
// time), rail by rail (the k-th ACTIVE port with the k-th), and the frontend relays each
// endpoint's QP data to its peer through the four stages of rdma_pair_protocol.h. Pure:
// replies in, messages out; the caller sends them.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "binding/preflight/preflight_item.h"
#include "binding/rdma/rdma_endpoint.h"
#include "tlaunch/fabric.h"

namespace tlaunch {

struct PairTestNode {
  std::string name;
  NodeFabric fabric;
};

struct PairTestOptions {
  std::string skip_reason;  // non-empty: nothing is tested, one skipped item says why
  std::size_t bytes = std::size_t{1} << 20;
  RdmaWriteOptions write;
  double min_rate_fraction = 0.8;  // below this share of the slower port's rate: a warning
};

struct RdmaPairMessage {
  int node = 0;
  nlohmann::json msg;
};

class RdmaPairCoordinator {
 public:
  RdmaPairCoordinator(std::vector<PairTestNode> nodes, PairTestOptions options);
  // The first stage's messages; none (and done()) when there is nothing to test.
  std::vector<RdmaPairMessage> start();
  // A node's "rdma_*_done" reply; the next stage's messages once every node answered.
  std::vector<RdmaPairMessage> onReply(int node, const nlohmann::json& msg);
  bool done() const { return stage_ >= kStages; }
  // Names of the nodes the current stage still waits for.
  std::vector<std::string> waitingFor() const;
  // One "rdma_pair" item per pair (or one skipped item saying why nothing was tested).
  std::vector<PreflightItem> items() const;

 private:
  static constexpr int kStages = 4;
  struct Pair {
    int from = 0, to = 0;
    RdmaEndpointSpec send, recv;
    double rate_gbps = 0;  // the slower of both ports, 0 when unknown
    RdmaEndpointInfo send_info, recv_info;
    bool failed = false;
    std::string failure;  // "node2 mlx5_0:1 qp_rtr: ..."
    std::string failed_stage;
    double gbps = 0, latency_us = 0;
    std::uint64_t bytes = 0, verified = 0;
  };

  std::vector<RdmaPairMessage> stageMessages();
  void onEndpointReply(const std::string& stage, int node, const nlohmann::json& reply);
  void failPair(Pair& pair, int node, bool sender, const std::string& stage, const std::string& error);
  std::string endpointName(const Pair& pair, bool sender) const;

  std::vector<PairTestNode> nodes_;
  PairTestOptions options_;
  std::vector<Pair> pairs_;
  std::vector<PreflightItem> skipped_;
  int stage_ = 0;
  std::set<int> waiting_;
  std::set<std::string> answered_;  // endpoint ids that answered the current stage
};

}  // namespace tlaunch
