#include "bootstrap/frame_cipher.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <cstdio>
#include <cstdlib>

namespace tlaunch {

// The key is set once, per direction of use: each frame then sets only its nonce. Setting the
// cipher and key for every frame (OpenSSL 3 fetches the cipher, expands the key and precomputes
// GHASH's table each time) cost more than sealing a small frame.
struct FrameCipher::Ctx {
  enum class Mode { none, seal, open };
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  Mode mode = Mode::none;
  ~Ctx() { EVP_CIPHER_CTX_free(c); }
};

namespace {
[[noreturn]] void cryptoFailed(const char* what) {
  std::fprintf(stderr, "tlaunch: OpenSSL failed in %s\n", what);
  std::abort();
}

void deriveKey(std::string_view secret, std::string_view salt, std::string_view info, unsigned char out[32]) {
  EVP_PKEY_CTX* k = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  size_t len = 32;
  const bool ok = k && EVP_PKEY_derive_init(k) > 0 && EVP_PKEY_CTX_set_hkdf_md(k, EVP_sha256()) > 0 &&
                  EVP_PKEY_CTX_set1_hkdf_salt(k, reinterpret_cast<const unsigned char*>(salt.data()),
                                              static_cast<int>(salt.size())) > 0 &&
                  EVP_PKEY_CTX_set1_hkdf_key(k, reinterpret_cast<const unsigned char*>(secret.data()),
                                             static_cast<int>(secret.size())) > 0 &&
                  EVP_PKEY_CTX_add1_hkdf_info(k, reinterpret_cast<const unsigned char*>(info.data()),
                                              static_cast<int>(info.size())) > 0 &&
                  EVP_PKEY_derive(k, out, &len) > 0 && len == 32;
  EVP_PKEY_CTX_free(k);
  if (!ok) cryptoFailed("HKDF");
}

void counterNonce(uint64_t counter, unsigned char iv[12]) {
  for (int i = 0; i < 4; ++i) iv[i] = 0;
  for (int i = 0; i < 8; ++i) iv[4 + i] = static_cast<unsigned char>(counter >> (56 - 8 * i));
}
}  // namespace

FrameCipher::FrameCipher(std::string_view secret, std::string_view server_nonce, std::string_view client_nonce,
                         Direction dir)
    : ctx_(std::make_unique<Ctx>()) {
  if (!ctx_->c) cryptoFailed("EVP_CIPHER_CTX_new");
  std::string salt(server_nonce);
  salt.append(client_nonce);
  deriveKey(secret, salt, dir == Direction::to_daemon ? "tlaunch v3 frames to daemon" : "tlaunch v3 frames to frontend",
            key_);
}

FrameCipher::~FrameCipher() { OPENSSL_cleanse(key_, sizeof key_); }

std::string FrameCipher::seal(std::string_view plaintext, size_t headroom) {
  unsigned char iv[12];
  counterNonce(counter_++, iv);
  std::string out(headroom + plaintext.size() + kSealOverheadBytes, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data()) + headroom;
  int len = 0, fin = 0;
  if (ctx_->mode != Ctx::Mode::seal) {
    if (EVP_EncryptInit_ex(ctx_->c, EVP_aes_256_gcm(), nullptr, key_, nullptr) != 1) cryptoFailed("AES-GCM key");
    ctx_->mode = Ctx::Mode::seal;
  }
  if (EVP_EncryptInit_ex(ctx_->c, nullptr, nullptr, nullptr, iv) != 1 ||
      EVP_EncryptUpdate(ctx_->c, o, &len, reinterpret_cast<const unsigned char*>(plaintext.data()),
                        static_cast<int>(plaintext.size())) != 1 ||
      EVP_EncryptFinal_ex(ctx_->c, o + len, &fin) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx_->c, EVP_CTRL_GCM_GET_TAG, kSealOverheadBytes, o + plaintext.size()) != 1)
    cryptoFailed("AES-GCM seal");
  return out;
}

Result<ByteBuffer> FrameCipher::open(std::string_view sealed) {
  if (sealed.size() < kSealOverheadBytes) return fail(Errc::protocol, "integrity failure: a frame too short to be sealed");
  unsigned char iv[12];
  counterNonce(counter_, iv);
  const size_t n = sealed.size() - kSealOverheadBytes;
  ByteBuffer out = ByteBuffer::uninitialized(n);
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  std::string tag(sealed.substr(n));
  int len = 0, fin = 0;
  if (ctx_->mode != Ctx::Mode::open) {
    if (EVP_DecryptInit_ex(ctx_->c, EVP_aes_256_gcm(), nullptr, key_, nullptr) != 1) cryptoFailed("AES-GCM key");
    ctx_->mode = Ctx::Mode::open;
  }
  if (EVP_DecryptInit_ex(ctx_->c, nullptr, nullptr, nullptr, iv) != 1 ||
      EVP_DecryptUpdate(ctx_->c, o, &len, reinterpret_cast<const unsigned char*>(sealed.data()), static_cast<int>(n)) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx_->c, EVP_CTRL_GCM_SET_TAG, kSealOverheadBytes, tag.data()) != 1 ||
      EVP_DecryptFinal_ex(ctx_->c, o + len, &fin) != 1)
    return fail(Errc::protocol, "integrity failure: frame " + std::to_string(counter_) +
                                    " did not authenticate (altered, replayed, reordered, or not from this job)");
  ++counter_;
  return out;
}

}  // namespace tlaunch
