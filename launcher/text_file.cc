#include "launcher/text_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace tlaunch {

Result<std::string> readTextFile(const std::string& path, std::string_view what) {
  constexpr size_t kMaxBytes = 64u << 20;
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "re"), &std::fclose);
  if (!file) {
    return fail(Errc::usage, "cannot read " + std::string(what) + " " + path + ": " + std::strerror(errno),
                "check the path and its permissions");
  }
  std::string content;
  char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, file.get())) > 0) {
    content.append(buf, n);
    if (content.size() > kMaxBytes) {
      return fail(Errc::usage, std::string(what) + " " + path + " is larger than 64 MiB", "is this the right file?");
    }
  }
  if (std::ferror(file.get())) {
    return fail(Errc::io, "error reading " + std::string(what) + " " + path + ": " + std::strerror(errno));
  }
  return content;
}

}  // namespace tlaunch
