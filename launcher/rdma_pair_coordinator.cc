#include "launcher/rdma_pair_coordinator.h"

#include <algorithm>
#include <map>

#include "binding/rdma/rdma_pair_protocol.h"
#include "binding/rdma/verbs_completion.h"
#include "binding/rdma/verbs_selftest.h"

namespace tlaunch {

using nlohmann::json;

namespace {

double portRate(const NodeFabric& fabric, const std::string& device, int port) {
  for (const auto& d : fabric.devices)
    if (d.name == device)
      for (const auto& p : d.ports)
        if (p.number == port) return p.rate_gbps;
  return 0;
}

RdmaEndpointSpec endpointSpec(const SelfTestOptions& rail, std::size_t bytes) {
  return RdmaEndpointSpec{rail.device, rail.port, rail.gid_index, bytes, rail.pkey_index};
}

std::string endpointId(std::size_t pair, bool sender) { return "p" + std::to_string(pair) + (sender ? "s" : "r"); }

// "p12s" -> {12, true}; {-1, false} when it is not one of ours.
std::pair<long, bool> parseEndpointId(const std::string& id) {
  if (id.size() < 3 || id.front() != 'p' || (id.back() != 's' && id.back() != 'r')) return {-1, false};
  const std::string digits = id.substr(1, id.size() - 2);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) || digits.size() > 6)
    return {-1, false};
  return {std::stol(digits), id.back() == 's'};
}

std::string pairFix(const std::string& stage) {
  if (stage == "qp_rtr" || stage == "qp_rts" || stage == "poll_cq")
    return "the two ports cannot exchange RDMA traffic: check that they are on the same fabric and rail (same switch "
           "plane, subnet), the switch ports' counters (perfquery), and on RoCE the GID index, VLAN and MTU; a "
           "rail-split fabric may need NCCL_CROSS_NIC=0";
  if (stage == "protocol" || stage == "no_answer") return "run the same tlaunchd version on every node";
  return verbsStageFix(stage);
}

}  // namespace

RdmaPairCoordinator::RdmaPairCoordinator(std::vector<PairTestNode> nodes, PairTestOptions options)
    : nodes_(std::move(nodes)), options_(std::move(options)) {
  auto skipAll = [this](std::string why) {
    skipped_.push_back({"rdma_pair", "", "", PreflightStatus::skip, std::move(why), "RDMA writes between neighbours", ""});
  };
  if (!options_.skip_reason.empty()) {
    skipAll(options_.skip_reason);
    return;
  }
  if (nodes_.size() < 2) {
    skipAll("one node: no neighbour to write to");
    return;
  }
  std::vector<std::vector<SelfTestOptions>> rails;
  for (const auto& n : nodes_) rails.push_back(selfTestTargets(n.fabric));
  const int count = static_cast<int>(nodes_.size());
  // Two nodes: both directions; more: each node to the next, the last to the first.
  for (int from = 0; from < count; ++from) {
    const int to = (from + 1) % count;
    const auto& a = rails[static_cast<std::size_t>(from)];
    const auto& b = rails[static_cast<std::size_t>(to)];
    if (a.empty() || b.empty()) {
      const auto& bare = nodes_[static_cast<std::size_t>(a.empty() ? from : to)].name;
      skipped_.push_back({"rdma_pair", nodes_[static_cast<std::size_t>(from)].name, "-> " + nodes_[static_cast<std::size_t>(to)].name,
                          PreflightStatus::skip, bare + " has no ACTIVE RDMA port to test", "RDMA writes between neighbours", ""});
      continue;
    }
    for (std::size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
      Pair p;
      p.from = from;
      p.to = to;
      p.send = endpointSpec(a[k], options_.bytes);
      p.recv = endpointSpec(b[k], options_.bytes);
      const double ra = portRate(nodes_[static_cast<std::size_t>(from)].fabric, a[k].device, a[k].port);
      const double rb = portRate(nodes_[static_cast<std::size_t>(to)].fabric, b[k].device, b[k].port);
      p.rate_gbps = ra > 0 && rb > 0 ? std::min(ra, rb) : std::max(ra, rb);
      pairs_.push_back(std::move(p));
    }
  }
  if (pairs_.empty() && skipped_.empty()) skipAll("no ACTIVE RDMA port on any node");
}

