#pragma once
// The command line of "where is it stuck": `tlaunch stacks [JOB]`, `tlaunch status [JOB]` and
// --hang-timeout DURATION (kept out of cli_options.cc, which only calls these).
#include <string>

#include <CLI/CLI.hpp>

#include "launcher/job_spec.h"

namespace tlaunch {

void addHangTimeoutOption(CLI::App& app, JobSpec& s);

struct InspectSubcommands {
  CLI::App* stacks = nullptr;
  CLI::App* status = nullptr;
};
InspectSubcommands addInspectSubcommands(CLI::App& app, JobSpec& s);

}  // namespace tlaunch
