#pragma once
// The daemon's side of the cross-node RDMA write test: holds this node's endpoints between
// the stages the frontend drives (see rdma_pair_protocol.h) and answers each stage message.
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "binding/rdma/rdma_endpoint.h"

namespace tlaunch {

class RdmaPairAgent {
 public:
  explicit RdmaPairAgent(VerbsApi& api) : api_(api) {}
  // One stage message ("rdma_open", ...) in, its reply ("rdma_open_done", ...) out.
  // "rdma_write" blocks until the writes completed or timed out: call it off the event loop.
  // "rdma_verify" releases every endpoint once it has compared.
  nlohmann::json handle(const nlohmann::json& msg);
  std::size_t endpointCount() const { return endpoints_.size(); }

 private:
  struct Slot {
    std::unique_ptr<RdmaEndpoint> endpoint;
    RdmaEndpointInfo peer;
    bool connected = false;
  };

  VerbsApi& api_;
  std::map<std::string, Slot> endpoints_;
};

}  // namespace tlaunch
