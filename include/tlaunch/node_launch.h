#pragma once
// What the frontend tells one daemon to run: the "prepare" message, as plain data.
#include <string>
#include <vector>

namespace tlaunch {

struct RankSpec {
  int rank = 0;
  int local_rank = 0;
  std::vector<std::string> env;  // "K=V", applied over the node's base environment
  std::vector<int> cpus;         // PU OS indices; empty = no CPU binding
  std::vector<int> mem_nodes;    // NUMA OS indices; empty = no memory binding
};

struct PmixSpec {
  bool enabled = false;
  std::string nspace;
  std::vector<std::string> node_names;
  std::vector<std::vector<int>> ranks_by_node;
  int this_node = 0;
  std::string tcp_if_include;  // CIDR of the fabric, may be empty
  bool oversubscribed = false;  // more ranks on this node than CPUs they may run on (PMIX_NODE_OVERSUBSCRIBED)
};

// A peer this node must reach over the chosen network before any rank starts.
struct ReachTarget {
  std::string node;
  std::string addr;
  int port = 0;
};

struct NodeLaunch {
  std::string job_id;
  std::string node_name;
  std::vector<std::string> argv;
  std::string cwd;
  std::vector<std::string> base_env;  // the environment every rank starts from, "K=V"
  std::vector<RankSpec> ranks;
  bool apply_binding = false;
  int stdin_rank = -1;               // global rank whose stdin the frontend forwards, -1 none
  int kill_timeout_ms = 10000;
  // The caller's umask and soft limit of open files, which ranks get on every node (as srun
  // passes them on); -1: the daemon's own (a plan from an older frontend).
  int umask = -1;
  long long nofile = -1;
  bool stdout_terminal = false;      // --pty: each rank's stdout is a pseudo-terminal
  int terminal_columns = 0;          // its window size, as programs read it (0: the kernel's 0x0)
  int terminal_rows = 0;
  std::vector<ReachTarget> reach;    // the next node (ring), or every other node (all-pairs)
  PmixSpec pmix;
};

}  // namespace tlaunch
