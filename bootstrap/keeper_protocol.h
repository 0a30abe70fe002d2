#pragma once
// Warm daemons (`tlaunch --keep-daemons`): after a job, a small keeper process stays on each node
// for a while and starts the next job's tlaunchd there on request, instead of a new ssh session.
// It holds nothing of a job: no ranks, no files, only a listening socket and the user's secret.
//
// The wire: control-plane frames (bootstrap/frame_codec.h), the job handshake with the
// per-user secret in place of a job secret (bootstrap/auth.h: the keeper challenges, the
// client proves with kKeeperPeerName as its node name, the keeper proves back), then every
// frame sealed (bootstrap/frame_cipher.h; the client seals as a daemon does toward the frontend).
//   client -> keeper  {"t":"start", "args":[...], "secret":"<job secret>", "daemon":"<path>",
//                      "version":V, "keep_s":N (optional: how long to stay after this job)}
//   keeper -> client  {"t":"started", "pid":P, "since":EPOCH} | {"t":"refused", "why":TEXT}
//   keeper -> client  {"t":"stderr", "data":BYTES}... then {"t":"exited", "status":S}
//   client -> keeper  {"t":"stop"}  ->  {"t":"stopping", "jobs":N}: it exits once they end
#include <chrono>

namespace tlaunch {

// Wall-clock seconds: the keepers' start times, the registry's expiries, the inventory cache's age.
inline long long epochSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

inline constexpr const char* kKeeperPeerName = "tlaunch-warm-daemon-client";
// A client that has not proved the secret within this long is dropped.
inline constexpr int kKeeperHandshakeTimeoutMs = 5000;

}  // namespace tlaunch
