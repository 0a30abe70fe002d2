#pragma once
// --summary-json FILE: the job's outcome for CI systems and schedulers, which otherwise cannot
// tell a rank's exit status 64 from tlaunch's own usage error.
#include <string>

#include "launcher/job_session.h"

namespace tlaunch {

// origin: "none" (success), "rank" (a rank's exit status or signal), "tlaunch" (tlaunch's own
// failure: usage, node lost, preflight, interrupted...). wall_seconds: from start to the end.
Json outcomeToJson(const std::string& job_id, const JobOutcome& outcome, double wall_seconds);

// Writes `summary` to `path` (atomically: a temporary file renamed), else an Errc::io error.
Result<void> writeSummaryJson(const std::string& path, const Json& summary);

}  // namespace tlaunch
