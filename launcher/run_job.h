#pragma once
#include "binding/fabric/user_env.h"
#include "bootstrap/message.h"
#include "launcher/job_spec.h"

namespace tlaunch {
// `tlaunch [options] -- program args`: resolve nodes, start daemons, run, summarise.
int runJob(const JobSpec& input);
// What every daemon needs to know before it takes its inventory (sent in the welcome).
Json daemonConfig(const JobSpec& spec, const UserEnv& user_env, bool loopback_only);
}  // namespace tlaunch
