#include "launcher/run_job.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <utility>

#include "binding/preflight/preflight_report.h"
#include "bootstrap/auth.h"
#include "launcher/cli_values.h"
#include "launcher/held_signals.h"
#include "launcher/report_stdout.h"
#include "launcher/hostlist.h"
#include "launcher/job_environment.h"
#include "launcher/job_session.h"
#include "launcher/job_setup.h"
#include "launcher/restart_policy.h"
#include "launcher/text_file.h"
#include "launcher/summary_json.h"
#include "bootstrap/error_text.h"
#include "bootstrap/spawn.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

std::string selfDirectory() {
  const std::string p = thisExecutable();
  return p.empty() ? "." : p.substr(0, p.rfind('/'));
}

void printOutcome(OutputSink& out, const std::string& job_id, const JobSpec& spec, const JobOutcome& o) {
  if (o.summary.empty()) return;
  // With --max-restarts an attempt's failure is not the job's end: a later attempt may succeed.
  const std::string attempt = spec.max_restarts > 0 ? " (attempt " + std::to_string(spec.restart_count + 1) + " of at most " +
                                                          std::to_string(spec.max_restarts + 1) + ")"
                                                    : "";
  // Before any rank started (a usage error found when planning, a node that could not start, a
  // program missing): nothing of the user's ran.
  if (spec.preflight_only)  // no job was asked for: the checks were
    out.note("preflight " + job_id + " stopped: " + o.summary);
  else
    out.note("job " + job_id + attempt + (o.ranks_started ? " failed: " : " not started: ") + o.summary);
  if (o.killed_at_kill_timeout > 0)  // whether the ranks' checkpoint on SIGTERM finished
    out.note(std::to_string(o.killed_at_kill_timeout) + (o.killed_at_kill_timeout == 1 ? " process" : " processes") +
             " of the job did not end within --kill-timeout (" + std::to_string(spec.kill_timeout_s) +
             " s) of the SIGTERM and " + (o.killed_at_kill_timeout == 1 ? "was" : "were") + " killed");
  if (!o.stderr_tail.empty()) {
    const std::string who = o.failed_process.empty() ? "rank " + std::to_string(o.failed_rank) : o.failed_process;
    std::string text = "last lines of " + who + "'s stderr:";
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
            {"user_env", nccl},
            {"nccl_check", spec.nccl_check}};
  if (spec.expect_rate_gbps > 0) c["expect_rate_gbps"] = spec.expect_rate_gbps;
  if (spec.preflight_only) c["fresh_inventory"] = true;  // tlaunch preflight: no warm node's cached results
  if (spec.keep_going) c["tell_mpi_ranks"] = true;  // which ranks are MPI programs (daemon/mpi_process.h)
  // The user's MASTER_PORT on rank 0's node, where torch's store will listen: checked there before
  // any rank starts. Not when MASTER_ADDR is the user's too: the store may be anywhere.
  if (auto port = user_env.find("MASTER_PORT"); port != user_env.end() && !user_env.count("MASTER_ADDR"))
    c["master_port"] = std::atoi(port->second.value.c_str());
  return c;
}

