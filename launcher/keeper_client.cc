#include "launcher/keeper_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bootstrap/auth.h"
#include "bootstrap/keeper_protocol.h"
#include "tlaunch/version.h"

namespace tlaunch {

KeeperCall::KeeperCall(const std::string& host, int port, std::string secret, Json request)
    : secret_(std::move(secret)), request_(std::move(request)), decoder_(kPreAuthMaxFrameBytes) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) {
    failWith("'" + host + "' is not an address");
    return;
  }
  fd_ = ::socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int rc = fd_ < 0 ? -1 : ::connect(fd_, res->ai_addr, res->ai_addrlen);
  const int err = errno;
  ::freeaddrinfo(res);
  if (rc != 0 && err != EINPROGRESS) {
    nobody_listens_ = err == ECONNREFUSED;
    failWith(std::string("cannot connect: ") + std::strerror(err));
  }
}

KeeperCall::~KeeperCall() {
  if (fd_ >= 0) ::close(fd_);
}

void KeeperCall::failWith(const std::string& why) {
  if (state_ == State::failed || state_ == State::done) return;
  state_ = State::failed;
  error_ = why;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

short KeeperCall::pollEvents() const {
  if (state_ == State::connecting) return POLLOUT;
  return static_cast<short>(POLLIN | (out_.empty() ? 0 : POLLOUT));
}

void KeeperCall::runAll(const std::vector<KeeperCall*>& calls, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<KeeperCall*> waiting;
    for (KeeperCall* c : calls) {
      if (c->replied_ || c->closed()) continue;
      fds.push_back({c->fd_, c->pollEvents(), 0});
      waiting.push_back(c);
    }
    if (waiting.empty()) return;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      for (KeeperCall* c : waiting) c->failWith("no answer in time");
      return;
    }
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) {
      for (KeeperCall* c : waiting) c->failWith(std::string("poll: ") + std::strerror(errno));
      return;
    }
    for (size_t i = 0; n > 0 && i < fds.size(); ++i)
      if (fds[i].revents != 0) waiting[i]->onEvents(fds[i].revents);
  }
}

void KeeperCall::onEvents(short revents) {
  if (state_ == State::connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      nobody_listens_ = err == ECONNREFUSED;
      return failWith(std::string("cannot connect: ") + std::strerror(err));
    }
    state_ = State::challenge;
    return;
  }
  if ((revents & POLLOUT) != 0) flush();
  if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0) readAvailable();
}

void KeeperCall::flush() {
  while (!out_.empty() && fd_ >= 0) {
    const ssize_t n = ::send(fd_, out_.data(), out_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) return failWith(std::string("connection lost: ") + std::strerror(errno));
    out_.erase(0, static_cast<size_t>(n));
  }
}

void KeeperCall::readAvailable() {
  char buf[16384];
  while (fd_ >= 0) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      if (state_ == State::streaming) {
        state_ = State::done;
        ::close(fd_);
        fd_ = -1;
        return;
      }
      // A keeper says "refused" to a client that fails to prove the secret (handleFrame); a
      // bare hang-up says nothing either way (a keeper of an older tlaunch, or one that let this
      // call go to make room in a flood of connections).
      return failWith("it closed the connection");
    }
    decoder_.feed(buf, static_cast<size_t>(n));
    for (;;) {
      auto frame = decoder_.next();
      if (!frame) return failWith(frame.error().message);
      if (!*frame) break;
      handleFrame(**frame);
      if (fd_ < 0) return;
    }
  }
}

void KeeperCall::handleFrame(std::string_view payload) {
  ByteBuffer opened;
  if (opener_) {
    auto o = opener_->open(payload);
    if (!o) return failWith("integrity failure: " + o.error().message);
    opened = std::move(*o);
    payload = opened.view();
  }
  auto msg = decodeMessage(payload);
  if (!msg) return failWith("protocol error: " + msg.error().message);
  const std::string t = getString(*msg, "t");
  switch (state_) {
    case State::challenge: {
      if (t != "challenge") return failWith("protocol error: expected a challenge");
      if (getInt(*msg, "proto") != kProtocolVersion)
        return failWith("it speaks protocol " + std::to_string(getInt(*msg, "proto")) + ", this tlaunch " +
                        std::to_string(kProtocolVersion));
      server_nonce_ = bytesOf((*msg)["nonce"]);
      client_nonce_ = randomBytes(kNonceBytes);
      queue({{"t", "hello"},
             {"nonce", binary(client_nonce_)},
             {"mac", binary(helloProof(secret_, server_nonce_, client_nonce_, kKeeperPeerName))}},
            false);
      sealer_ = std::make_unique<FrameCipher>(secret_, server_nonce_, client_nonce_, FrameCipher::Direction::to_frontend);
      state_ = State::welcome;
      return;
    }
    case State::welcome:
      if (t == "refused") {
        wrong_secret_ = true;
        return failWith("it did not accept this user's secret (another user's warm daemon, or the secret file was "
                        "replaced)");
      }
      if (t != "welcome" || !constantTimeEquals(bytesOf((*msg)["mac"]), welcomeProof(secret_, server_nonce_, client_nonce_))) {
        wrong_secret_ = true;
        return failWith("it did not prove the user's secret");
      }
      opener_ = std::make_unique<FrameCipher>(secret_, server_nonce_, client_nonce_, FrameCipher::Direction::to_daemon);
      decoder_.setMaxFrameBytes(1u << 20);
      queue(request_, true);
      state_ = State::reply;
      return;
    case State::reply:
      reply_ = std::move(*msg);
      replied_ = true;
      state_ = State::streaming;
      return;
    case State::streaming: inbox_.push_back(std::move(*msg)); return;
    default: return;
  }
}

void KeeperCall::queue(const Json& msg, bool sealed) {
  const std::string payload = encodeMessage(msg);
  if (sealed) {
    std::string frame = sealer_->seal(payload, kFrameHeaderBytes);
    writeFrameHeader(frame, frame.size() - kFrameHeaderBytes);
    out_ += frame;
  } else {
    out_ += encodeFrame(payload);
  }
  flush();
}

std::vector<Json> KeeperCall::receive() {
  if (state_ == State::streaming) readAvailable();
  std::vector<Json> out(std::make_move_iterator(inbox_.begin()), std::make_move_iterator(inbox_.end()));
  inbox_.clear();
  return out;
}

}  // namespace tlaunch
