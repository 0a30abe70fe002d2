#pragma once
// Edge: everything one daemon checks about its own node before ranks start. The caller fills
// options.host with gatherHostFacts() (or test values) and passes the verbs implementation
// (makeIbverbsApi() for real).
#include <vector>

#include "binding/preflight/preflight_checks.h"
#include "binding/rdma/verbs_api.h"
#include "binding/rdma/verbs_probe.h"

namespace tlaunch {

// Quick level: localPreflightChecks + the verbs probe compared with sysfs. Full level adds the
// verbs self-test on every ACTIVE port (skipped, and said so, on a capture root). When
// `probeOut` is given it receives the probe (its MTUs feed the cross-node checks).
std::vector<PreflightItem> runNodePreflight(const NodeFabric& fabric, const PreflightOptions& options, VerbsApi& api,
                                            VerbsProbe* probeOut = nullptr);

}  // namespace tlaunch
