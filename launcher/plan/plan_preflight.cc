#include "launcher/plan/plan_preflight.h"

#include <algorithm>
#include <set>

#include "binding/fabric/fabric_json.h"
#include "binding/preflight/cross_node_checks.h"
#include "binding/preflight/preflight_report.h"
#include "launcher/plan/plan_network.h"

namespace tlaunch {

std::vector<PreflightItem> collectPreflight(const std::vector<NodeReport>& nodes,
                                            const std::vector<PreflightItem>& measured) {
  std::vector<PreflightItem> all;
  std::vector<CrossNodeInput> cross;
  for (const auto& n : nodes) {
    if (auto it = n.inventory.find("preflight"); it != n.inventory.end()) {
      auto items = preflightFromJson(*it);
      if (items) all.insert(all.end(), items->begin(), items->end());
      else all.push_back({"report", n.name, "", PreflightStatus::fail, "a malformed preflight report", "a report", "check that every node runs the same tlaunchd"});
    } else if (n.inventory.contains("fabric_error")) {
      all.push_back({"network interfaces", n.name, "", PreflightStatus::fail, getString(n.inventory, "fabric_error"),
                     "readable sysfs and interfaces", "check --sysfs-root and /sys on that node"});
    }
    if (auto f = n.inventory.find("fabric"); f != n.inventory.end()) {
      auto fabric = fabricFromJson(*f);
      if (!fabric) continue;
      CrossNodeInput in{n.name, std::move(*fabric), {}};
      if (auto m = n.inventory.find("port_mtu"); m != n.inventory.end() && m->is_object())
        for (auto e = m->begin(); e != m->end(); ++e)
          if (e->is_number_integer()) in.port_mtu[e.key()] = e->get<int>();
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

Result<void> evaluatePreflight(const JobSpec& spec, const std::vector<NodeReport>& nodes, JobPlan& plan,
                               const std::vector<PreflightItem>& measured) {
  if (spec.preflight == PreflightMode::off) return {};
  auto items = collectPreflight(nodes, measured);
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
        i.status != PreflightStatus::pass) {
      i.found += " (ignored: --preflight-skip " + i.check + ")";
      i.status = PreflightStatus::skip;
    }
  }
  plan.details["preflight"] = preflightToJson(items);
  std::vector<PreflightItem> notable;
  std::set<std::string> failed_nodes, notable_nodes;
  for (const auto& i : items)
    if (i.status == PreflightStatus::warn || i.status == PreflightStatus::fail) notable_nodes.insert(i.node);
  for (const auto& i : items) {
    // Every check of a node that has something to say, so its counts are right.
    if (notable_nodes.count(i.node) && i.status != PreflightStatus::skip) notable.push_back(i);
    if (i.status == PreflightStatus::fail || (spec.preflight_strict && i.status == PreflightStatus::warn))
      failed_nodes.insert(i.node.empty() ? "all nodes" : i.node);
  }
  plan.preflight_items = items;
  plan.preflight_news = !notable.empty();
  plan.preflight_text = notable.empty() ? "preflight: " + preflightSummary(items) + "\n" : renderPreflightTable(notable);
  if (failed_nodes.empty()) return {};
  std::string names;
  for (const auto& n : failed_nodes) names += (names.empty() ? "" : ", ") + n;
  return fail(Errc::preflight, "preflight failed on " + names + "; no rank was started\n" + renderPreflightTable(notable),
              "fix what the table says, leave the node out (--exclude), or skip the checks with --preflight=off");
}

}  // namespace tlaunch
