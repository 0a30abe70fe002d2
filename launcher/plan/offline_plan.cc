#include "launcher/plan/offline_plan.h"

#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "binding/topology/gpu_driver_view.h"
#include "binding/topology/placement.h"
#include "binding/topology/hwloc_topology.h"
#include "binding/topology/topo_report.h"
#include "binding/topology/topology_json.h"
#include "launcher/job_environment.h"
#include "launcher/plan/job_plan.h"
#include "launcher/plan/plan_render.h"
#include "launcher/job_setup.h"
#include "launcher/report_stdout.h"
#include "bootstrap/error_text.h"
#include "bootstrap/message.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

namespace {
int report(const Error& e) {
  printError(e);
  return exitStatusFor(e.code);
}

// The network is chosen from every node's interfaces, which only its daemon can report.
std::optional<std::string> networkFlagGiven(const JobSpec& spec) {
  if (!spec.net_if.empty()) return "--net-if";
  if (!spec.net_cidr.empty()) return "--net-cidr";
  if (spec.net_mode != "auto") return "--net " + spec.net_mode;
  if (spec.sysfs_root != "/") return "--sysfs-root";
  return std::nullopt;
}
}  // namespace

int runOfflineDryRun(const JobSpec& spec) {
  if (spec.topology_xml.empty() && !std::getenv("HWLOC_XMLFILE"))
    return report({Errc::usage, "--offline plans from a topology file", "add --topology-xml FILE"});
  if (auto flag = networkFlagGiven(spec)) return report(diagnosticError(Errc::usage, "offline-network", {{"flag", *flag}}));
  auto topo = loadTopology(spec.topology_xml);
  if (!topo) return report(topo.error());
  const auto shared_topo = std::make_shared<const TopologySnapshot>(std::move(*topo));
  // The same setup as a real run (validation, nodes, rank layout, environment): only the
  // inventories differ, every node reporting the given topology.
  auto setup = setUpJob(spec, currentEnvironment(), true);
  if (!setup) return report(setup.error());
  for (const auto& note : setup->choice.notes) std::cerr << "tlaunch: " << note << "\n";  // as a real run says them
  std::vector<NodeReport> nodes;
  for (const auto& t : setup->choice.nodes)
  {
    NodeInventory inv;
    inv.node = t.name;
    inv.topology = shared_topo;
    nodes.push_back({t.index, t.name, std::move(inv), "(offline)"});
  }
  PlanContext ctx = setup->plan_context;
  ctx.job_id = "tl-offline";
  auto plan = makePlan(setup->spec, nodes, ctx);
  if (!plan) return report(plan.error());
  if (spec.json)  // the plan text lists them itself
    for (const auto& w : plan->warnings) std::cerr << "tlaunch: warning: " << w << "\n";
  if (auto printed = printReport(spec.json ? jsonText(planToJson(*plan), 2) + "\n" : renderPlanText(*plan)); !printed)
    return report(printed.error());
  return 0;
}

TopoView topoView(const TopologySnapshot& topo, const GpuDriverFacts& driver) {
  BindingRequest req;
  req.use_gpus = !topo.gpus.empty();
  req.ranks_per_node = req.use_gpus ? static_cast<int>(topo.gpus.size()) : 1;
  auto pairing = planNodeBinding(topo, req, "this node");
  if (pairing) return {renderTopoReport(topo, *pairing, driver), std::nullopt};
  // The map is what a user debugs with: shown anyway, then the reason (the exit status stays
  // the plan's, for scripts).
  Error e = pairing.error();
  std::string why = e.message;  // "node this node: NUMA node 0 has ...", "node this node has ..."
  if (why.starts_with("node this node: ")) why.erase(0, 16);
  else if (why.starts_with("node this node ")) why.erase(0, 5);
  e.message = "the default plan (" + std::to_string(req.ranks_per_node) + " rank" +
              (req.ranks_per_node == 1 ? "" : "s") + (req.use_gpus ? ", one per GPU" : "") +
              ") does not fit this node: " + why;
  // topo takes no -g/-p/--bind: the hint names the command that does.
  e.hint = "the map above stands; plan other counts or bindings with tlaunch --dry-run --offline --topology-xml FILE "
           "--hosts NODE (-g N, -p N, --bind numa|none) -- PROGRAM";
  return {renderTopoReport(topo, {}, driver), std::move(e)};
}

int runTopo(const JobSpec& spec) {
  auto topo = loadTopology(spec.topology_xml);
  if (!topo) return report(topo.error());
  const GpuDriverFacts gpu_driver = consultNvidiaDriver(*topo);  // as the daemon does
  TopoView view = topoView(*topo, gpu_driver);
  if (auto printed = printReport(view.report); !printed) return report(printed.error());
  if (view.plan_error) return report(*view.plan_error);
  return 0;
}

}  // namespace tlaunch
