#pragma once
// Everything a job decides before any node is contacted: the checks of the command line, the
// nodes and the rank layout, the environment the ranks inherit. The real run and
// `--dry-run --offline` both start here, so they plan the same job.
#include <map>
#include <string>

#include "launcher/plan/job_plan.h"
#include "launcher/launcher_choice.h"

namespace tlaunch {

struct JobSetup {
  JobSpec spec;              // the layout applied: -N and -p/-g as planned
  LauncherChoice choice;
  PlanContext plan_context;  // all but job_id
};

// offline: resolve names only (no starter's addresses are looked up) and plan without asking
// any node about its network.
Result<JobSetup> setUpJob(const JobSpec& input, const std::map<std::string, std::string>& env, bool offline);

}  // namespace tlaunch
