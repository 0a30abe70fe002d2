#include "launcher/ssh_starter.h"

#include <signal.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

#include "bootstrap/shell_quote.h"
#include "launcher/starter_support.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

namespace {

// ssh binds "<ControlPath>.<16 random chars>" first: a socket address holds 107 bytes, and
// %C expands to 40 hex digits.
constexpr size_t kMaxControlDirLength = 107 - 1 - 40 - 17;

bool contains(const std::string& text, std::string_view needle) { return text.find(needle) != std::string::npos; }

std::string envOr(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

}  // namespace

std::string defaultSshControlDir(const std::map<std::string, std::string>& env, uid_t uid) {
  const std::string runtime = envOr(env, "XDG_RUNTIME_DIR");
  if (!runtime.empty() && runtime.front() == '/' && runtime.size() + 12 <= kMaxControlDirLength) {
    return runtime + "/tlaunch-ssh";
  }
  const std::string home = envOr(env, "HOME");
  if (!home.empty() && home.front() == '/' && home.size() + 19 <= kMaxControlDirLength) {
    return (home == "/" ? std::string() : home) + "/.cache/tlaunch/ssh";
  }
  return "/tmp/tlaunch-ssh-" + std::to_string(uid);
}

std::string sshControlDirBase(const std::string& control_dir, const std::map<std::string, std::string>& env) {
  for (const char* name : {"XDG_RUNTIME_DIR", "HOME"}) {
    std::string dir = envOr(env, name);
    if (!dir.empty() && dir != "/" && control_dir.starts_with(dir + "/")) return dir;
  }
  return control_dir.starts_with("/tmp/") ? "/tmp" : "";
}

Result<void> ensurePrivateDir(const std::string& path, const std::string& what, const std::string& fix,
                              const std::string& base) {
  if (path.empty() || path.front() != '/') return fail(Errc::usage, what + " '" + path + "' is not an absolute path");
  size_t first = 1;
  if (!base.empty() && path.starts_with(base + "/")) {
    struct stat st {};
    if (::stat(base.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return fail(Errc::usage, "cannot create " + what + " " + path + ": " + base + " does not exist",
                  fix + ", or set HOME to your home directory");
    first = base.size() + 1;
  }
  // Parents below `base` are created 0700 too (they are under the user's own home or runtime dir).
  for (size_t slash = path.find('/', first); ; slash = path.find('/', slash + 1)) {
    const std::string part = path.substr(0, slash);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return fail(Errc::io, "cannot create " + what + " " + part + ": " + std::strerror(errno),
                  fix + ", or fix the directory's permissions");
    }
    if (slash == std::string::npos) break;
  }
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    return fail(Errc::io, "cannot inspect " + what + " " + path + ": " + std::strerror(errno));
  }
  const std::string hint = "remove or fix " + path + ", or " + fix;
  if (S_ISLNK(st.st_mode)) return fail(Errc::io, what + " " + path + " is a symbolic link", hint);
  if (!S_ISDIR(st.st_mode)) return fail(Errc::io, what + " " + path + " is not a directory", hint);
  if (st.st_uid != ::geteuid()) {
    return fail(Errc::io, what + " " + path + " belongs to another user (uid " + std::to_string(st.st_uid) + ")", hint);
  }
  if ((st.st_mode & 077) != 0 && ::chmod(path.c_str(), 0700) != 0) {
    return fail(Errc::io, what + " " + path + " is open to other users and chmod failed: " + std::strerror(errno), hint);
  }
  return {};
}

namespace {

// An ssh option ("Key=value" or "Key value") that tlaunch sets itself, before the user's: ssh
// keeps the first value given, so the user's would be ignored without a word. What to use instead.
std::optional<std::string> optionTlaunchSets(const std::string& option) {
  const std::string key = option.substr(0, option.find_first_of("= \t"));
  auto is = [&](const char* name) { return ::strcasecmp(key.c_str(), name) == 0; };
  if (is("ConnectTimeout")) return "--ssh-connect-timeout SECONDS";
  if (is("ControlMaster") || is("ControlPath") || is("ControlPersist")) return "--ssh-reuse on|off";
  if (is("BatchMode")) return "nothing: tlaunch needs BatchMode=yes (a password prompt would hang the launch)";
  return std::nullopt;
}

}  // namespace

Result<std::vector<std::string>> sshOptionArgs(const std::vector<std::string>& ssh_options) {
  std::vector<std::string> args;
  for (const auto& option : ssh_options) {
    if (option.empty()) continue;
    std::vector<std::string> words;
    if (option.front() == '-') {
      auto split = splitShellWords(option, "--ssh-option");
      if (!split) return tl::unexpected(split.error());
      words = std::move(*split);
    } else {
      words = {"-o", option};
    }
    for (size_t i = 0; i < words.size(); ++i) {
      const std::string& w = words[i];
      const std::string given = w == "-o" && i + 1 < words.size() ? words[i + 1] : w.starts_with("-o") ? w.substr(2) : "";
      if (auto instead = optionTlaunchSets(given))
        return fail(Errc::usage, "--ssh-option " + option + ": tlaunch sets this ssh option itself (ssh keeps the first value given)",
                    "use " + *instead);
    }
    args.insert(args.end(), words.begin(), words.end());
  }
  return args;
}

std::string remoteDaemonCommand(const DaemonCommand& command, const NodeTarget& node) {
  std::vector<std::string> words{command.daemon_path};
  words.insert(words.end(), command.args.begin(), command.args.end());
  words.insert(words.end(), {"--node-index", std::to_string(node.index), "--node-name", node.name});
  return "exec " + shellJoin(words);
}

Result<std::vector<std::string>> buildSshArgv(const SshStarterOptions& options, const std::string& control_dir,
                                              const NodeTarget& node, const DaemonCommand& command) {
  const std::string destination = node.host.empty() ? node.name : node.host;
  if (destination.empty() || destination.front() == '-') {
    return fail(Errc::usage, "node " + std::to_string(node.index) + " has the ssh destination '" + destination +
                                 "', which ssh would not take as a host name");
  }
  if (options.connect_timeout_s < 1) {
    return fail(Errc::usage, "the ssh connect timeout must be at least 1 second (got " +
                                 std::to_string(options.connect_timeout_s) + ")");
  }
  std::vector<std::string> argv{options.ssh_program, "-T", "-o", "BatchMode=yes", "-o",
                                "ConnectTimeout=" + std::to_string(options.connect_timeout_s)};
  if (!control_dir.empty()) {
    argv.insert(argv.end(), {"-o", "ControlMaster=auto", "-o", "ControlPath=" + control_dir + "/%C", "-o",
                             "ControlPersist=" + std::to_string(options.control_persist_s) + "s"});
  }
  auto extra = sshOptionArgs(options.ssh_options);
  if (!extra) return tl::unexpected(extra.error());
  argv.insert(argv.end(), extra->begin(), extra->end());
  // After the user's options, so that theirs win (ssh keeps the first value). A master
  // connection left by an earlier launch (ControlPersist) to a node that has since died would
  // otherwise take every new session into a TCP connection nobody answers, until the job's
  // --connect-timeout; with these the master gives up within about the connect timeout and
  // ssh reports the node as it would a fresh connection.
  const int alive_s = (options.connect_timeout_s + 1) / 2;
  argv.insert(argv.end(), {"-o", "ServerAliveInterval=" + std::to_string(alive_s), "-o", "ServerAliveCountMax=2"});
  argv.push_back(destination);
  argv.push_back(remoteDaemonCommand(command, node));
  return argv;
}

namespace {

// ssh's exit status 255 (its own errors): what its stderr says → the catalogue's explanation.
struct SshCause {
  std::array<std::string_view, 5> any_of;  // any of these in ssh's stderr (unused entries empty)
  const char* topic;
};
constexpr SshCause kSshCauses[] = {
    {{"Could not resolve hostname"}, "ssh-unresolved"},
    // Before "Host key verification failed": a changed key prints both.
    {{"REMOTE HOST IDENTIFICATION HAS CHANGED", "has changed and you have requested strict"}, "ssh-host-key-changed"},
    {{"Host key verification failed", "host key is known for"}, "ssh-host-key-unknown"},
    {{"Permission denied", "Too many authentication failures"}, "ssh-auth-refused"},
    {{"Connection refused"}, "ssh-connection-refused"},
    {{"timed out"}, "ssh-timed-out"},
    {{"No route to host", "Network is unreachable"}, "ssh-no-route"},
    // ssh's peer is a ProxyCommand / ProxyJump's pipe (no socket of its own: "UNKNOWN port
    // 65535"): the proxy ended, not the node's sshd (MaxStartups would mislead).
    {{"UNKNOWN port 65535"}, "ssh-proxy-closed"},
    {{"Connection closed by", "Connection reset by", "kex_exchange_identification", "ssh_exchange_identification"},
     "ssh-closed-before-login"},
    {{"ControlPath too long", "too long for Unix domain socket"}, "ssh-control-path-long"},
    {{"Bad configuration option", "command-line line", "unknown option", "illegal option", "usage: ssh"},
     "ssh-bad-command-line"},
    {{"Bad owner or permissions"}, "ssh-unsafe-permissions"},
};

std::string sshCauseTopic(const std::string& stderr_text) {
  for (const auto& cause : kSshCauses)
    for (std::string_view text : cause.any_of)
      if (!text.empty() && contains(stderr_text, text)) return cause.topic;
  return "ssh-status-255";
}

}  // namespace

bool sshFailureIsLocal(int exit_status, const std::string& stderr_text) {
  if (exit_status != 255) return false;
  const std::string topic = sshCauseTopic(stderr_text);
  return topic == "ssh-control-path-long" || topic == "ssh-bad-command-line" || topic == "ssh-unsafe-permissions";
}

bool sshFailureIsUnreachable(int exit_status, const std::string& stderr_text) {
  if (exit_status != 255) return false;
  const std::string topic = sshCauseTopic(stderr_text);
  // Not a time-out: a firewall between two compute nodes drops what tlaunch's host may still reach.
  return topic == "ssh-no-route" || topic == "ssh-connection-refused";
}

std::string explainSshFailure(const std::string& node, int exit_status, const std::string& stderr_text,
                              const std::string& daemon_path) {
  const std::string said = quoteToolOutput("ssh", stderr_text);
  const std::string& e = stderr_text;
  auto explain = [&](const Error& err) { return err.message + said; };
  if (exit_status < 0) {
    return explain(diagnosticError(Errc::node_unreachable, "ssh-killed",
                                   {{"node", node}, {"signal", std::to_string(-exit_status)}, {"name", ::strsignal(-exit_status)}}));
  }
  if (exit_status == 127) {  // the remote shell could not run tlaunchd
    const char* topic = contains(e, "error while loading shared libraries")      ? "daemon-library-missing"
                        : contains(e, "version `") && contains(e, "not found") ? "daemon-too-new"
                                                                                : "daemon-missing";
    // topics: daemon-library-missing daemon-too-new daemon-missing
    return explain(diagnosticError(Errc::node_unreachable, topic, {{"node", node}, {"daemon", daemon_path}}));
  }
  if (exit_status == 126) {
    return explain(
        diagnosticError(Errc::node_unreachable, "daemon-not-executable", {{"node", node}, {"daemon", daemon_path}}));
  }
  if (exit_status == 255) {
    // topics: ssh-unresolved ssh-host-key-changed ssh-host-key-unknown ssh-auth-refused ssh-connection-refused
    // topics: ssh-timed-out ssh-no-route ssh-closed-before-login ssh-control-path-long ssh-bad-command-line
    // topics: ssh-unsafe-permissions ssh-proxy-closed ssh-status-255
    return explain(diagnosticError(Errc::node_unreachable, sshCauseTopic(e), {{"node", node}}));
  }
  return explain(diagnosticError(Errc::node_unreachable, "daemon-exited-early",
                                 {{"node", node}, {"status", std::to_string(exit_status)}}));
}

std::string explainDaemonSessionEnd(int exit_status, const std::string& stderr_text) {
  const std::string said = quoteToolOutput("ssh", stderr_text, 8);
  if (exit_status < 0)
    return "its ssh session was killed by signal " + std::to_string(-exit_status) + " (" + ::strsignal(-exit_status) +
           ")" + said;
  // 255: ssh's own failure (the connection dropped), or the remote tlaunchd killed by a signal,
  // which OpenSSH's client reports the same way.
  if (exit_status == 255)
    return "its ssh session ended with status 255: tlaunchd there was killed by a signal (kill -9, the OOM killer: "
           "the node's `dmesg` says), or the connection to the node dropped" + said;
  return "tlaunchd exited with status " + std::to_string(exit_status) + said;
}

SshStarter::SshStarter(SshStarterOptions options) : options_(std::move(options)) {}

SshStarter::~SshStarter() { stop(0); }

size_t SshStarter::startedCount() const {
  size_t count = 0;
  for (const auto& l : launches_) count += l.started ? 1 : 0;
  return count;
}

Result<void> SshStarter::start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                               const std::string& secret) {
  if (!launches_.empty()) return fail(Errc::internal, "SshStarter::start called twice");
  if (options_.fanout < 1) {
    return diagnostic(Errc::usage, "ssh-fanout-invalid", {{"fanout", std::to_string(options_.fanout)}});
  }
  const char* path = std::getenv("PATH");
  if (!programInPath(options_.ssh_program, path ? path : "")) {
    return diagnostic(Errc::usage, "ssh-missing", {{"ssh", options_.ssh_program}});
  }
  std::string control_dir, base;
  if (options_.reuse_connections) {
    control_dir = options_.control_dir;
    if (control_dir.empty()) {
      std::map<std::string, std::string> env;
      for (const char* name : {"XDG_RUNTIME_DIR", "HOME"}) {
        if (const char* v = std::getenv(name)) env[name] = v;
      }
      control_dir = defaultSshControlDir(env, ::geteuid());
      base = sshControlDirBase(control_dir, env);
    }
    if (auto ok = ensurePrivateDir(control_dir, "ssh control dir", "pass --ssh-reuse=off", base); !ok) {
      warnings_.push_back("ssh connection reuse is off: " + ok.error().message);
      control_dir.clear();
    }
  }
  control_dir_ = control_dir;
  command_ = command;
  if (auto made = appendLaunches(nodes); !made) {
    launches_.clear();
    return made;
  }
  daemon_path_ = command.daemon_path;
  secret_line_ = secretLine(secret);
  std::vector<StartFailure> early;
  startMore(early);
  if (!early.empty()) {
    stop(0);
    return fail(Errc::node_unreachable, early.front().message);
  }
  return {};
}

