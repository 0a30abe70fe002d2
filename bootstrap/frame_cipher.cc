#include "bootstrap/frame_cipher.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <climits>
#include <cstdio>
#include <cstdlib>

namespace tlaunch {

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

// One AES-256-GCM key. Its context is set up once per direction of use: each frame then sets
// only its nonce. Setting the cipher and key for every frame (OpenSSL 3 fetches the cipher,
// expands the key and precomputes GHASH's table each time) cost more than sealing a small frame.
struct FrameCipher::Key {
  enum class Mode { none, seal, open };
  unsigned char key[32];
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  Mode mode = Mode::none;

  Key(std::string_view secret, std::string_view salt, std::string_view info) {
    if (!c) cryptoFailed("EVP_CIPHER_CTX_new");
    deriveKey(secret, salt, info, key);
  }
  ~Key() {
    OPENSSL_cleanse(key, sizeof key);
    EVP_CIPHER_CTX_free(c);
  }
  Key(const Key&) = delete;
  Key& operator=(const Key&) = delete;

  std::string seal(uint64_t nonce, std::string_view plaintext, size_t headroom) {
    // OpenSSL takes an int length; a larger one wrapped negative and crashed inside it. No frame
    // is that large (kAuthenticatedMaxFrameBytes), so a caller that tries is a bug: said, then abort.
    if (plaintext.size() > static_cast<size_t>(INT_MAX)) cryptoFailed("AES-GCM seal: a message over 2 GiB");
    unsigned char iv[12];
    counterNonce(nonce, iv);
    std::string out(headroom + plaintext.size() + kSealOverheadBytes, '\0');
    auto* o = reinterpret_cast<unsigned char*>(out.data()) + headroom;
    int len = 0, fin = 0;
    if (mode != Mode::seal) {
      if (EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), nullptr, key, nullptr) != 1) cryptoFailed("AES-GCM key");
      mode = Mode::seal;
    }
    if (EVP_EncryptInit_ex(c, nullptr, nullptr, nullptr, iv) != 1 ||
        EVP_EncryptUpdate(c, o, &len, reinterpret_cast<const unsigned char*>(plaintext.data()),
                          static_cast<int>(plaintext.size())) != 1 ||
        EVP_EncryptFinal_ex(c, o + len, &fin) != 1 ||
        EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, kSealOverheadBytes, o + plaintext.size()) != 1)
      cryptoFailed("AES-GCM seal");
    return out;
  }

  // False when the bytes do not authenticate under this nonce.
  bool open(uint64_t nonce, std::string_view sealed, ByteBuffer& out) {
    unsigned char iv[12];
    counterNonce(nonce, iv);
    if (sealed.size() < kSealOverheadBytes || sealed.size() - kSealOverheadBytes > static_cast<size_t>(INT_MAX))
      return false;
    const size_t n = sealed.size() - kSealOverheadBytes;
    out = ByteBuffer::uninitialized(n);
    auto* o = reinterpret_cast<unsigned char*>(out.data());
    std::string tag(sealed.substr(n));
    int len = 0, fin = 0;
    if (mode != Mode::open) {
      if (EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), nullptr, key, nullptr) != 1) cryptoFailed("AES-GCM key");
      mode = Mode::open;
    }
    return EVP_DecryptInit_ex(c, nullptr, nullptr, nullptr, iv) == 1 &&
           EVP_DecryptUpdate(c, o, &len, reinterpret_cast<const unsigned char*>(sealed.data()), static_cast<int>(n)) == 1 &&
           EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, kSealOverheadBytes, tag.data()) == 1 &&
           EVP_DecryptFinal_ex(c, o + len, &fin) == 1;
  }
};

namespace {
constexpr std::string_view kBroadcastLabel = "tlaunch v4 broadcasts";
}  // namespace

FrameCipher::FrameCipher(std::string_view secret, std::string_view server_nonce, std::string_view client_nonce,
                         Direction dir) {
  std::string salt(server_nonce);
  salt.append(client_nonce);
  link_ = std::make_unique<Key>(secret, salt,
                                dir == Direction::to_daemon ? "tlaunch v3 frames to daemon" : "tlaunch v3 frames to frontend");
  if (dir == Direction::to_daemon) broadcast_ = std::make_unique<Key>(secret, "", kBroadcastLabel);
}

FrameCipher::FrameCipher(std::string_view secret, ForBroadcasts)
    : broadcast_(std::make_unique<Key>(secret, "", kBroadcastLabel)) {}

FrameCipher::~FrameCipher() = default;

std::string FrameCipher::seal(std::string_view plaintext, size_t headroom) {
  if (!link_) cryptoFailed("seal (a broadcast sealer has no link key)");
  return link_->seal(counter_++, plaintext, headroom);
}

Result<ByteBuffer> FrameCipher::open(std::string_view sealed) {
  if (sealed.size() < kSealOverheadBytes) return fail(Errc::protocol, "integrity failure: a frame too short to be sealed");
  ByteBuffer out;
  if (!link_ || !link_->open(counter_, sealed, out))
    return fail(Errc::protocol, "integrity failure: frame " + std::to_string(counter_) +
                                    " did not authenticate (altered, replayed, reordered, or not from this job)");
  ++counter_;
  return out;
}

std::string FrameCipher::sealBroadcast(uint64_t number, std::string_view plaintext, size_t headroom) {
  if (!broadcast_) cryptoFailed("sealBroadcast (no broadcast key)");
  return broadcast_->seal(number, plaintext, headroom);
}

Result<ByteBuffer> FrameCipher::openBroadcast(uint64_t number, std::string_view sealed) {
  if (!broadcast_) return fail(Errc::protocol, "a broadcast on a link that takes none");
  ByteBuffer out;
  if (sealed.size() < kSealOverheadBytes || !broadcast_->open(number, sealed, out))
    return fail(Errc::protocol, "integrity failure: broadcast " + std::to_string(number) +
                                    " did not authenticate (altered, swapped, or not from this job)");
  return out;
}

}  // namespace tlaunch
