// tlaunchd: the per-node, per-job daemon. Started by tlaunch (fork, ssh or srun), never by hand.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "binding/topology/hwloc_plugins.h"
#include "bootstrap/allocator_tuning.h"
#include "bootstrap/process_hygiene.h"
#include "daemon/containment.h"
#include "bootstrap/asan_default_options.h"
#include "daemon/daemon_session.h"
#include "daemon/descendants.h"
#include "daemon/job_cgroup.h"
#include "daemon/stale_job_files.h"
#include "daemon/warm_keeper.h"
#include "tlaunch/version.h"

namespace {

int runDaemon(int argc, char** argv) {
  (void)tlaunch::hardenProcess();
  tlaunch::tuneAllocatorForMessages();
  tlaunch::DaemonOptions opts;
  std::string connect;
  bool show_version = false;
  CLI::App app{"tlaunchd — tlaunch's node daemon (started by tlaunch, not by hand)"};
  app.add_option("--connect", connect, "frontend address HOST:PORT");
  app.add_option("--node-index", opts.node_index, "this node's index in the job");
  app.add_option("--node-name", opts.node_name, "this node's name in the job");
  app.add_option("--job-id", opts.job_id, "job id");
  int connect_timeout_s = 60;
  app.add_option("--connect-timeout", connect_timeout_s, "give up connecting after SECONDS (tlaunch's --connect-timeout)")
      ->check(CLI::Range(1, 7 * 24 * 3600));
  app.add_option("--tree-parent", opts.tree_parent, "started by this node's daemon (tree spawn): --connect is its listener");
  long long tree_parent_timeout_ms = 15'000;
  app.add_option("--tree-parent-timeout-ms", tree_parent_timeout_ms,
                 "(tree spawn) end if the parent says nothing for MS before the config names the job's timeout")
      ->check(CLI::Range(1'000LL, 86'400'000LL));
  app.add_flag("--version", show_version, "print the version and exit");
  std::string watch_cgroup;
  std::vector<std::string> watch_marks;
  app.add_option("--watch-cgroup", watch_cgroup, "(internal) end this job cgroup once the daemon that started us is gone");
  app.add_option("--watch-mark", watch_marks, "(internal) or the processes whose environment holds every K=V given");
  int keep_for = 0;
  bool keeper = false;
  app.add_option("--keep-for", keep_for, "keep this node warm for SECONDS after the job (tlaunch --keep-daemons)")
      ->check(CLI::Range(1, 7 * 86'400));
  app.add_option("--inventory-cache", opts.inventory_cache, "(internal) a warm node's last inventory (set by its keeper)");
  app.add_flag("--via-keeper", opts.via_keeper, "(internal) started by this node's keeper (set by it)");
  app.add_flag("--keeper", keeper, "(internal) be the keeper of a warm node (daemon/warm_keeper.h)");
  bool keeper_in_step = false;
  app.add_flag("--in-slurm-step", keeper_in_step, "(internal) with --keeper: be a task of tlaunch's keeper step");
  // A newer tlaunch may pass options this tlaunchd does not know (tlaunch and tlaunchd of
  // different builds on one cluster): said, not fatal; the hello's protocol check decides.
  app.allow_extras();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (!watch_cgroup.empty() || !watch_marks.empty()) {
    const pid_t daemon = ::getppid();
    const std::string daemon_start = tlaunch::processStartTime(daemon);
    if (tlaunch::watchJobForParent(watch_cgroup, watch_marks) == 0) return 0;
    // The daemon was killed (kill -9, the OOM killer) and left its job's files in /tmp and
    // /dev/shm: they go now, not when the next daemon starts on this node. The sweep takes
    // only a dead daemon's: its end may take a moment past its files' closing (an ASan
    // build's memory).
    for (int i = 0; i < 500 && !tlaunch::processEnded(daemon, daemon_start); ++i) ::usleep(10'000);
    (void)tlaunch::removeStaleJobDirs(tlaunch::nodeTmpBase(), "/dev/shm");
    return 0;
  }
  if (keeper) return tlaunch::runWarmKeeper(keep_for, keeper_in_step ? tlaunch::KeeperHome::slurm_step : tlaunch::KeeperHome::detached);
  if (show_version) {
    std::cout << "tlaunchd " << tlaunch::kVersion << " protocol " << tlaunch::kProtocolVersion << "\n";
    return 0;
  }
  // Before any thread: it sets an environment variable for a moment.
  const tlaunch::HwlocPluginsWithoutUnused hwloc_plugins;
  auto logger = spdlog::stderr_color_mt("tlaunchd");
  spdlog::set_default_logger(logger);
  if (!app.remaining().empty()) {
    std::string extras;
    for (const auto& word : app.remaining()) extras += (extras.empty() ? "" : " ") + word;
    spdlog::warn("ignoring what this tlaunchd does not know (is tlaunch newer?): {}", extras);
  }
  if (opts.node_name.empty()) {
    if (const char* s = getenv("SLURMD_NODENAME")) opts.node_name = s;
    else {
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      opts.node_name = host;
    }
  }
  spdlog::set_pattern("tlaunchd[" + opts.node_name + "]: %^%l%$: %v");
  auto colon = connect.rfind(':');
  if (colon == std::string::npos) {
    spdlog::error("--connect HOST:PORT is required (tlaunchd is started by tlaunch)");
    return 64;
  }
  opts.connect_host = connect.substr(0, colon);
  if (opts.connect_host.size() > 2 && opts.connect_host.front() == '[') opts.connect_host = opts.connect_host.substr(1, opts.connect_host.size() - 2);
  opts.connect_port = std::atoi(connect.substr(colon + 1).c_str());
  opts.connect_timeout = std::chrono::seconds(connect_timeout_s);
  opts.tree_parent_timeout = std::chrono::milliseconds(tree_parent_timeout_ms);
  // The job secret arrives on stdin, never in argv or the environment.
  if (!std::getline(std::cin, opts.secret) || opts.secret.empty()) {
    spdlog::error("no job secret on stdin (tlaunchd is started by tlaunch)");
    return 64;
  }
  // --keep-for: the user's secret for warm daemons follows the job secret. The keeper starts
  // before this process becomes a subreaper, so it is no descendant of ours to clean up.
  if (keep_for > 0) {
    std::string user_secret;
    if (!std::getline(std::cin, user_secret) || user_secret.empty()) {
      spdlog::error("--keep-for without the user's secret on stdin (tlaunchd is started by tlaunch)");
      return 64;
    }
    if (auto k = tlaunch::startWarmKeeper(keep_for, user_secret)) {
      opts.keeper_port = k->port;
      opts.keeper_pid = k->pid;
      opts.keeper_since = k->since;
      opts.keeper_lifeline_fd = k->lifeline_fd;
      opts.inventory_cache = k->inventory_cache;
    } else {
      spdlog::warn("this node will not stay warm after the job: {}", k.error().message);
      opts.keeper_error = k.error().message;
    }
  }
  // Whatever a rank starts re-parents to us, not to init, when its parent exits (containment.h).
  if (!tlaunch::Containment::prepareProcess())
    spdlog::warn("cannot become a child subreaper; processes the ranks detach may outlive the job");
  signal(SIGPIPE, SIG_IGN);
  // Jobs must not outlive us, nor we the job: a daemon whose parent (tlaunch, sshd, slurmstepd)
  // dies is killed. The control connection closing is the main signal; this is the backstop.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  asio::io_context io(1);
  tlaunch::DaemonSession session(io, opts);
  asio::signal_set signals(io, SIGTERM, SIGINT, SIGHUP);
  signals.add(SIGUSR1);
  signals.add(SIGUSR2);
  // The first ending signal ends the ranks with their --kill-timeout grace and cleans up. A
  // second is most often the same request by another way (under Slurm, slurmstepd's SIGTERM and
  // the one srun passes on): it must not cut the ranks' checkpoint short. A third stops now.
  int received = 0;
  std::function<void(const asio::error_code&, int)> on_signal = [&](const asio::error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGUSR1 || sig == SIGUSR2) {  // Slurm's --signal=USR1@T reaches every task: the ranks'
      spdlog::info("received signal {}; passing it to this node's ranks", sig);
      session.forwardSignal(sig);
    } else if (++received == 1) {
      spdlog::warn("received signal {}; ending this node's ranks", sig);
      session.stopOnSignal(sig);
    } else if (received == 2) {
      spdlog::warn("received signal {} again; the ranks keep their grace (a third signal ends them now)", sig);
    } else {
      io.stop();
      return;
    }
    signals.async_wait(on_signal);
  };
  signals.async_wait(on_signal);
  session.start();
  io.run();
  return session.exitCode();
}

}  // namespace

int main(int argc, char** argv) {
  // Whatever escapes is a bug in tlaunchd: say so in one line instead of std::terminate's abort.
  try {
    return runDaemon(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tlaunchd: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "tlaunchd: internal error\n");
  }
  return 70;  // EX_SOFTWARE
}
