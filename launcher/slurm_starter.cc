#include "launcher/slurm_starter.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "bootstrap/shell_quote.h"
#include "launcher/starter_support.h"
#include "tlaunch/strings.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

namespace {

bool contains(const std::string& text, std::string_view needle) { return text.find(needle) != std::string::npos; }

// srun's options that tlaunch sets for the daemons' step, and what the user wants instead.
struct OwnedSrunOption {
  char short_name;  // 0: none
  std::string_view long_name;
  std::string_view instead;
};
constexpr OwnedSrunOption kOwnedSrunOptions[] = {
    {'N', "--nodes", "tlaunch's -N/--nodes"},
    {'w', "--nodelist", "tlaunch's --hosts, --include or --exclude"},
    {'x', "--exclude", "tlaunch's --exclude"},
    {'n', "--ntasks", "tlaunch's -n/--np (ranks in all)"},
    {0, "--ntasks-per-node", "tlaunch's -p/--procs-per-node"},
    {0, "--cpu-bind", "tlaunch's --bind"},
    {0, "--mpi", "nothing: each tlaunchd is its ranks' PMIx server"},
    {'i', "--input", "tlaunch's --stdin"},
    {'o', "--output", "tlaunch's --output-dir"},
    {'e', "--error", "tlaunch's --output-dir"},
    {0, "--pty", "nothing: the ranks' output comes to tlaunch"},
    {0, "--multi-prog", "nothing: tlaunch starts one daemon per node"},
};

// The option `word` spells ("-N2", "-N", "--nodes=2", "--nodes"), if it is one of those.
const OwnedSrunOption* ownedOptionIn(std::string_view word) {
  for (const auto& o : kOwnedSrunOptions) {
    if (word == o.long_name || (word.starts_with(o.long_name) && word.size() > o.long_name.size() &&
                                word[o.long_name.size()] == '='))
      return &o;
    if (o.short_name != 0 && word.size() >= 2 && word[0] == '-' && word[1] == o.short_name) return &o;
  }
  return nullptr;
}

}  // namespace

Result<void> checkSlurmArgs(std::string_view slurm_args) {
  auto words = splitShellWords(slurm_args, "--slurm-args");
  if (!words) return tl::unexpected(words.error());
  for (const auto& w : *words)
    if (const OwnedSrunOption* o = ownedOptionIn(w))
      return diagnostic(Errc::usage, "slurm-args-owned",
                        {{"word", w}, {"option", std::string(o->long_name)}, {"instead", std::string(o->instead)}});
  return {};
}

Result<std::vector<std::string>> buildSrunArgv(const SlurmStarterOptions& options, const std::vector<NodeTarget>& nodes,
                                               const DaemonCommand& command) {
  if (nodes.empty()) return fail(Errc::internal, "the Slurm starter was given no nodes");
  const std::string n = std::to_string(nodes.size());
  std::vector<std::string> argv{options.srun_program};
  if (options.inside_allocation) argv.emplace_back("--overlap");
  argv.insert(argv.end(), {"--ntasks-per-node=1", "-N", n, "--ntasks=" + n});
  const bool all_named = std::all_of(nodes.begin(), nodes.end(), [](const NodeTarget& t) { return !t.name.empty(); });
  if (all_named) {
    std::string list;
    for (const auto& t : nodes) {
      if (t.name.find_first_of(", \t\n") != std::string::npos || t.name.front() == '-') {
        return diagnostic(Errc::usage, "srun-bad-node-name", {{"node", t.name}});
      }
      list += (list.empty() ? "" : ",") + t.name;
    }
    argv.push_back("--nodelist=" + list);
  } else if (options.inside_allocation) {
    return fail(Errc::internal, "the Slurm starter needs every node's name inside an allocation");
  }
  // --input=all broadcasts the secret on stdin to every daemon. --cpu-bind=none: the daemon
  // binds its ranks itself and must not be confined to one core. --mpi=none: no Slurm PMIx
  // server for the daemons (SLURM_MPI_TYPE in the environment would otherwise apply).
  argv.insert(argv.end(), {"--kill-on-bad-exit=1", "--input=all", "--cpu-bind=none", "--mpi=none"});
  auto extra = splitShellWords(options.slurm_args, "--slurm-args");
  if (!extra) return tl::unexpected(extra.error());
  // A job that asked for GPUs per task gives a one-task step one task's share: ask for the node's.
  // Not when the user's own words ask for GPUs (a word, not a substring: `-A gpu-proj` does not).
  const bool asks_gpus = std::any_of(extra->begin(), extra->end(), [](const std::string& w) {
    return w.starts_with("--gres") || w.starts_with("--gpus") || w.starts_with("-G") || w.starts_with("--tres-per-task");
  });
  if (options.job_gpus_per_node > 0 && !asks_gpus)
    argv.push_back("--gres=gpu:" + std::to_string(options.job_gpus_per_node));
  argv.insert(argv.end(), extra->begin(), extra->end());
  argv.push_back(command.daemon_path);
  argv.insert(argv.end(), command.args.begin(), command.args.end());
  return argv;
}

