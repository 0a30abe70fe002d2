#include "bootstrap/bounded_cbor.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

namespace tlaunch {

namespace {

using Json = nlohmann::json;
using DomParser = nlohmann::detail::json_sax_dom_parser<Json>;

// A CBOR reader (RFC 8949) for what tlaunch's peers send, feeding nlohmann's own SAX-to-DOM
// builder. nlohmann's reader takes byte and text strings one byte at a time through its input
// adapter (about 5 ns a byte: a fence of 32 KiB cost each daemon 160 us); here a string is one
// copy. It refuses, before descending or allocating, an array or map nested deeper than
// max_depth or declaring more elements than the payload has bytes (each element takes at least
// one byte, each map entry two), and a string longer than what is left. Indefinite lengths,
// tags and CBOR's "undefined" are refused: tlaunch never sends them (nlohmann's to_cbor writes
// definite lengths only). Recursion is bounded by max_depth.
class CborReader {
 public:
  CborReader(std::string_view bytes, Json& root, size_t max_depth)
      : p_(reinterpret_cast<const uint8_t*>(bytes.data())),
        end_(p_ + bytes.size()),
        dom_(root, /*allow_exceptions=*/false),
        max_depth_(max_depth) {}

  bool parse() {
    if (!item()) return false;
    if (p_ != end_) return error(std::to_string(end_ - p_) + " trailing bytes after the value");
    return true;
  }

  const std::string& error() const { return error_; }

 private:
  bool error(std::string what) {
    error_ = std::move(what);
    return false;
  }

  size_t left() const { return static_cast<size_t>(end_ - p_); }

  // The head's argument: the value, length or count that follows the initial byte.
  bool argument(uint8_t info, uint64_t& out) {
    if (info < 24) {
      out = info;
      return true;
    }
    if (info > 27) return error(info == 31 ? "an indefinite length (tlaunch never sends one)" : "a reserved head");
    const size_t n = size_t{1} << (info - 24);  // 1, 2, 4 or 8 bytes, big-endian
    if (left() < n) return error("truncated");
    out = 0;
    for (size_t i = 0; i < n; ++i) out = (out << 8) | p_[i];
    p_ += n;
    return true;
  }

  bool enter(uint64_t count, size_t min_bytes_per_element) {
    if (depth_ >= max_depth_) return error("nested deeper than " + std::to_string(max_depth_) + " levels");
    if (count > left() / min_bytes_per_element)
      return error("declares " + std::to_string(count) + " elements in a payload of " + std::to_string(left()) +
                   " bytes left");
    ++depth_;
    return true;
  }

  bool text(uint64_t len, std::string& out) {
    if (len > left()) return error("a string of " + std::to_string(len) + " bytes in " + std::to_string(left()) + " left");
    out.assign(reinterpret_cast<const char*>(p_), static_cast<size_t>(len));
    p_ += len;
    return true;
  }

  bool item() {
    if (p_ == end_) return error("truncated");
    const uint8_t initial = *p_++;
    const uint8_t major = initial >> 5;
    const uint8_t info = initial & 0x1f;
    if (major == 7) return simple(info);
    uint64_t arg = 0;
    if (!argument(info, arg)) return false;
    switch (major) {
      case 0:
        return dom_.number_unsigned(arg);
      case 1:
        if (arg > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
          return error("a negative integer below -2^63");
        return dom_.number_integer(-1 - static_cast<int64_t>(arg));
      case 2: {
        if (arg > left()) return error("a byte string of " + std::to_string(arg) + " bytes in " + std::to_string(left()) + " left");
        Json::binary_t bin(std::vector<uint8_t>(p_, p_ + arg));
        p_ += arg;
        return dom_.binary(bin);
      }
      case 3: {
        std::string s;
        return text(arg, s) && dom_.string(s);
      }
      case 4: {
        if (!enter(arg, 1) || !dom_.start_array(static_cast<size_t>(arg))) return false;
        for (uint64_t i = 0; i < arg; ++i)
          if (!item()) return false;
        --depth_;
        return dom_.end_array();
      }
      case 5: {
        if (!enter(arg, 2) || !dom_.start_object(static_cast<size_t>(arg))) return false;
        for (uint64_t i = 0; i < arg; ++i) {
          if (p_ == end_) return error("truncated");
          if ((*p_ >> 5) != 3) return error("a map key that is not a text string");
          const uint8_t key_info = *p_++ & 0x1f;
          uint64_t key_len = 0;
          std::string key;
          if (!argument(key_info, key_len) || !text(key_len, key) || !dom_.key(key) || !item()) return false;
        }
        --depth_;
        return dom_.end_object();
      }
      default:
        return error("a tag (tlaunch never sends one)");
    }
  }

  bool simple(uint8_t info) {
    switch (info) {
      case 20:
        return dom_.boolean(false);
      case 21:
        return dom_.boolean(true);
      case 22:
        return dom_.null();
      case 25:
        return floating(2);
      case 26:
        return floating(4);
      case 27:
        return floating(8);
      default:
        return error("an unexpected simple value");
    }
  }

  bool floating(size_t n) {
    if (left() < n) return error("truncated");
    uint64_t bits = 0;
    for (size_t i = 0; i < n; ++i) bits = (bits << 8) | p_[i];
    p_ += n;
    double v = 0;
    if (n == 8) {
      std::memcpy(&v, &bits, sizeof v);
    } else if (n == 4) {
      const auto b32 = static_cast<uint32_t>(bits);
      float f = 0;
      std::memcpy(&f, &b32, sizeof f);
      v = f;
    } else {  // IEEE 754 half precision: 1 sign bit, 5 exponent bits, 10 mantissa bits
      const int exponent = static_cast<int>((bits >> 10) & 0x1f);
      const auto mantissa = static_cast<double>(bits & 0x3ff);
      if (exponent == 0) v = std::ldexp(mantissa, -24);
      else if (exponent == 31) v = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
      else v = std::ldexp(mantissa + 1024, exponent - 25);
      if (bits & 0x8000) v = -v;
    }
    return dom_.number_float(v, "");
  }

  const uint8_t* p_;
  const uint8_t* end_;
  DomParser dom_;
  size_t max_depth_;
  size_t depth_ = 0;
  std::string error_;
};

}  // namespace

Result<Json> parseBoundedCbor(std::string_view bytes, size_t max_depth) {
  Json root;
  CborReader reader(bytes, root, max_depth);
  bool ok = false;
  try {  // the DOM builder's allocations: bad_alloc is the one exception left
    ok = reader.parse();
  } catch (const std::exception& e) {
    return fail(Errc::protocol, std::string("malformed CBOR: ") + e.what());
  }
  if (!ok) return fail(Errc::protocol, "malformed CBOR (" + reader.error() + ")");
  return root;
}

}  // namespace tlaunch
