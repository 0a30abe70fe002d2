#pragma once
// How the frontend gets one tlaunchd running on every node: local fork, ssh, or srun.
// A starter only starts processes and reports the ones that died before their
// daemon connected; everything after the daemon's hello is the control plane's job.
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

struct NodeTarget {
  int index = 0;     // position in the job's node order (rank order follows it)
  std::string name;  // as the user or Slurm named it; what ssh connects to
  std::string host;  // ssh destination if it differs from name (user@host forms), else empty
  std::vector<std::string> net_if;  // hostfile override of the fabric interface (net_if=ib1)
};

struct DaemonCommand {
  std::string daemon_path;        // tlaunchd on the nodes
  std::vector<std::string> args;  // arguments common to every node (--connect, --job-id, ...)
  // Per-node arguments are appended by the starter: --node-index I --node-name NAME
  // (the Slurm starter cannot do that per node; its daemons say who they are in their hello).
};

// A starter process (ssh, srun, a forked daemon) that ended before its daemon connected,
// or that failed at all. node_index is -1 when it concerns every node (one srun step).
// After its daemon connected, any end but a clean exit is reported too: not a failure by
// itself (a killed ssh client does not end the daemon), but what the session says of why the
// node was lost if its connection closes ("tlaunchd was killed by signal 11 ...").
struct StartFailure {
  int node_index = -1;
  std::string message;  // the cause (first line), then ssh's / srun's own last words
  // The node's fault (down, refusing, tlaunchd missing there), not this host's (ssh cannot run
  // here, a bad local ssh configuration): --max-restarts drops only such nodes.
  bool node_side = true;
  // The starter can start nothing more (srun's one step for every node has ended): the nodes
  // not connected by now never will be.
  bool starter_done = false;
  // ssh found the node down (no route to it, its sshd refused): from another host (a tree
  // parent's failure) it is no better, so the frontend does not try it again.
  bool unreachable = false;
};

// Where a node's warm-daemon keeper listens, and who it is (daemon/warm_keeper.h).
struct KeeperAddress {
  std::string host;     // the node's address as the frontend saw its daemon connect
  int port = 0;
  long long pid = 0;    // on that node
  long long since = 0;  // when it started, by its clock (epoch seconds)
};

// Something a starter wants the user to know that is not a failure.
struct StarterNote {
  bool verbose_only = true;  // said with -v only
  std::string text;
  bool banner = false;  // part of the start-of-job banner: not said with -q
};

class DaemonStarter {
 public:
  virtual ~DaemonStarter() = default;
  virtual const char* name() const = 0;
  // Starts one daemon per node, without waiting for them. `secret` (one line) is written to
  // each daemon's stdin, which then stays open for the life of the job.
  virtual Result<void> start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                             const std::string& secret) = 0;
  // Non-blocking: failures seen since the last call (a process that exited, with its stderr).
  // The frontend calls it on a timer until all daemons have connected, and during the job.
  virtual std::vector<StartFailure> poll() = 0;
  // The daemon of node `node_index` authenticated: its starter process (ssh) no longer counts
  // against the fan-out, and its later clean exit is not a failure.
  virtual void daemonConnected(int /*node_index*/) {}
  // The frontend gave up on node `node_index`'s daemon: silent past the heartbeat timeout
  // (stopped, hung, cut off). stop() need not wait for it to end by itself: it was never told.
  virtual void daemonLost(int /*node_index*/) {}
  // The daemon of node `node_index` started a warm-daemon keeper (tlaunch --keep-daemons).
  virtual void daemonKeeps(int /*node_index*/, const KeeperAddress& /*keeper*/) {}
  // Whether node `node_index`'s daemon is started otherwise now than by its warm-daemon keeper
  // (the keeper did not answer in time: ssh or srun starts it). A daemon the keeper started all
  // the same is then refused, so that exactly one of the two serves the node.
  virtual bool keeperGivenUp(int /*node_index*/) const { return false; }
  // Whether `pid` is one of this starter's own processes (an ssh client it started).
  virtual bool owns(pid_t /*pid*/) const { return false; }
  // Notes since the last call (after start(), and on the poll timer).
  virtual std::vector<StarterNote> takeNotes() { return {}; }
  // The batch system holds the daemons back (srun's job queued, its step waiting for busy
  // nodes): no daemon can connect yet, and --connect-timeout does not run meanwhile.
  virtual bool waitingForResources() const { return false; }
  // One process holds every daemon (srun's one step, --kill-on-bad-exit) and is still running:
  // when one daemon fails, the batch system signals the others, and the starter's words on the
  // cause (which node) come a moment after their reports.
  virtual bool endsTogether() const { return false; }
  // Ends whatever is still running (ssh clients, the srun step), waiting at most `grace_ms`
  // before SIGKILL. Called once at job end, after the daemons were told to exit.
  virtual void stop(int grace_ms) = 0;
};

}  // namespace tlaunch
