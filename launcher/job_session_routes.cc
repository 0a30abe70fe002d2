// What the frontend does with each message a daemon sends, as one table (bootstrap/
// message_router.h): the types the protocol defines from daemon to frontend, and their handlers.
#include <algorithm>

#include "bootstrap/error_text.h"
#include "launcher/failure_blame.h"
#include "launcher/job_inspector.h"
#include "launcher/job_session.h"
#include "launcher/job_session_link.h"
#include "launcher/pmix_collectives.h"
#include "launcher/pmix_directory.h"
#include "launcher/pmix_job_control.h"
#include "launcher/same_failure_nodes.h"
#include "launcher/stdin_credit.h"

namespace tlaunch {

JobSession::Router JobSession::makeRouter() {
  Router r;
  r.on("ping", [](const std::string&, Json&&, Link&) {});  // last_heard is enough
  r.on("stdin_credit", [this](const std::string&, Json&& m, Link& l) {
    // Only the node of the rank that reads stdin, for that rank, takes part in its credit.
    if (!stdin_ || l.index != stdin_node_ || getInt(m, "r", -1) != cfg_.spec.stdin_rank) return;
    stdin_->grant(static_cast<size_t>(std::max(0LL, getInt(m, "n"))));
    // The rank closed its stdin or ended: tlaunch stops reading its own (it read on and threw
    // the bytes away, as fast as `yes` could make them).
    if (getBool(m, "closed")) stdin_->close();
  });
  // The job's course: inventory, the cross-node tests, prepare, start, exits, drain.
  r.on("inventory", [this](const std::string&, Json&& m, Link& l) { onInventory(l, m["inv"]); });
  // The control tree: a node attached to its parent (or could not), a parent lost a child.
  r.on("attached", [this](const std::string&, Json&&, Link& l) { onAttached(l, true, {}); });
  r.on("attach_failed", [this](const std::string&, Json&& m, Link& l) { onAttached(l, false, getString(m, "reason")); });
  r.on("child_lost", [this](const std::string&, Json&& m, Link& l) { onChildLost(l, m); });
  r.on("child_joined", [this](const std::string&, Json&& m, Link& l) { onChildJoined(l, m); });
  r.on("spawn_failed", [this](const std::string&, Json&& m, Link& l) { onSpawnFailed(l, m); });
  r.on("reached", [this](const std::string&, Json&& m, Link& l) { onCrossNodeMessage(l, m); });
  r.onPrefix("rdma_", [this](const std::string&, Json&& m, Link& l) { onCrossNodeMessage(l, m); });
  r.on("prepared", [this](const std::string&, Json&&, Link& l) { onPrepared(l); });
  r.on("prepare_failed", [this](const std::string&, Json&& m, Link& l) {
    onPrepareFailed(l, {static_cast<Errc>(getInt(m, "code", static_cast<int>(Errc::internal))), getString(m, "message"),
                        getString(m, "hint")});
  });
  r.on("start_failed", [this](const std::string&, Json&& m, Link& l) {
    const auto code = static_cast<Errc>(getInt(m, "code", static_cast<int>(Errc::internal)));
    fail(exitStatusFor(code), describeError({code, getString(m, "message"), getString(m, "hint")}), -1, {},
         nodeLabel(l.index));
  });
  r.on("started", [this](const std::string&, Json&& m, Link& l) { onStarted(l, m); });
  r.on("exit", [this](const std::string&, Json&& m, Link& l) { onRankExit(l, m); });
  r.on("all_exited", [this](const std::string&, Json&&, Link& l) { onAllExited(l); });
  r.on("drained", [this](const std::string&, Json&&, Link& l) {
    l.drained = true;
    if (phase_ == Phase::draining && allDrained()) finish(JobEvent::all_drained);
  });
  r.on("signalled", [this](const std::string&, Json&& m, Link& l) {
    onDaemonSignalled(l, static_cast<int>(getInt(m, "sig", 0)));
  });
  // Reports: --nccl-check, `tlaunch stacks` / `tlaunch status`, PMIx clients.
  r.on("nccl", [this](const std::string&, Json&& m, Link&) { onNcclSummary(m); });
  r.on({"stacks_report", "status_report"}, [this](const std::string&, Json&& m, Link& l) {
    if (inspector_) inspector_->onReport(l.index, std::move(m));
  });
  r.on("pmix_client",
       [this](const std::string&, Json&& m, Link& l) {
         onPmixClient(l, static_cast<int>(getInt(m, "r", -1)), getBool(m, "mpi"));
       });
  // PMIx across nodes: fences, direct modex, abort, publish/lookup, collectives, job control.
  r.on({"fence", "dmodex_req", "dmodex_resp", "abort"},
       [this](const std::string& t, Json&& m, Link& l) { onPmixMessage(l, t, std::move(m)); });
  r.on({"pub", "lookup", "unpub"},
       [this](const std::string& t, Json&& m, Link& l) { pmix_directory_->onMessage(l.index, t, m); });
  r.on("pmix_spawn", [this](const std::string&, Json&& m, Link& l) { onPmixSpawn(l, m); });
  r.on("pmix_spawn_ready", [this](const std::string&, Json&& m, Link& l) { onPmixSpawnReady(l, m); });
  r.on("pmix_spawn_started", [this](const std::string&, Json&& m, Link& l) { onPmixSpawnStarted(l, m); });
  r.on("coll", [this](const std::string&, Json&& m, Link& l) { pmix_collectives_->onMessage(l.index, m); });
  r.on("jobctl", [this](const std::string&, Json&& m, Link& l) {
    routeJobControl(l.index, m, static_cast<int>(links_.size()), [this](int rank) { return nodeOfRank(rank); },
                    [this](int node, const Json& out) { sendToNode(node, out); });
  });
  return r;
}

void JobSession::onPrepared(Link& link) {
  link.prepared = true;
  link.prepared_at = Clock::now();
  if (!prepare_failures_.empty()) return prepareFailuresDue(Clock::now());
  if (phase_ == Phase::preparing && std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->prepared; }))
    startRanks();
}

