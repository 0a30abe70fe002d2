#include <catch2/catch.hpp>

#include "bootstrap/auth.h"
#include "tlaunch/strings.h"

using namespace tlaunch;

TEST_CASE("auth: HMAC-SHA256 matches RFC 4231 test case 2", "[auth]") {
  REQUIRE(hexBytes(hmacSha256("Jefe", "what do ya want for nothing?")) ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("auth: the right secret proves itself, a wrong one does not", "[auth]") {
  const std::string secret = newJobSecret();
  REQUIRE(secret.size() == 64);
  const std::string sn = randomBytes(kNonceBytes), cn = randomBytes(kNonceBytes);
  auto proof = helloProof(secret, sn, cn, "node3");
  REQUIRE(constantTimeEquals(proof, helloProof(secret, sn, cn, "node3")));
  REQUIRE_FALSE(constantTimeEquals(proof, helloProof(newJobSecret(), sn, cn, "node3")));
  REQUIRE_FALSE(constantTimeEquals(proof, helloProof(secret, sn, cn, "node4")));  // bound to the node name
  REQUIRE_FALSE(constantTimeEquals(welcomeProof(secret, sn, cn), welcomeProof(newJobSecret(), sn, cn)));
}

TEST_CASE("auth: a recorded hello does not authenticate a new connection (replay)", "[auth]") {
  const std::string secret = newJobSecret();
  const std::string cn = randomBytes(kNonceBytes);
  auto recorded = helloProof(secret, randomBytes(kNonceBytes), cn, "node1");
  auto fresh_challenge = randomBytes(kNonceBytes);
  REQUIRE_FALSE(constantTimeEquals(recorded, helloProof(secret, fresh_challenge, cn, "node1")));
  // Field boundaries are unambiguous: shifting bytes between fields changes the proof.
  REQUIRE_FALSE(constantTimeEquals(helloProof(secret, "ab", "c", "n"), helloProof(secret, "a", "bc", "n")));
}

TEST_CASE("auth: nonces differ", "[auth]") {
  REQUIRE(randomBytes(kNonceBytes) != randomBytes(kNonceBytes));
  REQUIRE_FALSE(constantTimeEquals("abc", "abcd"));
}
