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
  // A refused command line: what was said (its first line), and --summary-json's file if the
  // parser got that far, for the summary the README promises even then.
  std::string refusal;
  std::string summary_json;
};

ParsedCommandLine parseCommandLine(int argc, char** argv);

}  // namespace tlaunch
