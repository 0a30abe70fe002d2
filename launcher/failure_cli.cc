#include "launcher/failure_cli.h"

#include "bootstrap/error_text.h"
#include "launcher/cli_values.h"
#include "launcher/rank_failure_policy.h"

namespace tlaunch {

namespace {
constexpr int kMaxRestarts = 1000;
}  // namespace

void addFailureOptions(CLI::App& app, JobSpec& s) {
  app.add_option_function<std::string>(
         "--event-grace",
         [&s](const std::string& v) {
           auto d = parseEventGrace(v);
           if (!d) throw CLI::ValidationError(d.error().message + "\n  -> " + d.error().hint);
           s.event_grace_ms = static_cast<int>(d->count());
         },
         "when a rank fails, the other ranks' PMIx event handlers get this long before teardown (default 1s; "
         "0: at once)")
      ->type_name("DURATION");
  app.add_option_function<std::string>(
         "--max-restarts,--max_restarts",
         [&s](const std::string& v) {
           auto n = parseBoundedInt("--max-restarts", v, 0, kMaxRestarts);
           if (!n) throw CLI::ValidationError(describeError(n.error()));
           s.max_restarts = *n;
         },
         "when a rank fails or a node is lost, end every rank and start the job again, up to N times "
         "(TORCHELASTIC_RESTART_COUNT counts them; a lost node, or one whose rank failed twice in a row, is "
         "replaced by a spare node, see --nnodes) [0-" +
             std::to_string(kMaxRestarts) + "]")
      ->type_name("N");
  auto* keep_going = app.add_flag("--keep-going", s.keep_going,
                                  "a failed rank does not end the job: the others run to their end, and tlaunch "
                                  "exits with the first failed rank's status (MPI_Abort still ends the job)");
  app.final_callback([&app, &s, keep_going] {
    const CLI::Option* restarts = app.get_option_no_throw("--max-restarts");
    if (keep_going->count() > 0 && restarts && restarts->count() > 0)
      throw CLI::ValidationError("--keep-going and --max-restarts cannot be combined: a failed rank either restarts "
                                 "the job or stays dead\n  -> choose one of them");
    // The grace is for the ranks' PMIx event handlers; without a PMIx server there are none.
    const CLI::Option* grace = app.get_option_no_throw("--event-grace");
    if (!s.pmix && grace && grace->count() > 0 && s.event_grace_ms > 0)
      throw CLI::ValidationError("--event-grace gives the ranks' PMIx event handlers time, but --pmix off starts no "
                                 "PMIx server\n  -> drop --event-grace, or leave --pmix on");
  });
}

}  // namespace tlaunch