std::vector<RdmaPairMessage> RdmaPairCoordinator::start() {
  if (pairs_.empty()) {
    stage_ = kStages;
    return {};
  }
  stage_ = 0;
  return stageMessages();
}

std::vector<RdmaPairMessage> RdmaPairCoordinator::stageMessages() {
  const std::string type = kRdmaStages[stage_];
  std::map<int, json> eps;
  for (const auto& p : pairs_) {
    eps.try_emplace(p.from, json::array());  // every node taking part answers every stage
    eps.try_emplace(p.to, json::array());
  }
  for (std::size_t i = 0; i < pairs_.size(); ++i) {
    const Pair& p = pairs_[i];
    const std::string send = endpointId(i, true), recv = endpointId(i, false);
    if (type == "rdma_open") {
      for (bool sender : {true, false}) {
        const RdmaEndpointSpec& s = sender ? p.send : p.recv;
        eps[sender ? p.from : p.to].push_back(
            {{"id", sender ? send : recv}, {"device", s.device}, {"port", s.port}, {"gid_index", s.gid_index},
             {"bytes", s.bytes}, {"pkey_index", s.pkey_index}});
      }
    } else if (p.failed) {
      continue;
    } else if (type == "rdma_connect") {
      eps[p.from].push_back({{"id", send}, {"peer", rdmaInfoToJson(p.recv_info)}});
      eps[p.to].push_back({{"id", recv}, {"peer", rdmaInfoToJson(p.send_info)}});
    } else if (type == "rdma_write") {
      const auto& w = options_.write;
      eps[p.from].push_back({{"id", send},
                             {"seed", static_cast<std::uint32_t>(w.seed + i)},
                             {"iterations", w.iterations},
                             {"window", w.window},
                             {"latency_iterations", w.latency_iterations},
                             {"timeout_ms", w.timeout.count()}});
    } else {
      eps[p.to].push_back({{"id", recv}, {"seed", static_cast<std::uint32_t>(options_.write.seed + i)}, {"bytes", p.bytes}});
    }
  }
  std::vector<RdmaPairMessage> out;
  waiting_.clear();
  answered_.clear();
  for (auto& [node, list] : eps) {
    waiting_.insert(node);
    out.push_back({node, {{"t", type}, {"eps", std::move(list)}}});
  }
  return out;
}

std::vector<RdmaPairMessage> RdmaPairCoordinator::onReply(int node, const json& msg) {
  if (done() || !waiting_.count(node)) return {};
  const std::string stage = kRdmaStages[stage_];
  if (msg.value("t", "") != rdmaDoneType(stage)) return {};
  if (msg.contains("eps") && msg["eps"].is_array())
    for (const auto& reply : msg["eps"]) onEndpointReply(stage, node, reply);
  waiting_.erase(node);
  if (!waiting_.empty()) return {};
  // Every node answered: an endpoint it was asked about but did not mention has failed.
  for (std::size_t i = 0; i < pairs_.size(); ++i) {
    Pair& p = pairs_[i];
    if (p.failed) continue;
    const bool sender_asked = stage != "rdma_verify";
    const bool receiver_asked = stage != "rdma_write";
    if (sender_asked && !answered_.count(endpointId(i, true)))
      failPair(p, p.from, true, "no_answer", "no reply for this endpoint at " + stage);
    else if (receiver_asked && !answered_.count(endpointId(i, false)))
      failPair(p, p.to, false, "no_answer", "no reply for this endpoint at " + stage);
  }
  ++stage_;
  if (done()) return {};
  if (std::all_of(pairs_.begin(), pairs_.end(), [](const Pair& p) { return p.failed; }) && stage_ < kStages - 1)
    stage_ = kStages - 1;  // nothing left to test: straight to the stage that releases everything
  return stageMessages();
}

