#pragma once
// The command line of a failed rank's consequences: --event-grace DURATION and --keep-going
// (kept out of cli_options.cc, which only calls this).
#include <CLI/CLI.hpp>

#include "launcher/job_spec.h"

namespace tlaunch {

// Adds both flags to a job's command line. --keep-going is refused together with a
// --max-restarts given on the same command line (where that flag exists): a rank either
// restarts or stays dead.
void addFailureOptions(CLI::App& app, JobSpec& s);

}  // namespace tlaunch
