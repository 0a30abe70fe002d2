#include "launcher/report_stdout.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace tlaunch {

Result<void> printReport(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{STDOUT_FILENO, POLLOUT, 0};
      while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
      }
      continue;
    }
    if (n <= 0)
      return fail(Errc::io, std::string("cannot write the report to standard output: ") +
                                (n < 0 ? std::strerror(errno) : "nothing written"),
                  "check where tlaunch's output goes (a full disk, a closed pipe)");
    text.remove_prefix(static_cast<size_t>(n));
  }
  return {};
}

}  // namespace tlaunch
