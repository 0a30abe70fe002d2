#include "bootstrap/message.h"

namespace tlaunch {

std::string encodeMessage(const Json& msg) {
  std::vector<std::uint8_t> v = Json::to_cbor(msg);
  return std::string(v.begin(), v.end());
}

Result<Json> decodeMessage(std::string_view payload) {
  Json j;
  // allow_exceptions=false does not cover everything: a forged array length still throws
  // out_of_range (found by the fuzz test), and a huge one may throw bad_alloc.
  try {
    j = Json::from_cbor(payload.begin(), payload.end(), /*strict=*/true, /*allow_exceptions=*/false);
  } catch (const std::exception& e) {
    return fail(Errc::protocol, std::string("malformed control message: ") + e.what());
  }
  if (j.is_discarded()) return fail(Errc::protocol, "malformed control message (not valid CBOR)");
  if (!j.is_object()) return fail(Errc::protocol, "malformed control message (not a map)");
  auto t = j.find("t");
  if (t == j.end() || !t->is_string()) return fail(Errc::protocol, "control message without a type");
  return j;
}

std::string bytesOf(const Json& v) {
  if (v.is_binary()) {
    const auto& b = v.get_binary();
    return std::string(b.begin(), b.end());
  }
  if (v.is_string()) return v.get<std::string>();
  return {};
}

std::string getString(const Json& m, const char* key, std::string fallback) {
  auto it = m.find(key);
  return it != m.end() && it->is_string() ? it->get<std::string>() : std::move(fallback);
}

long long getInt(const Json& m, const char* key, long long fallback) {
  auto it = m.find(key);
  return it != m.end() && it->is_number_integer() ? it->get<long long>() : fallback;
}

bool getBool(const Json& m, const char* key, bool fallback) {
  auto it = m.find(key);
  return it != m.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace tlaunch
