#include "launcher/nccl/nccl_job_check.h"

#include <string>

namespace tlaunch::nccl {

Expectation expectationFromNetwork(const NetworkChoice* network) {
  Expectation e;
  if (network == nullptr) return e;
  e.rdma = network->rdma;
  for (const auto& n : network->nodes) e.ifnames.push_back(n.ifname);
  return e;
}

JobCheck::JobCheck(CheckMode mode, Expectation expected, int world_size)
    : mode_(mode), expected_(std::move(expected)), world_size_(world_size) {}

bool JobCheck::onSummary(const nlohmann::json& msg) {
  if (complete() || !msg.contains("r") || !msg["r"].is_number_integer()) return false;
  const int rank = msg["r"];
  if (rank < 0 || rank >= world_size_ || !reported_.insert(rank).second) return false;
  const std::string source = "rank " + std::to_string(rank);
  if (auto lines = msg.find("lines"); lines != msg.end() && lines->is_array())
    for (const auto& l : *lines)
      if (l.is_string()) state_.feed(l.get<std::string>(), source);
  if (!complete()) return false;
  report_ = buildReport(state_);
  decision_ = decide(report_, expected_, mode_);
  return true;
}

nlohmann::json JobCheck::toJson() const {
  nlohmann::json j{{"mode", checkModeName(mode_)}, {"ranks_reported", reported_.size()}, {"complete", complete()}};
  if (!complete()) return j;
  j["level"] = report_.level;
  j["verdict"] = report_.verdict;
  j["transport"] = transportName(report_.transport);
  j["rdma_expected"] = expected_.rdma;
  j["action"] = decision_.action == Action::fail ? "fail" : decision_.action == Action::warn ? "warn" : "none";
  if (!decision_.reason.empty()) j["reason"] = decision_.reason;
  return j;
}

}  // namespace tlaunch::nccl
