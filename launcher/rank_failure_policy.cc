#include "launcher/rank_failure_policy.h"

#include <signal.h>

#include <cctype>
#include <iterator>

namespace tlaunch {

bool RankFailure::aborted() const { return called_abort || signal == SIGABRT; }

RankFailurePolicy::Decision RankFailurePolicy::onFailure(const RankFailure& f) {
  Decision d;
  d.announce = f.rank >= 0 ? failed_.insert(f.rank).second : false;
  // The first to fail, by its node's stamp where both have one: a report waits behind its
  // rank's output, so the first to arrive need not be the first to fail.
  if (!first_ || (f.ended_us > 0 && first_->ended_us > 0 && f.ended_us < first_->ended_us)) first_ = f;
  d.action = keep_going_ && !f.called_abort ? Action::keep_going : Action::end_after_grace;
  return d;
}

std::string RankFailurePolicy::keptGoingSummary() const {
  if (!first_) return {};
  std::string text = first_->summary + "; the other ranks went on (--keep-going)";
  if (failed_.size() <= 1) return text;
  const auto spawned = static_cast<size_t>(std::distance(failed_.lower_bound(world_size_), failed_.end()));
  const size_t ranks = failed_.size() - spawned;
  std::string counts;
  if (ranks > 0) counts = std::to_string(ranks) + " of " + std::to_string(world_size_) + " ranks";
  if (spawned > 0)
    counts += (ranks > 0 ? " and " : "") + std::to_string(spawned) + " spawned process" + (spawned == 1 ? "" : "es");
  return text + ", " + counts + " failed";
}

Json RankFailurePolicy::announcement(const RankFailure& f) const {
  // job_rank: one of the job's own ranks (not a spawned process), so no fence of the whole job
  // can complete any more (interior daemons stop gathering them: daemon/subtree_fence.h).
  return {{"t", "rank_failed"},
          {"r", f.rank},
          {"aborted", f.aborted()},
          {"status", f.exit_status},
          {"job_rank", f.rank >= 0 && f.rank < world_size_}};
}

Result<std::chrono::milliseconds> parseEventGrace(std::string_view text) {
  auto bad = [&] {
    return fail(Errc::usage, "--event-grace " + std::string(text) + ": expected a duration such as 0, 500ms, 1s or 2s",
                "at most 60s; 0 tears the job down at once");
  };
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 6) return bad();
  const long long n = std::stoll(std::string(text.substr(0, digits)));
  const std::string_view unit = text.substr(digits);
  long long ms = 0;
  if (unit.empty() || unit == "s") ms = n * 1000;
  else if (unit == "ms") ms = n;
  else if (unit == "m") ms = n * 60'000;
  else return bad();
  if (ms > 60'000)
    return fail(Errc::usage, "--event-grace " + std::string(text) + ": at most 60s",
                "give a shorter grace (500ms, 2s), or 0 to tear the job down at once");
  return std::chrono::milliseconds(ms);
}

}  // namespace tlaunch
