#pragma once
// Which nodes, and how their daemons get started (local fork, ssh, srun), from the command
// line and the environment.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/daemon_starter.h"
#include "launcher/ssh_starter.h"
#include "launcher/job_spec.h"
#include "launcher/node_source.h"
#include "launcher/plan/gpu_choice.h"
#include "launcher/plan/rank_layout.h"

namespace tlaunch {

struct LauncherChoice {
  LauncherKind kind = LauncherKind::automatic;  // the launcher chosen (never automatic once chosen)
  std::vector<NodeTarget> nodes;
  std::vector<int> node_slots;  // usable slots per node from the hostfile/--hosts, -1 unknown
  std::vector<int> node_max_slots;  // per node: the hostfile's max_slots, 0 where none
  std::vector<GpuList> node_gpus;  // per node: the GPUs --include/--exclude chose
  std::unique_ptr<DaemonStarter> starter;
  std::string listen_address;     // the frontend address the daemons connect to
  std::string advertise_address;  // what daemons are told to connect to, if not listen_address
  bool loopback_only = false;     // local launcher: every node is this host
  int unnamed_nodes = 0;
  std::vector<NodeTarget> starter_nodes;  // with unnamed_nodes: placeholders for the starter
  // Over ssh: daemons start their tree children over ssh with these options (tree spawn).
  std::optional<SshStarterOptions> tree_spawn;
  // Under tree spawn, by node index: the nodes tlaunch starts itself wherever they sit in the
  // tree (tlaunch's own host: started as a local process, not over ssh to itself).
  std::vector<bool> started_by_frontend;
  RankLayout layout;                      // nodes x ranks per node, and why
  std::vector<std::string> notes;         // said before the job starts
};

// --hosts or --hostfile inside a Slurm allocation (a script that lists the allocation's nodes, as
// for mpirun or DeepSpeed): slurm when every node is the allocation's by Slurm's name, so that
// Slurm's GPUs and cgroups apply to the job (ssh would start the daemons outside the job's step);
// else ssh, as asked, with a warning in `notes` naming the nodes outside the allocation.
LauncherKind launcherForHostsInAllocation(const std::vector<HostEntry>& hosts, const JobSpec& spec,
                                          const std::map<std::string, std::string>& env,
                                          std::vector<std::string>& notes);

// Also decides the rank layout (-n, slots), since it chooses among the given nodes.
// resolve_only: nodes and layout only, no starter and no addresses (--dry-run --offline).
Result<LauncherChoice> chooseLauncher(const JobSpec& spec, const std::map<std::string, std::string>& env,
                                      bool resolve_only = false);

}  // namespace tlaunch
