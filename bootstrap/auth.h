#pragma once
// Mutual challenge-response over the job secret (HMAC-SHA256). The frontend sends a fresh
// nonce; the daemon proves the secret over (nonce, its own nonce, its node name); the frontend
// proves it back over both nonces. A recorded hello is useless on another connection because
// the nonce differs (no replay), and the secret itself never crosses the wire.
#include <string>
#include <string_view>

namespace tlaunch {

inline constexpr size_t kNonceBytes = 32;

std::string randomBytes(size_t n);          // from OpenSSL's CSPRNG; aborts if it fails
std::string newJobSecret();                 // 64 hex characters
std::string hmacSha256(std::string_view key, std::string_view data);  // 32 raw bytes
bool constantTimeEquals(std::string_view a, std::string_view b);
// A secret for one purpose, derived from a longer-lived one (64 hex characters): knowing it
// reveals nothing of `secret`, nor of another purpose's.
std::string derivedSecret(std::string_view secret, std::string_view purpose);

std::string helloProof(std::string_view secret, std::string_view server_nonce, std::string_view client_nonce,
                       std::string_view node_name);
std::string welcomeProof(std::string_view secret, std::string_view server_nonce, std::string_view client_nonce);

}  // namespace tlaunch
