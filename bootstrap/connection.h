#pragma once
// One authenticated-or-not control connection: reads frames into messages, queues writes.
// Lives on a single-threaded io_context; every handler runs on that thread.
// Two write queues: control frames (heartbeats, teardown, PMIx) always leave before bulk frames
// (rank output, stdin data, and the messages that must stay behind them), so liveness never
// waits behind output. Each queue keeps its own order.
// A broadcast (bootstrap/frame_cipher.h) is sealed once for every link: each link sends it
// behind an envelope of its own, a sealed frame holding kBroadcastEnvelopeTag and the number.
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <asio.hpp>

#include "bootstrap/byte_stream.h"
#include "bootstrap/frame_cipher.h"
#include "bootstrap/frame_codec.h"
#include "bootstrap/message.h"
#include "bootstrap/output_record.h"

namespace tlaunch {

// The payload of a broadcast's envelope: this tag byte (no CBOR map starts with it, nor an output
// record), then the broadcast's number, 8 bytes big-endian.
inline constexpr unsigned char kBroadcastEnvelopeTag = 0x02;
inline constexpr size_t kBroadcastEnvelopeBytes = 9;
std::string broadcastEnvelope(uint64_t number);

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using MessageHandler = std::function<void(Json&&)>;
  using CloseHandler = std::function<void(const std::string& reason)>;
  // The record's bytes view into `owned`, which the handler may keep (moving it keeps `bytes`
  // where they are: `offset` says where they start).
  using OutputHandler = std::function<void(const OutputRecord&, OwnedBytes&& owned)>;

  // Starts with the small pre-authentication frame limit; raise it with setMaxFrameBytes once
  // the peer has proved the job secret.
  static std::shared_ptr<Connection> create(asio::ip::tcp::socket socket,
                                            size_t max_frame_bytes = kPreAuthMaxFrameBytes);
  // Over any byte stream: an in-memory pipe runs a frontend and its daemons in one test process.
  static std::shared_ptr<Connection> create(std::unique_ptr<ByteStream> stream,
                                            size_t max_frame_bytes = kPreAuthMaxFrameBytes);
  void setMaxFrameBytes(size_t n) { decoder_.setMaxFrameBytes(n); }
  // Frames sent from now on are sealed (bootstrap/frame_cipher.h); those queued before are not.
  void sealFromNow(std::unique_ptr<FrameCipher> cipher) { sealer_ = std::move(cipher); }
  // Frames received from now on must open with this cipher; one that does not ends the
  // connection with an "integrity failure".
  void openFromNow(std::unique_ptr<FrameCipher> cipher) { opener_ = std::move(cipher); }
  // TCP keepalive: an idle peer whose host stops answering is noticed within about `timeout`
  // (the connection closes). A peer that is merely stopped (SIGSTOP, Ctrl-Z) keeps the
  // connection: its kernel still acknowledges.
  void setDeadPeerTimeout(std::chrono::milliseconds timeout);
  // While we send: how long the peer's host has left it unacknowledged (0 while it answers,
  // also with a zero window, as a stopped peer's does). The caller decides when that is death.
  std::chrono::milliseconds unansweredFor() { return stream_->unansweredFor(); }
  // Handlers may be replaced later (e.g. after authentication) with setHandlers.
  void start(MessageHandler on_message, CloseHandler on_close);
  void setHandlers(MessageHandler on_message, CloseHandler on_close);
  // Rank output records (output_record.h). Without a handler one is a protocol error: a peer
  // that has not authenticated cannot send any.
  void setOutputHandler(OutputHandler on_output) { on_output_ = std::move(on_output); }
  // An encoded frame, shared: a broadcast to 1,000 daemons queues one copy of its bytes, not 1,000.
  using Frame = std::shared_ptr<const std::string>;
  // A broadcast as it travels: its number and its frame (header, then the payload sealed with
  // FrameCipher::sealBroadcast), the same bytes on every link.
  struct Broadcast {
    uint64_t number = 0;
    std::string frame;
  };
  using BroadcastFrame = std::shared_ptr<const Broadcast>;
  static Frame frameOf(const Json& msg);  // encoded once, to queue on one link or several
  // bulk: behind the output queued before it (sendBulk), not ahead of it.
  void send(const Json& msg, bool bulk = false);
  void sendEncoded(Frame frame);  // an already framed message (broadcasts encode once)
  void sendBulk(Frame frame);     // after every control frame queued before it is written
  // Behind its envelope, in the control queue or the bulk one. Only on a sealed link (the
  // envelope is sealed with the link's own key): elsewhere the connection fails.
  void sendBroadcast(const BroadcastFrame& broadcast, bool bulk = false);
  // While the message handler runs for a message that came as a broadcast: that broadcast, to
  // pass on unchanged (a daemon of the tree to its children); null otherwise.
  BroadcastFrame deliveringBroadcast() const;
  // Its number alone (0: not a broadcast), without copying the frame.
  uint64_t deliveringBroadcastNumber() const { return delivering_number_; }
  size_t queuedBytes() const { return queued_bytes_; }
  // Control frames not yet being written (a heartbeat is not queued behind an unsent one).
  size_t controlFramesWaiting() const { return control_queue_.size(); }
  // Called once each time the write queue falls to or below `low_water` bytes.
  void setDrainCallback(size_t low_water, std::function<void()> cb);
  // Stops reading, drops queued writes, closes the socket. The close handler is not called.
  void close();
  // Flushes queued writes, then closes. The close handler is not called.
  void closeAfterFlush();
  bool isOpen() const { return open_; }
  const std::string& peer() const { return peer_; }

 private:
  Connection(std::unique_ptr<ByteStream> stream, size_t max_frame_bytes);
  void readSome();
  void writeNext();
  Frame sealedFrame(std::string_view payload);
  void fail(const std::string& reason);

  std::unique_ptr<ByteStream> stream_;
  FrameDecoder decoder_;
  // Not zeroed: a connection touches only the pages its reads fill (most control messages fit
  // in one), so a frontend with thousands of daemons does not clear 64 KiB for each.
  static constexpr size_t kReadBufferBytes = 65536;
  std::unique_ptr<char[]> read_buf_ = std::make_unique_for_overwrite<char[]>(kReadBufferBytes);
  struct Outgoing {
    Frame frame;
    bool seal = false;
    uint64_t broadcast = 0;  // the number of the broadcast `frame` is; 0: not one
  };
  void writeFrame(const Frame& frame, size_t queued);  // then the next one
  void wrote(const asio::error_code& ec, size_t queued);  // a write's completion: the next one
  // The frame just opened was an envelope: checks it and notes the broadcast that must follow.
  Result<void> takeEnvelope(std::string_view payload);
  std::optional<uint64_t> expected_broadcast_;  // announced by an envelope, not yet received
  uint64_t last_broadcast_ = 0;
  // The broadcast whose message the handler is being given: its number and sealed payload.
  uint64_t delivering_number_ = 0;
  std::string_view delivering_sealed_;
  void enqueue(std::deque<Outgoing>& queue, Frame frame);
  std::deque<Outgoing> control_queue_, bulk_queue_;
  std::unique_ptr<FrameCipher> sealer_, opener_;
  size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool open_ = true;
  bool close_after_flush_ = false;
  size_t low_water_ = 0;
  std::function<void()> drain_cb_;
  MessageHandler on_message_;
  OutputHandler on_output_;
  CloseHandler on_close_;
  std::string peer_;
};

}  // namespace tlaunch
