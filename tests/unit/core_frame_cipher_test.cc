// Sealed frames: session keys per connection and direction; a replayed, reordered, altered or
// foreign frame fails to open; and a Connection ends with an "integrity failure" on one.
#include <catch2/catch.hpp>

#include <asio.hpp>

#include "bootstrap/connection.h"
#include "bootstrap/frame_cipher.h"

#include <openssl/evp.h>
#include <openssl/kdf.h>

using namespace tlaunch;
using Dir = FrameCipher::Direction;

namespace {
const std::string kSecret = "0123456789abcdef0123456789abcdef";
const std::string kServerNonce(32, 's'), kClientNonce(32, 'c');

FrameCipher cipher(Dir d, const std::string& secret = kSecret, const std::string& server_nonce = kServerNonce) {
  return FrameCipher(secret, server_nonce, kClientNonce, d);
}
}  // namespace

TEST_CASE("frame cipher: both ends agree, frame after frame") {
  auto tx = cipher(Dir::to_daemon);
  auto rx = cipher(Dir::to_daemon);
  for (const std::string& msg : std::vector<std::string>{"", "a", "hello frames", std::string(100000, 'z')}) {
    const std::string sealed = tx.seal(msg);
    CHECK(sealed.size() == msg.size() + kSealOverheadBytes);
    CHECK(sealed.find("hello") == std::string::npos);
    auto opened = rx.open(sealed);
    REQUIRE(opened);
    CHECK(opened->view() == msg);
  }
}

// The frame format, computed here from its definition with OpenSSL alone: AES-256-GCM under the
// key HKDF-SHA256(secret, salt = server nonce + client nonce, info = the direction's label), the
// nonce 4 zero bytes then the frame's number (big-endian), ciphertext then the 16-byte tag.
std::string referenceSeal(const std::string& plaintext, uint64_t frame) {
  unsigned char key[32];
  size_t key_len = sizeof key;
  const std::string salt = kServerNonce + kClientNonce;
  const std::string info = "tlaunch v3 frames to daemon";
  EVP_PKEY_CTX* k = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr);
  REQUIRE(EVP_PKEY_derive_init(k) > 0);
  REQUIRE(EVP_PKEY_CTX_set_hkdf_md(k, EVP_sha256()) > 0);
  REQUIRE(EVP_PKEY_CTX_set1_hkdf_salt(k, reinterpret_cast<const unsigned char*>(salt.data()), static_cast<int>(salt.size())) > 0);
  REQUIRE(EVP_PKEY_CTX_set1_hkdf_key(k, reinterpret_cast<const unsigned char*>(kSecret.data()), static_cast<int>(kSecret.size())) > 0);
  REQUIRE(EVP_PKEY_CTX_add1_hkdf_info(k, reinterpret_cast<const unsigned char*>(info.data()), static_cast<int>(info.size())) > 0);
  REQUIRE(EVP_PKEY_derive(k, key, &key_len) > 0);
  EVP_PKEY_CTX_free(k);
  unsigned char iv[12] = {};
  for (size_t i = 0; i < 8; ++i) iv[4 + i] = static_cast<unsigned char>(frame >> (56 - (8 * i)));
  std::string out(plaintext.size() + 16, '\0');
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  int len = 0;
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  REQUIRE(EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), nullptr, key, iv) == 1);
  REQUIRE(EVP_EncryptUpdate(c, o, &len, reinterpret_cast<const unsigned char*>(plaintext.data()), static_cast<int>(plaintext.size())) == 1);
  REQUIRE(EVP_EncryptFinal_ex(c, o + len, &len) == 1);
  REQUIRE(EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, o + plaintext.size()) == 1);
  EVP_CIPHER_CTX_free(c);
  return out;
}

TEST_CASE("frame cipher: every frame is AES-256-GCM with its own nonce, as the format defines") {
  auto tx = cipher(Dir::to_daemon);
  // The same payload again and again: each frame's bytes are those of its number's nonce.
  for (uint64_t frame = 0; frame < 5; ++frame) CHECK(tx.seal("the same payload") == referenceSeal("the same payload", frame));
  CHECK(tx.seal(std::string(70000, 'x')) == referenceSeal(std::string(70000, 'x'), 5));
}

TEST_CASE("frame cipher: replayed, reordered, altered, truncated and foreign frames fail") {
  auto tx = cipher(Dir::to_frontend);
  const std::string f0 = tx.seal("first"), f1 = tx.seal("second");
  {
    auto rx = cipher(Dir::to_frontend);
    REQUIRE(rx.open(f0));
    auto replay = rx.open(f0);
    REQUIRE_FALSE(replay);
    CHECK_THAT(replay.error().message, Catch::Contains("integrity failure"));
  }
  {
    auto rx = cipher(Dir::to_frontend);
    CHECK_FALSE(rx.open(f1));  // out of order
  }
  for (size_t i = 0; i < f0.size(); ++i) {
    auto rx = cipher(Dir::to_frontend);
    std::string bad = f0;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    CHECK_FALSE(rx.open(bad));
  }
  CHECK_FALSE(cipher(Dir::to_frontend).open(f0.substr(0, 10)));
  CHECK_FALSE(cipher(Dir::to_daemon).open(f0));                            // the other direction's key
  CHECK_FALSE(cipher(Dir::to_frontend, std::string(32, 'x')).open(f0));     // another job's secret
  CHECK_FALSE(cipher(Dir::to_frontend, kSecret, std::string(32, 'S')).open(f0));  // another connection
}

TEST_CASE("a connection that opens sealed frames drops a replayed one as an integrity failure") {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket raw(io);
  raw.connect(acceptor.local_endpoint());
  auto conn = Connection::create(acceptor.accept(), kAuthenticatedMaxFrameBytes);
  conn->openFromNow(std::make_unique<FrameCipher>(kSecret, kServerNonce, kClientNonce, Dir::to_frontend));
  std::vector<std::string> got;
  std::string closed;
  conn->start([&](Json&& m) { got.push_back(getString(m, "t")); }, [&](const std::string& why) { closed = why; });

  auto tx = cipher(Dir::to_frontend);
  const std::string ping = encodeFrame(tx.seal(encodeMessage({{"t", "ping"}})));
  const std::string exit = encodeFrame(tx.seal(encodeMessage({{"t", "exit"}})));
  asio::write(raw, asio::buffer(ping));
  asio::write(raw, asio::buffer(exit));
  asio::write(raw, asio::buffer(ping));  // replayed
  asio::write(raw, asio::buffer(encodeFrame(tx.seal(encodeMessage({{"t", "after"}})))));
  io.run_for(std::chrono::seconds(2));
  CHECK(got == std::vector<std::string>{"ping", "exit"});
  CHECK_THAT(closed, Catch::Contains("integrity failure"));
  CHECK_FALSE(conn->isOpen());
}
