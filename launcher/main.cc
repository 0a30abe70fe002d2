// tlaunch: the frontend. Parses the command line and hands over to the subcommand.
#include <pthread.h>

#include <csignal>
#include <iostream>
#include <string_view>

#include "bootstrap/asan_default_options.h"
#include "bootstrap/allocator_tuning.h"
#include "bootstrap/process_hygiene.h"
#include "binding/topology/hwloc_plugins.h"
#include "launcher/cli_options.h"
#include "launcher/control_socket.h"
#include "launcher/held_signals.h"
#include "launcher/nccl/nccl_report_command.h"
#include "launcher/plan/offline_plan.h"
#include "launcher/run_job.h"
#include "launcher/summary_json.h"
#include "launcher/warm_daemons_cli.h"

int main(int argc, char** argv) {
  // Until runJob takes them, or a subcommand without a job puts the inherited mask back.
  const sigset_t inherited_mask = tlaunch::blockSessionSignals();
  const unsigned closed_streams = tlaunch::hardenProcess();
  tlaunch::tuneAllocatorForMessages();
  // A subcommand with its own parser (launcher/nccl/nccl_report_command.cc): it starts no job.
  if (argc > 1 && std::string_view(argv[1]) == "nccl-report") {
    pthread_sigmask(SIG_SETMASK, &inherited_mask, nullptr);
    return tlaunch::runNcclReportCommand(argc - 1, argv + 1);
  }
  auto parsed = tlaunch::parseCommandLine(argc, argv);
  if (parsed.exit_now) {
    if (!parsed.summary_json.empty()) tlaunch::writeRefusalSummary(parsed.summary_json, parsed.refusal);
    return *parsed.exit_now;
  }
  // `tlaunch ... >&-` (a cron line, a script's mistake): the ranks' stdout would vanish unsaid.
  if ((closed_streams & 2U) != 0 && parsed.command == tlaunch::Subcommand::run && !parsed.spec.quiet)
    std::cerr << "tlaunch: note: tlaunch's stdout is closed: the ranks' stdout is discarded (give it a file, or "
                 "/dev/null to say so)\n";
  const bool offline_plan = parsed.spec.offline && parsed.spec.dry_run;
  const bool starts_job = (parsed.command == tlaunch::Subcommand::run && !offline_plan) ||
                          parsed.command == tlaunch::Subcommand::preflight;
  if (!starts_job) pthread_sigmask(SIG_SETMASK, &inherited_mask, nullptr);
  switch (parsed.command) {
    case tlaunch::Subcommand::run:
      if (parsed.spec.offline && parsed.spec.dry_run) {
        const tlaunch::HwlocPluginsWithoutUnused hwloc_plugins;  // the plan loads --topology-xml with hwloc
        return tlaunch::runOfflineDryRun(parsed.spec);
      }
      return tlaunch::runJob(parsed.spec);  // plans from the daemons' reports: hwloc stays unloaded
    case tlaunch::Subcommand::topo: {
      const tlaunch::HwlocPluginsWithoutUnused hwloc_plugins;  // before any thread, as in tlaunchd
      return tlaunch::runTopo(parsed.spec);
    }
    case tlaunch::Subcommand::preflight: return tlaunch::runJob(parsed.spec);
    case tlaunch::Subcommand::stacks: return tlaunch::runControlCommand("stacks", parsed.spec.control_job);
    case tlaunch::Subcommand::status: return tlaunch::runControlCommand("status", parsed.spec.control_job);
    case tlaunch::Subcommand::stop_daemons: return tlaunch::runStopDaemons();
  }
  return 70;
}
