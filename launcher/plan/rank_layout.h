#pragma once
// How many nodes and how many ranks on each, from -n/-N/-p/-g and the hosts' slots (pure).
// Precedence for ranks per node: -n/-p/-g as given, else the hostfile's/--hosts' slots, else
// (decided when planning, from the inventories: rankDefault) one rank per GPU, else 1.
// Nodes may run different numbers of ranks, as with mpirun and DeepSpeed: slots that differ
// (a hostfile's 8 and 4, --include's GPU lists), -n filling the nodes by their slots, -n over
// nodes without slots (spread as srun does: -n 10 -N 4 is 3, 3, 2, 2). With -n and -p, the last
// node may run fewer (mpirun's --npernode). Ranks are node-major whatever the counts.
#include <string>
#include <vector>

#include "launcher/job_spec.h"
#include "tlaunch/result.h"

namespace tlaunch {

struct RankLayout {
  int nodes = 0;           // nodes to use (0: all given, or this host)
  int ranks_per_node = 0;  // 0: decide from the nodes' GPUs when planning
  int last_node_ranks = 0; // with -n: the last node's share (== ranks_per_node when even)
  // When the nodes' counts differ other than in the last node's: each node's, in order (then
  // ranks_per_node is the largest). Empty: ranks_per_node on each (last_node_ranks on the last).
  std::vector<int> node_ranks;
  std::string source;      // why, for the banner and --dry-run: "-p 2", "slots=8 in --hostfile", ...
  bool from_slots = false; // the count is the nodes' slots (hostfile, --hosts, SLURM_NTASKS_PER_NODE)
};

// slots: each available node's usable slots in order (-1 unknown); empty when no nodes were
// named (this host, simulated nodes, or srun picks). slots_origin: "--hostfile", "--hosts".
// names: the nodes' names in the same order, for messages (may be empty).
Result<RankLayout> resolveRankLayout(const JobSpec& spec, const std::vector<int>& slots, const std::string& slots_origin,
                                     const std::vector<std::string>& names = {});

// At planning, when no count was given: torchrun's gpu/auto/cpu words, or the default (one per
// GPU on GPU nodes, else 1). gpus/cores: each node's counts. Sets spec's -p or -g.
Result<std::string> applyRankDefault(JobSpec& spec, const std::vector<int>& gpus, const std::vector<int>& cores,
                                     const std::vector<std::string>& names);

}  // namespace tlaunch
