#include "launcher/slurm_keeper_step.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netdb.h>
#include <poll.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <sstream>

#include "bootstrap/keeper_protocol.h"  // epochSeconds
#include "bootstrap/spawn.h"
#include "launcher/child_process.h"
#include "launcher/starter_support.h"
#include "launcher/text_file.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

using Clock = std::chrono::steady_clock;

std::string ipv4Of(const std::string& name) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &res) != 0 || !res) return "";
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(res->ai_addr)->sin_addr, text, sizeof text);
  ::freeaddrinfo(res);
  return text;
}

off_t sizeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : 0;
}

// What srun wrote to the log since `from`: its explanation of a failed step (the last 8 KiB).
std::string logSince(const std::string& path, off_t from) {
  auto text = readTextFile(path, "keeper-step log");
  if (!text || static_cast<size_t>(from) >= text->size()) return "";
  constexpr size_t kTail = 8192;
  const size_t start = std::max(static_cast<size_t>(from), text->size() > kTail ? text->size() - kTail : 0);
  return text->substr(start);
}

void writeAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

std::string keeperStepSettings(const SlurmStarterOptions& srun) {
  std::string s = srun.slurm_args;
  if (srun.job_gpus_per_node > 0) s += (s.empty() ? "" : " ") + std::string("[gpus per node ") + std::to_string(srun.job_gpus_per_node) + "]";
  return s;
}

namespace {
// A new file for one step's keeper lines beside the log: the log's name with "-XXXXXX.lines"
// for ".log" (mkostemps: created here, 0600, never an existing file or link). -1 with errno.
int newKeeperLinesFile(const std::string& log_path, std::string& path) {
  path = log_path;
  if (path.ends_with(".log")) path.resize(path.size() - 4);
  path += "-XXXXXX.lines";
  return ::mkostemps(path.data(), 6, O_CLOEXEC);
}
}  // namespace

void removeOldKeeperLogs(const std::string& dir, long long max_age_s) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const long long now = epochSeconds();
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (!name.starts_with("keepers-") || !(name.ends_with(".log") || name.ends_with(".lines"))) continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    if (now - st.st_mtime > max_age_s) ::unlinkat(::dirfd(d), e->d_name, 0);
  }
  ::closedir(d);
}

std::optional<WarmEntry> parseKeeperLine(const std::string& line, const std::vector<NodeTarget>& nodes,
                                         const std::vector<std::string>& seen) {
  std::istringstream in(line);
  WarmEntry e;
  std::string rest;
  if (!(in >> e.node >> e.port >> e.pid >> e.since) || (in >> rest)) return std::nullopt;
  const bool ours = std::any_of(nodes.begin(), nodes.end(), [&](const NodeTarget& n) { return n.name == e.node; });
  if (!ours || std::find(seen.begin(), seen.end(), e.node) != seen.end()) return std::nullopt;
  if (e.port <= 0 || e.port > 65535 || e.pid <= 0 || e.since <= 0) return std::nullopt;
  e.destination = e.node;
  return e;
}

