#pragma once
// A child daemon's side of the control tree's handshake (DaemonSession::attachToParent), scripted
// for the unit tests of an interior daemon: connect, answer the challenge with a proof for
// `name`/`index`, check the welcome, then exchange sealed messages.
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/auth.h"
#include "bootstrap/connection.h"
#include "bootstrap/frame_cipher.h"
#include "bootstrap/frame_codec.h"
#include "bootstrap/output_record.h"
#include "tlaunch/version.h"

namespace tlaunch::testing {

class ScriptedChild {
 public:
  ScriptedChild(asio::io_context& io, int port, std::string name, int index, std::string secret)
      : name_(std::move(name)), index_(index), secret_(std::move(secret)) {
    asio::ip::tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
    conn_ = Connection::create(std::move(s));
    conn_->start([this](Json&& m) { onMessage(std::move(m)); }, [this](const std::string&) { closed = true; });
  }
  void send(const Json& m) { conn_->send(m); }
  // Behind the output sent before it, as a daemon sends its ranks' exits (daemon/output_channel.h).
  void sendBehindOutput(const Json& m) { conn_->send(m, /*bulk=*/true); }
  void sendOutput(int rank, const std::string& text) {
    conn_->sendBulk(std::make_shared<const std::string>(encodeOutputFrame(rank, 1, text)));
  }
  void close() { conn_->close(); }
  void closeAfterFlush() { conn_->closeAfterFlush(); }

  bool welcomed = false;
  bool closed = false;
  std::vector<Json> received;

 private:
  void onMessage(Json&& m) {
    const std::string t = getString(m, "t");
    if (t == "challenge") {
      nonce_ = bytesOf(m["nonce"]);
      client_nonce_ = randomBytes(kNonceBytes);
      conn_->send({{"t", "hello"}, {"proto", kProtocolVersion}, {"node", name_}, {"index", index_},
                   {"nonce", binary(client_nonce_)},
                   {"mac", binary(helloProof(secret_, nonce_, client_nonce_, name_))}});
      conn_->sealFromNow(
          std::make_unique<FrameCipher>(secret_, nonce_, client_nonce_, FrameCipher::Direction::to_frontend));
    } else if (t == "welcome") {
      welcomed = constantTimeEquals(bytesOf(m["mac"]), welcomeProof(secret_, nonce_, client_nonce_));
      conn_->setMaxFrameBytes(kAuthenticatedMaxFrameBytes);
      conn_->openFromNow(
          std::make_unique<FrameCipher>(secret_, nonce_, client_nonce_, FrameCipher::Direction::to_daemon));
    } else {
      received.push_back(std::move(m));
    }
  }
  std::shared_ptr<Connection> conn_;
  std::string name_;
  int index_;
  std::string secret_, nonce_, client_nonce_;
};

}  // namespace tlaunch::testing
