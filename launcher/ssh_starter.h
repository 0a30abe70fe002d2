#pragma once
// Starts one tlaunchd per node with `ssh -T -o BatchMode=yes ... node 'tlaunchd' ...`, many at
// once but at most `fanout` still connecting. The job secret goes over ssh's stdin.
//
// Connection reuse: with reuse on, every ssh runs with ControlMaster=auto,
// ControlPath=<control dir>/%C and ControlPersist=<n>s. The first launch to a node leaves
// a master connection in the background that lives while any session uses it and
// `control_persist_s` seconds after the last one ends; a relaunch within that time skips
// the TCP and key exchange. Close one early with `ssh -O exit -o ControlPath=<dir>/%C node`.
// The control dir is private to the user (mode 0700).
#include <sys/types.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "launcher/child_process.h"
#include "launcher/daemon_starter.h"
#include "tlaunch/result.h"

namespace tlaunch {

struct SshStarterOptions {
  std::string ssh_program = "ssh";
  int connect_timeout_s = 10;            // ssh -o ConnectTimeout
  // Each entry: "Key=Value" → `-o Key=Value`; an entry starting with '-' is split like a
  // shell would ("-p 2222 -i ~/.ssh/k") and passed as it is.
  std::vector<std::string> ssh_options;
  int fanout = 64;                       // ssh processes at most still connecting at once
  bool reuse_connections = true;         // ControlMaster/ControlPersist
  std::string control_dir;               // "" = defaultSshControlDir(environment)
  int control_persist_s = 60;
};

// $XDG_RUNTIME_DIR/tlaunch-ssh, else $HOME/.cache/tlaunch/ssh, else /tmp/tlaunch-ssh-<uid>:
// the first whose socket paths fit in a Unix socket address.
std::string defaultSshControlDir(const std::map<std::string, std::string>& env, uid_t uid);

// Creates `path` (and parents) if needed and checks it is a directory owned by the user,
// not a symlink, with no group/other access (tightens it to 0700 if it is ours). `what` names it
// in errors, `fix` is the way around it offered to the user. `base` (a prefix of `path`, e.g.
// HOME): it must exist already; only what lies below it is created (HOME=/nonexistent, a
// service account's, must not make root create /nonexistent).
Result<void> ensurePrivateDir(const std::string& path, const std::string& what = "ssh control dir",
                              const std::string& fix = "pass --ssh-reuse=off", const std::string& base = "");

// The directory the default ssh control directory lies in (XDG_RUNTIME_DIR, HOME or /tmp),
// for ensurePrivateDir's `base`; "" for any other directory.
std::string sshControlDirBase(const std::string& control_dir, const std::map<std::string, std::string>& env);

// --ssh-option values → ssh arguments.
Result<std::vector<std::string>> sshOptionArgs(const std::vector<std::string>& ssh_options);

// The remote shell command line: exec 'tlaunchd' 'arg'... '--node-index' 'I' '--node-name' 'N',
// every word single-quoted (a POSIX login shell is assumed on the node).
std::string remoteDaemonCommand(const DaemonCommand& command, const NodeTarget& node);

// The full ssh argv for one node. `control_dir` empty: no connection reuse.
Result<std::vector<std::string>> buildSshArgv(const SshStarterOptions& options, const std::string& control_dir,
                                              const NodeTarget& node, const DaemonCommand& command);

// A user-facing explanation of a failed ssh launch, naming the node and the cause, with ssh's
// last words. `exit_status`: ssh's exit code, or -signal if a signal killed it.
std::string explainSshFailure(const std::string& node, int exit_status, const std::string& stderr_text,
                              const std::string& daemon_path);

// How the ssh session of a daemon that had connected ended, with ssh's (and the daemon's) last
// words: the end of a lost node's message ("tlaunchd exited with status 3", "its ssh session
// ended with status 255" + "Connection to n1 closed by remote host.").
std::string explainDaemonSessionEnd(int exit_status, const std::string& stderr_text);

// Whether a failed ssh is this host's fault (its ssh configuration or command line), which
// another node would not fix: ssh's exit status 255 with such words.
bool sshFailureIsLocal(int exit_status, const std::string& stderr_text);
// The node is down for ssh, whoever asks: no route to it (it does not answer ARP), or its sshd
// refused. A time-out is not: a firewall may drop one host's traffic and not another's.
bool sshFailureIsUnreachable(int exit_status, const std::string& stderr_text);

class SshStarter final : public DaemonStarter {
 public:
  explicit SshStarter(SshStarterOptions options);
  ~SshStarter() override;  // stops what still runs, without grace
  SshStarter(const SshStarter&) = delete;
  SshStarter& operator=(const SshStarter&) = delete;

  const char* name() const override { return "ssh"; }
  Result<void> start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                     const std::string& secret) override;
  // More nodes for a started starter, under the same fanout: the frontend starts the nodes
  // their tree parent could not, one by one as parents report them.
  Result<void> add(const std::vector<NodeTarget>& nodes);
  // Also starts the next nodes as fanout slots free up.
  std::vector<StartFailure> poll() override;
  bool owns(pid_t pid) const override;
  void stop(int grace_ms) override;

  // The daemon of node `node_index` said hello: its ssh no longer counts against the fanout,
  // and a later exit with status 0 is not a failure. Without these calls an ssh stops
  // counting connect_timeout_s + 5 s after it started.
  void daemonConnected(int node_index) override;

  // Nodes whose ssh has been started so far.
  size_t startedCount() const;
  // Notes for the user that are not failures (e.g. connection reuse turned off, and why).
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The warnings (reuse turned off, and why) as notes the session says, once.
  std::vector<StarterNote> takeNotes() override;

 private:
  struct Launch {
    NodeTarget node;
    std::vector<std::string> argv;
    ChildProcess process;
    bool started = false;
    bool connected = false;
    bool finished = false;  // exited and reported (or stopped)
    std::chrono::steady_clock::time_point started_at;
  };
  size_t connectingCount(std::chrono::steady_clock::time_point now) const;
  // The nodes' ssh command lines, queued behind the others; none if one cannot be built.
  Result<void> appendLaunches(const std::vector<NodeTarget>& nodes);
  void startMore(std::vector<StartFailure>& failures);

  SshStarterOptions options_;
  std::string control_dir_;  // "" once reuse is off
  DaemonCommand command_;
  std::vector<StartFailure> early_failures_;  // from add(), for the next poll()
  bool stopped_ = false;
  std::string daemon_path_;
  std::string secret_line_;
  std::vector<Launch> launches_;
  size_t next_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace tlaunch
