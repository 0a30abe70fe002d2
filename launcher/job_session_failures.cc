// A failed rank at the frontend: every node hears of it (its PMIx server raises the event for
// the ranks' handlers), the PMIx operations it can no longer join fail at once, and the job
// ends after --event-grace, or goes on with --keep-going (launcher/rank_failure_policy.h).
#include "launcher/job_session.h"
#include "launcher/job_session_link.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <numeric>

#include "binding/preflight/preflight_report.h"
#include "bootstrap/error_text.h"
#include "launcher/hostlist.h"
#include "launcher/peer_loss_text.h"
#include "launcher/cli_values.h"
#include "launcher/failure_blame.h"
#include "launcher/pmix_collectives.h"
#include "launcher/pmix_directory.h"
#include "launcher/pmix_spawns.h"
#include "launcher/rank_failure_policy.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

namespace {
constexpr const char* kEndedBeforeInit =
    "exited with status 0 before calling MPI_Init / PMIx_Init, which other ranks called (as mpirun, an improper end: "
    "MPI_Init's fence would wait for it for ever)";
constexpr const char* kEndedUnfinalized =
    "exited with status 0 without calling MPI_Finalize / PMIx_Finalize after MPI_Init / PMIx_Init";
}  // namespace

void JobSession::onRankFailed(RankFailure f) {
  if (failed_ && !teardown_at_) return;  // teardown is under way: ranks die of it, no news
  if (!rank_failures_) {                 // before the plan: nothing ran yet, nobody to tell
    fail(f.exit_status, f.summary, f.rank, std::move(f.stderr_tail), f.node, f.signal);
    return;
  }
  const auto decision = rank_failures_->onFailure(f);
  if (decision.announce) {
    broadcast(rank_failures_->announcement(f));
    failPmixOperationsOf(f.rank);
  }
  if (failed_) return;  // an earlier rank's grace is running
  std::string mpi_waits;  // --keep-going of an MPI program: its other ranks would wait for ever
  if (decision.action == RankFailurePolicy::Action::keep_going) mpi_waits = mpiPeersWaitFor(f);
  if (!mpi_waits.empty()) {
    f.summary += mpi_waits;
  } else if (decision.action == RankFailurePolicy::Action::keep_going) {
    // Each failed rank is named as it fails, up to a bound (all ranks of a big job may fail at
    // once); --summary-json's rank_exit_codes has every one.
    constexpr int kNamedAfterFirst = 20;
    if (rank_failures_->first()->rank == f.rank && decision.announce) {  // the job's exit status
      out_.note(f.summary + "; the other ranks go on (--keep-going)");
      recordFailure(f.exit_status, {}, f.rank, std::move(f.stderr_tail), f.node, f.signal);
    } else if (decision.announce && kept_going_said_ <= kNamedAfterFirst) {
      out_.note(kept_going_said_++ < kNamedAfterFirst
                    ? f.summary + " (--keep-going)"
                    : "more ranks failed; they are not named one by one (--summary-json has every rank's status)");
    }
    outcome_.summary = rank_failures_->keptGoingSummary();
    return;
  }
  // The job ends for the failure that happened first, which may be reported after others
  // (launcher/failure_blame.h): held until blame_'s window closes, then named (settleBlame).
  if (outcome_.failed_rank < 0 && (phase_ == Phase::running || phase_ == Phase::starting)) {
    if (f.ended_us == 0) f.ended_us = wallClockMicros();  // an older daemon's exit or abort
    blame_->add(std::move(f), Clock::now());
    return;
  }
  endJobFor(std::move(f), Clock::now());
}

