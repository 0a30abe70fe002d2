#pragma once
// Now on the wall clock (CLOCK_REALTIME) in microseconds: the stamps of rank ends and aborts
// that nodes send and the frontend compares (launcher/failure_blame.h).
#include <chrono>
#include <cstdint>

namespace tlaunch {

inline int64_t wallClockMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace tlaunch
