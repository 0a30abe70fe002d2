#include "launcher/inspect_cli.h"

#include <cctype>

namespace tlaunch {

std::optional<int> parseDurationSeconds(const std::string& text) {
  if (text.empty()) return std::nullopt;
  long long total = 0;
  size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    long long n = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      n = n * 10 + (text[i++] - '0');
      if (n > 100'000'000) return std::nullopt;
    }
    const char unit = i < text.size() ? text[i++] : 's';
    if (unit == 's') total += n;
    else if (unit == 'm') total += n * 60;
    else if (unit == 'h') total += n * 3600;
    else return std::nullopt;
  }
  if (total > 100'000'000) return std::nullopt;
  return static_cast<int>(total);
}

void addHangTimeoutOption(CLI::App& app, JobSpec& s) {
  app.add_option_function<std::string>(
         "--hang-timeout",
         [&s](const std::string& v) {
           auto d = parseDurationSeconds(v);
           if (!d) throw CLI::ValidationError("--hang-timeout", "expected a duration such as 300, 90s, 10m or 1h");
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
