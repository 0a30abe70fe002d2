#include "daemon/rdma_pair_agent.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "binding/rdma/rdma_pair_protocol.h"

namespace tlaunch {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxBufferBytes = std::size_t{64} << 20;
constexpr int kMaxIterations = 10000;
constexpr long long kMaxTimeoutMs = 30000;

template <class T>
T field(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return fallback;
  return it->get<T>();
}

RdmaReply failed(std::string id, std::string stage, std::string error) {
  RdmaReply r;
  r.id = std::move(id);
  r.stage = std::move(stage);
  r.error = std::move(error);
  return r;
}

}  // namespace

json RdmaPairAgent::handle(const json& msg) {
  const std::string type = msg.value("t", "");
  json replies = json::array();
  const json none = json::array();
  const json& orders = msg.contains("eps") && msg["eps"].is_array() ? msg["eps"] : none;
  for (const auto& order : orders) {
    const std::string id = order.is_object() ? order.value("id", "") : "";
    RdmaReply reply;
    reply.id = id;
    auto slot = endpoints_.find(id);
    if (id.empty()) {
      reply = failed(id, "protocol", "an order without an endpoint id");
    } else if (type == "rdma_open") {
      RdmaEndpointSpec spec;
      spec.device = order.value("device", "");
      spec.port = field(order, "port", 1);
      spec.gid_index = field(order, "gid_index", -1);
      spec.pkey_index = std::clamp(field(order, "pkey_index", 0), 0, 0xffff);  // a table entry's index
      // Bounded whatever the order says: this is a check, not a benchmark.
      spec.bytes = std::clamp<std::size_t>(field<std::size_t>(order, "bytes", spec.bytes), 8, kMaxBufferBytes);
      auto opened = RdmaEndpoint::open(api_, spec);
      if (!opened) {
        reply = failed(id, opened.error().stage, opened.error().error);
      } else {
        reply.ok = true;
        reply.info = (*opened)->info();
        endpoints_[id].endpoint = std::move(*opened);
      }
    } else if (slot == endpoints_.end()) {
      reply = failed(id, "protocol", "no endpoint " + id + " is open on this node");
    } else if (type == "rdma_connect") {
      auto peer = rdmaInfoFromJson(order.contains("peer") ? order["peer"] : json());
      if (!peer) {
        reply = failed(id, "protocol", peer.error().message);
      } else if (auto c = slot->second.endpoint->connect(*peer); !c) {
        reply = failed(id, c.error().stage, c.error().error);
      } else {
        reply.ok = true;
        slot->second.peer = *peer;
        slot->second.connected = true;
      }
    } else if (type == "rdma_write") {
      RdmaWriteOptions o;
      o.seed = field(order, "seed", o.seed);
      o.iterations = std::clamp(field(order, "iterations", o.iterations), 0, kMaxIterations);
      o.window = field(order, "window", o.window);
      o.latency_iterations = std::clamp(field(order, "latency_iterations", o.latency_iterations), 0, kMaxIterations);
      o.timeout = std::chrono::milliseconds(
          std::clamp<long long>(field<long long>(order, "timeout_ms", o.timeout.count()), 1, kMaxTimeoutMs));
      if (!slot->second.connected) {
        reply = failed(id, "protocol", "endpoint " + id + " was never connected");
      } else if (auto w = slot->second.endpoint->writeTo(slot->second.peer, o); !w) {
        reply = failed(id, w.error().stage, w.error().error);
      } else {
        reply.ok = true;
        reply.bandwidth_gbps = w->bandwidth_gbps;
        reply.latency_us = w->latency_us;
        reply.bytes = w->bytes;
      }
    } else if (type == "rdma_verify") {
      auto v = slot->second.endpoint->verify(field<std::uint32_t>(order, "seed", 0), field<std::uint64_t>(order, "bytes", 0));
      if (!v) {
        reply = failed(id, v.error().stage, v.error().error);
      } else {
        reply.ok = true;
        reply.bytes = *v;
      }
    } else {
      reply = failed(id, "protocol", "unknown RDMA test stage " + type);
    }
    replies.push_back(rdmaReplyToJson(reply));
  }
  if (type == "rdma_verify") endpoints_.clear();  // the test is over on this node
  return {{"t", rdmaDoneType(type)}, {"eps", std::move(replies)}};
}

}  // namespace tlaunch
