#pragma once
// Daemons that could not be started, gathered for a moment before the job ends, so that one
// run names every node that failed and not only the first: with five dead nodes among a
// thousand, a report of one at a time costs five runs. Pure: the session feeds it the
// starters' failures and asks, on its timer, whether to end the job now.
#include <chrono>
#include <string>
#include <vector>

namespace tlaunch {

class StartFailureReport {
 public:
  using Clock = std::chrono::steady_clock;
  // `window`: how long after the first failure to wait for the nodes still starting (about
  // one ssh connect timeout: a node that is going to fail has failed by then).
  explicit StartFailureReport(std::chrono::milliseconds window) : window_(window) {}

  // Node `node_index` (named `node`) could not be started: `message` says why. A node's
  // later failures add nothing.
  void add(int node_index, const std::string& node, const std::string& message, Clock::time_point now);
  bool empty() const { return failures_.empty(); }
  bool has(int node_index) const;
  // Whether to end the job now: `unresolved` nodes have neither connected nor failed.
  bool due(Clock::time_point now, size_t unresolved) const;

  // One failure: "could not start tlaunchd on node N: <why>". Several: a line per cause,
  // naming the first node with it and then the others ("the same on 2 more nodes: a, b").
  // `still_starting`: nodes neither connected nor failed when the report was made.
  std::string describe(size_t total_nodes, const std::vector<std::string>& still_starting) const;
  // The failed nodes, in the order they failed.
  std::vector<std::string> nodes() const;

 private:
  struct Failure {
    int node_index = -1;
    std::string node;
    std::string message;
  };
  std::chrono::milliseconds window_;
  Clock::time_point first_at_{};
  std::vector<Failure> failures_;
};

}  // namespace tlaunch
