#include "launcher/inspect_cli.h"

#include "bootstrap/error_text.h"
#include "launcher/cli_values.h"

namespace tlaunch {

void addHangTimeoutOption(CLI::App& app, JobSpec& s) {
  app.add_option_function<std::string>(
         "--hang-timeout",
         [&s](const std::string& v) {
           // The same durations as --time-limit's ("1h30" was 1 h and 30 s here, "2d" refused).
           auto d = parseDuration("--hang-timeout", v);
           if (!d) throw CLI::ValidationError(describeError(d.error()));
           s.hang_timeout_s = *d;
         },
         "when no rank has printed anything for DURATION (e.g. 10m), print every rank's stacks once; the job goes on")
      ->type_name("DURATION");
}

InspectSubcommands addInspectSubcommands(CLI::App& app, JobSpec& s) {
  InspectSubcommands out;
  out.stacks = app.add_subcommand("stacks", "print the stacks of a running job's ranks, merged into classes (gdb)");
  out.stacks->add_option("job", s.control_job, "the job id (default: your only running job)");
  out.status = app.add_subcommand("status", "print a running job's ranks: state, CPU %, RSS, last output");
  out.status->add_option("job", s.control_job, "the job id (default: your only running job)");
  return out;
}

}  // namespace tlaunch
