#include "daemon/rank_error_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tlaunch {

std::optional<Json> readRankErrorFile(const std::string& path) {
  constexpr size_t kMaxBytes = 1U << 20;  // a traceback; never a rank's whole memory
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
      static_cast<size_t>(st.st_size) <= kMaxBytes) {
    text.resize(static_cast<size_t>(st.st_size));
    if (::read(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) text.clear();
  }
  ::close(fd);
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  // torch 1.13-2.x: {"message": {"message": "ValueError: ...", "extraInfo": {...}}}; a plain
  // {"message": "..."} is accepted too.
  const Json* message = j.is_object() && j.contains("message") ? &j["message"] : nullptr;
  if (message && message->is_object() && message->contains("message")) message = &(*message)["message"];
  if (!message || !message->is_string() || message->get_ref<const std::string&>().empty()) return std::nullopt;
  std::string first = message->get<std::string>();
  first = first.substr(0, first.find('\n'));
  if (first.size() > 300) first = first.substr(0, 297) + "...";
  const int64_t at_us = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000 + st.st_mtim.tv_nsec / 1000;
  return Json{{"message", first}, {"at_us", at_us}};
}

}  // namespace tlaunch
