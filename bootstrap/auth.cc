#include "bootstrap/auth.h"
#include "tlaunch/strings.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdio>
#include <cstdlib>

namespace tlaunch {

std::string randomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    std::fputs("tlaunch: the system random number generator failed\n", stderr);
    std::abort();
  }
  return out;
}

std::string newJobSecret() { return hexBytes(randomBytes(32)); }

std::string derivedSecret(std::string_view secret, std::string_view purpose) {
  return hexBytes(hmacSha256(secret, "tlaunch derived secret: " + std::string(purpose)));
}

std::string hmacSha256(std::string_view key, std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
       data.size(), md, &len);
  return std::string(reinterpret_cast<char*>(md), len);
}

bool constantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

namespace {
// Fields are length-prefixed so that no two different tuples serialise to the same bytes.
void appendField(std::string& out, std::string_view f) {
  out += std::to_string(f.size());
  out += ':';
  out.append(f);
}
}  // namespace

std::string helloProof(std::string_view secret, std::string_view server_nonce, std::string_view client_nonce,
                       std::string_view node_name) {
  std::string msg = "tlaunch-hello-v1|";
  appendField(msg, server_nonce);
  appendField(msg, client_nonce);
  appendField(msg, node_name);
  return hmacSha256(secret, msg);
}

std::string welcomeProof(std::string_view secret, std::string_view server_nonce, std::string_view client_nonce) {
  std::string msg = "tlaunch-welcome-v1|";
  appendField(msg, server_nonce);
  appendField(msg, client_nonce);
  return hmacSha256(secret, msg);
}

}  // namespace tlaunch
