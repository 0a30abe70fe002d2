#pragma once
#include "launcher/job_spec.h"

namespace tlaunch {
// `tlaunch [options] -- program args`: resolve nodes, start daemons, run, summarise.
int runJob(const JobSpec& spec);
}  // namespace tlaunch
