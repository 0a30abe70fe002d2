#include "launcher/job_lifecycle.h"

namespace tlaunch {

const char* phaseName(JobPhase phase) {
  switch (phase) {
    case JobPhase::connecting: return "connecting";
    case JobPhase::testing_fabric: return "testing_fabric";
    case JobPhase::preparing: return "preparing";
    case JobPhase::starting: return "starting";
    case JobPhase::running: return "running";
    case JobPhase::draining: return "draining";
    case JobPhase::finishing: return "finishing";
    case JobPhase::done: return "done";
  }
  return "?";
}

const char* eventName(JobEvent event) {
  switch (event) {
    case JobEvent::all_reported: return "all_reported";
    case JobEvent::planned: return "planned";
    case JobEvent::all_prepared: return "all_prepared";
    case JobEvent::all_started: return "all_started";
    case JobEvent::all_exited: return "all_exited";
    case JobEvent::failed: return "failed";
    case JobEvent::all_drained: return "all_drained";
    case JobEvent::all_closed: return "all_closed";
  }
  return "?";
}

std::optional<JobPhase> nextPhase(JobPhase phase, JobEvent event) {
  using P = JobPhase;
  using E = JobEvent;
  switch (phase) {
    case P::connecting:
      if (event == E::all_reported) return P::testing_fabric;
      if (event == E::failed) return P::finishing;  // no rank exists yet: nothing to drain
      break;
    case P::testing_fabric:
      if (event == E::planned) return P::preparing;
      if (event == E::failed) return P::finishing;  // a refused plan: no node prepared anything
      if (event == E::all_exited) return P::finishing;  // --dry-run, `tlaunch preflight`: the report was the job
      break;
    case P::preparing:
      if (event == E::all_prepared) return P::starting;
      if (event == E::failed) return P::draining;  // nodes may hold PMIx servers and job directories
      break;
    case P::starting:
      if (event == E::all_started) return P::running;
      if (event == E::all_exited) return P::finishing;  // ranks so short they ended before the last "started"
      if (event == E::failed) return P::draining;
      break;
    case P::running:
      if (event == E::all_exited) return P::finishing;
      if (event == E::failed) return P::draining;
      break;
    case P::draining:
      if (event == E::all_drained) return P::finishing;
      break;
    case P::finishing:
      if (event == E::all_closed) return P::done;
      break;
    case P::done:
      break;
  }
  return std::nullopt;
}

}  // namespace tlaunch
