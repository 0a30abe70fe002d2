#include "launcher/text_file.h"
#include "tlaunch/diagnostics.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace tlaunch {

Result<std::string> readTextFile(const std::string& path, std::string_view what) {
  constexpr size_t kMaxBytes = 64u << 20;
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "re"), &std::fclose);
  if (!file) {
    return diagnostic(Errc::usage, "file-unreadable",
                      {{"what", std::string(what)}, {"path", path}, {"reason", std::strerror(errno)}});
  }
  // A directory opens, and its first read fails with EISDIR, which read as an I/O error (74).
  if (struct stat st {}; ::fstat(::fileno(file.get()), &st) == 0 && S_ISDIR(st.st_mode)) {
    return diagnostic(Errc::usage, "file-unreadable",
                      {{"what", std::string(what)}, {"path", path}, {"reason", "it is a directory"}});
  }
  std::string content;
  char buf[65536];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, file.get())) > 0) {
    content.append(buf, n);
    if (content.size() > kMaxBytes) {
      return diagnostic(Errc::usage, "file-too-large", {{"what", std::string(what)}, {"path", path}});
    }
  }
  if (std::ferror(file.get())) {
    return fail(Errc::io, "error reading " + std::string(what) + " " + path + ": " + std::strerror(errno));
  }
  return content;
}

}  // namespace tlaunch
