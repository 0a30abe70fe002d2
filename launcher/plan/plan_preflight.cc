#include "launcher/plan/plan_preflight.h"

#include <algorithm>
#include <set>

#include "binding/fabric/fabric_json.h"
#include "binding/preflight/cross_node_checks.h"
#include "binding/preflight/preflight_report.h"
#include "launcher/plan/plan_network.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

std::vector<PreflightItem> collectPreflight(const std::vector<NodeReport>& nodes,
                                            const std::vector<PreflightItem>& measured) {
  std::vector<PreflightItem> all;
  std::vector<CrossNodeInput> cross;
  for (const auto& n : nodes) {
    if (const auto& items = n.inventory.preflight) {
      all.insert(all.end(), items->begin(), items->end());
    } else if (!n.inventory.fabric && !n.inventory.fabric_error.empty()) {
      all.push_back({"network interfaces", n.name, "", PreflightStatus::fail, n.inventory.fabric_error,
                     "readable sysfs and interfaces", "check --sysfs-root and /sys on that node"});
    }
    if (const auto& fabric = n.inventory.fabric) {
      CrossNodeInput in{n.name, *fabric, {}};
      in.port_mtu = n.inventory.port_mtu;
      cross.push_back(std::move(in));
    }
  }
  if (cross.size() > 1) {
    auto c = crossNodeChecks(cross);
    all.insert(all.end(), c.begin(), c.end());
  }
  all.insert(all.end(), measured.begin(), measured.end());
  return all;
}

std::vector<PreflightItem> notablePreflight(const std::vector<PreflightItem>& items) {
  std::set<std::string> notable_nodes;
  for (const auto& i : items)
    if (i.status == PreflightStatus::warn || i.status == PreflightStatus::fail) notable_nodes.insert(i.node);
  std::vector<PreflightItem> notable;
  // Every check of a node that has something to say, so its counts are right.
  for (const auto& i : items)
    if (notable_nodes.count(i.node) && i.status != PreflightStatus::skip) notable.push_back(i);
  return notable;
}

namespace {

// Each daemon judged its ports' rates against its fastest ACTIVE port before the job's network
// was chosen: a slower port that the job does not use (a 25G management ConnectX beside 400G
// rails) is no degraded link of the job.
void excuseUnusedPortRates(std::vector<PreflightItem>& items, const NetworkChoice& network) {
  for (auto& i : items) {
    if (i.check != "rate" || i.status != PreflightStatus::warn) continue;
    const auto node = std::find_if(network.nodes.begin(), network.nodes.end(),
                                   [&](const NodeNetChoice& n) { return n.node == i.node; });
    if (node == network.nodes.end() || node->hca_ports.empty()) continue;
    const bool used = std::any_of(node->hca_ports.begin(), node->hca_ports.end(),
                                  [&](const HcaPortChoice& p) { return p.name == i.device; });
    if (used) continue;
    i.status = PreflightStatus::skip;
    i.found += " (not a data port of the job's network " + network.cidr + ")";
    i.fix.clear();
  }
}

}  // namespace

Result<void> evaluatePreflight(const JobSpec& spec, const std::vector<NodeReport>& nodes, JobPlan& plan,
                               const std::vector<PreflightItem>& measured, const NetworkChoice* network) {
  if (spec.preflight == PreflightMode::off) return {};
  auto items = collectPreflight(nodes, measured);
  if (network) excuseUnusedPortRates(items, *network);
  if (plainEthernet(spec, rdmaPresence(nodes))) {
    // A plain-Ethernet cluster runs over TCP: the RDMA checks have nothing to check.
    static const std::set<std::string> rdma_checks = {"rdma_devices", "verbs_devices", "uverbs",
                                                      "verbs_port",   "verbs_selftest", "rdma_pair"};
    for (auto& i : items)
      if (rdma_checks.count(i.check) && i.status == PreflightStatus::fail) {
        i.status = PreflightStatus::skip;
        i.found = "no RDMA on any node";
        i.fix.clear();
      }
  }
  for (auto& i : items) {
    if (std::find(spec.preflight_skip.begin(), spec.preflight_skip.end(), i.check) != spec.preflight_skip.end() &&
        (i.status == PreflightStatus::warn || i.status == PreflightStatus::fail)) {
      i.found += " (ignored: --preflight-skip " + i.check + ")";
      i.status = PreflightStatus::skip;
    }
  }
  std::set<std::string> failed_nodes;
  bool only_gpus = true;  // GPUs short: --preflight=off would not give the ranks GPUs
  for (const auto& i : items)
    if (i.status == PreflightStatus::fail || (spec.preflight_strict && i.status == PreflightStatus::warn)) {
      failed_nodes.insert(i.node.empty() ? "all nodes" : i.node);
      only_gpus = only_gpus && i.check == "gpus";
    }
  plan.preflight_items = items;
  if (failed_nodes.empty()) return {};
  std::string names;
  for (const auto& n : failed_nodes) names += (names.empty() ? "" : ", ") + n;
  // topics: preflight-failed preflight-failed-gpus
  return diagnostic(Errc::preflight, only_gpus ? "preflight-failed-gpus" : "preflight-failed",
                    {{"nodes", names}, {"table", renderPreflightTable(notablePreflight(items))}});
}

}  // namespace tlaunch