void JobSession::explainPeerLoss() {
  if (cfg_.spec.keep_going || outcome_.failed_rank < 0 || !outcome_.failed_process.empty()) return;
  const auto own = recorded_errors_.find(outcome_.failed_rank);
  const std::string blamed_said = own != recorded_errors_.end()       ? own->second.message
                                  : !outcome_.stderr_tail.empty() ? outcome_.stderr_tail.back()
                                                                  : std::string();
  if (!looksLikePeerLoss(blamed_said)) return;
  // A rank that ended with status 0 before (it left its loop early, a `return` on one rank
  // only): its closed connections are the likeliest cause; said, the status stays the failure's.
  if (first_clean_end_ && first_clean_end_->at_us > 0 && first_clean_end_->at_us < blamed_ended_us_)
    outcome_.summary += "; " + rankName(first_clean_end_->rank) + " on node " + first_clean_end_->node +
                        " had ended with status 0 before it: a rank that ends early closes its connections to the "
                        "others";
  const std::pair<const int, RecordedError>* cause = nullptr;  // the earliest exception of its own
  for (const auto& entry : recorded_errors_)
    if (!looksLikePeerLoss(entry.second.message) && (!cause || entry.second.at_us < cause->second.at_us))
      cause = &entry;
  if (!cause) return;
  outcome_.summary = rankName(cause->first) + " on node " + cause->second.node + " raised " + cause->second.message +
                     " (torch's @record wrote it to its TORCHELASTIC_ERROR_FILE); the other ranks lost it: " +
                     outcome_.summary;
  outcome_.failed_rank = cause->first;
  outcome_.failed_node = cause->second.node;
  outcome_.signal = 0;
  outcome_.stderr_tail = cause->second.tail;
}

void JobSession::endJobFor(RankFailure f, Clock::time_point since) {
  if (blamed_ended_us_ == 0) blamed_ended_us_ = f.ended_us;
  // The job ends, but the other ranks' event handlers get --event-grace first: the outcome is
  // recorded now, teardown waits for endEventGrace() (tick, or every rank gone already).
  // Without a rank that called PMIx_Init (--pmix off, or torch jobs that never do) no rank can
  // have a handler: nothing to wait for, and a restart (--max-restarts) comes a second sooner.
  const auto grace = std::chrono::milliseconds(cfg_.spec.pmix && pmix_clients_ ? cfg_.spec.event_grace_ms : 0);
  if ((grace.count() == 0 || (phase_ != Phase::running && phase_ != Phase::starting)) && outcome_.failed_rank < 0) {
    fail(f.exit_status, f.summary, f.rank, std::move(f.stderr_tail), f.node, f.signal);
    return;
  }
  failed_ = true;
  // A longer grace than the default is said at once: the failure's summary comes with the end.
  if (grace > std::chrono::seconds(1))
    out_.note(f.summary + "; the job ends in " + std::to_string((grace.count() + 999) / 1000) +
              " s (--event-grace: the other ranks' PMIx event handlers run first)");
  if (outcome_.failed_rank >= 0)  // --keep-going went past an earlier failure: it stays the status
    outcome_.summary += "; then " + f.summary + ", which ends the job";
  else
    recordFailure(f.exit_status, f.summary, f.rank, std::move(f.stderr_tail), f.node, f.signal);
  teardown_at_ = since + grace;  // the blame window counts in the grace: teardown is no later
  if (Clock::now() >= *teardown_at_) endEventGrace();
}

void JobSession::settleBlame() {
  if (!blame_->holding()) return;
  const auto since = blame_->openedAt();
  endJobFor(blame_->takeCause(), since);
}

void JobSession::failNodeLost() {
  // Ranks on healthy nodes fail within moments of a lost node (their peers there are gone):
  // the node is the reason, and --max-restarts drops or replaces it, not theirs.
  const Link& link = *links_[static_cast<size_t>(lost_node_->link)];
  if (lost_node_->signal != 0) return failSignalled(link, lost_node_->signal);
  fail(exitStatusFor(Errc::node_lost),
       lostNodeText(link, *lost_node_) + blame_->takeAsConsequences(link.name), -1, {},
       link.name);
  outcome_.node_lost = true;
  outcome_.lost_nodes = {link.name};
}

void JobSession::endEventGrace() {
  if (!teardown_at_) return;
  teardown_at_.reset();
  teardown();
}

