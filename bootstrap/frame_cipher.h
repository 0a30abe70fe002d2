#pragma once
// After the handshake every frame is sealed with AES-256-GCM under a session key: the forwarded
// environment carries users' tokens, and a frame replayed, reordered, dropped or altered on the
// wire must be noticed, not obeyed. Keys come from HKDF-SHA256 over the job secret, salted with
// both handshake nonces (so every connection has its own), one key per direction. The 96-bit GCM
// nonce is the direction's 64-bit frame counter: both sides count, nothing of it is sent, so a
// replayed or reordered frame fails to open.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "bootstrap/byte_buffer.h"
#include "tlaunch/result.h"

namespace tlaunch {

inline constexpr size_t kSealOverheadBytes = 16;  // the GCM tag

class FrameCipher {
 public:
  enum class Direction { to_daemon, to_frontend };
  // secret: the job secret; nonces: the handshake's (server's, daemon's).
  FrameCipher(std::string_view secret, std::string_view server_nonce, std::string_view client_nonce, Direction dir);
  ~FrameCipher();
  FrameCipher(const FrameCipher&) = delete;
  FrameCipher& operator=(const FrameCipher&) = delete;
  // The next frame's payload sealed (ciphertext then tag), after `headroom` zero bytes that the
  // caller fills in (a frame header: the payload is then never copied again).
  std::string seal(std::string_view plaintext, size_t headroom = 0);
  // The next frame's payload opened, or an error: altered, replayed, reordered or foreign.
  Result<ByteBuffer> open(std::string_view sealed);
  uint64_t frames() const { return counter_; }

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
  unsigned char key_[32];
  uint64_t counter_ = 0;
};

}  // namespace tlaunch
