#include "bootstrap/byte_stream.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <optional>

#include "bootstrap/close_fds.h"

namespace tlaunch {

namespace {

class TcpByteStream final : public ByteStream {
 public:
  explicit TcpByteStream(asio::ip::tcp::socket socket) : socket_(std::move(socket)) {
    if (socket_.is_open()) markCloseOnExec(socket_.native_handle());  // Asio does not
    asio::error_code ec;
    auto ep = socket_.remote_endpoint(ec);
    peer_ = ec ? std::string("?") : ep.address().to_string() + ":" + std::to_string(ep.port());
    socket_.set_option(asio::ip::tcp::no_delay(true), ec);
    socket_.set_option(asio::socket_base::keep_alive(true), ec);
  }
  void readSome(asio::mutable_buffer buffer, Done done) override { socket_.async_read_some(buffer, std::move(done)); }
  void write(asio::const_buffer buffer, Done done) override { asio::async_write(socket_, buffer, std::move(done)); }
  void write(asio::const_buffer first, asio::const_buffer second, Done done) override {
    asio::async_write(socket_, std::array<asio::const_buffer, 2>{first, second}, std::move(done));
  }
  void close() override {
    asio::error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }
  std::string peer() const override { return peer_; }
  // Keepalive only. Not TCP_USER_TIMEOUT: since Linux 5.11 it also ends a connection whose
  // peer has advertised a zero window for that long, although its kernel answers every probe —
  // exactly a frontend stopped with Ctrl-Z while its ranks print, which must keep its job.
  // Data left unacknowledged is found by unansweredFor() instead.
  void setDeadPeerTimeout(std::chrono::milliseconds timeout) override {
    const int fd = socket_.native_handle();
    const int idle_s = std::max(1, static_cast<int>(timeout.count() / 3000));
    const int interval_s = std::max(1, static_cast<int>(timeout.count() / 6000));
    const int count = 4;
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
    ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  }
  std::chrono::milliseconds unansweredFor() override {
    tcp_info info{};
    socklen_t len = sizeof info;
    if (::getsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_INFO, &info, &len) != 0)
      return std::chrono::milliseconds(0);
    // Retransmitting, or probing a zero window without an answer: the peer's kernel is silent.
    // A stopped peer's kernel acknowledges the probes, which resets both counts.
    if (info.tcpi_retransmits == 0 && info.tcpi_probes == 0) return std::chrono::milliseconds(0);
    return std::chrono::milliseconds(info.tcpi_last_ack_recv);
  }

 private:
  asio::ip::tcp::socket socket_;
  std::string peer_;
};

// The state both ends of an in-memory pipe share; everything runs on one io_context's thread.
struct MemoryPipe {
  explicit MemoryPipe(asio::io_context& context) : io(context) {}
  struct PendingRead {
    asio::mutable_buffer buffer;
    ByteStream::Done done;
  };
  asio::io_context& io;
  std::array<std::string, 2> unread;  // bytes written toward end i, not yet read by it
  std::array<bool, 2> closed{false, false};
  std::array<std::optional<PendingRead>, 2> pending;

  void complete(ByteStream::Done done, asio::error_code ec, size_t n) {
    asio::post(io, [done = std::move(done), ec, n] { done(ec, n); });
  }
  // Gives end `side` what waits for it, if it is reading.
  void deliver(int side) {
    auto& p = pending[static_cast<size_t>(side)];
    if (!p) return;
    auto& data = unread[static_cast<size_t>(side)];
    if (!data.empty()) {
      const size_t n = std::min(data.size(), p->buffer.size());
      std::memcpy(p->buffer.data(), data.data(), n);
      data.erase(0, n);
      auto done = std::move(p->done);
      p.reset();
      complete(std::move(done), {}, n);
    } else if (closed[static_cast<size_t>(1 - side)]) {
      auto done = std::move(p->done);
      p.reset();
      complete(std::move(done), asio::error::eof, 0);
    }
  }
};

class MemoryByteStream final : public ByteStream {
 public:
  MemoryByteStream(std::shared_ptr<MemoryPipe> pipe, int side, std::string peer)
      : pipe_(std::move(pipe)), side_(side), peer_(std::move(peer)) {}
  ~MemoryByteStream() override { MemoryByteStream::close(); }
  void readSome(asio::mutable_buffer buffer, Done done) override {
    if (pipe_->closed[me()]) return pipe_->complete(std::move(done), asio::error::operation_aborted, 0);
    pipe_->pending[me()] = MemoryPipe::PendingRead{buffer, std::move(done)};
    pipe_->deliver(side_);
  }
  void write(asio::const_buffer buffer, Done done) override {
    if (pipe_->closed[me()] || pipe_->closed[other()])
      return pipe_->complete(std::move(done), asio::error::broken_pipe, 0);
    pipe_->unread[other()].append(static_cast<const char*>(buffer.data()), buffer.size());
    pipe_->complete(std::move(done), {}, buffer.size());
    pipe_->deliver(1 - side_);
  }
  void write(asio::const_buffer first, asio::const_buffer second, Done done) override {
    if (pipe_->closed[me()] || pipe_->closed[other()])
      return pipe_->complete(std::move(done), asio::error::broken_pipe, 0);
    auto& unread = pipe_->unread[other()];
    unread.append(static_cast<const char*>(first.data()), first.size());
    unread.append(static_cast<const char*>(second.data()), second.size());
    pipe_->complete(std::move(done), {}, first.size() + second.size());
    pipe_->deliver(1 - side_);
  }
  void close() override {
    if (pipe_->closed[me()]) return;
    pipe_->closed[me()] = true;
    if (auto& p = pipe_->pending[me()]) {
      auto done = std::move(p->done);
      p.reset();
      pipe_->complete(std::move(done), asio::error::operation_aborted, 0);
    }
    pipe_->deliver(1 - side_);  // the peer reads what is left, then eof
  }
  std::string peer() const override { return peer_; }

 private:
  size_t me() const { return static_cast<size_t>(side_); }
  size_t other() const { return static_cast<size_t>(1 - side_); }
  std::shared_ptr<MemoryPipe> pipe_;
  int side_;
  std::string peer_;
};

}  // namespace

std::unique_ptr<ByteStream> tcpByteStream(asio::ip::tcp::socket socket) {
  return std::make_unique<TcpByteStream>(std::move(socket));
}

std::pair<std::unique_ptr<ByteStream>, std::unique_ptr<ByteStream>> memoryBytePipe(asio::io_context& io,
                                                                                  std::string first_peer,
                                                                                  std::string second_peer) {
  auto pipe = std::make_shared<MemoryPipe>(io);
  // Each end's peer() names the other end.
  return {std::make_unique<MemoryByteStream>(pipe, 0, std::move(second_peer)),
          std::make_unique<MemoryByteStream>(pipe, 1, std::move(first_peer))};
}

}  // namespace tlaunch
