// The job's lifecycle table (launcher/job_lifecycle.h): every event in every phase. The
// expected matrix is written out here, row by row, as a reader would check the design; the
// session's behaviour in each ending is tested in memory (core_session_lifecycle_test.cc).
#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/job_lifecycle.h"

using namespace tlaunch;

namespace {

using P = JobPhase;
using E = JobEvent;

const std::vector<P> kPhases = {P::connecting, P::testing_fabric, P::preparing, P::starting,
                                P::running,    P::draining,       P::finishing, P::done};
const std::vector<E> kEvents = {E::all_reported, E::planned, E::all_prepared, E::all_started,
                                E::all_exited,   E::failed,  E::all_drained,  E::all_closed};

// phase -> {event -> next}; an event not listed means nothing in that phase.
const std::map<P, std::map<E, P>> kExpected = {
    {P::connecting, {{E::all_reported, P::testing_fabric}, {E::failed, P::finishing}}},
    {P::testing_fabric, {{E::planned, P::preparing}, {E::failed, P::finishing}, {E::all_exited, P::finishing}}},
    {P::preparing, {{E::all_prepared, P::starting}, {E::failed, P::draining}}},
    {P::starting, {{E::all_started, P::running}, {E::all_exited, P::finishing}, {E::failed, P::draining}}},
    {P::running, {{E::all_exited, P::finishing}, {E::failed, P::draining}}},
    {P::draining, {{E::all_drained, P::finishing}}},
    {P::finishing, {{E::all_closed, P::done}}},
    {P::done, {}},
};

}  // namespace

TEST_CASE("lifecycle table: every event in every phase leads where the design says, or nowhere") {
  for (P phase : kPhases) {
    for (E event : kEvents) {
      INFO(phaseName(phase) << " + " << eventName(event));
      const auto& row = kExpected.at(phase);
      const auto want = row.count(event) ? std::optional<P>(row.at(event)) : std::nullopt;
      CHECK(nextPhase(phase, event) == want);
    }
  }
}

TEST_CASE("lifecycle table: from every phase a failure reaches done, and nothing leaves done") {
  for (P start : kPhases) {
    INFO("from " << phaseName(start));
    P phase = start;
    // The way out after a failure: fail, drain, close; each step either moves or means nothing.
    for (E event : {E::failed, E::all_drained, E::all_closed})
      if (auto next = nextPhase(phase, event)) phase = *next;
    CHECK(phase == P::done);
  }
  for (E event : kEvents) CHECK_FALSE(nextPhase(P::done, event));
}

TEST_CASE("lifecycle table: a job that succeeds goes through every phase but draining, in order") {
  std::vector<P> seen = {P::connecting};
  for (E event : {E::all_reported, E::planned, E::all_prepared, E::all_started, E::all_exited, E::all_closed}) {
    auto next = nextPhase(seen.back(), event);
    REQUIRE(next);
    seen.push_back(*next);
  }
  CHECK(seen == std::vector<P>{P::connecting, P::testing_fabric, P::preparing, P::starting, P::running, P::finishing,
                               P::done});
}

TEST_CASE("lifecycle table: every phase and event has a name for messages") {
  for (P phase : kPhases) CHECK(std::string(phaseName(phase)) != "?");
  for (E event : kEvents) CHECK(std::string(eventName(event)) != "?");
}
