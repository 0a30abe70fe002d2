#pragma once
// Waiting for work completions, shared by the single-node self-test and the cross-node pair
// test: poll until `count` completions arrived, all successful, or the deadline passed.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "binding/verbs_api.h"

namespace tlaunch {

struct VerbsStageError {
  std::string stage;  // open_device, query_port, ..., poll_cq, compare
  std::string error;
};

std::optional<VerbsStageError> waitForCompletions(VerbsApi& api, VerbsHandle cq, int count,
                                                  std::chrono::steady_clock::time_point deadline);

// Gb/s for `bytes` moved in `elapsed` (never divides by zero).
double gigabitsPerSecond(double bytes, std::chrono::steady_clock::duration elapsed);

// For the reports: "1 MiB", "64 KiB", "100 B"; printf-formatted numbers ("%.1f").
std::string byteSizeText(std::size_t bytes);
std::string formatNumber(const char* format, double value);

}  // namespace tlaunch
