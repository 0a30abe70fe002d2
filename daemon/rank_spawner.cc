#include "daemon/rank_spawner.h"

#include <sys/resource.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>

#include "bootstrap/path_check.h"
#include "bootstrap/rank_env.h"
#include "bootstrap/shell_quote.h"
#include "bootstrap/spawn.h"
#include "tlaunch/diagnostics.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

bool isExecutableFile(const std::string& p, int& err) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) {
    err = errno;
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    err = EISDIR;
    return false;
  }
  if (::access(p.c_str(), X_OK) != 0) {
    err = errno;
    return false;
  }
  return true;
}

std::string joinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

}  // namespace

std::string programSearchPath(const std::vector<std::string>& env) {
  if (auto path = envLookup(env, "PATH")) return *path;
  const size_t n = ::confstr(_CS_PATH, nullptr, 0);
  std::string path(n, '\0');
  if (n == 0 || ::confstr(_CS_PATH, path.data(), n) == 0) return "/bin:/usr/bin";
  path.resize(n - 1);  // confstr counts the terminating NUL
  return path;
}

namespace {
// What is wrong with a script's "#!" line, if anything exec would fail on (ENOENT on a file
// that is there reads as "no such program"): the interpreter it names does not exist, or is no
// executable file (EACCES reads as the script's own permission), or the line ends in a carriage
// return (Windows line endings: the kernel keeps the '\r' in the interpreter's name or its
// argument, "/usr/bin/env python3\r"). Or the file has no "#!" line at all: a text file, or an
// empty one, that a shell would run as a sh script but exec refuses (ENOEXEC). A binary that is
// not ELF may be run by binfmt_misc: left to exec.
struct ShebangProblem {
  bool windows_line_ending = false;
  bool no_line = false;
  std::string missing_interpreter;
  std::string unusable_interpreter;
};

std::optional<ShebangProblem> shebangProblem(const std::string& file) {
  char head[256];
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  const ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  if (n < 0) return std::nullopt;
  const std::string_view text(head, static_cast<size_t>(n));
  if (text.starts_with("\x7f" "ELF")) return std::nullopt;
  if (!text.starts_with("#!")) {
    if (text.find('\0') != std::string_view::npos) return std::nullopt;  // binary: binfmt_misc's, or exec's error
    return ShebangProblem{false, true, {}, {}};
  }
  std::string_view line = text.substr(2);
  const size_t newline = line.find('\n');
  if (newline == std::string_view::npos) return std::nullopt;  // a #! line past 256 bytes: exec decides
  line = line.substr(0, newline);
  if (line.ends_with('\r')) return ShebangProblem{true, false, {}, {}};
  const size_t from = line.find_first_not_of(" \t");
  if (from == std::string_view::npos) return std::nullopt;
  // The kernel ends the name at a blank or the end of the line.
  const std::string interpreter(line.substr(from, line.find_first_of(" \t", from) - from));
  struct stat st {};
  if (::stat(interpreter.c_str(), &st) != 0) return ShebangProblem{false, false, interpreter, {}};
  if (!S_ISREG(st.st_mode) || ::access(interpreter.c_str(), X_OK) != 0) return ShebangProblem{false, false, {}, interpreter};
  return std::nullopt;
}

// How to run `program` through its interpreter, as a line to paste: python3 for a .py file, else
// `default_interpreter`; the path quoted where a shell would split it.
std::string runThroughInterpreter(const std::string& program, const char* default_interpreter) {
  constexpr std::string_view kPlain = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-+=:,@%";
  const bool plain = !program.empty() && program.find_first_not_of(kPlain) == std::string::npos;
  const std::string word = plain ? program : shellQuote(program);
  const char* interpreter = program.ends_with(".py")                               ? "python3"
                            : program.ends_with(".sh") || program.ends_with(".bash") ? "bash"
                                                                                      : default_interpreter;
  return std::string(interpreter) + " " + word;
}

Result<std::string> checkInterpreter(const std::string& program, const std::string& file, const std::string& node_name) {
  const auto problem = shebangProblem(file);
  if (!problem) return file;
  if (problem->windows_line_ending)
    return diagnostic(Errc::program_not_executable, "program-windows-line-endings", {{"program", program}, {"node", node_name}});
  if (problem->no_line)
    return diagnostic(Errc::program_not_executable, "program-without-interpreter-line",
                      {{"program", program}, {"node", node_name}, {"run", runThroughInterpreter(program, "bash")}});
  if (!problem->unusable_interpreter.empty())
    return diagnostic(Errc::program_not_executable, "program-interpreter-not-executable",
                      {{"program", program}, {"node", node_name}, {"interpreter", visibleText(problem->unusable_interpreter)}});
  return diagnostic(Errc::program_not_executable, "program-interpreter-missing",
                    {{"program", program}, {"node", node_name}, {"interpreter", visibleText(problem->missing_interpreter)}});
}
}  // namespace

Result<void> checkWorkingDirectory(const std::string& cwd, const std::string& node_name) {
  const auto why = pathProblem(cwd, PathUse::enter_directory);
  if (!why) return {};
  return fail(Errc::usage, "working directory " + cwd + " " + *why + " on node " + node_name,
              "run tlaunch from a directory every node has, or name one with -D/--chdir");
}

