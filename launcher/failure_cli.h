#pragma once
// The command line of a failed rank's consequences: --event-grace DURATION, --keep-going and
// --max-restarts N
// (kept out of cli_options.cc, which only calls this).
#include <CLI/CLI.hpp>

#include "launcher/job_spec.h"

namespace tlaunch {

// Adds the flags to a job's command line. --keep-going is refused together with
// --max-restarts: a rank either restarts or stays dead.
void addFailureOptions(CLI::App& app, JobSpec& s);

}  // namespace tlaunch
