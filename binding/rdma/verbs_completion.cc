#include "binding/rdma/verbs_completion.h"

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

tl::expected<WriteTiming, VerbsStageError> timeWrites(VerbsApi& api, VerbsHandle cq, const PostWrite& post,
                                                      std::size_t bytes, int iterations, int window,
                                                      int latency_iterations, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  WriteTiming timing;
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  int posted = 0, completed = 0;
  while (completed < iterations) {
    while (posted < iterations && posted - completed < window) {
      if (auto r = post(std::uint64_t{1} + static_cast<std::uint64_t>(posted), bytes); !r)
        return tl::unexpected(VerbsStageError{"post_write", r.error().message});
      ++posted;
    }
    if (auto f = waitForCompletions(api, cq, 1, deadline)) return tl::unexpected(*f);
    ++completed;
  }
  if (iterations > 0) timing.bandwidth_gbps = gigabitsPerSecond(static_cast<double>(bytes) * iterations, Clock::now() - start);
  const auto latency_start = Clock::now();
  for (int i = 0; i < latency_iterations; ++i) {
    if (auto r = post(std::uint64_t{1000000} + static_cast<std::uint64_t>(i), 8); !r)
      return tl::unexpected(VerbsStageError{"post_write", r.error().message});
    if (auto f = waitForCompletions(api, cq, 1, Clock::now() + timeout)) return tl::unexpected(*f);
  }
  if (latency_iterations > 0)
    timing.latency_us =
        std::chrono::duration<double, std::micro>(Clock::now() - latency_start).count() / latency_iterations;
  return timing;
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
