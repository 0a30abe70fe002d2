#pragma once
// The command line of "where is it stuck": `tlaunch stacks [JOB]`, `tlaunch status [JOB]` and
// --hang-timeout DURATION (kept out of cli_options.cc, which only calls these).
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "launcher/job_spec.h"

namespace tlaunch {

// "90", "90s", "5m", "1h", "1h30m" -> seconds; nullopt when it is none of these.
std::optional<int> parseDurationSeconds(const std::string& text);

void addHangTimeoutOption(CLI::App& app, JobSpec& s);

struct InspectSubcommands {
  CLI::App* stacks = nullptr;
  CLI::App* status = nullptr;
};
InspectSubcommands addInspectSubcommands(CLI::App& app, JobSpec& s);

}  // namespace tlaunch
