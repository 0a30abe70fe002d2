#pragma once
// One side of the cross-node RDMA write test (FABRIC.md §4e, "two-node test"): a buffer, its
// MR, a CQ and one RC QP on one HCA port. The two sides learn each other's QP data through
// the frontend (the control plane), then the initiator writes into the target's buffer and the
// target compares what arrived with the pattern both sides derive from the same seed.
// Written against VerbsApi; every resource is released by the destructor, on every path.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "binding/rdma/verbs_api.h"
#include "binding/rdma/verbs_completion.h"

namespace tlaunch {

struct RdmaEndpointSpec {
  std::string device;  // "mlx5_0"
  int port = 1;
  int gid_index = -1;  // RoCE: the RoCE v2 GID to route with (required); ignored on InfiniBand
  std::size_t bytes = std::size_t{1} << 20;
  int pkey_index = 0;  // InfiniBand: a full-membership P_Key entry (SelfTestOptions::pkey_index)
};

// What the peer needs to connect to this endpoint and write into its buffer.
struct RdmaEndpointInfo {
  std::uint32_t lid = 0;
  bool global = false;  // RoCE: route by GID
  GidBytes gid{};
  std::uint32_t qpn = 0;
  int mtu = 0;  // the port's active MTU in bytes
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
  std::uint64_t size = 0;
  bool operator==(const RdmaEndpointInfo&) const = default;
};

struct RdmaWriteOptions {
  std::uint32_t seed = 1;
  int iterations = 64;            // bandwidth writes of the whole buffer
  int window = 16;                // writes in flight
  int latency_iterations = 100;   // 8-byte writes, one at a time
  std::chrono::milliseconds timeout{5000};  // per phase
};

struct RdmaWriteResult {
  double bandwidth_gbps = 0;
  double latency_us = 0;
  std::uint64_t bytes = 0;  // size of each write
};

template <class T>
using Staged = tl::expected<T, VerbsStageError>;

class RdmaEndpoint {
 public:
  static Staged<std::unique_ptr<RdmaEndpoint>> open(VerbsApi& api, const RdmaEndpointSpec& spec);
  RdmaEndpoint(const RdmaEndpoint&) = delete;
  RdmaEndpoint& operator=(const RdmaEndpoint&) = delete;
  ~RdmaEndpoint();

  const RdmaEndpointInfo& info() const { return info_; }
  // INIT → RTR (towards the peer, at the smaller of both MTUs) → RTS.
  Staged<void> connect(const RdmaEndpointInfo& peer);
  // Initiator: the seeded pattern into the peer's buffer, then bandwidth and latency.
  Staged<RdmaWriteResult> writeTo(const RdmaEndpointInfo& peer, const RdmaWriteOptions& options);
  // Target: the bytes that arrived, compared with the seeded pattern; the count compared.
  Staged<std::uint64_t> verify(std::uint32_t seed, std::uint64_t bytes) const;

 private:
  RdmaEndpoint(VerbsApi& api, const RdmaEndpointSpec& spec);

  VerbsApi& api_;
  RdmaEndpointSpec spec_;
  RdmaEndpointInfo info_;
  std::vector<std::uint8_t> buffer_;
  VerbsHandle context_ = 0, pd_ = 0, mr_ = 0, cq_ = 0, qp_ = 0;
  std::uint32_t lkey_ = 0;
  int window_ = 16;
};

// The byte pattern of a test write: differs per seed and per position.
void fillTestPattern(std::vector<std::uint8_t>& buffer, std::uint32_t seed);

}  // namespace tlaunch
