#include "launcher/failure_cli.h"

#include "launcher/rank_failure_policy.h"

namespace tlaunch {

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
  auto* keep_going = app.add_flag("--keep-going", s.keep_going,
                                  "a failed rank does not end the job: the others run to their end, and tlaunch "
                                  "exits with the first failed rank's status (MPI_Abort still ends the job)");
  app.final_callback([&app, keep_going] {
    const CLI::Option* restarts = app.get_option_no_throw("--max-restarts");
    if (keep_going->count() > 0 && restarts && restarts->count() > 0)
      throw CLI::ValidationError("--keep-going and --max-restarts cannot be combined: a failed rank either restarts "
                                 "the job or stays dead\n  -> choose one of them");
  });
}

}  // namespace tlaunch
