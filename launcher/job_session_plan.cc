// From the daemons' inventories to running ranks: the cross-node preflight, the plan, the
// banner, the prepare barrier and the start.
#include "launcher/job_session.h"
#include "launcher/hostlist.h"
#include "launcher/pmix_spawns.h"
#include "launcher/job_session_link.h"
#include "bootstrap/inventory_codec.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <tuple>

#include "bootstrap/auth.h"
#include "bootstrap/close_fds.h"
#include "binding/preflight/preflight_report.h"
#include "bootstrap/node_launch_json.h"
#include "launcher/cli_values.h"
#include "launcher/cross_node_preflight.h"
#include "launcher/job_inspector.h"
#include "launcher/nccl/nccl_job_check.h"
#include "launcher/plan/plan_render.h"
#include "binding/topology/binding_manifest.h"
#include "launcher/phase_timing.h"
#include "launcher/pmix_collectives.h"
#include "launcher/pmix_directory.h"
#include "launcher/pmix_job_control.h"
#include "launcher/plan/plan_network.h"
#include "launcher/plan/plan_preflight.h"
#include "launcher/rank_failure_policy.h"
#include "launcher/report_stdout.h"
#include "launcher/stdin_credit.h"
#include "tlaunch/version.h"
#include "bootstrap/error_text.h"

