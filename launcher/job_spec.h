#pragma once
// Everything the user asked for, as parsed from the command line. Plain data: the CLI fills
// it, planning and the session read it.
#include <optional>
#include <map>
#include <string>
#include <vector>

#include "launcher/output_sink.h"

namespace tlaunch {

enum class LauncherKind { automatic, local, ssh, slurm };
enum class PreflightMode { off, quick, full };

// Grouped by topic for the reader, not by size for the compiler: one per job.
struct JobSpec {  // NOLINT(clang-analyzer-optin.performance.Padding)
  std::vector<std::string> argv;  // the program and its arguments
  int nodes = 0;                  // -N (0: all nodes resolved, or 1)
  int procs_per_node = 0;         // -p
  int gpus_per_node = 0;          // -g
  int total_ranks = 0;            // -n/--np (0: ranks per node x nodes)
  // Each node's count where they differ (slots that differ, -n spread or filling slots, nodes
  // with different GPU counts); ranksPerNode() is then the largest. Empty: the same on each.
  std::vector<int> ranks_by_node;
  // --nproc-per-node gpu|auto|cpu (torchrun's words): decided from the nodes' inventories.
  std::string nproc_per_node_word;
  LauncherKind launcher = LauncherKind::automatic;

  // Node sources
  std::string hosts;
  std::string hostfile;
  // Its text, read once before the first attempt (runJob): a restart must not read a pipe's end
  // (`--hostfile <(...)`) or an edited file. Empty: read when the nodes are chosen.
  std::optional<std::string> hostfile_content;
  std::string include, exclude;

  // Environment
  std::vector<std::string> exports;  // -x VAR / -x VAR=VALUE, as given (--master-addr/-port and --mca land here)
  std::map<std::string, std::string> export_flags;  // a name the last of which came from a flag: "--mca", "--master-port"
  std::string chdir;

  // Output
  TagMode tag = TagMode::full;
  std::string output_dir;
  int stdin_rank = -1;
  bool stdout_terminal = false;  // --pty: each rank's stdout is a pseudo-terminal, as under mpirun

  // Control
  int kill_timeout_s = 10;
  int connect_timeout_s = 60;
  int heartbeat_timeout_s = 15;
  // --tree-radix: the frontend talks to at most this many daemons; the others attach below them
  // (bootstrap/tree_shape.h). 0: every daemon talks to the frontend (a star).
  int tree_radix = 64;
  std::string nccl_check = "warn";  // --nccl-check off|warn|strict (launcher/nccl/nccl_check.h)
  int time_limit_s = 0;        // --time-limit: end the job like a failure after this long (0: none)
  int hang_timeout_s = 0;      // --hang-timeout: collect stacks once after this much silence (0: off)
  std::string control_job;     // `tlaunch stacks|status [JOB]`
  std::string daemon_path;
  bool verbose = false;
  bool quiet = false;  // no start-of-job banner
  std::string summary_json;  // --summary-json FILE: the outcome, machine-readable

  // Planning
  bool dry_run = false;
  bool json = false;
  bool offline = false;
  bool report_bindings = false;
  std::string topology_xml;
  std::string sysfs_root = "/";
  std::string bind = "core";  // none|numa|core
  int cpus_per_rank = 0;

  // Network
  std::string net_mode = "auto";  // auto|ib|tcp
  std::vector<std::string> net_if;
  std::string net_cidr;
  std::string check_reachability = "ring";  // ring|all|off

  // Preflight
  PreflightMode preflight = PreflightMode::quick;
  bool preflight_strict = false;
  bool preflight_only = false;              // `tlaunch preflight`: report and exit
  std::vector<std::string> preflight_skip;  // checks not to apply (their results are shown as skipped)
  double expect_rate_gbps = 0;

  // PMIx
  bool pmix = true;

  // A failed rank (launcher/rank_failure_policy.h)
  int event_grace_ms = 1000;  // --event-grace: PMIx event handlers run this long before teardown
  bool keep_going = false;    // --keep-going: the other ranks run to their end

  // Restarts (launcher/restart_policy.h)
  int max_restarts = 0;  // --max-restarts: run the job again this many times after a failure
  int min_nodes = 0;     // --nnodes MIN:MAX's MIN (0: -N nodes or none)
  // Decided between attempts, not by a flag: which attempt this is, and the nodes left out.
  int restart_count = 0;
  std::vector<std::string> dropped_nodes;

  // ssh / Slurm
  int ssh_fanout = 64;
  std::vector<std::string> ssh_options;
  bool ssh_reuse = true;
  // --keep-daemons: -1 not given, 0 end reused warm daemons after the job, N seconds to keep them.
  int keep_daemons_s = -1;
  int ssh_connect_timeout_s = 10;
  std::string slurm_args;
  // The --ssh-* flags given: a job whose daemons ssh does not start refuses them (they would do
  // nothing), as it refuses --slurm-args outside srun.
  std::vector<std::string> ssh_flags_given;

  int ranksPerNode() const { return gpus_per_node > 0 ? gpus_per_node : procs_per_node; }
};

}  // namespace tlaunch