Result<void> SshStarter::appendLaunches(const std::vector<NodeTarget>& nodes) {
  std::vector<Launch> more;
  for (const auto& node : nodes) {
    auto argv = buildSshArgv(options_, control_dir_, node, command_);
    if (!argv) return tl::unexpected(argv.error());
    Launch launch;
    launch.node = node;
    launch.argv = std::move(*argv);
    more.push_back(std::move(launch));
  }
  for (auto& l : more) launches_.push_back(std::move(l));
  return {};
}

Result<void> SshStarter::add(const std::vector<NodeTarget>& nodes) {
  if (launches_.empty()) return fail(Errc::internal, "SshStarter::add before start");
  if (stopped_) return {};  // the job is ending
  if (auto made = appendLaunches(nodes); !made) return made;
  startMore(early_failures_);
  return {};
}

size_t SshStarter::connectingCount(std::chrono::steady_clock::time_point now) const {
  const auto window = std::chrono::seconds(options_.connect_timeout_s + 5);
  size_t count = 0;
  for (size_t i = 0; i < next_; ++i) {
    const Launch& l = launches_[i];
    if (l.started && !l.finished && !l.connected && now - l.started_at < window) ++count;
  }
  return count;
}

void SshStarter::startMore(std::vector<StartFailure>& failures) {
  const auto now = std::chrono::steady_clock::now();
  size_t connecting = connectingCount(now);
  while (next_ < launches_.size() && connecting < static_cast<size_t>(options_.fanout)) {
    Launch& l = launches_[next_++];
    auto process = ChildProcess::spawn(l.argv, secret_line_);
    if (!process) {
      l.finished = true;
      failures.push_back({l.node.index, l.node.name + ": could not run ssh: " + process.error().message, false});
      continue;
    }
    l.process = std::move(*process);
    l.started = true;
    l.started_at = now;
    ++connecting;
  }
}

