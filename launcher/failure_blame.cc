#include "launcher/failure_blame.h"

#include <csignal>

#include <algorithm>
#include <cstdio>

namespace tlaunch {

namespace {

bool endedEarlier(const RankFailure& a, const RankFailure& b) { return a.ended_us < b.ended_us; }

std::string blameCount(size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// "+1.5 ms": how long after the cause another failure ended.
std::string blameDelay(int64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "+%.1f ms", static_cast<double>(std::max<int64_t>(us, 0)) / 1000.0);
  return text;
}

}  // namespace

void FailureBlame::add(RankFailure f, Clock::time_point now) {
  // A rank's first report stands (an MPI_Abort, then its exit)
  if (std::any_of(held_.begin(), held_.end(), [&](const RankFailure& h) { return h.rank == f.rank; })) return;
  if (held_.empty()) opened_at_ = now;
  held_.push_back(std::move(f));
}

RankFailure FailureBlame::takeCause() {
  // stable: of equal stamps (reports without one, stamped on arrival) the first to arrive
  std::stable_sort(held_.begin(), held_.end(), endedEarlier);
  RankFailure cause = std::move(held_.front());
  if (held_.size() > 1) {
    const RankFailure& next = held_[1];
    cause.summary += "; " + blameCount(held_.size() - 1, "other rank") + " failed after it (first: rank " +
                     std::to_string(next.rank) + " on node " + next.node + ", " +
                     blameDelay(next.ended_us - cause.ended_us) + ")";
  }
  held_.clear();
  return cause;
}

std::string FailureBlame::takeAsConsequences(const std::string& cause_node) {
  if (held_.empty()) return {};
  std::stable_sort(held_.begin(), held_.end(), endedEarlier);
  const auto there = [&](const RankFailure& f) { return f.node == cause_node; };
  // "": the cause is no node's (tlaunch interrupted)
  const bool elsewhere = !cause_node.empty() && std::none_of(held_.begin(), held_.end(), there);
  std::string text = "; " + blameCount(held_.size(), "rank") + (elsewhere ? " on other nodes" : "") +
                     " failed after it (first: rank " + std::to_string(held_.front().rank) + " on node " +
                     held_.front().node + ")";
  held_.clear();
  return text;
}

bool FailureBlame::anyOwnCrash() const {
  return std::any_of(held_.begin(), held_.end(), [](const RankFailure& f) {
    return f.signal != 0 && f.signal != SIGTERM && f.signal != SIGKILL && f.signal != SIGHUP && f.signal != SIGINT;
  });
}

bool FailureBlame::onlyKilledFromOutside() const {
  return !held_.empty() && std::all_of(held_.begin(), held_.end(), [](const RankFailure& f) {
    return f.signal == SIGTERM || f.signal == SIGKILL || f.signal == SIGHUP || f.signal == SIGINT;
  });
}

}  // namespace tlaunch
