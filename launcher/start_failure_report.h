#pragma once
// Daemons that could not be started, gathered for a moment before the job ends, so that one
// run names every node that failed and not only the first: with five dead nodes among a
// thousand, a report of one at a time costs five runs. Pure: the session feeds it the
// starters' failures and asks, on its timer, whether to end the job now.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace tlaunch {

class StartFailureReport {
 public:
  using Clock = std::chrono::steady_clock;
  // `window`: how long after the first failure to wait for the nodes still starting (about
  // one ssh connect timeout: a node that is going to fail has failed by then).
  explicit StartFailureReport(std::chrono::milliseconds window) : window_(window) {}

  // Node `node_index` (named `node`) could not be started: `message` says why (its first line
  // the cause, then the starter's own words). `node_side`: the node's fault, not this host's.
  // A node's later failures add nothing.
  void add(int node_index, const std::string& node, const std::string& message, bool node_side,
           Clock::time_point now);
  bool empty() const { return failures_.empty(); }
  size_t size() const { return failures_.size(); }
  bool has(int node_index) const;
  // Whether to end the job now: `unresolved` nodes may still connect or fail.
  bool due(Clock::time_point now, size_t unresolved) const;
  std::chrono::milliseconds window() const { return window_; }

  // One failure: "could not start tlaunchd on node N: <why>". Several: one entry per cause
  // (at most kCausesShown), naming the first node it hit in full and then the others ("the
  // same on 2 more nodes: a, b"). `still_starting`: nodes neither connected nor failed;
  // `not_started`: nodes that were to be started by a node that failed (tree spawn).
  std::string describe(size_t total_nodes, const std::vector<std::string>& still_starting,
                       const std::vector<std::string>& not_started = {}) const;
  // The failed nodes, in the order they failed; nodeSide(): those that failed by their own fault.
  std::vector<std::string> nodes() const;
  std::vector<std::string> nodeSide() const;
  // Each failed node with its message, in the order they failed.
  std::vector<std::pair<std::string, std::string>> messages() const;

  static constexpr size_t kCausesShown = 10;

 private:
  struct Failure {
    int node_index = -1;
    std::string node;
    std::string message;
    bool node_side = true;
  };
  std::chrono::milliseconds window_;
  Clock::time_point first_at_{};
  std::vector<Failure> failures_;
};

}  // namespace tlaunch