int slurmPerTaskGpus(const std::map<std::string, std::string>& env) {
  const auto per_task = env.find("SLURM_GPUS_PER_TASK");
  const auto on_node = env.find("SLURM_GPUS_ON_NODE");
  if (per_task == env.end() || per_task->second.empty() || on_node == env.end()) return 0;
  const long n = std::strtol(on_node->second.c_str(), nullptr, 10);
  return n > 0 && n <= 4096 ? static_cast<int>(n) : 0;
}

SrunWait srunWaitOf(std::string_view line) {
  auto has = [line](std::string_view s) { return line.find(s) != std::string_view::npos; };
  if (!line.starts_with("srun: ")) return SrunWait::none;
  if (has("queued and waiting for resources") || has("step creation temporarily disabled") ||
      has("step creation still disabled") || has("Pending job allocation"))
    return SrunWait::waiting;
  if (has("has been allocated resources") || has("Step created for") || has("Granted job allocation"))
    return SrunWait::granted;
  return SrunWait::none;
}

std::string nodeOfExecFailure(std::string_view line) {
  constexpr std::string_view prefix = "slurmstepd-";
  const size_t at = line.find(prefix);
  if (at == std::string_view::npos || line.find(": error: execve():") == std::string_view::npos) return "";
  const std::string_view rest = line.substr(at + prefix.size());
  const size_t colon = rest.find(':');
  if (colon == 0 || colon == std::string_view::npos || rest.substr(0, colon).find(' ') != std::string_view::npos)
    return "";
  return std::string(rest.substr(0, colon));
}

std::vector<std::string> nodesInSrunErrors(const std::string& stderr_text) {
  std::vector<std::string> blamed, terminated;
  auto add = [](std::vector<std::string>& to, const std::string& node) {
    if (std::find(to.begin(), to.end(), node) == to.end()) to.push_back(node);
  };
  const std::string marker = "srun: error: ";
  for (std::string_view line : lines(stderr_text)) {
    if (const std::string node = nodeOfExecFailure(line); !node.empty()) {
      add(blamed, node);
      continue;
    }
    const size_t at = line.find(marker);
    if (at == std::string_view::npos) continue;
    const std::string_view said = line.substr(at + marker.size());
    // "<node>: task 3: Exited with exit code 2" / "<node>: tasks 0-3: Killed"
    const size_t colon = said.find(": task");
    if (colon == std::string_view::npos || colon == 0 || said.find(' ') < colon) continue;
    const std::string node(said.substr(0, colon));
    // A daemon that ended its ranks on the step's SIGTERM exits 143 (128 + SIGTERM): a victim too.
    const bool victim = said.ends_with(": Terminated") || said.ends_with(": Exited with exit code 143");
    add(victim ? terminated : blamed, node);
  }
  return blamed.empty() ? terminated : blamed;
}