namespace tlaunch {

void JobSession::onInventory(Link& link, const Json& inv) {
  link.reported_at = Clock::now();
  // Decoded once, here: the planner reads typed fields, and a report it cannot read names its node.
  auto decoded = inventoryFromJson(inv, &topologies_);
  if (!decoded) {
    fail(exitStatusFor(Errc::protocol),
         "node " + link.name + " sent an inventory tlaunch cannot read: " + decoded.error().message +
             "\n  -> check that every node runs the same tlaunchd version as this tlaunch",
         -1, {}, link.name);
    return;
  }
  link.inventory = std::move(*decoded);
  link.has_inventory = true;
  if (phase_ == Phase::connecting && static_cast<int>(links_.size()) >= cfg_.unnamed_nodes &&
      std::all_of(links_.begin(), links_.end(), [](const auto& l) { return l->has_inventory; }))
    inventoriesComplete();
}

void JobSession::noteTimings(const char* what, Clock::time_point since, Clock::time_point Link::*at) {
  std::vector<std::pair<std::string, double>> times;
  double slowest = 0;
  for (const auto& l : links_) {
    const double ms = std::chrono::duration<double, std::milli>((*l).*at - since).count();
    slowest = std::max(slowest, ms);
    times.emplace_back(l->name, ms);
  }
  outcome_.phase_seconds[what] = slowest / 1000.0;  // for --summary-json
  if (cfg_.spec.verbose) out_.note(std::string(what) + ": " + phaseTimingSummary(std::move(times)));
}

void JobSession::noteCachedInventories() {
  int cached = 0, oldest = 0;
  for (const auto& l : links_) {
    if (l->inventory.cached_age_s < 0) continue;
    ++cached;
    oldest = std::max(oldest, l->inventory.cached_age_s);
  }
  if (cached > 0 && cfg_.spec.verbose)
    out_.note("inventory and preflight of " + std::to_string(cached) + " warm node" + (cached == 1 ? "" : "s") +
              " taken up to " + std::to_string(oldest) + " s ago (a warm node checks itself again after 60 s)");
  if (!cfg_.spec.verbose) return;
  // Where each live topology came from: hwloc's discovery, or the XML a daemon of this boot left
  // (binding/topology/topology_cache.h). A node that always discovers has HWLOC_* set or no
  // private TMPDIR.
  std::vector<std::string> discovered, from_cache;
  for (const auto& l : links_) {
    if (!l->inventory.topology || !l->inventory.topology->live) continue;
    (l->inventory.topology_from_cache ? from_cache : discovered).push_back(l->name);
  }
  std::string line;
  if (!discovered.empty()) line = "hwloc's discovery on " + compressHostlist(discovered);
  if (!from_cache.empty()) line += (line.empty() ? "" : ", ") + std::string("this boot's cache on ") + compressHostlist(from_cache);
  if (!line.empty()) out_.note("topology: " + line);
}

void JobSession::inventoriesComplete() {
  noteTimings("daemons reported", started_at_, &Link::reported_at);
  noteCachedInventories();
  advance(JobEvent::all_reported);  // to testing_fabric
  if (cfg_.unnamed_nodes > 0) {
    std::sort(links_.begin(), links_.end(), [](const auto& a, const auto& b) { return a->name < b->name; });
    for (size_t i = 0; i < links_.size(); ++i) links_[i]->index = static_cast<int>(i);
  }
  if (tree_) noteTreeShape("the others were started over ssh by the daemon above them");  // spawned as a tree
  if (wireTree()) return;  // goes on in checkAcrossNodes() once every node has its place
  checkAcrossNodes();
}

void JobSession::checkAcrossNodes() {
  // Before the plan, so that these results are part of the preflight verdict, the banner and
  // --dry-run --json.
  cross_node_ = std::make_unique<CrossNodePreflight>(cfg_.spec, cfg_.plan_context, cfg_.daemon_config, reports());
  auto first = cross_node_->start();
  if (cross_node_->done()) return planAndPrepare();
  phase_deadline_ = Clock::now() + std::chrono::seconds(60);
  for (auto& m : first) sendToNode(m.node, m.msg);
}

void JobSession::onCrossNodeMessage(Link& link, const Json& msg) {
  if (phase_ != Phase::testing_fabric || !cross_node_) return;
  for (auto& m : cross_node_->onMessage(link.index, msg)) sendToNode(m.node, m.msg);
  if (cross_node_->done()) planAndPrepare();
}

std::vector<NodeReport> JobSession::reports() const {
  std::vector<NodeReport> out;
  for (const auto& l : links_) out.push_back({l->index, l->name, l->inventory, l->control_ip});
  return out;
}

void JobSession::planAndPrepare() {
  const std::vector<NodeReport> reports = this->reports();
  if (cross_node_) cfg_.plan_context.measured_preflight = cross_node_->items();
  if (cfg_.spec.preflight_only) {
    JobPlan checked;
    auto network = chooseJobNetwork(cfg_.spec, reports, cfg_.plan_context);  // which ports are the job's
    const NetworkChoice* chosen = network && *network ? &**network : nullptr;
    std::vector<PreflightItem> measured = cfg_.plan_context.measured_preflight;
    // Nodes an earlier run could not start: their rows join this report, and fail it.
    measured.insert(measured.begin(), cfg_.unstarted_preflight.begin(), cfg_.unstarted_preflight.end());
    auto verdict = evaluatePreflight(cfg_.spec, reports, checked, measured, chosen);
    // Where every check passed, the job's own plan decides too: what would refuse the job (an
    // interface missing on one node, no subnet common to all) must not pass here. (A failed
    // check explains such a refusal already: it is not said twice.)
    if (verdict)
      if (auto plan = makePlan(cfg_.spec, reports, cfg_.plan_context); !plan && plan.error().code != Errc::preflight) {
        measured.push_back({plan.error().code == Errc::fabric ? "network" : "plan", "", "", PreflightStatus::fail,
                            plan.error().message, "a job on these nodes can be planned", plan.error().hint});
        checked = JobPlan{};
        verdict = evaluatePreflight(cfg_.spec, reports, checked, measured, chosen);
      }
    std::string text = cfg_.spec.json ? jsonText(preflightToJson(checked.preflight_items), 2) + "\n"
                                      : renderPreflightTable(checked.preflight_items) + "\n" +
                                            "preflight: " + preflightSummary(checked.preflight_items) + "\n";
    const auto printed = printReport(text);
    outcome_.preflight_reported = true;
    if (!verdict || !printed) {
      failed_ = true;
      outcome_.exit_code = exitStatusFor(printed ? Errc::preflight : Errc::io);
    }
    if (!printed) out_.note(describeError(printed.error()));
    finish(JobEvent::all_exited);  // the report was the job
    return;
  }
  auto plan = makePlan(cfg_.spec, reports, cfg_.plan_context);
  if (!plan) {
    fail(exitStatusFor(plan.error().code),
         describeError(plan.error()));
    return;
  }
  plan_ = std::move(*plan);
  // A --dry-run's plan text lists them itself (its JSON has them too, but a script reading it
  // may not look): said once.
  if (!cfg_.spec.dry_run || cfg_.spec.json)
    for (const auto& w : plan_->warnings) out_.note("warning: " + w);
  if (cfg_.spec.dry_run) {
    std::string text = cfg_.spec.json ? jsonText(planToJson(*plan_), 2) + "\n" : renderPlanText(*plan_);
    if (auto printed = printReport(text); !printed) {
      failed_ = true;
      outcome_.exit_code = exitStatusFor(Errc::io);
      out_.note(describeError(printed.error()));
    }
    finish(JobEvent::all_exited);  // the plan was the job
    return;
  }
  if (!cfg_.spec.quiet) out_.note(renderBanner(*plan_, cfg_.spec));
  if (cfg_.spec.report_bindings) {
    out_.note("binding manifest (fingerprint " + plan_->fingerprint + "):\n" + renderManifestTable(plan_->manifest));
  }
  for (const auto& n : plan_->nodes)
    for (const auto& r : n.ranks) out_.setRankNode(r.rank, n.node_name);
  if (cfg_.spec.stdout_terminal)
    for (auto& n : plan_->nodes) {
      std::vector<int> ranks;
      for (const auto& r : n.ranks) ranks.push_back(r.rank);
      std::tie(n.terminal_columns, n.terminal_rows) = out_.rankTerminalSize(ranks);
    }
  outcome_.rank_exit_codes.assign(static_cast<size_t>(plan_->world_size), -1);
  rank_failures_ = std::make_unique<RankFailurePolicy>(cfg_.spec.keep_going, plan_->world_size);
  if (plan_->pmix.enabled) pmix_spawns_ = std::make_unique<PmixSpawns>(plan_->pmix.nspace, plan_->world_size, plan_->pmix.node_names);
  startNcclCheck();
  advance(JobEvent::planned);  // to preparing
  phase_deadline_ = Clock::now() + std::chrono::seconds(30);
  prepare_sent_at_ = Clock::now();
  // What every node's launch shares goes once per link (and per tree hop), before the launches:
  // sent in each of N launches it would be O(N) per node, O(N^2) through the frontend.
  const SharedLaunch shared = sharedLaunchOf(plan_->nodes);
  Json job = {{"t", "job"}, {"launch", sharedLaunchToJson(shared)}};
  if (plan_->pmix.enabled) job["pmix"] = pmixGeometryToJson(plan_->pmix);
  broadcast(std::move(job));
  for (size_t i = 0; i < links_.size(); ++i)
    sendToNode(static_cast<int>(i), {{"t", "prepare"}, {"launch", nodeLaunchToJson(plan_->nodes[i], &shared)}});
}

void JobSession::startRanks() {
  noteTimings("nodes prepared (program found, peers reached, PMIx up)", prepare_sent_at_, &Link::prepared_at);
  start_sent_at_ = Clock::now();
  // Only now, every node ready: a job refused while preparing (a program missing, a working
  // directory absent) must not empty the last run's files.
  if (auto r = out_.openFiles(plan_->world_size); !r) {
    fail(exitStatusFor(r.error().code), describeError(r.error()));
    return;
  }
  advance(JobEvent::all_prepared);  // to starting
  outcome_.ranks_started = true;
  broadcast({{"t", "start"}});
}

}  // namespace tlaunch
