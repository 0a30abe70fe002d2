#pragma once
// A report that is the command's whole output (--dry-run's plan, `tlaunch preflight`'s table,
// `tlaunch topo`'s map) written to stdout: all of it, or an error. A script runs
// `tlaunch --dry-run --json ... > plan.json`; a full disk must not leave an empty plan and exit 0.
#include <string_view>

#include "tlaunch/result.h"

namespace tlaunch {

// Waits out a non-blocking stdout (EAGAIN) as a blocking one would; an error (ENOSPC, EPIPE,
// EBADF) is Errc::io naming it.
Result<void> printReport(std::string_view text);

}  // namespace tlaunch
