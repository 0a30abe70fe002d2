#include "launcher/ssh_starter.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "launcher/shell_quote.h"
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

Result<void> ensurePrivateDir(const std::string& path) {
  if (path.empty() || path.front() != '/') return fail(Errc::usage, "ssh control dir '" + path + "' is not an absolute path");
  // Parents are created 0700 too (they are under the user's own home or runtime dir).
  for (size_t slash = path.find('/', 1); ; slash = path.find('/', slash + 1)) {
    const std::string part = path.substr(0, slash);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return fail(Errc::io, "cannot create ssh control dir " + part + ": " + std::strerror(errno),
                  "pass --ssh-reuse=off, or fix the directory's permissions");
    }
    if (slash == std::string::npos) break;
  }
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    return fail(Errc::io, "cannot inspect ssh control dir " + path + ": " + std::strerror(errno));
  }
  const std::string hint = "remove or fix " + path + ", or pass --ssh-reuse=off";
  if (S_ISLNK(st.st_mode)) return fail(Errc::io, "ssh control dir " + path + " is a symbolic link", hint);
  if (!S_ISDIR(st.st_mode)) return fail(Errc::io, "ssh control dir " + path + " is not a directory", hint);
  if (st.st_uid != ::geteuid()) {
    return fail(Errc::io, "ssh control dir " + path + " belongs to another user (uid " + std::to_string(st.st_uid) + ")", hint);
  }
  if ((st.st_mode & 077) != 0 && ::chmod(path.c_str(), 0700) != 0) {
    return fail(Errc::io, "ssh control dir " + path + " is open to other users and chmod failed: " + std::strerror(errno), hint);
  }
  return {};
}

