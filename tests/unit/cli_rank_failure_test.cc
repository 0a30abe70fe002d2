// What a failed rank does to the job (launcher/rank_failure_policy.h), the PMIx collectives a
// failed rank can no longer join, and the flags --event-grace / --keep-going (issue 15 item 4).
#include <catch2/catch.hpp>

#include <signal.h>

#include <string>
#include <vector>

#include "launcher/cli_options.h"
#include "cli_test_support.h"
#include "launcher/failure_blame.h"
#include "launcher/pmix_collectives.h"
#include "launcher/rank_failure_policy.h"

using namespace tlaunch;
using namespace std::chrono_literals;

namespace {

using test::parse;

RankFailure exitOf(int rank, int code) {
  RankFailure f;
  f.rank = rank;
  f.node = "n0";
  f.exit_status = code;
  f.summary = "rank " + std::to_string(rank) + " on node n0 exited with status " + std::to_string(code);
  return f;
}

RankFailure endedAt(int rank, const std::string& node, int code, int64_t us) {
  RankFailure f = exitOf(rank, code);
  f.node = node;
  f.summary = "rank " + std::to_string(rank) + " on node " + node + " exited with status " + std::to_string(code);
  f.ended_us = us;
  return f;
}

}  // namespace

// Reports of a node's exits wait behind its output: the first to arrive is not the first to fail.
TEST_CASE("blame: the failure that ended earliest is the cause, whatever the order of the reports") {
  FailureBlame blame;
  const auto t0 = FailureBlame::Clock::now();
  CHECK_FALSE(blame.holding());
  blame.add(endedAt(2, "n1", 1, 1'000'900), t0);  // a peer's one-line "connection reset", first in
  blame.add(endedAt(3, "n1", 1, 1'002'000), t0 + 10ms);
  blame.add(endedAt(0, "n0", 139, 1'000'000), t0 + 40ms);  // the root cause, behind its traceback
  CHECK(blame.holding());
  CHECK(blame.openedAt() == t0);  // the window is the first report's
  CHECK_FALSE(blame.due(t0 + FailureBlame::kWindow - 1ms));
  CHECK(blame.due(t0 + FailureBlame::kWindow));
  const RankFailure cause = blame.takeCause();
  CHECK(cause.rank == 0);
  CHECK(cause.exit_status == 139);
  CHECK(cause.summary ==
        "rank 0 on node n0 exited with status 139; 2 other ranks failed after it (first: rank 2 on node n1, +0.9 ms)");
  CHECK_FALSE(blame.holding());
}

TEST_CASE("blame: equal stamps keep the order of arrival; a rank's second report is not another failure") {
  FailureBlame blame;
  const auto t0 = FailureBlame::Clock::now();
  blame.add(endedAt(5, "n2", 3, 7), t0);
  blame.add(endedAt(1, "n0", 4, 7), t0);
  blame.add(endedAt(5, "n2", 9, 1), t0);  // its exit after its MPI_Abort: the first report stands
  CHECK(blame.size() == 2);
  const RankFailure cause = blame.takeCause();
  CHECK(cause.rank == 5);
  CHECK(cause.exit_status == 3);
  CHECK(cause.summary == "rank 5 on node n2 exited with status 3; 1 other rank failed after it (first: rank 1 on node n0, +0.0 ms)");
}

TEST_CASE("blame: one failure alone is named as it is") {
  FailureBlame blame;
  blame.add(endedAt(4, "n1", 2, 100), FailureBlame::Clock::now());
  CHECK(blame.takeCause().summary == "rank 4 on node n1 exited with status 2");
}

TEST_CASE("blame: a lost node explains the ranks that failed around it") {
  FailureBlame blame;
  CHECK(blame.takeAsConsequences("n1").empty());
  const auto t0 = FailureBlame::Clock::now();
  blame.add(endedAt(1, "n0", 1, 20), t0);
  blame.add(endedAt(0, "n0", 1, 10), t0);
  CHECK(blame.takeAsConsequences("n1") == "; 2 ranks on other nodes failed after it (first: rank 0 on node n0)");
  CHECK_FALSE(blame.holding());
  blame.add(endedAt(3, "n1", 1, 10), t0);
  CHECK(blame.takeAsConsequences("n1") == "; 1 rank failed after it (first: rank 3 on node n1)");
}

TEST_CASE("the event grace takes 0, milliseconds, seconds and minutes up to one minute") {
  CHECK(parseEventGrace("0").value() == 0ms);
  CHECK(parseEventGrace("500ms").value() == 500ms);
  CHECK(parseEventGrace("2").value() == 2000ms);
  CHECK(parseEventGrace("1s").value() == 1000ms);
  CHECK(parseEventGrace("1m").value() == 60000ms);
  for (const char* bad : {"", "s", "-1", "1.5s", "61s", "2m", "1h", "10 s", "9999999", "1sx"}) {
    auto r = parseEventGrace(bad);
    INFO(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("--event-grace") != std::string::npos);
  }
  CHECK(parse({"--event-grace", "250ms", "--", "true"}).spec.event_grace_ms == 250);
  CHECK(parse({"--", "true"}).spec.event_grace_ms == 1000);
  CHECK(*parse({"--event-grace", "soon", "--", "true"}).exit_now == 64);
  CHECK(parse({"--keep-going", "--", "true"}).spec.keep_going);
}

