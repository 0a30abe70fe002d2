#pragma once
// The daemon's side of output flow control. Rank output leaves under a credit window that the
// frontend re-grants as it prints (or files) what it received, so a slow or paused reader at
// the frontend slows the ranks (their pipes fill, they block in write) and nothing else:
// heartbeats, PMIx and teardown are control frames and never wait here.
// Messages that must not overtake output (a rank's exit after its last lines, "all_exited")
// queue here too; they cost no credit. Above `high_water` bytes waiting, the supervisor is
// told to stop reading the ranks' pipes; below `low_water`, to read again.
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "bootstrap/message.h"
#include "bootstrap/output_record.h"

namespace tlaunch {

class OutputChannel {
 public:
  using Frame = std::shared_ptr<const std::string>;
  struct Limits {
    size_t window = 4u << 20;       // output bytes sent and not yet re-granted
    size_t high_water = 8u << 20;   // bytes waiting here: stop reading the pipes
    size_t low_water = 1u << 20;    // ... and read them again
  };
  OutputChannel(Limits limits, std::function<void(Frame)> send, std::function<void(bool pause)> pressure);

  void output(int rank, int stream, OutputKind kind, std::string_view bytes);
  void ordered(const Json& msg);
  // The frontend re-granted `bytes` of output.
  void credit(size_t bytes);
  size_t waitingBytes() const { return waiting_bytes_; }
  size_t inFlight() const { return in_flight_; }
  bool empty() const { return queue_.empty(); }

 private:
  struct Entry {
    Frame frame;
    size_t cost = 0;  // the credit it takes (outputCreditCost); 0 for an ordered message
  };
  void pump();
  Limits limits_;
  std::function<void(Frame)> send_;
  std::function<void(bool)> pressure_;
  std::deque<Entry> queue_;
  size_t waiting_bytes_ = 0;
  size_t in_flight_ = 0;
  bool paused_ = false;
};

}  // namespace tlaunch
