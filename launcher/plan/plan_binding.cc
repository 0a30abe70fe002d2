#include "launcher/plan/plan_binding.h"

#include <algorithm>

#include "binding/topology/binding_manifest.h"
#include "binding/topology/placement.h"
#include "binding/topology/topology_json.h"
#include "launcher/same_failure_nodes.h"

namespace tlaunch {

namespace {

BindMode bindModeOf(const std::string& s) {
  return s == "none" ? BindMode::none : s == "numa" ? BindMode::numa : BindMode::core;
}

// ROCR_VISIBLE_DEVICES for AMD GPUs: "GPU-<uuid>" of each rank's GPU in local-rank order, so
// that HIP's device r is local rank r's planned GPU (HIP's own numbering follows the driver's
// enumeration, not the PCI bus order the plan uses). "" unless every rank's GPU is an AMD GPU
// with a UUID (ROCm-SMI's, which ROCr accepts in that form).
std::string rocrVisibleDevices(const TopologySnapshot& topo, const std::vector<RankBinding>& bindings) {
  std::string list;
  std::vector<std::string_view> seen;
  for (const auto& b : bindings) {
    if (!b.gpu_busid) return "";
    const auto g = std::find_if(topo.gpus.begin(), topo.gpus.end(),
                                [&](const GpuDevice& d) { return d.busid == *b.gpu_busid; });
    if (g == topo.gpus.end() || g->vendor != "AMD" || !g->uuid) return "";
    if (std::find(seen.begin(), seen.end(), *g->uuid) != seen.end()) continue;
    seen.emplace_back(*g->uuid);
    list += (list.empty() ? "GPU-" : ",GPU-") + *g->uuid;
  }
  return list;
}

// A GPU numbering of the user's or Slurm's is in force (HIP applies it on top of ROCR's list).
bool gpuVisibilityGiven(const std::vector<std::string>& base_env) {
  return std::any_of(base_env.begin(), base_env.end(), [](const std::string& kv) {
    for (std::string_view name : {"CUDA_VISIBLE_DEVICES=", "HIP_VISIBLE_DEVICES=", "ROCR_VISIBLE_DEVICES=",
                                  "GPU_DEVICE_ORDINAL="})
      if (kv.starts_with(name)) return true;
    return false;
  });
}

}  // namespace

Result<void> planBindings(const JobSpec& spec, const std::vector<NodeReport>& nodes, const PlanContext& ctx,
                          const std::vector<GpuList>& gpu_lists, const NetworkChoice* network, JobPlan& plan) {
  BindingRequest req;
  req.ranks_per_node = plan.ranks_per_node;
  req.use_gpus = spec.gpus_per_node > 0;
  req.mode = bindModeOf(spec.bind);
  req.cpus_per_rank = spec.cpus_per_rank;
  std::vector<ManifestRow> rows;
  // The same warning of many nodes is said once, naming them all (1,000 nodes: one line).
  std::vector<NodeFailureText> node_warnings;
  bool reported_not_applied = false;
  const bool visibility_given = gpuVisibilityGiven(ctx.base_env);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeReport& n = nodes[i];
    NodeLaunch& nl = plan.nodes[i];
    const auto& topo = n.inventory.topology;
    if (!topo) {
      const std::string& why = n.inventory.topology_error;
      return fail(Errc::topology, "node " + n.name + ": " + (why.empty() ? "no topology reported" : why),
                  "check --topology-xml / HWLOC_XMLFILE on that node, or that hwloc works there (lstopo)");
    }
    // A GPU list (--include node:0,1) on a GPU node: its ranks drive exactly those GPUs.
    BindingRequest node_req = req;
    // The last node of an uneven -n runs fewer ranks: its cores are split among those it runs.
    if (!nl.ranks.empty()) node_req.ranks_per_node = static_cast<int>(nl.ranks.size());
    node_req.pair_hcas = !network || network->rdma;  // a job on sockets uses none (it showed them)
    if (network && network->rdma && i < network->nodes.size())
      for (const auto& port : network->nodes[i].hca_ports) node_req.data_ports.push_back(port.name);
    std::vector<int> gpus;  // the list's GPUs, for planNodeBinding
    const GpuList& list = gpu_lists[i];
    // Slots on a GPU node (DeepSpeed's hostfile `node1 slots=8` means its GPUs; Open MPI's on
    // GPU nodes is one rank per GPU in practice): a GPU for each rank, as DeepSpeed gives them,
    // when the node has one for each. They were CPU ranks, bound far from the GPU they used.
    if (ctx.ranks_from_slots && !ctx.cpu_ranks_asked && !list.given() &&
        !topo->gpus.empty()) {
      if (topo->gpus.size() >= static_cast<size_t>(node_req.ranks_per_node)) node_req.use_gpus = true;
      else
        node_warnings.push_back({n.name, "node " + n.name + ": " + std::to_string(topo->gpus.size()) +
                                             " GPU(s) for " + std::to_string(node_req.ranks_per_node) + " ranks (" +
                                             ctx.ranks_source +
                                             "): the ranks run without a GPU each; give -g or fewer slots for one "
                                             "per GPU"});
    }
    // CUDA_VISIBLE_DEVICES: the chosen GPUs when a list narrows the node's GPUs; else what Slurm
    // set there (CPU ranks see the job's GPUs, as in srun's tasks); else unset.
    std::string visible = list.slurm;
    // CPU ranks need no GPU: a list that leaves none (Slurm's "NoDevFiles") is no error for them.
    // On a node without GPUs only an --include/--exclude list is looked at (refused there).
    if (list.given() && (!topo->gpus.empty() || list.source.empty()) && !(list.none && ctx.cpu_ranks_asked)) {
      auto chosen = chooseNodeGpus(*topo, list, n.name);
      if (!chosen) return tl::unexpected(chosen.error());
      node_req.use_gpus = node_req.use_gpus || !ctx.cpu_ranks_asked;
      if (node_req.use_gpus) {
        gpus = *chosen;
        visible = gpuIndexList(*chosen);
        if (!list.source.empty() && static_cast<size_t>(node_req.ranks_per_node) > gpus.size())
          return fail(Errc::resources,
                      "node " + n.name + " has " + std::to_string(gpus.size()) + " GPU(s) left by " + list.source +
                          " but the job asks for " + std::to_string(node_req.ranks_per_node) + " there",
                      "run at most " + std::to_string(gpus.size()) + " ranks per node, or choose more GPUs" +
                          (list.slurm.empty() ? "" : " (ask Slurm for them: --gres=gpu:N)"));
      }
    }
    auto bindings = planNodeBinding(*topo, node_req, n.name, gpus);
    if (!bindings && req.mode == BindMode::core && req.cpus_per_rank == 0 && !node_req.use_gpus) {
      // More CPU ranks than cores (oversubscription): share the NUMA node's cores instead of
      // refusing; an explicit --cpus-per-rank or GPU job still gets the error.
      BindingRequest shared = node_req;
      shared.mode = BindMode::numa;
      auto retry = planNodeBinding(*topo, shared, n.name, gpus);
      if (retry) {
        node_warnings.push_back({n.name, bindings.error().message +
                                             ": every rank of the node is bound to its whole NUMA node instead of "
                                             "cores of its own (oversubscribed)"});
        bindings = std::move(retry);
      }
    }
    if (!bindings) return tl::unexpected(bindings.error());
    nl.apply_binding = topo->live && req.mode != BindMode::none;
    if (!topo->live && req.mode != BindMode::none && !reported_not_applied) {
      reported_not_applied = true;
      plan.warnings.push_back("the topology comes from " + topo->source +
                              ", not from the machine: the binding is planned and reported, not applied");
    }
    std::string rocr_visible;
    if (node_req.use_gpus && list.slurm.empty() && !visibility_given) {
      rocr_visible = rocrVisibleDevices(*topo, *bindings);
      if (!rocr_visible.empty()) visible.clear();  // indices HIP would apply to the list: not the plan's
    }
    plan.node_gpus.push_back({node_req.use_gpus, visible, rocr_visible});
    for (auto& r : nl.ranks) {
      const RankBinding& b = (*bindings)[static_cast<size_t>(r.local_rank)];
      r.cpus = b.cpus;
      r.mem_nodes = b.mem_nodes;
      rows.push_back({r.rank, n.name, b});
    }
  }
  for (const auto& w : mergeSameFailures(node_warnings)) plan.warnings.push_back(w.message);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  plan.fingerprint = manifestFingerprint(rows);
  plan.manifest = std::move(rows);
  return {};
}

}  // namespace tlaunch
