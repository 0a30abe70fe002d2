#include "daemon/preflight_runner.h"

#include "binding/rdma/verbs_selftest.h"

namespace tlaunch {

std::vector<PreflightItem> runNodePreflight(const NodeFabric& fabric, const PreflightOptions& options, VerbsApi& api,
                                            VerbsProbe* probeOut) {
  std::vector<PreflightItem> items = localPreflightChecks(fabric, options);
  VerbsProbe probe = probeVerbs(api);
  for (auto& item : verbsProbeItems(probe, fabric, options.node, options.sysfs_root_is_capture, options.expect_rdma))
    items.push_back(std::move(item));
  if (options.level == PreflightLevel::full && !options.sysfs_root_is_capture && !probe.devices.empty()) {
    for (const auto& target : selfTestTargets(fabric))
      items.push_back(selfTestItem(runVerbsSelfTest(api, target), options.node));
  }
  if (probeOut) *probeOut = std::move(probe);
  return items;
}

}  // namespace tlaunch
