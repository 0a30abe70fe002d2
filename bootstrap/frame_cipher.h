#pragma once
// After the handshake every frame is sealed with AES-256-GCM under a session key: the forwarded
// environment carries users' tokens, and a frame replayed, reordered, dropped or altered on the
// wire must be noticed, not obeyed. Keys come from HKDF-SHA256 over the job secret, salted with
// both handshake nonces (so every connection has its own), one key per direction. The 96-bit GCM
// nonce is the direction's 64-bit frame counter: both sides count, nothing of it is sent, so a
// replayed or reordered frame fails to open.
//
// Broadcasts (one message for every daemon: a fence's result, teardown) are sealed once for all
// links, not once per link: under the job's broadcast key (HKDF-SHA256 over the job secret, no
// salt, its own label), with the broadcast's number as nonce. Only the frontend seals them; a
// daemon of the tree passes them on to its children as they came. On each link a sealed envelope
// (Connection) names the number just before the broadcast, so the link's own counter still fixes
// where a broadcast stands: one dropped, replayed, moved or swapped fails like any other frame.
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
  // A link's cipher for one direction; the one toward a daemon also opens the job's broadcasts.
  FrameCipher(std::string_view secret, std::string_view server_nonce, std::string_view client_nonce, Direction dir);
  // The frontend's sealer of broadcasts (sealBroadcast only).
  struct ForBroadcasts {};
  FrameCipher(std::string_view secret, ForBroadcasts);
  ~FrameCipher();
  FrameCipher(const FrameCipher&) = delete;
  FrameCipher& operator=(const FrameCipher&) = delete;
  // The next frame's payload sealed (ciphertext then tag), after `headroom` zero bytes that the
  // caller fills in (a frame header: the payload is then never copied again).
  std::string seal(std::string_view plaintext, size_t headroom = 0);
  // The next frame's payload opened, or an error: altered, replayed, reordered or foreign.
  Result<ByteBuffer> open(std::string_view sealed);
  uint64_t frames() const { return counter_; }

  // Broadcast `number` (numbered from 1 by the frontend) sealed under the job's broadcast key.
  std::string sealBroadcast(uint64_t number, std::string_view plaintext, size_t headroom = 0);
  // Broadcast `number` opened, or an error (also when this cipher opens no broadcasts).
  Result<ByteBuffer> openBroadcast(uint64_t number, std::string_view sealed);

 private:
  struct Key;
  std::unique_ptr<Key> link_;       // null in a broadcast sealer
  std::unique_ptr<Key> broadcast_;  // null in a cipher toward the frontend
  uint64_t counter_ = 0;
};

}  // namespace tlaunch
