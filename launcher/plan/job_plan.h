#pragma once
// The plan: a pure function of (what the user asked, what the nodes reported) → exactly what
// every daemon runs. Same inputs give the same plan, byte for byte.
#include <string>
#include <utility>
#include <vector>

#include "binding/preflight/preflight_item.h"
#include "binding/topology/binding_manifest.h"
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
  std::vector<std::string> base_env;   // forwarded environment with -x applied, "K=V"
  std::vector<std::string> user_set;   // names the user set explicitly (-x) or inherited: they win
  UserEnv user_env;                    // the same with values and where each came from
  std::vector<std::vector<std::string>> node_net_if;  // per node: hostfile net_if= overrides
  std::vector<GpuList> node_gpus;      // per node: --include/--exclude GPU lists (missing: every GPU)
  bool cpu_ranks_asked = false;        // -p or --nproc-per-node cpu: ranks without GPUs even with a GPU list
  bool loopback_only = false;          // every node is this host (local launcher): no fabric needed
  std::vector<PreflightItem> measured_preflight;  // results of the cross-node RDMA write test
  std::string ranks_source;            // why this many ranks per node ("-p 2", "slots=8 in --hostfile")
};

struct JobPlan {  // NOLINT(bugprone-exception-escape): clang-tidy 14 cannot see json's noexcept move
  std::string job_id;
  int world_size = 0;
  int ranks_per_node = 0;
  std::string ranks_source;  // why ranks_per_node: a flag, the slots, or the nodes' GPUs
  std::string master_addr;
  int master_port = 0;
  std::vector<NodeLaunch> nodes;
  std::vector<std::string> warnings;
  Json details;  // the parts --dry-run shows (network, binding manifest, preflight)
  std::string manifest_table;  // --report-bindings
  std::string network_text;    // the per-node network decision for --dry-run: the fields below, joined
  bool loopback = false;                // no network chosen: every node is this host
  std::string network_summary;          // "network: ... on <cidr>, MASTER_ADDR ...\n"
  std::vector<std::string> network_nodes;  // per node: its interface line and its variables
  std::vector<std::string> network_notes;  // "  note: ...\n"
  std::string preflight_text;  // table of non-passing checks, or the one-line summary
  bool preflight_news = false; // preflight_text is a table: some check warned or failed
  std::vector<PreflightItem> preflight_items;
  std::vector<ManifestRow> manifest;  // the binding: one row per rank, by rank
  struct NodeGpus {
    bool gpu_ranks = false;    // the node's ranks drive GPUs
    std::string visible_gpus;  // CUDA_VISIBLE_DEVICES when a GPU list narrows them, else ""
  };
  std::vector<NodeGpus> node_gpus;  // per node
};

Result<JobPlan> makePlan(const JobSpec& input, const std::vector<NodeReport>& nodes, const PlanContext& ctx);

// --dry-run output.
std::string renderPlanText(const JobPlan& plan);
Json planToJson(const JobPlan& plan);

}  // namespace tlaunch
