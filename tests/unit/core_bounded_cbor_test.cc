// The control plane's CBOR reader against nlohmann's encoder and decoder: every value tlaunch can
// send decodes to itself, and nlohmann's reader agrees on each encoding of it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "bootstrap/bounded_cbor.h"

using namespace tlaunch;
using nlohmann::json;

namespace {

std::string randomBytes(std::mt19937_64& rng, size_t max_len) {
  std::string s(rng() % (max_len + 1), '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

json randomValue(std::mt19937_64& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 0 ? 9 : 7));
  switch (kind) {
    case 0: return nullptr;
    case 1: return rng() % 2 == 0;
    case 2: {  // integers of every head size, both signs, and the extremes
      static const std::int64_t edges[] = {0, 23, 24, 255, 256, 65535, 65536, 4294967295LL, 4294967296LL,
                                           std::numeric_limits<std::int64_t>::max(), -1, -24, -25, -256, -257,
                                           -65537, -4294967297LL, std::numeric_limits<std::int64_t>::min()};
      if (rng() % 2 == 0) return edges[rng() % std::size(edges)];
      return static_cast<std::int64_t>(rng());
    }
    case 3: return std::numeric_limits<std::uint64_t>::max() - rng() % 1000;
    case 4: {
      static const double floats[] = {0.0, -0.0, 0.5, 1.5, -2.25, 65504.0, 1e-7, 3.141592653589793, 1e300};
      return floats[rng() % std::size(floats)];
    }
    // Lengths past 65535 take the 4-byte length head; rare, to keep the values small enough to
    // check 400 of them in well under a second under ASan.
    case 5: return randomBytes(rng, rng() % 32 == 0 ? 70000 : 40);  // a text string of any bytes
    case 6: {
      const std::string b = randomBytes(rng, rng() % 32 == 0 ? 70000 : 40);
      return json::binary(std::vector<std::uint8_t>(b.begin(), b.end()));
    }
    case 7: {
      json a = json::array();
      for (size_t n = rng() % 12; n > 0; --n) a.push_back(randomValue(rng, depth - 1));
      return a;
    }
    default: {
      json o = json::object();
      for (size_t n = rng() % 12; n > 0; --n) o[randomBytes(rng, 12)] = randomValue(rng, depth - 1);
      return o;
    }
  }
}

}  // namespace

TEST_CASE("bounded CBOR: every value nlohmann encodes decodes to itself, as nlohmann decodes it", "[cbor]") {
  std::mt19937_64 rng(20261125);
  for (int i = 0; i < 400; ++i) {
    const json value = randomValue(rng, 4);
    const std::vector<std::uint8_t> cbor = json::to_cbor(value);
    const std::string_view bytes(reinterpret_cast<const char*>(cbor.data()), cbor.size());
    auto ours = parseBoundedCbor(bytes);
    REQUIRE(ours);
    CHECK(*ours == value);
    CHECK(*ours == json::from_cbor(cbor));
    // Every proper prefix is truncated: refused, never a crash or a partial value.
    if (cbor.size() > 1) CHECK_FALSE(parseBoundedCbor(bytes.substr(0, rng() % cbor.size())));
  }
}

TEST_CASE("bounded CBOR: floats of every width, and what tlaunch never sends", "[cbor]") {
  auto parse = [](std::initializer_list<unsigned> v) {
    std::string s;
    for (unsigned b : v) s.push_back(static_cast<char>(b));
    return parseBoundedCbor(s);
  };
  CHECK(*parse({0xf9, 0x3c, 0x00}) == 1.0);       // half precision
  CHECK(*parse({0xf9, 0xc4, 0x00}) == -4.0);
  CHECK(*parse({0xf9, 0x00, 0x01}) == std::ldexp(1.0, -24));  // the smallest subnormal half
  CHECK(std::isinf(parse({0xf9, 0x7c, 0x00})->get<double>()));
  CHECK(*parse({0xfa, 0x47, 0xc3, 0x50, 0x00}) == 100000.0);  // single precision
  CHECK(*parse({0xf4}) == false);
  CHECK(*parse({0xf6}) == nullptr);
  CHECK_FALSE(parse({0xf7}));                  // undefined
  CHECK_FALSE(parse({0x5f, 0x41, 'a', 0xff}));  // an indefinite byte string
  CHECK_FALSE(parse({0x7f, 0x61, 'a', 0xff}));  // an indefinite text string
  CHECK_FALSE(parse({0x1c}));                   // a reserved head
  CHECK_FALSE(parse({0x3b, 0x80, 0, 0, 0, 0, 0, 0, 0}));  // below -2^63
  CHECK_FALSE(parse({0xff}));                   // a lone "break"
}
