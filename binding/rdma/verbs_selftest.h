#pragma once
// The full-level verbs self-test on one HCA port (FABRIC.md §4e): PD, two MRs, one CQ, two RC
// QPs connected to each other on the same port, RDMA writes, completions, a byte compare, then
// bandwidth and latency. Written against VerbsApi so a fake can drive the QP state machine
// and every error path; every resource is released on every path.
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "binding/preflight/preflight_item.h"
#include "binding/rdma/verbs_api.h"
#include "tlaunch/fabric.h"

namespace tlaunch {

struct SelfTestOptions {
  std::string device;       // "mlx5_0"
  int port = 1;
  int gid_index = -1;       // RoCE: the GID to route with (required); ignored on InfiniBand
  // InfiniBand: the first full-membership entry of the port's P_Key table. Entry 0 may be a
  // limited membership (a tenant's default partition), and two limited members cannot reach
  // each other: with it the loopback and pair tests would fail a healthy port.
  int pkey_index = 0;
  std::size_t bytes = std::size_t{1} << 20;  // per write, and the size of each buffer
  int iterations = 64;      // bandwidth writes
  int window = 16;          // writes in flight
  int latency_iterations = 100;  // 8-byte writes, one at a time
  std::chrono::milliseconds timeout{5000};  // for all completions of one phase
};

struct SelfTestResult {
  std::string port;    // "mlx5_0:1"
  bool ok = false;
  std::string stage;   // where it failed: open_device, query_port, port_state, query_gid, alloc_pd, reg_mr,
                       // create_cq, create_qp, qp_init, qp_rtr, qp_rts, post_write, poll_cq, compare
  std::string error;
  double bandwidth_gbps = 0;
  double latency_us = 0;
  std::size_t bytes_compared = 0;
};

SelfTestResult runVerbsSelfTest(VerbsApi& api, const SelfTestOptions& options);

// One target per ACTIVE InfiniBand/RoCE port; RoCE ports get the GID index NCCL would pick.
std::vector<SelfTestOptions> selfTestTargets(const NodeFabric& fabric);

// The one-line fix for a verbs test that failed at `stage` (SelfTestResult::stage).
std::string verbsStageFix(const std::string& stage);

// Check "verbs_selftest" for one result, with a one-line fix chosen by the failing stage.
PreflightItem selfTestItem(const SelfTestResult& result, const std::string& node);

}  // namespace tlaunch