std::optional<SrunTaskExit> firstOwnTaskExit(const std::string& stderr_text) {
  constexpr std::string_view marker = "srun: error: ";
  constexpr std::string_view exited = ": Exited with exit code ";
  for (std::string_view line : lines(stderr_text)) {
    const size_t at = line.find(marker);
    const size_t code_at = line.rfind(exited);
    if (at == std::string_view::npos || code_at == std::string_view::npos || code_at < at) continue;
    const std::string_view said = line.substr(at + marker.size());
    const size_t colon = said.find(": task");
    if (colon == std::string_view::npos || colon == 0 || said.find(' ') < colon) continue;
    int code = 0;
    const std::string_view digits = line.substr(code_at + exited.size());
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), code);
    if (ec != std::errc() || end != digits.data() + digits.size() || code == 143) continue;
    return SrunTaskExit{std::string(said.substr(0, colon)), code};
  }
  return std::nullopt;
}

std::string explainSrunFailure(int exit_status, const std::string& stderr_text, const std::string& daemon_path,
                               bool after_connect) {
  const std::string said = quoteToolOutput("srun", stderr_text);
  const std::string& e = stderr_text;
  auto with = [&](const std::string& text) { return text + said; };
  const std::vector<std::string> nodes = nodesInSrunErrors(e);
  const std::string on = nodes.empty() ? std::string(" on the nodes") : " on " + joinStrings(nodes);

  if (contains(e, "execve():") && (contains(e, "No such file or directory") || contains(e, "not found"))) {
    return with("tlaunchd not found at " + daemon_path + on + ": install tlaunch there or pass --daemon-path");
  }
  if (contains(e, "error while loading shared libraries")) {
    return with("tlaunchd at " + daemon_path + on +
                " cannot start: a shared library it needs is missing there. Install tlaunch's runtime dependencies "
                "on the compute nodes, or pass --daemon-path to a build that runs there");
  }
  if (contains(e, "execve():") && contains(e, "Permission denied")) {
    return with("tlaunchd at " + daemon_path + on + " cannot be executed (permission denied): check the file, or pass "
                "--daemon-path");
  }
  if (contains(e, "Invalid partition name")) {
    return with("Slurm rejected the partition: check -p/--partition in --slurm-args (sinfo lists the partitions)");
  }
  if (contains(e, "Invalid account")) {
    return with("Slurm rejected the account or account/partition pair: check -A/--account in --slurm-args");
  }
  if (contains(e, "Invalid qos")) return with("Slurm rejected the QOS: check --qos in --slurm-args");
  if (contains(e, "time limit is invalid") || contains(e, "Requested time limit")) {
    return with("Slurm rejected the time limit: check -t/--time in --slurm-args against the partition's limit");
  }
  if (contains(e, "Invalid node name")) {
    return with("Slurm does not know a node named in --nodelist: check the node names (sinfo -N lists them)");
  }
  if (contains(e, "Invalid job id") || contains(e, "Expired or invalid job") ||
      contains(e, "already completing or completed") || contains(e, "Unable to confirm allocation")) {
    return with("the Slurm allocation is gone (it ended, timed out or was cancelled): start a new one with "
                "salloc/sbatch, or unset SLURM_JOB_ID to leave it");
  }
  if (contains(e, "DUE TO TIME LIMIT")) {
    return with("the Slurm job reached its time limit and was cancelled: ask for more time (-t)");
  }
  if (contains(e, "DUE TO PREEMPTION")) return with("the Slurm job was preempted by a higher-priority job");
  if (contains(e, "DUE TO NODE FAILURE") || contains(e, "Node failure")) {
    return with("a node of the Slurm job failed" + (nodes.empty() ? std::string() : " (" + joinStrings(nodes) + ")") +
                " and Slurm cancelled the job step");
  }
  // A daemon that ended by itself makes srun (--kill-on-bad-exit) end the step: "CANCELLED AT",
  // "Force Terminated" and "Job step aborted" follow, and the daemon's own end is the reason. Slurm's
  // task exits with execve()'s errno when the program cannot run, and srun does not always relay
  // slurmstepd's execve() line before it ends the step.
  const auto own_exit = firstOwnTaskExit(e);
  if (own_exit && !after_connect && own_exit->code == ENOENT) {
    return with("tlaunchd not found at " + daemon_path + " on " + own_exit->node + ": install tlaunch there or pass "
                "--daemon-path (its Slurm task exited with status 2, execve()'s 'No such file or directory')");
  }
  if (own_exit && !after_connect && own_exit->code == EACCES) {
    return with("tlaunchd at " + daemon_path + " on " + own_exit->node + " cannot be executed (its Slurm task exited "
                "with status 13, execve()'s 'Permission denied'): check the file, or pass --daemon-path");
  }
  if (!own_exit &&
      (contains(e, "CANCELLED AT") || contains(e, "Job step aborted") || contains(e, "Force Terminated"))) {
    return with("the Slurm job or step was cancelled (scancel, or Slurm ended it)");
  }
  if (contains(e, "Requested node configuration is not available") || contains(e, "more nodes than permitted") ||
      contains(e, "Node count specification invalid") || contains(e, "More processors requested than permitted")) {
    return with("Slurm cannot run one daemon on each requested node. Inside an allocation every node must belong to "
                "it (compare -N/--hosts with SLURM_JOB_NODELIST); outside one, check the --slurm-args constraints");
  }
  if (contains(e, "Requested nodes are busy")) {
    return with("Slurm says the requested nodes are busy: other steps hold their resources; wait or use other nodes");
  }
  if (contains(e, "Could not establish a configuration source") || contains(e, "Unable to contact slurm controller") ||
      contains(e, "controller not responding") || contains(e, "Socket timed out")) {
    return with("srun cannot reach the Slurm controller from this host: check that Slurm works here (sinfo), or use "
                "--launcher ssh");
  }
  if (contains(e, "unrecognized option") || contains(e, "invalid option") || contains(e, "unknown option") ||
      contains(e, "Try \"srun --help\"")) {
    return with("srun rejected its command line: check the --slurm-args values");
  }
  if (contains(e, "Unable to allocate resources")) {
    return with("Slurm could not allocate the nodes: " + lineContaining(e, "Unable to allocate resources"));
  }
  if (contains(e, "Unable to create step")) {
    return with("Slurm could not start the daemons' job step: " + lineContaining(e, "Unable to create step"));
  }
  if (exit_status < 0) {
    return with("srun was killed by signal " + std::to_string(-exit_status) + " (" + ::strsignal(-exit_status) + ")");
  }
  const std::string status = "srun exited with status " + std::to_string(exit_status);
  if (after_connect) {
    return with(nodes.empty() ? "the daemons' srun step ended during the job (" + status + ")"
                              : "tlaunchd" + on + " ended during the job (" + status + ")");
  }
  if (!nodes.empty()) return with("tlaunchd" + on + " ended before connecting to this frontend (" + status + ")");
  return with(status + " before every daemon connected");
}