Result<std::string> resolveProgram(const std::string& program, const std::string& path, const std::string& cwd,
                                   const std::string& node_name) {
  if (program.empty()) return diagnostic(Errc::usage, "program-not-given");
  int err = 0;
  if (program.find('/') != std::string::npos) {
    std::string full = program[0] == '/' ? program : joinPath(cwd, program);
    if (isExecutableFile(full, err)) {
      if (auto checked = checkInterpreter(program, full, node_name); !checked) return checked;
      return program;
    }
    if (err == ENOENT || err == ENOTDIR) {
      return diagnostic(Errc::program_missing, "program-path-missing",
                        {{"program", program}, {"node", node_name}, {"where", program[0] == '/' ? "" : " (in " + cwd + ")"}});
    }
    if (err == EISDIR)
      return diagnostic(Errc::program_not_executable, "program-is-directory", {{"program", program}, {"node", node_name}});
    return diagnostic(Errc::program_not_executable, "program-path-not-executable",
                      {{"program", program}, {"node", node_name}, {"reason", std::strerror(err)},
                       {"run", runThroughInterpreter(program, "python3")}});
  }
  bool saw_non_exec = false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    std::string base = dir.empty() ? cwd : (dir[0] == '/' ? dir : joinPath(cwd, dir));
    std::string candidate = joinPath(base, program);
    if (isExecutableFile(candidate, err)) return checkInterpreter(program, candidate, node_name);
    if (err == EACCES) saw_non_exec = true;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (saw_non_exec) {
    return diagnostic(Errc::program_not_executable, "program-found-not-executable",
                      {{"program", program}, {"node", node_name}});
  }
  // torchrun's habit (`torchrun train.py`, run through Python): the file is right here, and
  // "not found, install it" would point the wrong way.
  if (struct stat st{}; ::stat(joinPath(cwd, program).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    const std::string run = program.ends_with(".py")  ? "python3 " + program
                            : program.ends_with(".sh")  ? "bash " + program
                            : (st.st_mode & 0111) != 0 ? "./" + program
                                                        : "chmod +x " + program + "; ./" + program;
    return diagnostic(Errc::program_missing, "program-in-working-directory",
                      {{"program", program}, {"node", node_name}, {"cwd", cwd}, {"run", run}});
  }
  return diagnostic(Errc::program_missing, "program-not-in-path", {{"program", program}, {"node", node_name}, {"path", path}});
}

namespace {
// SpawnSpec::pre_exec: the rank's CPU and memory binding, in the child, raw system calls only.
int applyBinding(const void* binding) {
  return applyPreparedBinding(*static_cast<const PreparedBinding*>(binding));
}
}  // namespace

Result<RankProcess> spawnRank(const RankLaunch& launch) {
  SpawnSpec spec;
  spec.exe = launch.exe_path;
  spec.argv = launch.argv;
  spec.env = launch.env;
  spec.cwd = launch.cwd;
  spec.stdin_mode = launch.stdin_pipe ? SpawnSpec::Stdin::pipe : SpawnSpec::Stdin::dev_null;
  if (launch.binding) {
    spec.pre_exec = applyBinding;
    spec.pre_exec_context = &*launch.binding;
  }
  spec.cgroup_procs_fd = launch.cgroup_procs_fd;
  spec.cgroup_dir_fd = launch.cgroup_dir_fd;
  spec.allow_parent_ptrace = true;  // `tlaunch stacks`: the daemon's gdb is the rank's sibling
  spec.new_session = true;          // never stopped by the user's terminal (local launcher)
  spec.umask = launch.umask;
  spec.nofile = launch.nofile;
  spec.stdout_terminal = launch.stdout_terminal;
  spec.terminal_columns = launch.terminal_columns;
  spec.terminal_rows = launch.terminal_rows;
  auto spawned = spawnProcess(spec);
  if (!spawned) {
    Error e = spawned.error();
    if (e.code == Errc::program_missing || e.code == Errc::program_not_executable)
      e.message = "program '" + launch.exe_path + "' cannot be executed for rank " + std::to_string(launch.rank) +
                  ": " + e.message;
    // Out of descriptors: the daemon holds about 3 per rank (its pipes, a pidfd) and one per
    // PMIx client, so a node's ranks meet its open-files limit long before the system's.
    const std::string emfile = std::strerror(EMFILE), enfile = std::strerror(ENFILE);
    if (e.message.find(emfile) != std::string::npos || e.message.find(enfile) != std::string::npos) {
      rlimit lim{};
      ::getrlimit(RLIMIT_NOFILE, &lim);
      auto shown = [](rlim_t v) { return v == RLIM_INFINITY ? std::string("unlimited") : std::to_string(v); };
      // The hint is in the message: a rank's start failure reaches tlaunch as its message alone.
      e.message = "cannot start rank " + std::to_string(launch.rank) + ": the node's tlaunchd ran out of file "
                  "descriptors (" + e.message + "; its open-files limit is " + shown(lim.rlim_cur) + ", about 3 per "
                  "rank are needed): raise the open-files hard limit there (ulimit -Hn, LimitNOFILE= of a systemd "
                  "unit, /etc/security/limits.conf), or run fewer ranks per node";
      e.code = Errc::resources;
    }
    return tl::unexpected<Error>(std::move(e));
  }
  RankProcess p;
  p.pid = spawned->pid;
  p.pidfd = spawned->pidfd;
  p.stdout_fd = spawned->stdout_fd;
  p.stderr_fd = spawned->stderr_fd;
  p.stdin_fd = spawned->stdin_fd;
  return p;
}

}  // namespace tlaunch