SlurmKeepers startSlurmKeepers(const std::vector<NodeTarget>& nodes, const std::string& daemon_path,
                               const std::string& user_secret, const SlurmKeeperStepOptions& options) {
  SlurmKeepers out;
  DaemonCommand keeper{daemon_path, {"--keeper", "--keep-for", std::to_string(options.keep_s), "--in-slurm-step"}};
  auto srun = buildSrunArgv(options.srun, nodes, keeper);
  if (!srun) {
    out.problem = srun.error().message;
    return out;
  }
  srun->insert(srun->begin() + 1, "--job-name=tlaunch-keepers");
  // One keeper that dies (the OOM killer, a kill by hand) must not end the step: with it would
  // go every other node's keeper and the job daemons they started, which run in this step.
  std::replace(srun->begin(), srun->end(), std::string("--kill-on-bad-exit=1"), std::string("--kill-on-bad-exit=0"));
  const size_t slash = options.log_path.rfind('/');
  if (slash != std::string::npos) removeOldKeeperLogs(options.log_path.substr(0, slash), 7LL * 86'400);
  // The keepers' lines go to a file, not a pipe: one that answers after the deadline below
  // would make srun write into a pipe nobody reads, and srun ends its whole step on SIGPIPE,
  // with the job daemons the other keepers started in it.
  std::string lines_path;
  const int lines_fd = newKeeperLinesFile(options.log_path, lines_path);
  if (lines_fd < 0) {
    out.problem = "cannot create " + lines_path + ": " + std::strerror(errno);
    return out;
  }
  SpawnSpec spec;
  spec.exe = "/bin/sh";
  spec.argv = {"sh", "-c", "log=$1; lines=$2; shift 2; exec \"$@\" >>\"$lines\" 2>>\"$log\"", "sh",
               options.log_path, lines_path};
  spec.argv.insert(spec.argv.end(), srun->begin(), srun->end());
  spec.env = environmentWith({});
  spec.stdin_mode = SpawnSpec::Stdin::pipe;
  spec.stdout_pipe = false;
  spec.stderr_pipe = false;
  spec.dies_with_parent = false;  // the step outlives this tlaunch: that is what it is for
  const off_t log_from = sizeOf(options.log_path);
  auto child = spawnProcess(spec);
  if (!child) {
    ::close(lines_fd);
    ::unlink(lines_path.c_str());
    out.problem = "cannot run srun for the keepers: " + child.error().message;
    return out;
  }
  if (child->pidfd >= 0) ::close(child->pidfd);
  writeAll(child->stdin_fd, user_secret + "\n");
  ::close(child->stdin_fd);  // --input=all: every keeper has the line, then end of file

  std::vector<std::string> seen, unresolved;
  std::string pending;
  bool ended = false;
  int srun_status = 0;
  const auto deadline = Clock::now() + std::chrono::milliseconds(options.timeout_ms);
  while (seen.size() < nodes.size() && !ended) {
    char buf[4096];
    const ssize_t n = ::read(lines_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // nothing new: srun may have ended (its step over), else wait a little
      if (::waitpid(child->pid, &srun_status, WNOHANG) == child->pid) {
        ended = true;
        // What it wrote last, before it ended, is still to be read.
        while (true) {
          const ssize_t m = ::read(lines_fd, buf, sizeof buf);
          if (m <= 0) break;
          pending.append(buf, static_cast<size_t>(m));
        }
      } else if (Clock::now() >= deadline) {
        break;
      } else {
        ::usleep(10'000);
        continue;
      }
    } else {
      pending.append(buf, static_cast<size_t>(n));
    }
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos; pending.erase(0, eol + 1)) {
      auto entry = parseKeeperLine(pending.substr(0, eol), nodes, seen);
      if (!entry) continue;  // not a keeper's line (a login script's chatter): ignored
      seen.push_back(entry->node);
      entry->host = ipv4Of(entry->node);
      if (entry->host.empty()) {  // it answered, but this host cannot reach it by its name
        unresolved.push_back(entry->node);
        continue;
      }
      entry->keep_s = options.keep_s;
      entry->slurm_job = options.slurm_job;
      entry->slurm_step = keeperStepSettings(options.srun);
      out.entries.push_back(std::move(*entry));
    }
    if (pending.size() > 65536) pending.clear();
  }
  ::close(lines_fd);
  // Read: a keeper answering later writes into it still (sh opened it long ago), unseen.
  ::unlink(lines_path.c_str());
  if (!unresolved.empty())
    out.problem = "this host cannot resolve " + joinStrings(unresolved) + " to an IPv4 address to reach its keeper";
  if (seen.size() == nodes.size()) {
    // Nothing of the step will be used: srun ends its step on SIGTERM (killed if it lingers).
    if (out.entries.empty()) terminateProcessGroup(child->pid, 5000);
    return out;
  }
  if (!out.problem.empty()) out.problem += "; ";

  std::vector<std::string> missing;
  for (const auto& n : nodes)
    if (std::find(seen.begin(), seen.end(), n.name) == seen.end()) missing.push_back(n.name);
  if (ended) {  // srun exited before every keeper spoke: the step is over, its log says why
    const int code = exitCodeOf(srun_status);
    out.entries.clear();  // whoever answered ended with the step
    out.problem += "the keeper step ended without a keeper on " + joinStrings(missing) + ": " +
                   explainSrunFailure(code, logSince(options.log_path, log_from), daemon_path);
    return out;
  }
  out.problem += "no keeper answered within " + std::to_string(options.timeout_ms / 1000) + " s on " +
                joinStrings(missing) + " (srun's messages: " + options.log_path + ")";
  if (out.entries.empty()) terminateProcessGroup(child->pid, 5000);
  return out;
}

}  // namespace tlaunch