SlurmStarter::SlurmStarter(SlurmStarterOptions options) : options_(std::move(options)) {}

SlurmStarter::~SlurmStarter() { stop(0); }

Result<void> SlurmStarter::start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                                 const std::string& secret) {
  if (started_) return fail(Errc::internal, "SlurmStarter::start called twice");
  const char* path = std::getenv("PATH");
  if (!programInPath(options_.srun_program, path ? path : "")) {
    return diagnostic(Errc::usage, "srun-missing", {{"srun", options_.srun_program}});
  }
  auto argv = buildSrunArgv(options_, nodes, command);
  if (!argv) return tl::unexpected(argv.error());
  auto process = ChildProcess::spawn(*argv, secretLine(secret));
  if (!process) return diagnostic(Errc::node_unreachable, "srun-failed", {{"reason", process.error().message}});
  process_ = std::move(*process);
  nodes_ = nodes;
  connected_.assign(nodes.size(), false);
  daemon_path_ = command.daemon_path;
  started_ = true;
  return {};
}

void SlurmStarter::readSrunLines() {
  const std::string& text = process_.outputText();
  size_t fresh = process_.capturedBytes() - scanned_;
  scanned_ = process_.capturedBytes();
  if (fresh > text.size()) {  // more than is kept came at once: its start is gone
    partial_.clear();
    fresh = text.size();
  }
  partial_.append(text, text.size() - fresh, fresh);
  for (size_t eol = partial_.find('\n'); eol != std::string::npos; eol = partial_.find('\n')) {
    const std::string line = partial_.substr(0, eol);
    partial_.erase(0, eol + 1);
    // A daemon that could not start fails its node at once: srun's step ends only once every
    // other daemon has (--kill-on-bad-exit signals them), and their reports must not come first.
    if (const std::string node = nodeOfExecFailure(line); !node.empty()) {
      for (const auto& t : nodes_)
        if (t.name == node && std::find(exec_failed_.begin(), exec_failed_.end(), t.index) == exec_failed_.end()) {
          exec_failed_.push_back(t.index);
          early_.push_back({t.index, explainSrunFailure(127, line + "\n", daemon_path_, false)});
        }
      continue;
    }
    const SrunWait said = srunWaitOf(line);
    const auto now = std::chrono::steady_clock::now();
    if (said == SrunWait::none) {
      if (line.starts_with("srun: ")) last_said_ = line;
      continue;
    }
    if (said == SrunWait::waiting && !waiting_) {
      waiting_ = true;
      waiting_since_ = now;
      // Why it waits, when srun said it first ("Requested partition configuration not available
      // now": a wait that may never end).
      if (!last_said_.empty()) notes_.push_back({false, std::exchange(last_said_, {})});
      notes_.push_back({false, line + " (the daemons start once Slurm gives the nodes; --connect-timeout counts from then)"});
      wait_said_ = true;
    } else if (said == SrunWait::granted && wait_said_) {
      // Said also when a daemon connected before this line was read (daemonConnected ended the
      // wait): the user was told of the wait, and is told of its end.
      wait_said_ = false;
      waiting_ = false;
      const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - waiting_since_).count();
      notes_.push_back({false, line + " (after " + std::to_string(waited) + " s)"});
    }
  }
  if (partial_.size() > 4096) partial_.clear();  // no line of srun's is that long
}