// What can never complete without the failed rank fails now, rather than hang its survivors:
// fences of the whole job (each node's next one fails too, see onPmixMessage) when it is one of
// the job's ranks (a PMIx_Spawn process is not in them), collectives that include it, and
// the direct-modex requests for its data.
void JobSession::failPmixOperationsOf(int rank) {
  if (plan_ && rank < plan_->world_size)
    for (const auto seq : fences_.abandonAll())
      broadcast({{"t", "fence_done"}, {"seq", seq}, {"ok", false}, {"lost", true}});
  pmix_collectives_->onRankFailed(rank, plan_ && rank < plan_->world_size);
  for (auto it = dmodex_waiting_.begin(); it != dmodex_waiting_.end();) {
    if (it->second.rank != rank) {
      ++it;
      continue;
    }
    sendToNode(it->first.first, {{"t", "dmodex_done"}, {"id", it->first.second}, {"ok", false}, {"d", binary("")}});
    it = dmodex_waiting_.erase(it);
  }
}

void JobSession::onRankExit(Link& link, const Json& msg) {
  const int rank = static_cast<int>(getInt(msg, "r"));
  // A node speaks for its own ranks only: another's exit (from a daemon gone wrong, or anyone
  // holding the job secret) must not fail the job or count as that rank's end.
  if (nodeOfRank(rank) != link.index)
    return noteAnomaly("node " + link.name + " reported the exit of rank " + std::to_string(rank) +
                       ", which does not run there; ignored");
  const bool signaled = getBool(msg, "signaled");
  const int code = static_cast<int>(getInt(msg, "code"));
  const bool ours = getBool(msg, "ours");
  if (ours && signaled && code == SIGKILL && interrupts_ < 2 && cfg_.spec.kill_timeout_s > 0)
    ++outcome_.killed_at_kill_timeout;
  // A rank the teardown ended keeps -1 (README): its 143 is the teardown's, not its own.
  if (!ours && rank >= 0 && static_cast<size_t>(rank) < outcome_.rank_exit_codes.size())
    outcome_.rank_exit_codes[static_cast<size_t>(rank)] = signaled ? 128 + code : code;
  pmix_directory_->onRankExit(rank);
  int ended_spawn = 0;  // the spawn whose last process this was (ids start at 1)
  if (pmix_spawns_)
    if (const auto k = pmix_spawns_->exited(rank)) ended_spawn = *k;
  // A rank of the job that ends with status 0 improperly, as mpirun counts it: after MPI_Init
  // without MPI_Finalize (an error path's exit(0), os._exit: the others would wait for it in
  // their next collective for ever), or before MPI_Init while other ranks called it (their
  // MPI_Init's fence waits for it). The job ends as for a failure, with status 1.
  const bool jobs_rank = plan_ && rank >= 0 && rank < plan_->world_size;
  if (jobs_rank && !ours && !signaled && code == 0 && !failed_ && !first_clean_end_)
    first_clean_end_ = CleanEnd{rank, link.name, getInt(msg, "at_us", 0)};
  if (!ours && !signaled && code == 0 && getBool(msg, "unfinalized")) {
    if (jobs_rank)
      failImproperEnd(rank, link.name, getInt(msg, "at_us", 0),
                      std::string(kEndedUnfinalized) + ": the other ranks would wait for it for ever", true);
    else  // a PMIx_Spawn process: its parent's program decides
      out_.note(rankName(rank) + " on node " + link.name + " " + kEndedUnfinalized);
  } else if (!ours && !signaled && code == 0 && jobs_rank && cfg_.spec.pmix && !pmix_joined_.contains(rank)) {
    if (pmix_clients_)
      failImproperEnd(rank, link.name, getInt(msg, "at_us", 0), kEndedBeforeInit);
    else
      ended_unjoined_.push_back({rank, link.name, getInt(msg, "at_us", 0)});
  }
  std::vector<std::string> tail;
  if (msg.contains("tail") && msg["tail"].is_array())
    for (const auto& l : msg["tail"])
      if (l.is_string()) tail.push_back(l.get<std::string>());
  if (const auto error = msg.find("error"); jobs_rank && error != msg.end() && error->is_object()) {
    const auto text = error->find("message");
    const int64_t at_us = getInt(*error, "at_us", 0);
    if (text != error->end() && text->is_string() && recorded_errors_.size() < 1024)
      recorded_errors_[rank] = RecordedError{link.name, text->get<std::string>().substr(0, 300), at_us, tail};
  }
  // A rank that called MPI_Abort fails with the call and exits after it: its last words come
  // with its exit, for the failure already recorded, or kept for it (a few) until it is.
  if (aborted_.contains(rank)) {
    if (rank == outcome_.failed_rank && outcome_.stderr_tail.empty()) outcome_.stderr_tail = tail;
    else if (abort_tails_.size() < 64) abort_tails_[rank] = tail;
  }
  if (!ours && (signaled || code != 0)) {
    std::string what = signaled ? std::string("was killed by signal ") + std::to_string(code) + " (" +
                                      ::strsignal(code) + ")"
                                : "exited with status " + std::to_string(code);
    // Its daemon saw the kernel's OOM killer run on the node while the ranks ran (daemon/oom_kills.h).
    if (signaled && getBool(msg, "oom"))
      what += ", and the kernel's OOM killer ran on " + link.name +
              " meanwhile: most likely out of memory (`dmesg` there names the process it killed)";
    RankFailure f;
    f.rank = rank;
    f.node = link.name;
    f.ended_us = getInt(msg, "at_us", 0);  // when its node saw it end; absent (older daemons): on arrival
    f.exit_status = signaled ? 128 + code : code;
    f.signal = signaled ? code : 0;
    f.summary = rankName(rank) + " on node " + link.name + " " + what;
    f.stderr_tail = std::move(tail);
    f.unfinalized = getBool(msg, "unfinalized");
    onRankFailed(std::move(f));
  }
  // The last process of a spawn: every node forgets its namespace (libpmix's store of it, its
  // directories), so that a job spawning in a loop does not keep them all until it ends. After
  // its failure's announcement (--keep-going), which the nodes handle first.
  if (ended_spawn == 0) return;
  if (const SpawnedJob* job = pmix_spawns_->find(ended_spawn)) {  // --output-dir: their files are complete
    std::vector<int> numbers(static_cast<size_t>(job->size()));
    std::iota(numbers.begin(), numbers.end(), job->base);
    out_.closeFiles(std::move(numbers));
  }
  if (phase_ == Phase::running) broadcast({{"t", "pmix_spawn_end"}, {"k", ended_spawn}});
}

