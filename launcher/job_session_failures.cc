// A failed rank at the frontend: every node hears of it (its PMIx server raises the event for
// the ranks' handlers), the PMIx operations it can no longer join fail at once, and the job
// ends after --event-grace, or goes on with --keep-going (launcher/rank_failure_policy.h).
#include "launcher/job_session.h"
#include "launcher/pmix_collectives.h"
#include "launcher/rank_failure_policy.h"

namespace tlaunch {

void JobSession::onRankFailed(RankFailure f) {
  if (failed_ && !teardown_at_) return;  // teardown is under way: ranks die of it, no news
  if (!rank_failures_) {                 // before the plan: nothing ran yet, nobody to tell
    fail(f.exit_status, f.summary, f.rank, std::move(f.stderr_tail), f.node, f.signal);
    return;
  }
  const auto decision = rank_failures_->onFailure(f);
  if (decision.announce) {
    broadcast(RankFailurePolicy::announcement(f));
    failPmixOperationsOf(f.rank);
  }
  if (failed_) return;  // an earlier rank's grace is running
  if (decision.action == RankFailurePolicy::Action::keep_going) {
    if (rank_failures_->first()->rank == f.rank && decision.announce) {  // the job's exit status
      out_.note(f.summary + "; the other ranks go on (--keep-going)");
      recordFailure(f.exit_status, {}, f.rank, std::move(f.stderr_tail), f.node, f.signal);
    }
    outcome_.summary = rank_failures_->keptGoingSummary();
    return;
  }
  // The job ends, but the other ranks' event handlers get --event-grace first: the outcome is
  // recorded now, teardown waits for endEventGrace() (tick, or every rank gone already).
  // Without PMIx (--pmix off) no rank can have a handler: nothing to wait for.
  const auto grace = std::chrono::milliseconds(cfg_.spec.pmix ? cfg_.spec.event_grace_ms : 0);
  if ((grace.count() == 0 || (phase_ != Phase::running && phase_ != Phase::starting)) && outcome_.failed_rank < 0) {
    fail(f.exit_status, f.summary, f.rank, std::move(f.stderr_tail), f.node, f.signal);
    return;
  }
  failed_ = true;
  if (outcome_.failed_rank >= 0)  // --keep-going went past an earlier failure: it stays the status
    outcome_.summary += "; then " + f.summary + ", which ends the job";
  else
    recordFailure(f.exit_status, f.summary, f.rank, std::move(f.stderr_tail), f.node, f.signal);
  teardown_at_ = std::chrono::steady_clock::now() + grace;
}

void JobSession::endEventGrace() {
  if (!teardown_at_) return;
  teardown_at_.reset();
  teardown();
}

// What can never complete without the failed rank fails now, rather than hang its survivors:
// fences of the whole job (each node's next one fails too, see onPmixMessage) and collectives
// that include it.
void JobSession::failPmixOperationsOf(int rank) {
  for (const auto& [seq, fence] : fences_)
    broadcast({{"t", "fence_done"}, {"seq", seq}, {"ok", false}, {"lost", true}});
  fences_.clear();
  pmix_collectives_->onRankFailed(rank);
}

}  // namespace tlaunch