namespace {

// A line to stderr that never waits: stderr may be the same stuck pipe as stdout (2>&1 | less).
// A pipe or terminal is opened again, non-blocking for this write only; a file never blocks.
void sayWithoutWaiting(const std::string& text) {
  struct stat st {};
  if (::fstat(2, &st) != 0) return;
  if (S_ISREG(st.st_mode)) {
    (void)!::write(2, text.data(), text.size());
    return;
  }
  const int fd = ::open("/proc/self/fd/2", O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return;
  (void)!::write(fd, text.data(), text.size());
  ::close(fd);
}

// The job is over and its summary written; the last output waits for stdout's reader. Ctrl-C
// or SIGTERM there (the session's handlers are gone, the signals held) drops what is left and
// ends tlaunch with the job's status, where it was held silently for as long as nobody read.
void waitForLastOutput(OutputSink& out, HeldSignals& held, int code) {
  const uint64_t ticket = out.requestFlush();
  while (!out.flushed(ticket, std::chrono::milliseconds(200))) {
    if (const int sig = held.takeInterrupt()) {
      sayWithoutWaiting(std::string("tlaunch: got SIG") + ::sigabbrev_np(sig) + ": the job's last " +
                        std::to_string((out.backlog() + 1023) / 1024) +
                        " KiB of output, still waiting for stdout's reader, are dropped\n");
      std::_Exit(code);  // the writer thread is stuck in write(): no orderly end for it
    }
  }
}

int finishJob(const JobSpec& spec, const std::string& job_id, const JobOutcome& outcome,
              std::chrono::steady_clock::time_point started) {
  if (spec.summary_json.empty()) return outcome.exit_code;
  makeSummaryDirectory(spec.summary_json, spec.output_dir);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (auto w = writeSummaryJson(spec.summary_json, outcomeToJson(job_id, outcome, wall)); !w) {
    printError(w.error());
    // A summary asked for and not written is an error too, also after a job that succeeded.
    return outcome.exit_code != 0 ? outcome.exit_code : exitStatusFor(w.error().code);
  }
  return outcome.exit_code;
}

}  // namespace

namespace {

// One attempt of the job: its own id, secret, daemons and session. The sink outlives it.
JobOutcome runAttempt(JobSetup& setup, const std::string& job_id, const std::string& run_id, OutputSink& out,
                      HeldSignals& held, std::chrono::steady_clock::time_point started,
                      const std::vector<PreflightItem>& unstarted_preflight) {
  const JobSpec& spec = setup.spec;
  LauncherChoice& choice = setup.choice;
  SessionConfig cfg;
  cfg.spec = spec;
  cfg.nodes = choice.nodes;
  cfg.secret = newJobSecret();
  cfg.listen_address = choice.listen_address;
  cfg.advertise_address = choice.advertise_address;
  cfg.unnamed_nodes = choice.unnamed_nodes;
  cfg.starter_nodes = choice.starter_nodes;
  cfg.tree_spawn = choice.tree_spawn;
  cfg.started_by_frontend = choice.started_by_frontend;
  cfg.unstarted_preflight = unstarted_preflight;
  cfg.daemon_path = spec.daemon_path.empty() ? selfDirectory() + "/tlaunchd" : spec.daemon_path;
  cfg.plan_context = setup.plan_context;
  cfg.plan_context.job_id = job_id;
  cfg.plan_context.run_id = run_id;
  cfg.plan_context.restart_count = spec.restart_count;
  cfg.plan_context.max_restarts = spec.max_restarts;
  cfg.daemon_config = daemonConfig(spec, cfg.plan_context.user_env, choice.loopback_only);
  cfg.time_limit_start = started;
  cfg.ignored_signals = held.ignored();
  cfg.held_signals = &held;
  if (spec.verbose)
    out.note("job " + job_id + ": " +
             (cfg.unnamed_nodes > 0 ? std::to_string(cfg.unnamed_nodes) + " node(s) chosen by srun"
                                    : std::to_string(cfg.nodes.size()) + " node(s)") +
             " via " + choice.starter->name() +
             ", daemons connect to " + cfg.connectAddress());
  asio::io_context io(1);
  JobSession session(io, std::move(cfg), std::move(choice.starter), out);
  held.release();  // the session handles them now, one that waited too
  JobOutcome outcome = session.run();
  held.hold();  // before the session's handlers go with it
  out.endProgressLines();
  if (outcome.unstarted_preflight.empty()) printOutcome(out, job_id, spec, outcome);  // else: the caller's
  return outcome;
}

// `tlaunch preflight` that could not check the other nodes without the ones it could not start
// (none left, or they could not be chosen): those nodes' rows alone.
void printUnstartedPreflight(const std::vector<PreflightItem>& rows, bool json, const std::string& why) {
  const std::string text = json ? jsonText(preflightToJson(rows), 2) + "\n"
                                : renderPreflightTable(rows) + "\npreflight: " + preflightSummary(rows) + " (" + why + ")\n";
  if (auto printed = printReport(text); !printed) printError(printed.error());  // the exit status says failure already
}

std::vector<std::string> nodeNames(const LauncherChoice& choice) {
  std::vector<std::string> names;
  for (const auto& n : choice.nodes) names.push_back(n.name);
  return names;
}

}  // namespace

int runJob(const JobSpec& input) {
  const auto started = std::chrono::steady_clock::now();
  // Blocked since main() began: one that came while the job was set up ends it before it starts,
  // with its summary, instead of killing tlaunch by the default action; SetUpSignals takes Ctrl-C
  // during the first attempt's set-up (which may block), the mask between later attempts.
  HeldSignals held(signalsIgnoredAtStart());
  held.hold();
  SetUpSignals setup_signals(held.ignored());
  const std::string run_id = "tl-" + hexBytes(randomBytes(5));
  auto refuse = [&](const Error& e) {
    printError(e);
    JobOutcome o;
    o.exit_code = exitStatusFor(e.code);
    o.summary = e.message;
    return finishJob(input, run_id, o, started);
  };
  // Interrupted before any daemon started: said as a session says it, with the summary.
  auto interruptedBeforeStart = [&](int sig, OutputSink* sink) {
    const bool job = !input.preflight_only && !input.dry_run;
    const std::string got = std::string("got ") + ::sigabbrev_np(sig) + ": " +
                            (job ? "ending the job before its ranks start" : "stopping");
    JobOutcome o;
    o.exit_code = 128 + sig;
    o.summary = std::string("tlaunch was interrupted by SIG") + ::sigabbrev_np(sig);
    o.interrupted = true;
    if (sink) {
      sink->note(got);
      printOutcome(*sink, run_id, input, o);
    } else {
      std::fprintf(stderr, "tlaunch: %s\ntlaunch: %s %s %s: %s\n", got.c_str(),
                   input.preflight_only ? "preflight" : "job", run_id.c_str(),
                   input.preflight_only ? "stopped" : "not started", o.summary.c_str());
    }
    return finishJob(input, run_id, o, started);
  };
  if (auto p = checkSummaryJsonPath(input.summary_json, input.output_dir); !p) {
    printError(p.error());
    return exitStatusFor(p.error().code);
  }
  ::signal(SIGPIPE, SIG_IGN);
  // --max-restarts: attempt after attempt, each a whole job of its own (new daemons, new
  // secret, a job id "<run id>-r<N>"), on the nodes the restart policy leaves.
  RestartPolicy restarts(input.max_restarts);
  JobSpec attempt = input;
  if (!input.hostfile.empty() && !input.hostfile_content) {  // once, for every attempt
    auto content = readTextFile(input.hostfile, "hostfile");  // a `<(script)` may take its time
    if (const int sig = setup_signals.caught()) return interruptedBeforeStart(sig, nullptr);
    if (!content) return refuse(content.error());
    attempt.hostfile_content = std::move(*content);
  }
  std::optional<OutputSink> out;
  JobOutcome outcome;
  Json history = Json::array();
  std::vector<std::string> last_nodes;
  RestartPolicy::Decision pending;  // the restart the next attempt is
  std::string pending_cause;
  std::vector<PreflightItem> unstarted;  // tlaunch preflight: rows of nodes that could not be started
  int preflight_reruns = 0;
  bool preflight_rerun = false;  // the next attempt checks the nodes left, it is no restart
  std::string unchecked = "the other nodes were not checked";  // why, where no report came out
  for (;;) {
    attempt.restart_count = restarts.restarts();
    auto setup = setUpJob(attempt, currentEnvironment(), false);
    setup_signals.disarm();  // from here on held (the mask) until a session handles them
    if (const int sig = setup_signals.caught(); sig != 0 && !out) return interruptedBeforeStart(sig, nullptr);
    std::vector<std::string> kept;  // dropped for failed ranks, but nothing could take their place
    if (!setup && pending.restart && pending.drop_optional) {
      restarts.keep(pending.drop);
      std::erase_if(attempt.dropped_nodes, [&](const std::string& n) {
        return std::find(pending.drop.begin(), pending.drop.end(), n) != pending.drop.end();
      });
      kept = std::exchange(pending.drop, {});
      setup = setUpJob(attempt, currentEnvironment(), false);
    }
    if (!setup && !unstarted.empty()) {  // tlaunch preflight: no other node to check
      const std::string& m = setup.error().message;
      unchecked = m.starts_with("no node is left") ? "no other node to check"
                                                   : "the other nodes were not checked: " + m.substr(0, m.find('\n'));
      break;  // the outcome stays the attempt's whose nodes could not be started
    }
    if (!setup) {
      if (!out) return refuse(setup.error());
      out->note("cannot restart the job: " + describeError(setup.error()));
      break;  // the outcome stays the failed attempt's
    }
    if (!out) {
      out.emplace(setup->spec.tag, setup->spec.output_dir);
      if (!setup->spec.dry_run && !setup->spec.preflight_only) {  // those write no file
        if (auto ok = out->checkDirectory(); !ok) return refuse(ok.error());
        writeStartedSummary(input.summary_json, run_id);
      }
      for (const auto& note : setup->choice.notes) out->note(note);
    }
    if (const int sig = held.takeInterrupt()) {  // Ctrl-C since the last attempt ended (or in a blink before the first)
      if (attempt.restart_count == 0 && preflight_reruns == 0) {  // no session has started yet
        return interruptedBeforeStart(sig, &*out);
      } else if (!unstarted.empty()) {  // tlaunch preflight: the others are not checked; as interrupted
        unchecked = "interrupted: the other nodes were not checked";
        outcome.exit_code = 128 + sig;
      } else {
        out->note(std::string("got SIG") + ::sigabbrev_np(sig) + " between attempts: the job is not restarted");
      }
      outcome.interrupted = true;
      break;  // the outcome stays the failed attempt's
    }
    if (input.time_limit_s > 0 && std::chrono::steady_clock::now() - started >= std::chrono::seconds(input.time_limit_s)) {
      // As when the limit ends an attempt: tlaunch stopped the job (exit 124), no rank did.
      const std::string why = "time limit of " + formatDuration(input.time_limit_s) +
                              " reached (--time-limit) before the job could restart after: " + outcome.summary;
      out->note("job " + run_id + " failed: " + why);
      // The failed attempt's facts stay (each rank's status, the ranks killed at --kill-timeout,
      // the failed rank's last lines, which the reason names); whose status it is changes.
      outcome.exit_code = exitStatusFor(Errc::time_limit);
      outcome.summary = why;
      outcome.failed_rank = -1;
      outcome.failed_process.clear();
      outcome.failed_node.clear();
      outcome.signal = 0;
      outcome.node_lost = false;
      break;
    }
    const std::vector<std::string> nodes = nodeNames(setup->choice);
    const bool rerun_for_preflight = std::exchange(preflight_rerun, false);
    if (attempt.restart_count > 0 && !rerun_for_preflight) {
      std::string line = describeRestart(attempt.restart_count, input.max_restarts, pending_cause, pending.drop,
                                         pending.reason, last_nodes, nodes);
      if (!kept.empty())
        line += "; " + joinStrings(kept, ", ") + " kept, though a rank failed there in two attempts in a row: no " +
                "spare node can take its place and the job cannot run on fewer";
      out->note(line);
      history.push_back({{"restart", attempt.restart_count},
                         {"cause", pending_cause},
                         {"dropped", pending.drop},
                         {"nodes", nodes},
                         {"at_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}});
    }
    last_nodes = nodes;
    std::string job_id = attempt.restart_count == 0 ? run_id : run_id + "-r" + std::to_string(attempt.restart_count);
    if (preflight_reruns > 0) job_id += "-p" + std::to_string(preflight_reruns);
    outcome = runAttempt(*setup, job_id, run_id, *out, held, started, unstarted);
    if (!outcome.unstarted_preflight.empty()) {
      // tlaunch preflight with nodes that could not be started: the others are checked without
      // them (once more, with new daemons), and one report shows every node's rows.
      std::vector<std::string> names;
      for (const auto& row : outcome.unstarted_preflight) names.push_back(row.node);
      unstarted.insert(unstarted.end(), outcome.unstarted_preflight.begin(), outcome.unstarted_preflight.end());
      attempt.dropped_nodes.insert(attempt.dropped_nodes.end(), names.begin(), names.end());
      if (outcome.interrupted) {
        unchecked = "interrupted: the other nodes were not checked";
        break;
      }
      std::string cause = outcome.summary.substr(0, outcome.summary.find('\n'));
      if (cause.ends_with(':')) cause.pop_back();
      out->note(cause + "; checking the other nodes without " + compressHostlist(names));
      // The nodes left (and spares beyond -N) are checked, whatever -N or -n asked for.
      if (attempt.nodes > 0 && attempt.min_nodes <= 0) attempt.min_nodes = 1;
      attempt.total_ranks = 0;
      ++preflight_reruns;
      preflight_rerun = true;
      continue;
    }
    AttemptEnd end;
    end.success = outcome.exit_code == 0;
    end.node_lost = outcome.node_lost;
    end.interrupted = outcome.interrupted;
    end.restartable = outcome.failed_rank >= 0 || outcome.node_lost;
    end.failed_node = outcome.failed_node;
    end.lost_nodes = outcome.lost_nodes;
    end.not_started = outcome.nodes_not_started;
    end.summary = outcome.summary;
    pending = restarts.afterAttempt(end);
    if (!pending.restart) {
      if (!end.success && input.max_restarts > 0 && !pending.reason.empty()) out->note(pending.reason);
      break;
    }
    // Its first line: the cause ("could not start tlaunchd on 3 of 8 nodes:"), not the list.
    pending_cause = outcome.summary.substr(0, outcome.summary.find('\n'));
    if (pending_cause.ends_with(':')) pending_cause.pop_back();
    attempt.dropped_nodes.insert(attempt.dropped_nodes.end(), pending.drop.begin(), pending.drop.end());
  }
  outcome.restarts = std::move(history);
  if (!unstarted.empty()) {
    // Every path prints their rows: in the report of the nodes left, or alone.
    if (!outcome.preflight_reported) printUnstartedPreflight(unstarted, input.json, unchecked);
    // A node that could not be started fails `tlaunch preflight` as such (69), whatever the
    // checks of the others said.
    if (outcome.exit_code == 0 || outcome.exit_code == exitStatusFor(Errc::preflight)) {
      outcome.exit_code = exitStatusFor(Errc::node_unreachable);
      if (outcome.summary.empty())
        outcome.summary = "could not start tlaunchd on " + std::to_string(unstarted.size()) + " node(s)";
    }
    for (const auto& row : unstarted)
      if (std::find(outcome.lost_nodes.begin(), outcome.lost_nodes.end(), row.node) == outcome.lost_nodes.end())
        outcome.lost_nodes.push_back(row.node);  // --summary-json names them
    if (outcome.failed_node.empty()) outcome.failed_node = unstarted.front().node;
  }
  // The summary first, into a file of its own: a stdout nobody reads (a pager left unscrolled)
  // must not keep it back. One written where it is (/dev/stdout, a FIFO) follows the output.
  struct stat st {};
  const bool own_file = input.summary_json.empty() ||
                        (::lstat(input.summary_json.c_str(), &st) != 0 ? errno == ENOENT : S_ISREG(st.st_mode));
  if (!own_file) {
    if (out) out->flush();
    return finishJob(input, run_id, outcome, started);
  }
  const int code = finishJob(input, run_id, outcome, started);
  if (out) waitForLastOutput(*out, held, code);
  return code;
}

}  // namespace tlaunch
