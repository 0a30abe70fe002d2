#pragma once
// What a Connection (bootstrap/connection.h) reads its frames from and writes them to: a TCP
// socket between the frontend and a daemon, or, in tests, an in-memory pipe, so that a
// frontend and its daemons run in one process with no socket at all. Completions always run
// later on the io_context, never inside the call that starts them.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <asio.hpp>

namespace tlaunch {

class ByteStream {
 public:
  using Done = std::function<void(const asio::error_code&, size_t)>;
  virtual ~ByteStream() = default;
  // Reads at least one byte into `buffer` (or fails: eof once the peer closed).
  virtual void readSome(asio::mutable_buffer buffer, Done done) = 0;
  // Writes all of `buffer`; it must stay valid until `done`.
  virtual void write(asio::const_buffer buffer, Done done) = 0;
  // Writes `first` then `second` as one write (one system call where they fit): a broadcast's
  // envelope and its body, so the peer wakes once. Both must stay valid until `done`.
  virtual void write(asio::const_buffer first, asio::const_buffer second, Done done) = 0;
  // Pending operations complete with operation_aborted; the peer reads eof after what was sent.
  virtual void close() = 0;
  // "10.0.0.2:40122", or a name for an in-memory peer.
  virtual std::string peer() const = 0;
  // See Connection::setDeadPeerTimeout (TCP only: an in-memory peer cannot vanish silently).
  virtual void setDeadPeerTimeout(std::chrono::milliseconds /*timeout*/) {}
  // How long the peer's host has left what we sent unanswered (retransmitted or probed without
  // an acknowledgement); 0 while it answers. TCP only, like setDeadPeerTimeout.
  virtual std::chrono::milliseconds unansweredFor() { return std::chrono::milliseconds(0); }
};

std::unique_ptr<ByteStream> tcpByteStream(asio::ip::tcp::socket socket);

// Two connected ends on one io_context: what one writes, the other reads, in order.
std::pair<std::unique_ptr<ByteStream>, std::unique_ptr<ByteStream>> memoryBytePipe(asio::io_context& io,
                                                                                  std::string first_peer,
                                                                                  std::string second_peer);

}  // namespace tlaunch
