#include "bootstrap/connection.h"

#include <algorithm>
#include <utility>


namespace tlaunch {

std::shared_ptr<Connection> Connection::create(asio::ip::tcp::socket socket, size_t max_frame_bytes) {
  return create(tcpByteStream(std::move(socket)), max_frame_bytes);
}

std::shared_ptr<Connection> Connection::create(std::unique_ptr<ByteStream> stream, size_t max_frame_bytes) {
  return std::shared_ptr<Connection>(new Connection(std::move(stream), max_frame_bytes));
}

Connection::Connection(std::unique_ptr<ByteStream> stream, size_t max_frame_bytes)
    : stream_(std::move(stream)), decoder_(max_frame_bytes), peer_(stream_->peer()) {}

void Connection::start(MessageHandler on_message, CloseHandler on_close) {
  setHandlers(std::move(on_message), std::move(on_close));
  readSome();
}

void Connection::setHandlers(MessageHandler on_message, CloseHandler on_close) {
  on_message_ = std::move(on_message);
  on_close_ = std::move(on_close);
}

void Connection::readSome() {
  auto self = shared_from_this();
  stream_->readSome(asio::buffer(read_buf_.get(), kReadBufferBytes), [self](const asio::error_code& ec, size_t n) {
    if (!self->open_) return;
    if (ec) {
      self->fail(ec == asio::error::eof ? "connection closed by peer" : ec.message());
      return;
    }
    self->decoder_.feed(self->read_buf_.get(), n);
    for (;;) {
      auto view = self->decoder_.nextView();
      if (!view) {
        self->fail(view.error().message);
        return;
      }
      if (!*view) break;
      // Opening a sealed frame makes the one copy of its bytes that the receiver keeps.
      ByteBuffer payload;
      self->delivering_number_ = 0;
      if (self->expected_broadcast_) {  // the broadcast its envelope announced
        const uint64_t number = *std::exchange(self->expected_broadcast_, std::nullopt);
        auto opened = self->opener_->openBroadcast(number, **view);
        if (!opened) {
          self->fail(opened.error().message);
          return;
        }
        payload = std::move(*opened);
        self->delivering_number_ = number;
        self->delivering_sealed_ = **view;
      } else if (self->opener_) {
        auto opened = self->opener_->open(**view);
        if (!opened) {
          self->fail(opened.error().message);
          return;
        }
        payload = std::move(*opened);
        if (!payload.view().empty() && static_cast<unsigned char>(payload.view()[0]) == kBroadcastEnvelopeTag) {
          if (auto r = self->takeEnvelope(payload.view()); !r) {
            self->fail(r.error().message);
            return;
          }
          continue;
        }
      } else {
        payload = ByteBuffer::copyOf(**view);
      }
      if (isOutputRecord(payload.view())) {
        auto record = decodeOutputRecord(payload.view());
        if (!record || !self->on_output_) {
          self->fail(record ? "rank output before authentication" : "a malformed output record");
          return;
        }
        const size_t offset = static_cast<size_t>(record->bytes.data() - payload.data());
        self->on_output_(*record, OwnedBytes{std::move(payload), offset});
        if (!self->open_) return;
        continue;
      }
      auto msg = decodeMessage(payload.view());
      if (!msg) {
        self->fail(msg.error().message);
        return;
      }
      if (self->on_message_) self->on_message_(std::move(*msg));
      self->delivering_number_ = 0;
      if (!self->open_) return;
    }
    self->readSome();
  });
}

std::string broadcastEnvelope(uint64_t number) {
  std::string e(kBroadcastEnvelopeBytes, '\0');
  e[0] = static_cast<char>(kBroadcastEnvelopeTag);
  for (size_t i = 1; i < kBroadcastEnvelopeBytes; ++i) e[i] = static_cast<char>(number >> (8 * (kBroadcastEnvelopeBytes - 1 - i)));
  return e;
}

Result<void> Connection::takeEnvelope(std::string_view payload) {
  if (payload.size() != kBroadcastEnvelopeBytes) return tlaunch::fail(Errc::protocol, "a malformed broadcast envelope");
  uint64_t number = 0;
  for (size_t i = 1; i < kBroadcastEnvelopeBytes; ++i) number = (number << 8) | static_cast<unsigned char>(payload[i]);
  // Numbers only go up: the envelope is sealed, so this holds unless the sender is broken.
  if (number <= last_broadcast_)
    return tlaunch::fail(Errc::protocol, "integrity failure: broadcast " + std::to_string(number) + " after broadcast " +
                                    std::to_string(last_broadcast_));
  last_broadcast_ = number;
  expected_broadcast_ = number;
  return {};
}

Connection::BroadcastFrame Connection::deliveringBroadcast() const {
  if (delivering_number_ == 0) return nullptr;
  auto b = std::make_shared<Broadcast>();
  b->number = delivering_number_;
  b->frame = encodeFrame(delivering_sealed_);
  return b;
}

void Connection::sendBroadcast(const BroadcastFrame& broadcast, bool bulk) {
  if (!open_ || close_after_flush_ || !broadcast) return;
  if (!sealer_) return fail("a broadcast on a link that is not sealed yet");
  queued_bytes_ += broadcast->frame.size();
  // The Frame shares the broadcast's ownership: its bytes are never copied per link.
  Frame frame(broadcast, &broadcast->frame);
  (bulk ? bulk_queue_ : control_queue_).push_back({std::move(frame), false, broadcast->number});
  if (!writing_) writeNext();
}

Connection::Frame Connection::frameOf(const Json& msg) {
  return std::make_shared<const std::string>(encodeFrame(encodeMessage(msg)));
}

void Connection::send(const Json& msg, bool bulk) {
  bulk ? sendBulk(frameOf(msg)) : sendEncoded(frameOf(msg));
}

void Connection::enqueue(std::deque<Outgoing>& queue, Frame frame) {
  if (!open_ || close_after_flush_ || !frame) return;
  queued_bytes_ += frame->size();
  queue.push_back({std::move(frame), sealer_ != nullptr});
  if (!writing_) writeNext();
}

void Connection::sendEncoded(Frame frame) { enqueue(control_queue_, std::move(frame)); }

void Connection::sendBulk(Frame frame) { enqueue(bulk_queue_, std::move(frame)); }

void Connection::setDeadPeerTimeout(std::chrono::milliseconds timeout) { stream_->setDeadPeerTimeout(timeout); }

Connection::Frame Connection::sealedFrame(std::string_view payload) {
  std::string frame = sealer_->seal(payload, kFrameHeaderBytes);
  writeFrameHeader(frame, frame.size() - kFrameHeaderBytes);
  return std::make_shared<const std::string>(std::move(frame));
}

void Connection::writeNext() {
  if (control_queue_.empty() && bulk_queue_.empty()) {
    writing_ = false;
    if (close_after_flush_) close();
    return;
  }
  writing_ = true;
  auto self = shared_from_this();
  auto& queue = control_queue_.empty() ? bulk_queue_ : control_queue_;
  Outgoing out = std::move(queue.front());
  queue.pop_front();
  const size_t queued = out.frame->size();
  if (out.broadcast) {
    // The envelope, sealed now (in the order frames leave: the counters of both ends must
    // agree), then the broadcast's own bytes in the same write: the peer wakes once, and the
    // body, shared by every link, is never copied per link.
    Frame sealed = sealedFrame(broadcastEnvelope(out.broadcast));
    const auto envelope = asio::buffer(*sealed);
    const auto body = asio::buffer(*out.frame);  // before the handler takes the frame
    stream_->write(envelope, body, [self, sealed, frame = std::move(out.frame), queued](const asio::error_code& ec, size_t) {
      self->wrote(ec, queued);
    });
    return;
  }
  // Sealed here, in the order frames leave: the counters of both ends must agree.
  Frame frame = out.seal ? sealedFrame(std::string_view(*out.frame).substr(kFrameHeaderBytes))
                         : std::move(out.frame);  // held by the handler: close() may clear the queues meanwhile
  writeFrame(frame, queued);
}

void Connection::writeFrame(const Frame& frame, size_t queued) {
  auto self = shared_from_this();
  // The handler holds the frame: close() may clear the queues meanwhile.
  stream_->write(asio::buffer(*frame), [self, frame, queued](const asio::error_code& ec, size_t) { self->wrote(ec, queued); });
}

void Connection::wrote(const asio::error_code& ec, size_t queued) {
  if (!open_) return;
  if (ec) return fail(ec.message());
  queued_bytes_ -= queued;
  if (drain_cb_ && queued_bytes_ <= low_water_) drain_cb_();
  writeNext();
}

void Connection::setDrainCallback(size_t low_water, std::function<void()> cb) {
  low_water_ = low_water;
  drain_cb_ = std::move(cb);
}

void Connection::fail(const std::string& reason) {
  if (!open_) return;
  auto cb = std::move(on_close_);
  close();
  if (cb) cb(reason);
}

void Connection::close() {
  if (!open_) return;
  open_ = false;
  stream_->close();
  control_queue_.clear();
  bulk_queue_.clear();
  queued_bytes_ = 0;
  // Handlers stay set: close() may be called from inside one of them.
}

void Connection::closeAfterFlush() {
  if (!open_) return;
  close_after_flush_ = true;
  if (!writing_) writeNext();
}

}  // namespace tlaunch