std::string JobSession::mpiPeersWaitFor(const RankFailure& f) {
  constexpr const char* kWaits =
      "; --keep-going cannot keep an MPI program going: its other ranks would wait for it for ever (Open MPI 4.1 "
      "does not end them)";
  if (!cfg_.spec.pmix || f.rank < 0) return {};
  if (mpi_ranks_.contains(f.rank) && f.unfinalized) return kWaits;
  const bool jobs_rank = plan_ && f.rank < plan_->world_size;
  if (!jobs_rank || pmix_joined_.contains(f.rank)) return {};
  // Before MPI_Init: the MPI ranks that called it wait for it in its fence, now or once they do.
  // mpi_ranks_ is ordered: its least is one of the job's ranks when any is (spawned ones come after).
  const bool mpi_job = !mpi_ranks_.empty() && *mpi_ranks_.begin() < plan_->world_size;
  if (mpi_job)
    return "; --keep-going cannot keep an MPI program going: its other ranks called MPI_Init, whose fence would "
           "wait for this one for ever";
  if (!failed_unjoined_) failed_unjoined_ = std::make_unique<RankFailure>(f);
  return {};
}

void JobSession::onPmixClient(Link& link, int rank, bool mpi) {
  pmix_clients_ = true;
  if (nodeOfRank(rank) != link.index) return;  // a node speaks for its own ranks only
  if (mpi) mpi_ranks_.insert(rank);
  if (mpi && failed_unjoined_ && !failed_ && rank != failed_unjoined_->rank && plan_ && rank < plan_->world_size) {
    // --keep-going went past a rank that failed before MPI_Init; this one's MPI_Init waits for it.
    RankFailure f = *failed_unjoined_;
    failed_unjoined_.reset();
    f.summary = rankName(rank) + " on node " + link.name + " called MPI_Init, whose fence would wait for ever for " +
                rankName(f.rank) + ", which failed before it (--keep-going cannot keep an MPI program going)";
    endJobFor(std::move(f), Clock::now());
  }
  pmix_joined_.insert(rank);
  if (ended_unjoined_.empty()) return;
  const EndedUnjoined first = ended_unjoined_.front();  // the others would say the same
  ended_unjoined_.clear();
  failImproperEnd(first.rank, first.node, first.ended_us, kEndedBeforeInit);
}

