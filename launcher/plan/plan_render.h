#pragma once
// The plan as people and programs see it: the banner at job start, --dry-run's text, and
// --dry-run --json. Pure renderings of the typed JobPlan; nothing here decides anything.
#include <string>

#include "bootstrap/message.h"
#include "launcher/job_spec.h"
#include "launcher/plan/job_plan.h"

namespace tlaunch {

// The whole plan as text (--dry-run).
std::string renderPlanText(const JobPlan& plan);

// The whole plan as JSON (--dry-run --json): every rank's environment, the network choice with
// each node's variables, the binding manifest and the preflight results.
Json planToJson(const JobPlan& plan);

// The banner at job start: one line when all is well; the network decision per node (at most 4
// shown) and the preflight checks worth reading otherwise.
std::string renderBanner(const JobPlan& plan, const JobSpec& spec);

// "network: ib on 10.1.0.0/16 (RDMA), MASTER_ADDR ...", then a line per node with its
// variables, then the notes; "network: loopback ..." when no network was chosen.
std::string renderNetwork(const JobPlan& plan);

// The non-passing checks as a table, or a one-line summary; "" when preflight did not run.
std::string renderPreflight(const JobPlan& plan);

}  // namespace tlaunch
