// Daemons that could not be started (ssh or srun failed, a tree parent's ssh): one run names
// every such node. The session waits a moment for the others to connect or fail too, then ends
// the job listing each cause once, and --max-restarts can replace the nodes at fault.
#include "launcher/job_session.h"
#include "launcher/job_session_link.h"

#include "binding/preflight/preflight_report.h"

namespace tlaunch {

void JobSession::onStartFailures(const std::vector<StartFailure>& failures, Clock::time_point now) {
  bool starter_done = false;
  for (const auto& f : failures) {
    if (failed_) return;  // the job ends already: its first reason stands
    if (f.node_index < 0 || f.node_index >= static_cast<int>(links_.size())) {
      // One srun step for every node. Its end right after a node was lost is that loss's
      // consequence (--kill-on-bad-exit ends the step, srun calls it cancelled): the lost node
      // is named, and --max-restarts can replace it.
      if (lostNodePending()) return;
      // Nodes it failed to start were named already (srun's execve line): they are the cause,
      // and the step's end tells nothing more.
      if (!start_failures_.empty()) {
        starter_done = true;
        continue;
      }
      fail(exitStatusFor(Errc::node_unreachable), f.message);
      return;
    }
    Link& link = *links_[static_cast<size_t>(f.node_index)];
    if (link.conn || link.routed) {  // ended after connecting: the link tells, this says why
      link.process_end = f.message;
      link.process_end_at = now;
      if (link.end_noted) sayEndedAfterRanks(link, "");  // its close was said: now why
      continue;
    }
    start_failures_.add(f.node_index, link.name, f.message, f.node_side, now);
    starter_done = starter_done || f.starter_done;
  }
  if (failed_ || start_failures_.empty()) return;
  std::vector<std::string> starting, not_started;
  for (const auto& l : links_) {
    if (l->conn || l->routed || start_failures_.has(l->index)) continue;
    (belowFailedNode(l->index) ? not_started : starting).push_back(l->name);
  }
  // Nothing to wait for: the starter can start no more, or a connected daemon went away
  // meanwhile (srun's --kill-on-bad-exit ends its whole step when one daemon fails: the
  // failure is the cause, the lost node its consequence), or the connect timeout is over.
  const bool now_or_never = starter_done || lost_node_ || (phase_ == Phase::connecting && now > phase_deadline_);
  if (!now_or_never && !start_failures_.due(now, starting.size())) {
    if (!start_wait_said_ && !(starter_ && starter_->endsTogether())) {  // srun's step ends them at once
      start_wait_said_ = true;
      const auto wait_s = std::chrono::duration_cast<std::chrono::seconds>(start_failures_.window()).count();
      out_.note("could not start tlaunchd on node " + start_failures_.nodes().front() + "; waiting up to " +
                std::to_string(wait_s) + " s for the other " + std::to_string(starting.size()) +
                " starting nodes to connect or fail, then ending the job");
    }
    return;
  }
  if (cfg_.spec.preflight_only) outcome_.unstarted_preflight = unstartedAsPreflight();
  fail(exitStatusFor(Errc::node_unreachable), start_failures_.describe(links_.size(), starting, not_started), -1, {},
       start_failures_.nodes().front());
  outcome_.lost_nodes = start_failures_.nodeSide();
  outcome_.node_lost = !outcome_.lost_nodes.empty();  // --max-restarts replaces them with spares
  outcome_.nodes_not_started = true;
}

// `tlaunch preflight` where nodes could not be started: a row for each, for the table (and
// --json) of the run that checks the others without them.
std::vector<PreflightItem> JobSession::unstartedAsPreflight() const {
  std::vector<PreflightItem> items;
  for (const auto& [node, message] : start_failures_.messages()) {
    // The whole message (ssh's own words on lines of their own): it says what to check.
    std::string found = message;
    while (!found.empty() && (found.back() == '\n' || found.back() == ' ')) found.pop_back();
    items.push_back({"daemon_start", node, "", PreflightStatus::fail, found, "tlaunchd started and connected", ""});
  }
  return items;
}

bool JobSession::belowFailedNode(int index) const {
  if (!tree_ || !spawnsTree() || links_[static_cast<size_t>(index)]->started_by_frontend) return false;
  for (int p = tree_->parentOf(index); p >= 0; p = tree_->parentOf(p)) {
    if (start_failures_.has(p)) return true;
    if (links_[static_cast<size_t>(p)]->started_by_frontend) return false;  // it starts what is below it
  }
  return false;
}

}  // namespace tlaunch
