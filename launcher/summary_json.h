#pragma once
// --summary-json FILE: the job's outcome for CI systems and schedulers, which otherwise cannot
// tell a rank's exit status 64 from tlaunch's own usage error.
#include <string>

#include "launcher/job_session.h"

namespace tlaunch {

// origin: "none" (success), "rank" (a rank's exit status or signal), "tlaunch" (tlaunch's own
// failure: usage, node lost, preflight, interrupted...). wall_seconds: from start to the end.
Json outcomeToJson(const std::string& job_id, const JobOutcome& outcome, double wall_seconds);

// Whether `path` can take the summary, asked before the job runs (not after hours of it): a
// usage error naming what is wrong (no such directory, a directory given, no permission).
// `created_dir`: a directory tlaunch creates before it writes (--output-dir), which may be the
// file's and need not exist yet.
Result<void> checkSummaryJsonPath(const std::string& path, const std::string& created_dir = "");
// Before the summary is written: that directory, if it is still missing (a dry run, a job
// refused before --output-dir was made), made as --output-dir would be.
void makeSummaryDirectory(const std::string& path, const std::string& output_dir);

// At the start of a job, over the summary of an earlier one (a regular file only): no exit status
// yet, so that a tlaunch killed before its end (SIGKILL, the OOM killer) does not leave the last
// job's "exit_status": 0 for a script to read as this job's.
void writeStartedSummary(const std::string& path, const std::string& job_id);

// Writes `summary` to `path`, else an Errc::io error. A regular file (or none yet) in a directory
// we may write is replaced whole (a new file renamed over it); anything else (/dev/stdout, a FIFO,
// a symlink, a file in a directory of someone else's) is written where it is, as `>` would.
Result<void> writeSummaryJson(const std::string& path, const Json& summary);

// A command line refused before any job (exit 64): its summary, with no job id, `reason` the
// refusal. What cannot be written is said on stderr; the exit status stays 64.
void writeRefusalSummary(const std::string& path, const std::string& refusal);

}  // namespace tlaunch
