#include "launcher/summary_json.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>

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
            {"lost_nodes", o.lost_nodes},
            {"reason", o.summary.empty() ? Json(nullptr) : Json(o.summary)},
            {"signal", signal > 0 ? Json(signal) : Json(nullptr)},
            {"stderr_tail", o.stderr_tail},
            {"wall_seconds", wall_seconds},
            {"phase_seconds", o.phase_seconds.empty() ? Json(nullptr) : o.phase_seconds},
            {"rank_exit_codes", o.rank_exit_codes.empty() ? Json(nullptr) : Json(o.rank_exit_codes)},
            {"killed_at_kill_timeout", o.killed_at_kill_timeout},
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

// tlaunch's own stdout or stderr under another name (/dev/stdout into a log file, or the log's
// own name): 1 or 2, else -1. Opened again with O_TRUNC, the whole log was emptied.
int ownStream(const std::string& path) {
  struct stat target{};
  if (::stat(path.c_str(), &target) != 0) return -1;
  for (int fd : {1, 2}) {
    struct stat s{};
    if (::fstat(fd, &s) == 0 && s.st_dev == target.st_dev && s.st_ino == target.st_ino) return fd;
  }
  return -1;
}

Result<void> writeInPlace(const std::string& path, const std::string& text) {
  auto failed = [&](const std::string& why) { return fail(Errc::io, "--summary-json " + path + ": " + why); };
  struct stat link{}, target{};
  if (::lstat(path.c_str(), &link) != 0) return failed(::strerror(errno));
  const bool is_link = S_ISLNK(link.st_mode);
  // A link is followed only when this user or root (/dev/stdout) owns it: one someone else put in
  // a directory they may write could aim the summary anywhere (the kernel's protected_symlinks
  // covers only sticky, world-writable directories).
  if (is_link && link.st_uid != ::geteuid() && link.st_uid != 0)
    return failed("it is a symbolic link of another user's (uid " + std::to_string(link.st_uid) + "); name the file itself");
  if (::stat(path.c_str(), &target) != 0) return failed(is_link ? "it is a symbolic link to nothing" : ::strerror(errno));
  if (S_ISSOCK(target.st_mode)) return failed("it is a socket; name a file");
  if (target.st_uid != ::geteuid() && target.st_uid != 0 && !S_ISCHR(target.st_mode))  // planted since the start
    return failed("it is another user's (uid " + std::to_string(target.st_uid) + "); name a file of yours");
  // O_TRUNC for a regular file only; a name that is not a link is never followed (one swapped in
  // since lstat is refused).
  const int flags = O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | (S_ISREG(target.st_mode) ? O_TRUNC : 0) |
                    (is_link ? 0 : O_NOFOLLOW);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return failed(errno == ENXIO ? "it is a FIFO that no process reads" : ::strerror(errno));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // a FIFO's reader may be slow
  int error = writeWhole(fd, text);
  if (::close(fd) != 0 && error == 0 && errno != EINTR) error = errno;
  if (error != 0) return failed(::strerror(error));
  return {};
}

}  // namespace

namespace {
// The summary's directory is the --output-dir tlaunch creates (`--output-dir run7 --summary-json
// run7/s.json`), and does not exist yet.
bool inDirectoryToCreate(const std::string& path, const std::string& created_dir) {
  if (created_dir.empty()) return false;
  const std::string dir = directoryOf(path);
  struct stat st{};
  if (::stat(dir.c_str(), &st) == 0 || errno != ENOENT) return false;
  std::error_code ec;
  const auto normal = [&](const std::string& p) {
    std::string n = std::filesystem::absolute(p, ec).lexically_normal().native();
    while (n.size() > 1 && n.back() == '/') n.pop_back();
    return n;
  };
  return normal(dir) == normal(created_dir);
}
}  // namespace

void makeSummaryDirectory(const std::string& path, const std::string& output_dir) {
  // Made as --output-dir makes it (0700): a dry run or a job refused early writes no rank file.
  if (!path.empty() && inDirectoryToCreate(path, output_dir)) ::mkdir(directoryOf(path).c_str(), 0700);
}

Result<void> checkSummaryJsonPath(const std::string& path, const std::string& created_dir) {
  if (path.empty()) return {};
  const std::string dir = directoryOf(path);
  struct stat st{};
  if (inDirectoryToCreate(path, created_dir)) return {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fail(Errc::usage, "--summary-json " + path + ": " + dir + " is not a directory");
  if (ownStream(path) > 0) return {};  // tlaunch's own stdout or stderr: written after the job's output
  struct stat link{};
  if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode) && link.st_uid != ::geteuid() && link.st_uid != 0)
    return fail(Errc::usage, "--summary-json " + path + ": it is a symbolic link of another user's (uid " +
                                 std::to_string(link.st_uid) + "); name the file itself");
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return fail(Errc::usage, "--summary-json " + path + ": is a directory; name a file");
    if (S_ISSOCK(st.st_mode)) return fail(Errc::usage, "--summary-json " + path + ": it is a socket; name a file");
    // Another user's file or FIFO (planted in /tmp): it would read the summary (the ranks' last
    // stderr lines), or its sticky directory refuse the replacement after the whole job. Root's
    // devices (/dev/null, a terminal) are fine.
    if (st.st_uid != ::geteuid() && st.st_uid != 0 && !S_ISCHR(st.st_mode))
      return fail(Errc::usage, "--summary-json " + path + ": it is another user's " +
                                   (S_ISFIFO(st.st_mode) ? "FIFO" : "file") + " (uid " + std::to_string(st.st_uid) +
                                   "); name a file of yours");
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
  if (const int own = ownStream(path); own > 0) {  // after the job's output, which was flushed
    if (const int e = writeWhole(own, text); e != 0) return fail(Errc::io, "--summary-json " + path + ": " + ::strerror(e));
    return {};
  }
  if (!replaceable(path)) return writeInPlace(path, text);
  // Replaced whole: a reader never sees half a summary. Where it cannot be written (a full
  // disk), the last job's summary goes too: a script reading it must not take that for this one's.
  // 0600 when new, as --output-dir's files: it holds the failed rank's last stderr lines.
  if (const int e = replaceFileContents(path, text, 0600, /*keep_mode=*/true); e != 0) {
    const bool stale_removed = ::unlink(path.c_str()) == 0;
    return fail(Errc::io, "--summary-json " + path + ": " + ::strerror(e) +
                              (stale_removed ? " (the previous job's summary there was removed)" : ""));
  }
  return {};
}

void writeStartedSummary(const std::string& path, const std::string& job_id) {
  // Only a file replaced whole: a FIFO's reader or /dev/stdout takes one summary, the last.
  if (path.empty() || ownStream(path) > 0 || !replaceable(path)) return;
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) return;  // nothing stale to replace
  const Json j = {{"job_id", job_id},
                  {"exit_status", nullptr},
                  {"origin", nullptr},
                  {"reason", "the job has not ended: tlaunch is running it, or was killed before it could write "
                             "this summary"}};
  // Not written (a full disk): the last job's is removed all the same, and the summary at the
  // job's end says its own error if it fails too.
  (void)writeSummaryJson(path, j);
}

void writeRefusalSummary(const std::string& path, const std::string& refusal) {
  ::signal(SIGPIPE, SIG_IGN);  // a FIFO whose reader left: an error said, not a death by signal
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