TEST_CASE("a failed rank is announced once and ends the job unless --keep-going") {
  RankFailurePolicy ending(false, 4);
  auto d = ending.onFailure(exitOf(1, 3));
  CHECK(d.announce);
  CHECK(d.action == RankFailurePolicy::Action::end_after_grace);
  CHECK_FALSE(ending.onFailure(exitOf(1, 3)).announce);  // its exit after its PMIx_Abort
  CHECK(ending.hasFailed(1));
  CHECK_FALSE(ending.hasFailed(2));

  RankFailurePolicy going(true, 4);
  CHECK(going.onFailure(exitOf(2, 3)).action == RankFailurePolicy::Action::keep_going);
  CHECK(going.onFailure(exitOf(0, 9)).action == RankFailurePolicy::Action::keep_going);
  CHECK(going.first()->rank == 2);  // the exit status stays the first failed rank's
  RankFailurePolicy stamped(true, 4);  // reported after rank 2, but it ended before it
  stamped.onFailure(endedAt(2, "n1", 3, 2'000'000));
  stamped.onFailure(endedAt(0, "n0", 9, 1'000'000));
  CHECK(stamped.first()->rank == 0);
  stamped.onFailure(endedAt(1, "n0", 4, 1'500'000));
  CHECK(stamped.first()->rank == 0);
  CHECK(going.keptGoingSummary() ==
        "rank 2 on node n0 exited with status 3; the other ranks went on (--keep-going), 2 of 4 ranks failed");
  CHECK(going.anyJobRankFailed());
  RankFailure abort = exitOf(3, 5);
  abort.called_abort = true;  // MPI_Abort asks for the end of the job
  CHECK(going.onFailure(abort).action == RankFailurePolicy::Action::end_after_grace);
}

TEST_CASE("with --keep-going, spawned processes are counted apart from the job's ranks") {
  RankFailurePolicy going(true, 4);  // procs 4 and up: PMIx_Spawn's namespaces
  going.onFailure(exitOf(5, 3));
  CHECK_FALSE(going.anyJobRankFailed());  // the job's own fences still complete
  CHECK(going.hasFailed(5));
  going.onFailure(exitOf(6, 3));
  CHECK(going.keptGoingSummary() ==
        "rank 5 on node n0 exited with status 3; the other ranks went on (--keep-going), 2 spawned processes failed");
  going.onFailure(exitOf(1, 2));
  CHECK(going.anyJobRankFailed());
  CHECK(going.keptGoingSummary() == "rank 5 on node n0 exited with status 3; the other ranks went on (--keep-going), 1 of 4 "
                                    "ranks and 2 spawned processes failed");
}

TEST_CASE("the announcement says aborted for PMIx_Abort and SIGABRT, terminated otherwise") {
  const RankFailurePolicy policy(true, 4);
  RankFailure f = exitOf(1, 3);
  CHECK(policy.announcement(f) ==
        Json({{"t", "rank_failed"}, {"r", 1}, {"aborted", false}, {"status", 3}, {"job_rank", true}}));
  f.signal = SIGABRT;
  f.exit_status = 128 + SIGABRT;
  CHECK(policy.announcement(f)["aborted"] == true);
  f.signal = SIGKILL;
  CHECK(policy.announcement(f)["aborted"] == false);
  f.called_abort = true;
  CHECK(policy.announcement(f)["aborted"] == true);
}

// Interior daemons stop gathering fences of the whole job only for one of its own ranks: a
// spawned process is in none of them.
TEST_CASE("the announcement says whether the failed process is one of the job's ranks") {
  const RankFailurePolicy policy(true, 4);
  CHECK(policy.announcement(exitOf(3, 1))["job_rank"] == true);
  CHECK(policy.announcement(exitOf(4, 1))["job_rank"] == false);  // the first spawned process
}

TEST_CASE("collectives that include a failed rank fail at once, pending or new") {
  std::vector<std::pair<int, Json>> sent;
  PmixCollectives c([&](int node, const Json& m) { sent.emplace_back(node, m); }, [](const Json&) {},
                    [](int rank) { return rank >= 0 && rank < 4 ? rank / 2 : -1; }, [] { return 2; });
  const auto lost = static_cast<int>(PmixReply::proc_lost);
  // Node 0 enters a connect over ranks 0 and 3; rank 3 fails before node 1 enters.
  c.onMessage(0, {{"t", "coll"}, {"id", 7}, {"kind", "connect"}, {"ranks", {0, 3}}});
  c.onMessage(0, {{"t", "coll"}, {"id", 8}, {"kind", "fence"}, {"ranks", {1, 2}}});
  REQUIRE(sent.empty());
  c.onRankFailed(3, true);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].first == 0);
  CHECK(sent[0].second["id"] == 7);
  CHECK(sent[0].second["status"] == lost);
  CHECK(c.pending() == 1);  // the fence over ranks 1 and 2 goes on
  // Later collectives with rank 3, or over the whole job, fail as they come.
  c.onMessage(1, {{"t", "coll"}, {"id", 9}, {"kind", "connect"}, {"ranks", {0, 3}}});
  c.onMessage(1, {{"t", "coll"}, {"id", 10}, {"kind", "disconnect"}, {"ranks", {-1}}});
  REQUIRE(sent.size() == 3);
  CHECK(sent[1].second["status"] == lost);
  CHECK(sent[2].second["status"] == lost);
  c.onMessage(0, {{"t", "coll"}, {"id", 11}, {"kind", "fence"}, {"ranks", {1, 2}}});
  CHECK(sent.size() == 3);  // node 0 entered twice: no round is complete
}