Result<std::vector<std::string>> sshOptionArgs(const std::vector<std::string>& ssh_options) {
  std::vector<std::string> args;
  for (const auto& option : ssh_options) {
    if (option.empty()) continue;
    if (option.front() == '-') {
      auto words = splitShellWords(option, "--ssh-option");
      if (!words) return tl::unexpected(words.error());
      args.insert(args.end(), words->begin(), words->end());
    } else {
      args.emplace_back("-o");
      args.push_back(option);
    }
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
  argv.push_back(destination);
  argv.push_back(remoteDaemonCommand(command, node));
  return argv;
}

std::string explainSshFailure(const std::string& node, int exit_status, const std::string& stderr_text,
                              const std::string& daemon_path) {
  const std::string said = quoteToolOutput("ssh", stderr_text);
  const std::string& e = stderr_text;
  auto with = [&](const std::string& text) { return text + said; };

  if (exit_status < 0) {
    return with(node + ": ssh was killed by signal " + std::to_string(-exit_status) + " (" + ::strsignal(-exit_status) +
                ") before the daemon connected");
  }
  if (exit_status == 127) {
    if (contains(e, "error while loading shared libraries")) {
      return with("tlaunchd at " + daemon_path + " on " + node +
                  " cannot start: a shared library it needs is missing there. Install tlaunch's runtime "
                  "dependencies on " + node + " (the same packages as on this host), or pass --daemon-path to a build "
                  "that runs there");
    }
    if (contains(e, "version `") && contains(e, "not found")) {
      return with("tlaunchd at " + daemon_path + " on " + node +
                  " was built for a newer system than " + node + " has (library version missing). Install a tlaunch "
                  "built for " + node + ", or pass --daemon-path");
    }
    return with("tlaunchd not found at " + daemon_path + " on " + node + ": install tlaunch there or pass --daemon-path");
  }
  if (exit_status == 126) {
    return with("tlaunchd at " + daemon_path + " on " + node +
                " cannot be executed (not an executable file for that machine, or no permission): check the file "
                "there, or pass --daemon-path");
  }
  if (exit_status == 255) {
    if (contains(e, "Could not resolve hostname")) {
      return with(node + ": the host name does not resolve on this host. Check its spelling in --hosts / the "
                  "hostfile, or DNS and /etc/hosts here");
    }
    if (contains(e, "REMOTE HOST IDENTIFICATION HAS CHANGED") || contains(e, "has changed and you have requested strict")) {
      return with(node + ": ssh refused to connect because the host key of " + node +
                  " has CHANGED since it was recorded in known_hosts. If the node was reinstalled, remove the old key "
                  "with `ssh-keygen -R " + node + "` and connect once by hand; otherwise ask your administrator");
    }
    if (contains(e, "Host key verification failed") || contains(e, "host key is known for")) {
      return with(node + ": host key verification failed: " + node +
                  " is not in known_hosts and ssh runs in batch mode, so it cannot ask. Connect once by hand "
                  "(ssh " + node + " true) to accept its key, or have your administrator distribute known_hosts");
    }
    if (contains(e, "Permission denied") || contains(e, "Too many authentication failures")) {
      return with(node + ": ssh authentication was refused. tlaunch needs ssh without a password prompt: set up a "
                  "key (ssh-copy-id " + node + ") or an agent, and check that `ssh -o BatchMode=yes " + node +
                  " true` works");
    }
    if (contains(e, "Connection refused")) {
      return with(node + ": connection refused: no ssh server is listening on " + node +
                  " (or on that port). Check that sshd runs there and the port in your ssh config");
    }
    if (contains(e, "timed out")) {
      return with(node + ": the ssh connection timed out: " + node +
                  " is down, or a firewall drops the traffic. If the network is only slow, raise the connect timeout");
    }
    if (contains(e, "No route to host") || contains(e, "Network is unreachable")) {
      return with(node + ": no route to " + node + ": the node is down or not reachable from this host's network");
    }
    if (contains(e, "Connection closed by") || contains(e, "Connection reset by") ||
        contains(e, "kex_exchange_identification") || contains(e, "ssh_exchange_identification")) {
      return with(node + ": the ssh server on " + node +
                  " closed the connection before login (too many connections at once — sshd's MaxStartups — or "
                  "it refuses this host). Try a lower --ssh-fanout, or check sshd's log there");
    }
    if (contains(e, "ControlPath too long") || contains(e, "too long for Unix domain socket")) {
      return with(node + ": ssh's connection-reuse socket path is too long. Pass --ssh-reuse=off or set a shorter "
                  "XDG_RUNTIME_DIR");
    }
    if (contains(e, "Bad configuration option") || contains(e, "command-line line") ||
        contains(e, "unknown option") || contains(e, "illegal option") || contains(e, "usage: ssh")) {
      return with(node + ": ssh rejected its command line: check the --ssh-option values");
    }
    if (contains(e, "Bad owner or permissions")) {
      return with(node + ": ssh refused to use a config or key file with unsafe permissions: fix them (chmod 600) "
                  "and retry");
    }
    return with(node + ": ssh failed with status 255 (an ssh error, or tlaunchd there was killed by a signal or "
                "exited with 255)");
  }
  if (exit_status == 0) {
    return with("tlaunchd on " + node + " exited with status 0 before it connected to this frontend");
  }
  return with("tlaunchd on " + node + " exited with status " + std::to_string(exit_status) +
              " before it connected to this frontend");
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
  std::string control_dir;
  if (options_.reuse_connections) {
    control_dir = options_.control_dir;
    if (control_dir.empty()) {
      std::map<std::string, std::string> env;
      for (const char* name : {"XDG_RUNTIME_DIR", "HOME"}) {
        if (const char* v = std::getenv(name)) env[name] = v;
      }
      control_dir = defaultSshControlDir(env, ::geteuid());
    }
    if (auto ok = ensurePrivateDir(control_dir); !ok) {
      warnings_.push_back("ssh connection reuse is off: " + ok.error().message);
      control_dir.clear();
    }
  }
  std::vector<Launch> launches;
  for (const auto& node : nodes) {
    auto argv = buildSshArgv(options_, control_dir, node, command);
    if (!argv) return tl::unexpected(argv.error());
    Launch launch;
    launch.node = node;
    launch.argv = std::move(*argv);
    launches.push_back(std::move(launch));
  }
  launches_ = std::move(launches);
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
      failures.push_back({l.node.index, l.node.name + ": could not run ssh: " + process.error().message});
      continue;
    }
    l.process = std::move(*process);
    l.started = true;
    l.started_at = now;
    ++connecting;
  }
}

std::vector<StartFailure> SshStarter::poll() {
  std::vector<StartFailure> failures;
  for (size_t i = 0; i < next_; ++i) {
    Launch& l = launches_[i];
    if (!l.started || l.finished || !l.process.poll()) continue;
    l.finished = true;
    const int code = exitCodeOf(l.process.status());
    if (code == 0 && l.connected) continue;
    failures.push_back({l.node.index, explainSshFailure(l.node.name, code, l.process.stderrText(), daemon_path_)});
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

}  // namespace tlaunch
