#include "daemon/rank_error_file.h"

#include "tlaunch/own_file.h"

namespace tlaunch {

std::optional<Json> readRankErrorFile(const std::string& path) {
  constexpr size_t kMaxBytes = 1U << 20;  // a traceback; never a rank's whole memory
  const auto file = readOwnFile(path, kMaxBytes);
  if (!file) return std::nullopt;
  const Json j = Json::parse(file->bytes, nullptr, /*allow_exceptions=*/false);
  // torch 1.13-2.x: {"message": {"message": "ValueError: ...", "extraInfo": {...}}}; a plain
  // {"message": "..."} is accepted too.
  const Json* message = j.is_object() && j.contains("message") ? &j["message"] : nullptr;
  if (message && message->is_object() && message->contains("message")) message = &(*message)["message"];
  if (!message || !message->is_string() || message->get_ref<const std::string&>().empty()) return std::nullopt;
  std::string first = message->get<std::string>();
  first = first.substr(0, first.find('\n'));
  if (first.size() > 300) first = first.substr(0, 297) + "...";
  const int64_t at_us = static_cast<int64_t>(file->st.st_mtim.tv_sec) * 1'000'000 + file->st.st_mtim.tv_nsec / 1000;
  return Json{{"message", first}, {"at_us", at_us}};
}

}  // namespace tlaunch
