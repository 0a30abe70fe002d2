#include "launcher/run_job.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "bootstrap/auth.h"
#include "launcher/job_environment.h"
#include "launcher/job_session.h"
#include "launcher/launcher_choice.h"

namespace tlaunch {

namespace {

std::string selfDirectory() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

std::string currentDirectory() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string("/");
}

Result<void> validate(const JobSpec& spec) {
  if (spec.argv.empty())
    return fail(Errc::usage, "no program given", "usage: tlaunch [options] -- program [args...]");
  if (spec.procs_per_node > 0 && spec.gpus_per_node > 0)
    return fail(Errc::usage, "-p and -g both given", "use -g N for one rank per GPU, or -p N for ranks without GPUs");
  if (spec.offline && !spec.dry_run) return fail(Errc::usage, "--offline only goes with --dry-run");
  return {};
}

void printError(const Error& e) {
  std::cerr << "tlaunch: error: " << e.message << "\n";
  if (!e.hint.empty()) std::cerr << "  -> " << e.hint << "\n";
}

void printOutcome(OutputSink& out, const std::string& job_id, const JobOutcome& o) {
  if (o.summary.empty()) return;
  out.note("job " + job_id + " failed: " + o.summary);
  if (!o.stderr_tail.empty()) {
    std::string text = "last lines of rank " + std::to_string(o.failed_rank) + "'s stderr:";
    for (const auto& l : o.stderr_tail) text += "\n    | " + l;
    out.note(text);
  }
}

}  // namespace

Json daemonConfig(const JobSpec& spec, const UserEnv& user_env, bool loopback_only) {
  Json nccl = Json::object();
  for (const auto& [k, v] : user_env)
    if (k.rfind("NCCL_", 0) == 0) nccl[k] = {{"value", v.value}, {"source", v.source}};
  const bool fabric_wanted = !loopback_only || !spec.net_if.empty() || !spec.net_cidr.empty() || spec.sysfs_root != "/";
  Json c = {{"sysfs_root", spec.sysfs_root},
            {"topology_xml", spec.topology_xml},
            {"preflight", spec.preflight == PreflightMode::off ? "off" : spec.preflight == PreflightMode::full ? "full" : "quick"},
            {"expect_rdma", spec.net_mode != "tcp" && fabric_wanted},
            {"gpus_required", spec.gpus_per_node},
            {"user_env", nccl}};
  if (spec.expect_rate_gbps > 0) c["expect_rate_gbps"] = spec.expect_rate_gbps;
  return c;
}

int runJob(const JobSpec& input) {
  JobSpec spec = input;
  if (auto v = validate(spec); !v) {
    printError(v.error());
    return exitStatusFor(v.error().code);
  }
  const auto env = currentEnvironment();
  auto choice = chooseLauncher(spec, env);
  if (!choice) {
    printError(choice.error());
    return exitStatusFor(choice.error().code);
  }
  if (spec.ranksPerNode() == 0) {
    // Like mpirun: the hostfile's slots say how many ranks each node runs.
    const auto& slots = choice->node_slots;
    const bool uniform = !slots.empty() && slots.front() > 0 &&
                         std::all_of(slots.begin(), slots.end(), [&](int s) { return s == slots.front(); });
    if (!uniform) {
      printError({Errc::usage, "say how many ranks per node: -p N (CPU ranks) or -g N (one rank per GPU)",
                  slots.empty() || slots.front() <= 0 ? "" : "the hosts' slots differ, so they cannot say it"});
      return exitStatusFor(Errc::usage);
    }
    spec.procs_per_node = slots.front();
  }
  auto forwarded = forwardEnvironment(env, spec.exports);
  if (!forwarded) {
    printError(forwarded.error());
    return exitStatusFor(forwarded.error().code);
  }
  const std::string job_id = "tl-" + hexEncode(randomBytes(5));
  SessionConfig cfg;
  cfg.spec = spec;
  cfg.nodes = choice->nodes;
  cfg.secret = newJobSecret();
  cfg.listen_address = choice->listen_address;
  cfg.advertise_address = choice->advertise_address;
  cfg.unnamed_nodes = choice->unnamed_nodes;
  cfg.starter_nodes = choice->starter_nodes;
  cfg.daemon_path = spec.daemon_path.empty() ? selfDirectory() + "/tlaunchd" : spec.daemon_path;
  cfg.plan_context.job_id = job_id;
  cfg.plan_context.cwd = currentDirectory();
  cfg.plan_context.base_env = forwarded->base_env;
  cfg.plan_context.user_set = forwarded->user_set;
  cfg.plan_context.user_env = forwarded->user_env;
  cfg.plan_context.loopback_only = choice->loopback_only;
  for (const auto& n : cfg.nodes) cfg.plan_context.node_net_if.push_back(n.net_if);
  cfg.daemon_config = daemonConfig(spec, forwarded->user_env, choice->loopback_only);

  ::signal(SIGPIPE, SIG_IGN);
  OutputSink out(spec.tag, spec.output_dir);
  if (spec.verbose)
    out.note("job " + job_id + ": " +
             (cfg.unnamed_nodes > 0 ? std::to_string(cfg.unnamed_nodes) + " node(s) chosen by srun"
                                    : std::to_string(cfg.nodes.size()) + " node(s)") +
             " via " + choice->starter->name() +
             ", daemons connect to " + (cfg.advertise_address.empty() ? cfg.listen_address : cfg.advertise_address));
  asio::io_context io(1);
  JobSession session(io, std::move(cfg), std::move(choice->starter), out);
  JobOutcome outcome = session.run();
  printOutcome(out, job_id, outcome);
  return outcome.exit_code;
}

}  // namespace tlaunch
