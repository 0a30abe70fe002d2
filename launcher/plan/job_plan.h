#pragma once
// The plan: a pure function of (what the user asked, what the nodes reported) → exactly what
// every daemon runs. Same inputs give the same plan, byte for byte.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "binding/preflight/preflight_item.h"
#include "binding/topology/binding_manifest.h"
#include "binding/fabric/fabric_env.h"
#include "binding/fabric/network_choice.h"
#include "binding/fabric/user_env.h"
#include "bootstrap/message.h"
#include "launcher/job_spec.h"
#include "launcher/plan/gpu_choice.h"
#include "tlaunch/inventory.h"
#include "tlaunch/node_launch.h"

namespace tlaunch {

// One node as the frontend knows it once its daemon reported.
struct NodeReport {
  int index = 0;
  std::string name;
  NodeInventory inventory;  // what its daemon reported, decoded
  std::string control_ip;   // the daemon's address as seen on its control connection
};

struct PlanContext {
  std::string job_id;
  std::string run_id;      // the same in every attempt of a job that restarts ("": job_id)
  int restart_count = 0;   // --max-restarts: this attempt's number, and the most there may be
  int max_restarts = 0;
  std::string cwd;
  int umask = -1;           // the caller's, for the ranks (-1: each daemon's own)
  long long nofile = -1;    // the caller's soft limit of open files, for the ranks (-1: the daemons')
  std::vector<std::string> base_env;   // forwarded environment with -x applied, "K=V"
  std::vector<std::string> user_set;   // names the user set explicitly (-x) or inherited: they win
  UserEnv user_env;                    // the same with values and where each came from
  std::vector<std::vector<std::string>> node_net_if;  // per node: hostfile net_if= overrides
  std::vector<GpuList> node_gpus;      // per node: --include/--exclude GPU lists (missing: every GPU)
  std::vector<int> node_max_slots;     // per node: the hostfile's max_slots, 0 (or missing) where none
  std::optional<GpuList> every_node_gpus;  // the user's CUDA_VISIBLE_DEVICES as the list of every node
  // That variable's value and where it came from: no longer an export as such, still listed as one.
  std::optional<std::pair<std::string, std::string>> gpu_list_export;
  bool cpu_ranks_asked = false;        // -p or --nproc-per-node cpu: ranks without GPUs even with a GPU list
  bool ranks_from_slots = false;       // the count came from the nodes' slots (RankLayout::from_slots)
  bool simulated_nodes = false;        // --launcher local: every node is this host by design
  bool loopback_only = false;          // every node is this host (local launcher), or --offline: no fabric chosen
  bool network_unasked = false;        // --offline for hosts other than this one: the network is chosen at run time
  std::vector<PreflightItem> measured_preflight;  // results of the cross-node RDMA write test
  std::string ranks_source;            // why this many ranks per node ("-p 2", "slots=8 in --hostfile")
  // MASTER_ADDR / MASTER_PORT found in tlaunch's own environment ("K=V"), which the plan does not
  // take (often a batch script's for torchrun, on the wrong network): said, not used.
  std::vector<std::string> unused_master_env;
  // Exports given twice with different values (ForwardedEnvironment::overridden): said, one used.
  std::vector<std::string> overridden_exports;
};

// A variable the user exported (-x, --mca, --master-*, DeepSpeed's environment files).
struct ExportedVar {
  std::string name;
  std::string value;
  std::string source;  // "-x", "--mca", "/home/u/.deepspeed_env:3"
};

// Typed throughout: the banner, --dry-run (text and --json) and the NCCL check render or read
// these fields (launcher/plan/plan_render.h); nothing is parsed back from display text.
struct JobPlan {
  std::string job_id;
  int world_size = 0;
  int ranks_per_node = 0;
  std::string ranks_source;  // why ranks_per_node: a flag, the slots, or the nodes' GPUs
  std::string master_addr;
  int master_port = 0;
  std::vector<NodeLaunch> nodes;
  PmixSpec pmix;  // the job's PMIx geometry (every node's name and ranks), once: not in `nodes`
  std::vector<std::string> warnings;
  std::vector<ExportedVar> exports;
  std::optional<NetworkChoice> network;  // none: every node is this host (loopback), or offline
  bool network_unasked = false;          // --offline for hosts that are not this one: no network chosen
  // Per node: the fabric variables of its first rank, with who wins (the user or the choice).
  std::vector<std::vector<EnvSetting>> network_env;
  std::vector<PreflightItem> preflight_items;
  std::vector<ManifestRow> manifest;  // the binding: one row per rank, by rank
  std::string fingerprint;            // of the manifest ("" when no node was bound)
  struct NodeGpus {
    bool gpu_ranks = false;    // the node's ranks drive GPUs
    std::string visible_gpus;  // CUDA_VISIBLE_DEVICES: GPUs a list narrows them to, else Slurm's, else ""
    // AMD GPUs: ROCR_VISIBLE_DEVICES, the ranks' GPUs by UUID in local-rank order ("GPU-4c04...,"),
    // since HIP numbers them in its own order, not the plan's (PCI bus order); "" otherwise.
    std::string rocr_visible;
  };
  std::vector<NodeGpus> node_gpus;  // per node
};

Result<JobPlan> makePlan(const JobSpec& input, const std::vector<NodeReport>& nodes, const PlanContext& ctx);


}  // namespace tlaunch