void JobSession::failImproperEnd(int rank, const std::string& node, int64_t ended_us, const std::string& what,
                                 bool unfinalized) {
  RankFailure f;
  f.unfinalized = unfinalized;
  f.rank = rank;
  f.node = node;
  f.ended_us = ended_us;
  f.exit_status = 1;  // its own status, 0, is no success of the job's
  f.summary = rankName(rank) + " on node " + node + " " + what;
  onRankFailed(std::move(f));
}

void JobSession::onLinkClosed(Link& link, const std::string& reason) {
  link.closed = true;
  const auto below = closeRoutedBelow(link);  // lost with it
  // Finishing: the last daemon's close, after its cleanup, ends the job now, not at the next tick.
  if (phase_ == Phase::finishing) stopOnceAllClosed(Clock::now());
  if (phase_ == Phase::finishing || phase_ == Phase::done) return;
  if (phase_ == Phase::draining) {
    // Lost while the job ended (a node crashed, a daemon killed or frozen during the ranks'
    // checkpoint): the job's reason stands, but the user must know its ranks' end is unknown.
    if (!link.all_exited && !link.drained && !link.end_noted) {
      link.end_noted = true;
      out_.note("node " + link.name + " was lost while the job ended (" + reason +
                "): how its ranks ended (a checkpoint they were writing) is unknown");
      if (std::find(outcome_.lost_nodes.begin(), outcome_.lost_nodes.end(), link.name) == outcome_.lost_nodes.end())
        outcome_.lost_nodes.push_back(link.name);
    }
    if (allDrained()) finish(JobEvent::all_drained);
    return;
  }
  // Every rank it had has ended and been reported, and no other node reached tlaunch through
  // it: the job lost nothing it needs (a daemon that crashed in its own cleanup, a node that
  // went down once its part was done). A finished part must not fail a job that is hours from
  // its end; what the node's ranks left behind there may remain, which the user is told.
  if (link.all_exited && below.empty() && (phase_ == Phase::running || phase_ == Phase::starting) &&
      spawnsGoOnWithout(link, reason)) {
    // While another failure is being decided (a node lost a moment ago, ranks held for blame),
    // this end is its consequence (srun's --kill-on-bad-exit ends the whole step): the job does
    // not go on, and that failure's summary counts its ranks.
    if (!lostNodePending() && !blame_->holding()) sayEndedAfterRanks(link, reason);
    return;
  }
  // Decide a moment later: when the starter (srun after scancel, ssh after a network drop) has
  // its own explanation, it is the better one; tick() reports whichever comes first.
  if (!lost_node_) {
    lost_node_ = LostNode{link.index, reason, below, Clock::now()};
    lost_deadline_ = Clock::now() + std::chrono::milliseconds(300);
  }
}

void JobSession::sayEndedAfterRanks(Link& link, const std::string& reason) {
  // Said when the connection closes, with the starter's words on the daemon's end if it has
  // them by then; if they come later, they follow on a line of their own.
  if (!link.end_noted) {
    link.end_noted = true;
    link.end_words_noted = !link.process_end.empty();
    out_.note("warning: node " + link.name + ": its tlaunchd went away after all its ranks had ended (" + reason + ")" +
              (link.process_end.empty() ? "" : ": " + link.process_end) +
              "; the job goes on, but what its ranks left running or on disk there may remain");
    return;
  }
  if (link.end_words_noted) return;
  link.end_words_noted = true;
  out_.note("warning: node " + link.name + ": " + link.process_end);
}