void RdmaPairCoordinator::onEndpointReply(const std::string& stage, int node, const json& reply) {
  RdmaReply r = rdmaReplyFromJson(reply);
  auto [index, sender] = parseEndpointId(r.id);
  if (index < 0 || static_cast<std::size_t>(index) >= pairs_.size()) return;
  Pair& p = pairs_[static_cast<std::size_t>(index)];
  if ((sender ? p.from : p.to) != node) return;  // not this node's endpoint
  answered_.insert(r.id);
  if (p.failed) return;
  if (!r.ok) return failPair(p, node, sender, r.stage, r.error);
  if (stage == "rdma_open") {
    (sender ? p.send_info : p.recv_info) = r.info;
  } else if (stage == "rdma_write") {
    p.gbps = r.bandwidth_gbps;
    p.latency_us = r.latency_us;
    p.bytes = r.bytes;
  } else if (stage == "rdma_verify") {
    p.verified = r.bytes;
  }
}

void RdmaPairCoordinator::failPair(Pair& p, int node, bool sender, const std::string& stage, const std::string& error) {
  p.failed = true;
  p.failed_stage = stage;
  p.failure = nodes_[static_cast<std::size_t>(node)].name + " " + endpointName(p, sender) + " " + stage + ": " + error;
}

std::string RdmaPairCoordinator::endpointName(const Pair& p, bool sender) const {
  const RdmaEndpointSpec& s = sender ? p.send : p.recv;
  return portName(s.device, s.port);
}

std::vector<std::string> RdmaPairCoordinator::waitingFor() const {
  std::vector<std::string> names;
  for (int n : waiting_) names.push_back(nodes_[static_cast<std::size_t>(n)].name);
  return names;
}

std::vector<PreflightItem> RdmaPairCoordinator::items() const {
  std::vector<PreflightItem> out = skipped_;
  for (const auto& p : pairs_) {
    PreflightItem item;
    item.check = "rdma_pair";
    item.node = nodes_[static_cast<std::size_t>(p.from)].name;
    item.device = endpointName(p, true) + " -> " + nodes_[static_cast<std::size_t>(p.to)].name + " " + endpointName(p, false);
    const std::string rate = formatNumber("%.0f", p.rate_gbps) + " Gb/s";
    item.expected = p.rate_gbps > 0
                        ? "RDMA writes arrive intact at >= " + formatNumber("%.0f", options_.min_rate_fraction * 100) + "% of " + rate
                        : "RDMA writes arrive intact";
    if (p.failed || !done()) {
      item.status = PreflightStatus::fail;
      item.found = p.failed ? p.failure : "the test did not finish";
      item.fix = pairFix(p.failed ? p.failed_stage : "no_answer");
      out.push_back(std::move(item));
      continue;
    }
    item.found = formatNumber("%.1f", p.gbps) + " Gb/s";
    if (p.rate_gbps > 0) item.found += " (" + formatNumber("%.0f", 100 * p.gbps / p.rate_gbps) + "% of " + rate + ")";
    item.found += ", " + formatNumber("%.2f", p.latency_us) + " us per 8-byte write; " +
                  byteSizeText(static_cast<std::size_t>(p.verified)) + " verified on " + nodes_[static_cast<std::size_t>(p.to)].name;
    if (p.rate_gbps > 0 && p.gbps < options_.min_rate_fraction * p.rate_gbps) {
      item.status = PreflightStatus::warn;
      item.fix = "slow path between these ports: check both ports' rate and width (ibstat), the switch ports' error "
                 "counters (perfquery) and, on RoCE, PFC/ECN";
    }
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace tlaunch
