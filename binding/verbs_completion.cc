#include "binding/verbs_completion.h"

#include <algorithm>
#include <cstdio>

namespace tlaunch {

std::optional<VerbsStageError> waitForCompletions(VerbsApi& api, VerbsHandle cq, int count,
                                                  std::chrono::steady_clock::time_point deadline) {
  int done = 0;
  while (done < count) {
    auto completions = api.pollCq(cq, count - done);  // never take more than asked for
    if (!completions) return VerbsStageError{"poll_cq", completions.error().message};
    for (const auto& c : *completions) {
      if (!c.success)
        return VerbsStageError{"poll_cq", "write " + std::to_string(c.wr_id) + " completed with status: " + c.status};
      ++done;
    }
    if (done < count && std::chrono::steady_clock::now() > deadline)
      return VerbsStageError{"poll_cq", "timed out waiting for " + std::to_string(count - done) + " of " +
                                            std::to_string(count) + " completions"};
  }
  return std::nullopt;
}

double gigabitsPerSecond(double bytes, std::chrono::steady_clock::duration elapsed) {
  const double s = std::max(std::chrono::duration<double>(elapsed).count(), 1e-9);
  return bytes * 8 / s / 1e9;
}

std::string byteSizeText(std::size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string formatNumber(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace tlaunch
