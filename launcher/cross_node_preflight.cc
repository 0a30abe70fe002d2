#include "launcher/cross_node_preflight.h"

#include <algorithm>

#include "binding/fabric/fabric_json.h"
#include "bootstrap/node_launch_json.h"
#include "launcher/plan/plan_network.h"
#include "launcher/plan/plan_preflight.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

// A check the user skips is not run at all (a firewall's probes would only cost time).
bool skipped(const JobSpec& spec, std::string_view check) {
  return std::find(spec.preflight_skip.begin(), spec.preflight_skip.end(), check) != spec.preflight_skip.end();
}

}  // namespace

CrossNodePreflight::CrossNodePreflight(const JobSpec& spec, const PlanContext& context, const Json& daemon_config,
                                       std::vector<NodeReport> reports)
    : spec_(spec), context_(context), sysfs_root_(getString(daemon_config, "sysfs_root", "/")),
      reports_(std::move(reports)) {}

CrossNodePreflight::~CrossNodePreflight() = default;

std::vector<RdmaPairMessage> CrossNodePreflight::start() {
  stage_ = Stage::rdma_pairs;
  if (spec_.preflight == PreflightMode::full && !spec_.offline) {
    std::vector<PairTestNode> nodes;
    for (const auto& r : reports_) {
      nodes.push_back({r.name, r.inventory.fabric.value_or(NodeFabric{})});
    }
    PairTestOptions options;
    if (skipped(spec_, "rdma_pair")) options.skip_reason = "--preflight-skip rdma_pair";
    else if (spec_.net_mode == "tcp") options.skip_reason = "--net tcp: the job does not use RDMA";
    else if (context_.loopback_only) options.skip_reason = "every node is this host: no fabric between them";
    else if (!sysfs_root_.empty() && sysfs_root_ != "/")
      options.skip_reason = "--sysfs-root points at a capture: no live HCA to write with";
    pairs_ = std::make_unique<RdmaPairCoordinator>(std::move(nodes), std::move(options));
    auto first = pairs_->start();
    if (!first.empty()) return first;
  }
  return next();
}

std::vector<RdmaPairMessage> CrossNodePreflight::onMessage(int node, const Json& msg) {
  const std::string type = getString(msg, "t");
  if (stage_ == Stage::rdma_pairs && pairs_ && type.rfind("rdma_", 0) == 0) {
    auto out = pairs_->onReply(node, msg);
    return pairs_->done() ? next() : out;
  }
  if (stage_ == Stage::reachability && type == "reached") {
    onReached(node, msg);
    if (std::none_of(reach_waiting_.begin(), reach_waiting_.end(), [](bool w) { return w; })) stage_ = Stage::done;
  }
  return {};
}

std::vector<RdmaPairMessage> CrossNodePreflight::next() {
  if (stage_ == Stage::rdma_pairs) {
    if (pairs_) items_ = pairs_->items();
    stage_ = Stage::reachability;
    auto probes = startReachability();
    if (!probes.empty()) return probes;
  }
  stage_ = Stage::done;
  return {};
}

std::vector<RdmaPairMessage> CrossNodePreflight::startReachability() {
  // A job probes at prepare (and fails there); `tlaunch preflight` reports the same probes.
  if (!spec_.preflight_only) return {};
  auto network = chooseJobNetwork(spec_, reports_, context_);
  if (!network) {
    // A node whose own checks failed explains this already (ib0 down, ...): say it once.
    if (preflightPassed(collectPreflight(reports_)))
      items_.push_back({"network", "", "", PreflightStatus::fail, network.error().message,
                        "one fabric subnet common to every node", network.error().hint});
    return {};
  }
  if (skipped(spec_, "reachability") && spec_.check_reachability != "off" && reports_.size() > 1)
    items_.push_back({"reachability", "", "", PreflightStatus::skip, "not probed",
                      "TCP between nodes on the job's network", ""});
  auto targets = reachabilityTargets(spec_, reports_, *network);
  std::vector<RdmaPairMessage> out;
  reach_waiting_.assign(reports_.size(), false);
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i].empty()) continue;
    reach_waiting_[i] = true;
    out.push_back({static_cast<int>(i), {{"t", "reach"}, {"targets", reachToJson(targets[i])}}});
  }
  return out;
}

void CrossNodePreflight::onReached(int node, const Json& msg) {
  if (node < 0 || static_cast<size_t>(node) >= reach_waiting_.size() || !reach_waiting_[static_cast<size_t>(node)]) return;
  reach_waiting_[static_cast<size_t>(node)] = false;
  // One row per probing node: on 1,000 nodes all-pairs is a million probes.
  std::vector<std::string> failures, reached;
  if (msg.contains("results") && msg["results"].is_array())
    for (const auto& r : msg["results"]) {
      const std::string error = getString(r, "error");
      if (error.empty())
        reached.push_back(getString(r, "node"));
      else
        failures.push_back(getString(r, "node") + " at " + getString(r, "addr") + ":" + std::to_string(getInt(r, "port")) +
                           " (" + error + ")");
    }
  PreflightItem item{"reachability", reports_[static_cast<size_t>(node)].name, "", PreflightStatus::pass, "",
                     "a TCP connection to each probed node's fabric address", ""};
  if (failures.empty()) {
    item.found = "reached " + (reached.size() <= 3 ? joinStrings(reached) : std::to_string(reached.size()) + " nodes");
  } else {
    item.status = PreflightStatus::fail;
    item.found = "cannot reach " + joinStrings(failures);
    item.fix = "check the fabric link (ip link / ibstat), the subnet and any firewall between the nodes";
  }
  items_.push_back(std::move(item));
}

std::string CrossNodePreflight::waitingFor() const {
  if (stage_ == Stage::rdma_pairs && pairs_) return "the RDMA write test (" + joinStrings(pairs_->waitingFor()) + ")";
  std::vector<std::string> names;
  for (size_t i = 0; i < reach_waiting_.size(); ++i)
    if (reach_waiting_[i]) names.push_back(reports_[i].name);
  return "the reachability probes (" + joinStrings(names) + ")";
}

}  // namespace tlaunch
