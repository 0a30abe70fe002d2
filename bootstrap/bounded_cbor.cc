#include "bootstrap/bounded_cbor.h"

#include <string>

namespace tlaunch {

namespace {

using Json = nlohmann::json;
using DomParser = nlohmann::detail::json_sax_dom_parser<Json>;

// Builds the DOM through nlohmann's own SAX-to-DOM parser and refuses, before descending, an
// array or map that would nest too deep or declares more elements than the payload has bytes
// (each element takes at least one byte, each map entry two). Returning false stops the parse.
class BoundedSax {
 public:
  BoundedSax(Json& root, size_t payload_bytes, size_t max_depth)
      : dom_(root, /*allow_exceptions=*/false), payload_bytes_(payload_bytes), max_depth_(max_depth) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& s) { return dom_.number_float(v, s); }
  bool string(Json::string_t& v) { return dom_.string(v); }
  bool binary(Json::binary_t& v) { return dom_.binary(v); }
  bool key(Json::string_t& v) { return dom_.key(v); }

  bool start_object(size_t len) {
    if (!enter(len, 2)) return false;
    return dom_.start_object(len);
  }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(size_t len) {
    if (!enter(len, 1)) return false;
    return dom_.start_array(len);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }

  bool parse_error(size_t position, const std::string& token, const nlohmann::detail::exception& e) {
    error_ = e.what();
    return dom_.parse_error(position, token, e);
  }

  const std::string& error() const { return error_; }

 private:
  // len is -1 for an indefinite-length container: its elements are counted as they come.
  bool enter(size_t len, size_t min_bytes_per_element) {
    if (depth_ >= max_depth_) {
      error_ = "nested deeper than " + std::to_string(max_depth_) + " levels";
      return false;
    }
    if (len != static_cast<size_t>(-1) && len > payload_bytes_ / min_bytes_per_element) {
      error_ = "declares " + std::to_string(len) + " elements in a payload of " + std::to_string(payload_bytes_) +
               " bytes";
      return false;
    }
    ++depth_;
    return true;
  }

  DomParser dom_;
  size_t payload_bytes_;
  size_t max_depth_;
  size_t depth_ = 0;
  std::string error_;
};

}  // namespace

Result<Json> parseBoundedCbor(std::string_view bytes, size_t max_depth) {
  Json root;
  BoundedSax sax(root, bytes.size(), max_depth);
  bool ok = false;
  // The SAX path reports errors by return value; bad_alloc is the one exception left.
  try {
    ok = Json::sax_parse(bytes.begin(), bytes.end(), &sax, nlohmann::json::input_format_t::cbor, /*strict=*/true);
  } catch (const std::exception& e) {
    return fail(Errc::protocol, std::string("malformed CBOR: ") + e.what());
  }
  if (!ok) {
    return fail(Errc::protocol,
                "malformed CBOR" + (sax.error().empty() ? std::string() : " (" + sax.error() + ")"));
  }
  return root;
}

}  // namespace tlaunch
