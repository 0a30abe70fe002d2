#pragma once
// `tlaunch --dry-run --offline`: the plan from a topology file alone, no node contacted, and
// `tlaunch topo`: this node's map.
#include <optional>
#include <string>

#include "binding/topology/gpu_driver_view.h"
#include "launcher/job_spec.h"
#include "tlaunch/result.h"
#include "tlaunch/topology.h"

namespace tlaunch {
int runOfflineDryRun(const JobSpec& spec);
int runTopo(const JobSpec& spec);

// What `tlaunch topo` shows (pure): the node's report, with the default plan's GPU -> HCA pairing
// when that plan (one rank per GPU) fits, else the report without it and why it does not fit.
struct TopoView {
  std::string report;
  std::optional<Error> plan_error;
};
TopoView topoView(const TopologySnapshot& topo, const GpuDriverFacts& driver);
}  // namespace tlaunch
