#include "daemon/output_channel.h"

#include "bootstrap/connection.h"
#include "bootstrap/frame_codec.h"

namespace tlaunch {

OutputChannel::OutputChannel(Limits limits, std::function<void(Frame)> send, std::function<void(bool)> pressure)
    : limits_(limits), send_(std::move(send)), pressure_(std::move(pressure)) {}

void OutputChannel::output(int rank, int stream, OutputKind kind, std::string_view bytes) {
  auto frame = std::make_shared<const std::string>(encodeOutputFrame(rank, stream, bytes, kind));
  const size_t cost = outputCreditCost(bytes.size());
  queue_.push_back({std::move(frame), cost});
  waiting_bytes_ += cost;
  pump();
  if (!paused_ && waiting_bytes_ > limits_.high_water) {
    paused_ = true;
    pressure_(true);
  }
}

void OutputChannel::ordered(const Json& msg) {
  queue_.push_back({Connection::frameOf(msg), 0});
  pump();
}

void OutputChannel::credit(size_t bytes) {
  in_flight_ = bytes > in_flight_ ? 0 : in_flight_ - bytes;
  pump();
}

void OutputChannel::pump() {
  while (!queue_.empty()) {
    Entry& e = queue_.front();
    // A record larger than the whole window still goes when nothing else is in flight.
    if (e.cost > 0 && in_flight_ > 0 && in_flight_ + e.cost > limits_.window) break;
    in_flight_ += e.cost;
    waiting_bytes_ -= e.cost;
    Frame f = std::move(e.frame);
    queue_.pop_front();
    send_(std::move(f));
  }
  if (paused_ && waiting_bytes_ <= limits_.low_water) {
    paused_ = false;
    pressure_(false);
  }
}

}  // namespace tlaunch
