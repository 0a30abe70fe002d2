#pragma once
// The messages of the cross-node RDMA write test, between the frontend (which pairs the
// nodes and relays QP data) and each daemon (which owns the endpoints). Four stages, each a
// request to every node taking part and one reply from each:
//   rdma_open    {eps:[{id, device, port, gid_index, bytes}]}   -> rdma_open_done {eps:[reply + info]}
//   rdma_connect {eps:[{id, peer:info}]}                          -> rdma_connect_done
//   rdma_write   {eps:[{id, seed, iterations, window, timeout_ms}]} -> rdma_write_done {eps:[reply + gbps]}
//   rdma_verify  {eps:[{id, seed, bytes}]}                        -> rdma_verify_done; endpoints released
// Parsing never throws: a malformed entry becomes a failed reply naming what was wrong.
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "binding/rdma/rdma_endpoint.h"
#include "tlaunch/result.h"

namespace tlaunch {

inline constexpr const char* kRdmaStages[] = {"rdma_open", "rdma_connect", "rdma_write", "rdma_verify"};

// One endpoint's answer to one stage.
struct RdmaReply {
  std::string id;
  bool ok = false;
  std::string stage;  // where it failed (VerbsStageError::stage)
  std::string error;
  RdmaEndpointInfo info;       // rdma_open
  double bandwidth_gbps = 0;   // rdma_write
  double latency_us = 0;       // rdma_write
  std::uint64_t bytes = 0;     // rdma_write: bytes per write; rdma_verify: bytes compared
};

nlohmann::json rdmaInfoToJson(const RdmaEndpointInfo& info);
Result<RdmaEndpointInfo> rdmaInfoFromJson(const nlohmann::json& j);

nlohmann::json rdmaReplyToJson(const RdmaReply& reply);
RdmaReply rdmaReplyFromJson(const nlohmann::json& j);

bool isRdmaStage(const std::string& type);           // "rdma_open", ...
std::string rdmaDoneType(const std::string& stage);  // "rdma_open" -> "rdma_open_done"

}  // namespace tlaunch
