#pragma once
// The harness's stand-in for tlaunch's control plane: typed messages between the frontend and
// each daemon over a socketpair (same machine, so native-endian integers are fine).
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>

#include <asio.hpp>

namespace harness {

enum class MsgType : uint64_t {
  fence_contrib = 1,  // d->f  a=seq b=collect payload=blob
  fence_done,         // f->d  a=seq b=ok payload=all blobs
  dmdx_request,       // d->f  a=request id b=target rank
  dmdx_serve,         // f->d  a=request id b=requester node c=target rank
  dmdx_served,        // d->f  a=request id b=requester node c=ok payload=data
  dmdx_done,          // f->d  a=request id b=ok payload=data
  abort,              // d->f  a=rank b=status payload=message
  rank_failed,        // d->f  a=rank b=exit code (128+signal)
  kill,               // f->d
  result,             // d->f  a=exit code payload=report lines "key=value"
};

struct Msg {
  MsgType type{};
  uint64_t job = 0, a = 0, b = 0, c = 0;
  std::string payload;
};

class Channel {
 public:
  Channel(asio::io_context& io, int fd) : socket_(io, asio::local::stream_protocol(), fd) {}

  void start(std::function<void(Msg)> on_msg, std::function<void()> on_close) {
    on_msg_ = std::move(on_msg);
    on_close_ = std::move(on_close);
    readHeader();
  }

  void send(Msg m) {
    std::array<uint64_t, 6> h{static_cast<uint64_t>(m.type), m.job, m.a, m.b, m.c, m.payload.size()};
    std::string frame(reinterpret_cast<const char*>(h.data()), sizeof(h));
    frame += m.payload;
    out_.push_back(std::move(frame));
    if (!writing_) writeNext();
  }

  // Runs `fn` once every queued message has been written.
  void whenDrained(std::function<void()> fn) {
    if (!writing_) return fn();
    drained_ = std::move(fn);
  }

 private:
  void readHeader() {
    asio::async_read(socket_, asio::buffer(header_), [this](std::error_code ec, size_t) {
      if (ec) return closed();
      msg_ = Msg{static_cast<MsgType>(header_[0]), header_[1], header_[2], header_[3], header_[4], {}};
      msg_.payload.resize(header_[5]);
      asio::async_read(socket_, asio::buffer(msg_.payload), [this](std::error_code ec2, size_t) {
        if (ec2) return closed();
        on_msg_(std::move(msg_));
        readHeader();
      });
    });
  }
  void writeNext() {
    if (out_.empty()) {
      writing_ = false;
      if (drained_) std::exchange(drained_, nullptr)();
      return;
    }
    writing_ = true;
    asio::async_write(socket_, asio::buffer(out_.front()), [this](std::error_code ec, size_t) {
      out_.pop_front();
      if (ec) out_.clear();
      writeNext();
    });
  }
  void closed() {
    if (on_close_) std::exchange(on_close_, nullptr)();
  }

  asio::local::stream_protocol::socket socket_;
  std::array<uint64_t, 6> header_{};
  Msg msg_;
  std::deque<std::string> out_;
  bool writing_ = false;
  std::function<void(Msg)> on_msg_;
  std::function<void()> on_close_;
  std::function<void()> drained_;
};

}  // namespace harness
