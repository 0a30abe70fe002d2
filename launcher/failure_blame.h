#pragma once
// Which failure caused the others. When one rank dies its peers soon fail too (their sockets to
// it close), and their reports can reach the frontend first: a node's exit report waits behind
// the rank's output, so the rank that printed a long traceback loses the race to a peer's
// one-line "connection reset". FailureBlame holds the failures of a short window from the first
// one and names the one that ended earliest by its node's wall clock (RankFailure::ended_us),
// the rest as its consequences. A lost node explains the ranks that failed around it: the
// frontend then names the node (takeAsConsequences) instead of any rank.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launcher/rank_failure_policy.h"
#include "tlaunch/wall_clock.h"  // wallClockMicros: the stamp of a failure reported without one

namespace tlaunch {

class FailureBlame {
 public:
  using Clock = std::chrono::steady_clock;
  // The stamps are each node's wall clock: nodes' clocks agree (NTP) to well within this,
  // usually, but a skew between two nodes larger than the gap between their failures (a skew
  // above the window, surely) can still name a consequence as the cause.
  static constexpr std::chrono::milliseconds kWindow{250};

  explicit FailureBlame(std::chrono::milliseconds window = kWindow) : window_(window) {}

  // Holds f; the first failure held opens the window.
  void add(RankFailure f, Clock::time_point now);
  bool holding() const { return !held_.empty(); }
  bool due(Clock::time_point now) const { return holding() && now >= opened_at_ + window_; }
  Clock::time_point openedAt() const { return opened_at_; }
  size_t size() const { return held_.size(); }

  // The failure that ended first, its summary followed by what failed after it; nothing held
  // afterwards.
  RankFailure takeCause();
  // The failures held, as what followed another cause (a lost node): "; 3 ranks on other nodes
  // failed after it (first: rank 0 on node n0)", or "" when none; nothing held afterwards.
  std::string takeAsConsequences(const std::string& cause_node);
  // A failure held is a crash of the rank's own (a signal other than SIGTERM, SIGKILL, SIGHUP or
  // SIGINT: SIGSEGV, SIGABRT...), which no cancellation of the job explains.
  bool anyOwnCrash() const;
  // Every failure held was a kill by SIGTERM, SIGKILL, SIGHUP or SIGINT: what a scheduler or an
  // operator sends to a whole job step (scancel), daemons included.
  bool onlyKilledFromOutside() const;

 private:
  std::chrono::milliseconds window_;
  std::vector<RankFailure> held_;  // in arrival order: equal stamps keep it
  Clock::time_point opened_at_{};
};

}  // namespace tlaunch
