// A job's tlaunchd starting its node's warm-daemon keeper (daemon/warm_keeper.h).
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "bootstrap/spawn.h"
#include "daemon/line_io.h"
#include "daemon/warm_keeper.h"

namespace tlaunch {

Result<StartedKeeper> startWarmKeeper(int keep_s, const std::string& user_secret) {
  SpawnSpec spec;
  spec.exe = thisExecutable();
  if (spec.exe.empty()) return fail(Errc::io, "cannot find this tlaunchd's own path (/proc/self/exe)");
  spec.argv = {"tlaunchd", "--keeper", "--keep-for", std::to_string(keep_s)};
  spec.env = environmentWith({});
  spec.stdin_mode = SpawnSpec::Stdin::pipe;
  spec.stderr_pipe = false;
  spec.dies_with_parent = false;  // the whole point: it outlives this daemon
  auto spawned = spawnProcess(spec);
  if (!spawned) return tl::unexpected(spawned.error());
  if (spawned->pidfd >= 0) ::close(spawned->pidfd);
  writeAll(spawned->stdin_fd, user_secret + "\n");
  pollfd p{spawned->stdout_fd, POLLIN, 0};
  std::string line;
  if (::poll(&p, 1, 5000) == 1) line = readLine(spawned->stdout_fd);
  ::close(spawned->stdout_fd);
  int status = 0;
  if (line.empty()) ::kill(spawned->pid, SIGKILL);
  ::waitpid(spawned->pid, &status, 0);  // it exits once its detached copy runs
  StartedKeeper k;
  int consumed = 0;
  const int fields = std::sscanf(line.c_str(), "%d %lld %lld %n", &k.port, &k.pid, &k.since, &consumed);
  if (fields == 3 && consumed > 0) k.inventory_cache = line.substr(static_cast<size_t>(consumed));  // may hold spaces
  if (fields < 3 || k.port <= 0) {
    ::close(spawned->stdin_fd);
    return fail(Errc::io, "the warm-daemon keeper did not start (it said '" + line + "')");
  }
  k.lifeline_fd = spawned->stdin_fd;
  return k;
}

}  // namespace tlaunch
