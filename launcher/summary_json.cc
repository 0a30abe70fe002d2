#include "launcher/summary_json.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "bootstrap/error_text.h"
#include "bootstrap/message.h"
#include "tlaunch/replace_file.h"

namespace tlaunch {

namespace {

const char* meaningOf(int code) {
  switch (code) {
    case 64: return "usage";
    case 69: return "node unreachable or lost";
    case 70: return "internal error";
    case 74: return "I/O error";
    case 76: return "protocol or authentication";
    case 78: return "resources, topology, fabric or preflight (or --nccl-check strict)";
    case 124: return "--time-limit reached";
    case 126: return "program not executable";
    case 127: return "program not found";
    case 129: return "tlaunch got SIGHUP";
    case 130: return "tlaunch got SIGINT";
    case 143: return "tlaunch got SIGTERM";
    default: return "";
  }
}


}  // namespace

Json outcomeToJson(const std::string& job_id, const JobOutcome& o, double wall_seconds) {
  const std::string& node = o.failed_node;
  const int signal = o.signal;
  const char* origin = o.exit_code == 0 ? "none" : o.failed_rank >= 0 ? "rank" : "tlaunch";
  Json j = {{"job_id", job_id},
            {"exit_status", o.exit_code},
            {"origin", origin},
            {"failed_rank", o.failed_rank >= 0 && o.failed_process.empty() ? Json(o.failed_rank) : Json(nullptr)},
            {"failed_process", o.failed_process.empty() ? Json(nullptr) : Json(o.failed_process)},
            {"failed_node", node.empty() ? Json(nullptr) : Json(node)},
            {"reason", o.summary.empty() ? Json(nullptr) : Json(o.summary)},
            {"signal", signal > 0 ? Json(signal) : Json(nullptr)},
            {"stderr_tail", o.stderr_tail},
            {"wall_seconds", wall_seconds},
            {"phase_seconds", o.phase_seconds.empty() ? Json(nullptr) : o.phase_seconds},
            {"rank_exit_codes", o.rank_exit_codes.empty() ? Json(nullptr) : Json(o.rank_exit_codes)},
            {"nccl", o.nccl},
            {"restarts", o.restarts.size()},
            {"restart_history", o.restarts}};
  if (std::string(origin) == "tlaunch") j["meaning"] = meaningOf(o.exit_code);
  return j;
}

namespace {

std::string directoryOf(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// Replacing by rename() would put a plain file in place of /dev/stdout, a FIFO or a symlink, and
// needs a directory we may create files in.
bool replaceable(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return true;
  return S_ISREG(st.st_mode) && ::access(directoryOf(path).c_str(), W_OK) == 0;
}

Result<void> writeInPlace(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (e == ENXIO) return fail(Errc::io, "--summary-json " + path + ": it is a FIFO that no process reads");
    if (e == ENOENT) return fail(Errc::io, "--summary-json " + path + ": it is a symbolic link to nothing");
    return fail(Errc::io, "--summary-json " + path + ": " + ::strerror(e));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // a FIFO's reader may be slow
  int error = writeWhole(fd, text);
  if (::close(fd) != 0 && error == 0 && errno != EINTR) error = errno;
  if (error != 0) return fail(Errc::io, "--summary-json " + path + ": " + ::strerror(error));
  return {};
}

}  // namespace

Result<void> checkSummaryJsonPath(const std::string& path) {
  if (path.empty()) return {};
  const std::string dir = directoryOf(path);
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fail(Errc::usage, "--summary-json " + path + ": " + dir + " is not a directory");
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return fail(Errc::usage, "--summary-json " + path + ": is a directory; name a file");
    if (replaceable(path) || ::access(path.c_str(), W_OK) == 0) return {};
    return fail(Errc::usage, "--summary-json " + path + ": cannot write it: " + ::strerror(errno));
  }
  if (::lstat(path.c_str(), &st) == 0)
    return fail(Errc::usage, "--summary-json " + path + ": it is a symbolic link to nothing; name a file");
  if (::access(dir.c_str(), W_OK) != 0)
    return fail(Errc::usage, "--summary-json " + path + ": cannot write in " + dir + ": " + ::strerror(errno));
  return {};
}

Result<void> writeSummaryJson(const std::string& path, const Json& summary) {
  const std::string text = jsonText(summary, 2) + "\n";
  if (!replaceable(path)) return writeInPlace(path, text);
  // Replaced whole: a reader never sees half a summary.
  if (const int e = replaceFileContents(path, text, 0666); e != 0)
    return fail(Errc::io, "--summary-json " + path + ": " + ::strerror(e));
  return {};
}

void writeRefusalSummary(const std::string& path, const std::string& refusal) {
  JobOutcome o;
  o.exit_code = 64;
  o.summary = refusal;
  Json j = outcomeToJson("", o, 0);
  j["job_id"] = nullptr;
  auto ok = checkSummaryJsonPath(path);
  if (ok) ok = writeSummaryJson(path, j);
  if (!ok) printError(ok.error());
}

}  // namespace tlaunch
