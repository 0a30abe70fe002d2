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
        node_warnings.push_back({n.name, bindings.error().message + "; ranks share the NUMA node's cores (oversubscribed)"});
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
    plan.node_gpus.push_back({node_req.use_gpus, visible});
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
