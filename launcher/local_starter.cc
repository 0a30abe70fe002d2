#include "launcher/local_starter.h"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>

#include "bootstrap/path_check.h"
#include "launcher/starter_support.h"

namespace tlaunch {

namespace {
// tlaunchd on this host, checked before the first fork: exec's own error for a directory or a
// missing file reads "cannot execute '/tmp': Permission denied", naming neither the flag nor why.
Result<void> checkDaemonProgram(const std::string& path) {
  const auto why = pathProblem(path, PathUse::run_file);
  if (!why) return {};
  return fail(Errc::node_unreachable, "tlaunchd at " + path + " " + *why + " on this host",
              "pass --daemon-path with tlaunchd's path, or reinstall tlaunch (tlaunchd belongs next to tlaunch)");
}
}  // namespace

Result<void> LocalStarter::start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                                 const std::string& secret) {
  // A bare name (--daemon-path tlaunchd) is found on this host's PATH, as ssh's shell finds it.
  std::string daemon = command.daemon_path;
  if (daemon.find('/') == std::string::npos) {
    const char* path = std::getenv("PATH");
    if (auto found = programOnPath(daemon, path != nullptr ? path : ""))
      daemon = *found;
    else
      return fail(Errc::node_unreachable, "tlaunchd '" + daemon + "' is on no directory of this host's PATH",
                  "pass --daemon-path with tlaunchd's full path, or add its directory to PATH");
  }
  if (auto ok = checkDaemonProgram(daemon); !ok) return ok;
  for (const auto& n : nodes) {
    std::vector<std::string> argv{daemon};
    argv.insert(argv.end(), command.args.begin(), command.args.end());
    argv.insert(argv.end(), {"--node-index", std::to_string(n.index), "--node-name", n.name});
    auto p = ChildProcess::spawn(argv, secret + "\n");
    if (!p) return tl::unexpected(p.error());
    started_.push_back({n.index, std::move(*p)});
  }
  return {};
}

std::vector<StartFailure> LocalStarter::poll() {
  std::vector<StartFailure> out;
  for (auto& s : started_) {
    if (s.reported || !s.process.poll()) continue;
    s.reported = true;
    const std::string& err = s.process.outputText();
    if (!s.connected) {
      out.push_back({s.node_index, "tlaunchd " + s.process.describeStatus() + (err.empty() ? "" : ": " + err)});
      continue;
    }
    // After it connected: its connection's close tells the session; this says why (a crash, a
    // sanitizer's report, an abort), in the words the lost node's message ends with.
    const int status = s.process.status();
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    out.push_back({s.node_index, std::string("tlaunchd ") + (WIFSIGNALED(status) ? "was " : "") +
                                     s.process.describeStatus() + quoteToolOutput("tlaunchd", err, 8)});
  }
  return out;
}

void LocalStarter::daemonConnected(int node_index) {
  for (auto& s : started_)
    if (s.node_index == node_index) s.connected = true;
}

void LocalStarter::daemonLost(int node_index) {
  for (auto& s : started_)
    if (s.node_index == node_index) s.lost = true;
}

void LocalStarter::stop(int grace_ms) {
  // A lost daemon (a stopped one: SIGTERM waits for SIGCONT) would only use up the grace. SIGKILL
  // ends even a stopped process; its ranks' containment ends them with it.
  for (auto& s : started_)
    if (s.lost) s.process.terminate(0);
  // One that has not connected yet (tlaunch interrupted while they start) cannot be told: it
  // would try to connect to a closed port until it gave up. SIGTERM ends it as a told one ends.
  for (auto& s : started_)
    if (!s.connected && !s.lost) s.process.signal(SIGTERM);
  // The others exit by themselves once told; wait for that, then make sure.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  for (auto& s : started_) {
    const auto left = deadline - std::chrono::steady_clock::now();
    s.process.waitExit(std::chrono::duration_cast<std::chrono::milliseconds>(left));
    s.process.terminate(0);
  }
}

}  // namespace tlaunch
