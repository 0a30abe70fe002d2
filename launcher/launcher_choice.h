#pragma once
// Which nodes, and how their daemons get started (local fork, ssh, srun), from the command
// line and the environment.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/daemon_starter.h"
#include "launcher/job_spec.h"

namespace tlaunch {

struct LauncherChoice {
  std::vector<NodeTarget> nodes;
  std::unique_ptr<DaemonStarter> starter;
  std::string listen_address;  // the frontend address the daemons connect to
};

Result<LauncherChoice> chooseLauncher(const JobSpec& spec, const std::map<std::string, std::string>& env);

}  // namespace tlaunch
