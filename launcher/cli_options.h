#pragma once
// The only place that sees argv: CLI11 → JobSpec.
#include <optional>
#include <string>

#include "launcher/job_spec.h"

namespace tlaunch {

enum class Subcommand { run, topo, preflight, stacks, status, stop_daemons };

struct ParsedCommandLine {
  Subcommand command = Subcommand::run;
  JobSpec spec;
  std::optional<int> exit_now;  // --help/--version printed, or a usage error was reported
};

ParsedCommandLine parseCommandLine(int argc, char** argv);

}  // namespace tlaunch
