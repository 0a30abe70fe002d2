#include "bootstrap/message.h"

#include "bootstrap/bounded_cbor.h"

namespace tlaunch {

std::string encodeMessage(const Json& msg) {
  std::string out;  // written in place: no vector to convert byte by byte afterwards
  Json::to_cbor(msg, out);
  return out;
}

Result<Json> decodeMessage(std::string_view payload) {
  auto parsed = parseBoundedCbor(payload);
  if (!parsed) return fail(Errc::protocol, "malformed control message: " + parsed.error().message);
  Json& j = *parsed;
  if (!j.is_object()) return fail(Errc::protocol, "malformed control message (not a map)");
  auto t = j.find("t");
  if (t == j.end() || !t->is_string()) return fail(Errc::protocol, "control message without a type");
  return std::move(j);
}

std::string bytesOf(const Json& v) {
  if (v.is_binary()) {
    const auto& b = v.get_binary();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());  // one memcpy
  }
  if (v.is_string()) return v.get<std::string>();
  return {};
}

std::string bytesAt(const Json& m, const char* key) {
  if (!m.is_object()) return {};
  auto it = m.find(key);
  return it != m.end() ? bytesOf(*it) : std::string();
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