bool SshStarter::owns(pid_t pid) const {
  // Running: until poll() reaped it (its pid may then be anyone's).
  return pid > 0 && std::any_of(launches_.begin(), launches_.end(),
                                [pid](const Launch& l) { return l.process.running() && l.process.pid() == pid; });
}

std::vector<StartFailure> SshStarter::poll() {
  std::vector<StartFailure> failures = std::exchange(early_failures_, {});
  for (size_t i = 0; i < next_; ++i) {
    Launch& l = launches_[i];
    if (!l.started || l.finished || !l.process.poll()) continue;
    l.finished = true;
    const int code = exitCodeOf(l.process.status());
    if (code == 0 && l.connected) continue;
    const std::string& said = l.process.outputText();
    if (l.connected) {  // its connection's close tells the session; this says why
      failures.push_back({l.node.index, explainDaemonSessionEnd(code, said)});
      continue;
    }
    failures.push_back({l.node.index, explainSshFailure(l.node.name, code, said, daemon_path_),
                        !sshFailureIsLocal(code, said), false, sshFailureIsUnreachable(code, said)});
  }
  startMore(failures);
  return failures;
}

void SshStarter::daemonConnected(int node_index) {
  for (auto& l : launches_) {
    if (l.node.index == node_index) l.connected = true;
  }
}

void SshStarter::stop(int grace_ms) {
  stopped_ = true;
  next_ = launches_.size();  // start nothing more
  std::vector<Launch*> running;
  for (auto& l : launches_) {
    if (l.started && !l.finished && !l.process.poll()) running.push_back(&l);
  }
  for (Launch* l : running) l->process.signal(SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (;;) {
    bool all_done = true;
    for (Launch* l : running) all_done = l->process.poll() && all_done;
    if (all_done || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (Launch* l : running) {
    l->process.terminate(0);  // SIGKILL and reap whatever is left
    l->finished = true;
  }
  for (auto& l : launches_) {
    if (!l.started) l.finished = true;
  }
}

std::vector<StarterNote> SshStarter::takeNotes() {
  std::vector<StarterNote> out;
  for (auto& w : warnings_) out.push_back({false, std::move(w)});
  warnings_.clear();
  return out;
}

}  // namespace tlaunch