void JobSession::onDaemonSignalled(const Link& link, int sig) {
  // The daemon ends its ranks now; some exit 0 on SIGTERM, which must not read as a finished job.
  if (!nextPhase(phase_, JobEvent::failed)) return;  // already draining or finishing
  // A node lost a moment ago is the cause: srun's --kill-on-bad-exit has Slurm signal the other
  // daemons of the step when one dies (kill -9, a crash). Its report names it, and lets
  // --max-restarts replace it.
  if (lostNodePending()) return;
  // Decided a moment later (tick), as a lost node is. One srun step holds every daemon: when one
  // of them could not start or failed, Slurm signals the others (--kill-on-bad-exit) and srun
  // names the failed one within a second. Elsewhere, a signal to the whole job (a cancelled
  // batch job, `kill` of every process of it) reaches tlaunch too, microseconds later: it is the
  // job's interrupt (143, never restarted), not this node's loss.
  lost_node_ = LostNode{link.index, "", {}, Clock::now(), sig};
  lost_deadline_ = Clock::now() + (starter_ && starter_->endsTogether() ? std::chrono::milliseconds(1000)
                                                                        : std::chrono::milliseconds(300));
}

void JobSession::failSignalled(const Link& link, int sig) {
  // A rank's own end (a crash, an exit status) said before this report stays the job's reason;
  // one after it is the signal's consequence (a SIGTERM handler's exit status).
  if (blame_->holding() && !blame_->onlyKilledFromOutside() && lost_node_ && blame_->openedAt() <= lost_node_->at)
    return settleBlame();
  const char* abbrev = sig > 0 && sig < NSIG ? ::sigabbrev_np(sig) : nullptr;
  const std::string name = abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
  std::string summary = diagnosticError(Errc::node_lost, "daemon-signalled", {{"node", link.name}, {"signal", name}}).message;
  // Ranks killed a moment before, by what signals a whole step (scancel signals ranks and
  // daemons alike, and a rank's exit can arrive first): this signal explains them, not they it.
  if (blame_->holding() && blame_->onlyKilledFromOutside()) summary += blame_->takeAsConsequences(link.name);
  fail(exitStatusFor(Errc::node_lost), std::move(summary), -1, {}, link.name);
  // The node is going away (shut down, drained): --max-restarts replaces it as a lost node. A
  // signal to the whole job (scancel) reaches tlaunch too, and an interrupted job never restarts.
  outcome_.node_lost = true;
  outcome_.lost_nodes = {link.name};
}

void JobSession::fail(int exit_code, std::string summary, int rank, std::vector<std::string> tail, std::string node,
                      int signal) {
  // Failed ranks held for blame came before this reason: the earliest of them stays the job's
  // reason, unless this is a node's failure while a node loss is pending (a starter's word on
  // it, a daemon signalled), which explains them.
  if (blame_->holding()) {
    if (lostNodePending() && !node.empty()) summary += blame_->takeAsConsequences(node);
    else settleBlame();
  }
  if (failed_) {
    endEventGrace();  // anything else that ends the job ends it now
    return;
  }
  failed_ = true;
  // What ends a job that went on past failed ranks (--keep-going) keeps them in its reason.
  if (rank < 0 && outcome_.failed_rank >= 0) summary += " (after " + outcome_.summary + ")";
  recordFailure(exit_code, std::move(summary), rank, std::move(tail), std::move(node), signal);
  teardown();
}

void JobSession::recordFailure(int exit_code, std::string summary, int rank, std::vector<std::string> tail,
                               std::string node, int signal) {
  outcome_.exit_code = exit_code == 0 ? 1 : exit_code;
  outcome_.summary = std::move(summary);
  outcome_.failed_rank = rank;
  outcome_.failed_process = plan_ && rank >= plan_->world_size ? rankName(rank) : std::string();
  if (auto kept = abort_tails_.find(rank); tail.empty() && kept != abort_tails_.end()) tail = kept->second;
  outcome_.stderr_tail = std::move(tail);
  outcome_.failed_node = std::move(node);
  outcome_.signal = signal;
}

}  // namespace tlaunch
