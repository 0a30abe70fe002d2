#pragma once
// The job's life at the frontend as one table (as flux-core's job states): the phases a job
// goes through and what each event does in each of them. JobSession changes phase only
// through nextPhase, so the table below is the whole story; tests/unit/cli_lifecycle_test.cc
// checks every event in every phase, and core_session_lifecycle_test.cc drives the real session.
//
//   connecting      daemons start, connect, authenticate and report their inventories
//   testing_fabric  the cross-node preflight (RDMA pair test, reachability) runs
//   preparing       the plan is made and sent; every node prepares (program, peers, PMIx)
//   starting        every node was told to start its ranks
//   running         every node started its ranks
//   draining        the job failed: ranks are being ended, their last output collected
//   finishing       daemons are told to exit; the connections close
//   done            the event loop stops
#include <optional>

namespace tlaunch {

enum class JobPhase { connecting, testing_fabric, preparing, starting, running, draining, finishing, done };

enum class JobEvent {
  all_reported,   // every daemon sent its inventory
  planned,        // the cross-node preflight is over, the plan made and sent: nodes prepare
  all_prepared,   // every node prepared: start the ranks
  all_started,    // every node started its ranks
  all_exited,     // every rank ended, the job did not fail
  failed,         // a rank failed, a node was lost, a deadline passed, a signal, a refusal
  all_drained,    // after a failure: every node confirmed its ranks ended (or the drain deadline)
  all_closed,     // finishing: every connection closed (or the finish deadline)
};

const char* phaseName(JobPhase phase);
const char* eventName(JobEvent event);

// The phase `event` leads to from `phase`; nullopt when the event means nothing there (a late
// or repeated one: it changes nothing).
std::optional<JobPhase> nextPhase(JobPhase phase, JobEvent event);

}  // namespace tlaunch
