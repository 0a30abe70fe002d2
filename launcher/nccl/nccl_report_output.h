#pragma once
// The NCCL transport report as text (a table per rank, warnings, the verdict last) and as a
// stable JSON object (pure).
#include <string>

#include <nlohmann/json.hpp>

#include "launcher/nccl/nccl_report.h"

namespace tlaunch::nccl {

std::string reportText(const NcclReport& report);
nlohmann::json reportJson(const NcclReport& report);
// reportJson as indented text; bytes that are not UTF-8 (a log is not) become U+FFFD.
std::string reportJsonText(const NcclReport& report);

}  // namespace tlaunch::nccl