// A node that cannot run the job (the program missing there, a working directory that is not)
// is often not the only one: the others' answers are awaited a moment, so that one run names
// every such node, not one per run.
void JobSession::onPrepareFailed(Link& link, Error why) {
  if (failed_ || phase_ != Phase::preparing) return;
  if (prepare_failures_.empty()) prepare_failures_due_ = Clock::now() + kPrepareFailuresWait;
  link.prepared = true;  // answered
  prepare_failures_.push_back({link.index, std::move(why)});
  prepareFailuresDue(Clock::now());
}

void JobSession::prepareFailuresDue(Clock::time_point now) {
  if (failed_ || prepare_failures_.empty()) return;
  // A node lost a moment ago is the cause of what the others failed to do with it (another
  // node's reachability check of its ranks' ports): its loss is decided first (tick), and
  // named; a healthy node was blamed for "cannot reach" it (exit 78, not replaced).
  if (lostNodePending()) return;
  const bool all_answered = std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->prepared || l->closed; });
  if (!all_answered && now < prepare_failures_due_) return;
  std::sort(prepare_failures_.begin(), prepare_failures_.end(),
            [](const PrepareFailure& a, const PrepareFailure& b) { return a.node < b.node; });  // node order
  std::vector<NodeFailureText> texts;
  for (const auto& f : prepare_failures_) texts.push_back({links_[static_cast<size_t>(f.node)]->name, f.why.message});
  std::string text;
  for (const auto& merged : mergeSameFailures(texts)) {
    const Error& why = prepare_failures_[merged.first].why;
    text += (text.empty() ? "" : "\n") + describeError({why.code, merged.message, why.hint});
  }
  const PrepareFailure& first = prepare_failures_.front();
  fail(exitStatusFor(first.why.code), text, -1, {}, nodeLabel(first.node));
}

void JobSession::onStarted(Link& link, const Json& msg) {
  if (cfg_.spec.verbose && msg.contains("containment")) out_.note("node " + link.name + ": " + getString(msg, "containment"));
  link.started = true;
  link.started_at = Clock::now();
  if (std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->started; }) &&
      advance(JobEvent::all_started)) {
    noteTimings("ranks started", start_sent_at_, &Link::started_at);
    if (cfg_.spec.stdin_rank >= 0) forwardStdin();
  }
}

void JobSession::onAllExited(Link& link) {
  link.all_exited = true;
  if (!std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->all_exited; })) return;
  // A node lost or signalled a moment ago is decided at its deadline (tick): its ranks that
  // exited 0 on their SIGTERM did not finish the job.
  if (lostNodePending()) return;
  // Failures held for blame are settled at their window's end (tick), not at once: a signal to
  // the whole job (scancel: ranks, daemons and tlaunch alike) may reach tlaunch within it, and
  // then the ranks' ends are its consequences, not the job's cause.
  if (blame_->holding() && !failed_) return;
  settleBlame();
  if (!failed_) finish(JobEvent::all_exited);
  else if (teardown_at_) endEventGrace();  // nobody is left to read the event
}

}  // namespace tlaunch
