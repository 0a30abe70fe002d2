#pragma once
// Waiting for work completions, shared by the single-node self-test and the cross-node pair
// test: poll until `count` completions arrived, all successful, or the deadline passed.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "binding/rdma/verbs_api.h"

namespace tlaunch {

struct VerbsStageError {
  std::string stage;  // open_device, query_port, ..., poll_cq, compare
  std::string error;
};

std::optional<VerbsStageError> waitForCompletions(VerbsApi& api, VerbsHandle cq, int count,
                                                  std::chrono::steady_clock::time_point deadline);

struct WriteTiming {
  double bandwidth_gbps = 0;
  double latency_us = 0;
};

// Posts one signaled RDMA write of `length` bytes with id `wr_id`.
using PostWrite = std::function<Result<void>(std::uint64_t wr_id, std::size_t length)>;

// The timed part of both verbs tests: `iterations` writes of `bytes`, up to `window` in flight
// (bandwidth), then `latency_iterations` 8-byte writes one at a time (latency).
tl::expected<WriteTiming, VerbsStageError> timeWrites(VerbsApi& api, VerbsHandle cq, const PostWrite& post,
                                                      std::size_t bytes, int iterations, int window,
                                                      int latency_iterations, std::chrono::milliseconds timeout);

// Gb/s for `bytes` moved in `elapsed` (never divides by zero).
double gigabitsPerSecond(double bytes, std::chrono::steady_clock::duration elapsed);

// For the reports: "1 MiB", "64 KiB", "100 B"; printf-formatted numbers ("%.1f").
std::string byteSizeText(std::size_t bytes);
std::string formatNumber(const char* format, double value);

}  // namespace tlaunch
