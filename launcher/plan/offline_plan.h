#pragma once
// `tlaunch --dry-run --offline`: the plan from a topology file alone, no node contacted, and
// `tlaunch topo`: this node's map.
#include "launcher/job_spec.h"

namespace tlaunch {
int runOfflineDryRun(const JobSpec& spec);
int runTopo(const JobSpec& spec);
}  // namespace tlaunch
