#pragma once
// The report's one-line verdict and its level ("ok", "warning", "error", "none").
#include "launcher/nccl/nccl_report.h"

namespace tlaunch::nccl {

// Fills report.level and report.verdict from the rest of the report.
void writeVerdict(NcclReport& report);

// A short explanation of a WARN text NCCL does not explain itself (an ibv_wc_status number,
// a connection refused), or "" when there is nothing to add.
std::string warnHint(const std::string& text);

}  // namespace tlaunch::nccl
