#include "launcher/restart_policy.h"

#include <algorithm>

#include "tlaunch/strings.h"

namespace tlaunch {

RestartPolicy::Decision RestartPolicy::afterAttempt(const AttemptEnd& end) {
  Decision d;
  if (end.success) return d;
  if (end.interrupted) {
    d.reason = "not restarted: tlaunch was interrupted";
    return d;
  }
  if (!end.restartable) {
    d.reason = "not restarted: only a failed rank or a lost node restarts the job";
    return d;
  }
  if (restarts_ >= max_restarts_) {
    d.reason = max_restarts_ == 0 ? "" : "no restart left (--max-restarts " + std::to_string(max_restarts_) + ")";
    return d;
  }
  d.restart = true;
  ++restarts_;
  auto droppedBefore = [this](const std::string& node) {
    return std::find(dropped_.begin(), dropped_.end(), node) != dropped_.end();
  };
  if (end.node_lost) {
    std::vector<std::string> lost = end.lost_nodes;
    if (lost.empty() && !end.failed_node.empty()) lost.push_back(end.failed_node);
    for (const auto& node : lost)
      if (!node.empty() && !droppedBefore(node) && std::find(d.drop.begin(), d.drop.end(), node) == d.drop.end())
        d.drop.push_back(node);
    const bool one = d.drop.size() == 1;
    if (!d.drop.empty())
      d.reason = end.not_started ? (one ? "it could not be started" : "they could not be started")
                                 : (one ? "its daemon was lost" : "their daemons were lost");
  } else if (!end.failed_node.empty() && !droppedBefore(end.failed_node) && end.failed_node == last_failed_node_) {
    d.drop.push_back(end.failed_node);
    d.reason = "a rank failed there in two attempts in a row";
    d.drop_optional = true;
  }
  dropped_.insert(dropped_.end(), d.drop.begin(), d.drop.end());
  // A node is dropped after two failures in a row; once dropped, the count starts again.
  last_failed_node_ = end.node_lost || !d.drop.empty() ? std::string() : end.failed_node;
  return d;
}

void RestartPolicy::keep(const std::vector<std::string>& nodes) {
  std::erase_if(dropped_, [&](const std::string& n) { return std::find(nodes.begin(), nodes.end(), n) != nodes.end(); });
  last_failed_node_.clear();
}

std::string describeRestart(int restart, int max_restarts, const std::string& cause, const std::vector<std::string>& dropped,
                            const std::string& drop_reason, const std::vector<std::string>& before,
                            const std::vector<std::string>& after) {
  std::string text = "restart " + std::to_string(restart) + " of " + std::to_string(max_restarts) + " after " + cause;
  std::vector<std::string> added;
  for (const auto& n : after)
    if (std::find(before.begin(), before.end(), n) == before.end()) added.push_back(n);
  if (!dropped.empty()) text += "; " + joinStrings(dropped, ", ") + " dropped (" + drop_reason + ")";
  if (!added.empty()) text += "; " + joinStrings(added, ", ") + " added";
  else if (!dropped.empty()) text += "; no spare node: " + std::to_string(after.size()) + " node(s) from now on";
  return text;
}

}  // namespace tlaunch
