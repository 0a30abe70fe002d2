#include "launcher/report_stdout.h"

#include <unistd.h>

#include <cstring>
#include <string>

#include "tlaunch/replace_file.h"

namespace tlaunch {

Result<void> printReport(std::string_view text) {
  if (const int e = writeWhole(STDOUT_FILENO, text); e != 0)
    return fail(Errc::io, std::string("cannot write the report to standard output: ") + std::strerror(e),
                "check where tlaunch's output goes (a full disk, a closed pipe)");
  return {};
}

}  // namespace tlaunch