std::vector<StarterNote> SlurmStarter::takeNotes() {
  if (started_ && !finished_) readSrunLines();  // srun's latest words too, not only those poll() read
  return std::exchange(notes_, {});
}

std::vector<StartFailure> SlurmStarter::poll() {
  if (!started_ || finished_) return {};
  readSrunLines();
  if (!early_.empty()) return std::exchange(early_, {});
  if (!process_.poll()) return {};
  waiting_ = false;
  finished_ = true;
  const int code = exitCodeOf(process_.status());
  const bool all_connected = std::all_of(connected_.begin(), connected_.end(), [](bool c) { return c; });
  if (code == 0 && all_connected) return {};
  // srun's own lines about waiting for nodes are history, not the cause ("Requested nodes are
  // busy" would read as one).
  std::string text;
  for (std::string_view line : lines(process_.outputText()))
    if (srunWaitOf(line) == SrunWait::none) text.append(line).push_back('\n');
  StartFailure failure{-1, explainSrunFailure(code, text, daemon_path_, all_connected)};
  failure.starter_done = true;
  const auto named = nodesInSrunErrors(text);
  if (named.size() == 1) {
    for (const auto& t : nodes_) {
      if (t.name == named[0]) failure.node_index = t.index;
    }
  }
  return {failure};
}

void SlurmStarter::daemonConnected(int node_index) {
  waiting_ = false;  // Slurm gave the nodes, whether or not srun's line saying so was read
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].index == node_index) connected_[i] = true;
  }
}

void SlurmStarter::stop(int grace_ms) {
  if (!started_ || finished_) return;
  // Once told, the daemons exit by themselves and srun ends with its step: wait for that a
  // moment first. A SIGTERM then would make srun forward it to the step and wait for
  // slurmstepd's answer (~30 ms here, a round trip on a large allocation).
  // Daemons not all connected yet (tlaunch interrupted while they start) are not told: no wait.
  const bool all_told = std::all_of(connected_.begin(), connected_.end(), [](bool c) { return c; });
  const int natural_ms = all_told ? std::min(grace_ms / 5, 1000) : 0;
  // Else srun passes SIGTERM on to the step's tasks, then exits.
  if (!process_.waitExit(std::chrono::milliseconds(natural_ms))) process_.terminate(grace_ms - natural_ms);
  finished_ = true;
}

}  // namespace tlaunch
