// The one fork/exec (bootstrap/spawn.h): what a started program sees, and what its starter is
// told when it cannot start.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "bootstrap/spawn.h"

using namespace tlaunch;

namespace {
std::string readAll(int fd) {
  std::string s;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return s;
}

int waitExit(const SpawnedProcess& p) {
  int st = 0;
  ::waitpid(p.pid, &st, 0);
  if (p.pidfd >= 0) ::close(p.pidfd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

SpawnSpec shell(const std::string& script) {
  SpawnSpec s;
  s.exe = "/bin/sh";
  s.argv = {"sh", "-c", script};
  s.env = {"PATH=/usr/bin:/bin", "ONLY_THIS=1"};
  return s;
}
}  // namespace

TEST_CASE("a spawned program gets exactly the given environment and no descriptor of ours") {
  // Not close-on-exec, and numbered above anything ls opens: must not reach the child.
  const int devnull = ::open("/dev/null", O_RDONLY);
  const int leak = ::fcntl(devnull, F_DUPFD, 100);
  ::close(devnull);
  REQUIRE(leak >= 100);
  auto p = spawnProcess(shell("env; ls /proc/self/fd"));
  ::close(leak);
  REQUIRE(p);
  const std::string out = readAll(p->stdout_fd);
  readAll(p->stderr_fd);
  CHECK(waitExit(*p) == 0);
  CHECK(out.find("ONLY_THIS=1\n") != std::string::npos);
  CHECK(out.find("HOME=") == std::string::npos);
  // ls sees 0, 1, 2 and its own directory descriptor, not ours.
  CHECK(out.find("\n" + std::to_string(leak) + "\n") == std::string::npos);
}

TEST_CASE("a program that does not exist is an error naming it, not an exit status") {
  SpawnSpec s = shell("true");
  s.exe = "/nonexistent/prog";
  auto p = spawnProcess(s);
  REQUIRE(!p);
  CHECK(p.error().code == Errc::program_missing);
  CHECK(p.error().message.find("/nonexistent/prog") != std::string::npos);
  s.exe = "no-such-program-anywhere";
  s.search_path = true;
  auto q = spawnProcess(s);
  REQUIRE(!q);
  CHECK(q.error().code == Errc::program_missing);
}

TEST_CASE("a file that is not executable is program_not_executable") {
  SpawnSpec s = shell("true");
  s.exe = "/etc/hostname";
  auto p = spawnProcess(s);
  REQUIRE(!p);
  CHECK(p.error().code == Errc::program_not_executable);
}

TEST_CASE("a failing pre-exec step fails the spawn with its code") {
  SpawnSpec s = shell("true");
  s.pre_exec = [](const void*) { return EPERM; };
  auto p = spawnProcess(s);
  REQUIRE(!p);
  CHECK(p.error().message.find(std::strerror(EPERM)) != std::string::npos);
}

TEST_CASE("stdin is /dev/null unless piped, a piped stdin carries what is written") {
  auto p = spawnProcess(shell("cat"));
  REQUIRE(p);
  CHECK(p->stdin_fd == -1);
  CHECK(readAll(p->stdout_fd).empty());
  readAll(p->stderr_fd);
  CHECK(waitExit(*p) == 0);
  SpawnSpec s = shell("cat; cd; pwd");
  s.stdin_mode = SpawnSpec::Stdin::pipe;
  s.cwd = "/tmp";
  s.env.emplace_back("HOME=/");
  auto q = spawnProcess(s);
  REQUIRE(q);
  REQUIRE(::write(q->stdin_fd, "hello\n", 6) == 6);
  ::close(q->stdin_fd);
  CHECK(readAll(q->stdout_fd) == "hello\n/\n");
  readAll(q->stderr_fd);
  CHECK(waitExit(*q) == 0);
}

TEST_CASE("environmentWith replaces and adds variables") {
  ::setenv("TLAUNCH_SPAWN_TEST_A", "old", 1);
  auto env = environmentWith({"TLAUNCH_SPAWN_TEST_A=new", "TLAUNCH_SPAWN_TEST_B=b"});
  int a = 0, b = 0;
  for (const auto& kv : env) {
    if (kv.rfind("TLAUNCH_SPAWN_TEST_A=", 0) == 0) {
      ++a;
      CHECK(kv == "TLAUNCH_SPAWN_TEST_A=new");
    }
    if (kv == "TLAUNCH_SPAWN_TEST_B=b") ++b;
  }
  CHECK(a == 1);
  CHECK(b == 1);
  ::unsetenv("TLAUNCH_SPAWN_TEST_A");
}

// A warm daemon started ranks with the first job's umask and open-files limit: the caller's
// now travel in the plan (NodeLaunch) and the spawn applies them.
TEST_CASE("a spawned program gets the umask and soft open-files limit asked for, in a session of its own") {
  SpawnSpec s = shell("umask; ulimit -Sn; ps -o sid= -o pgid= -p $$ | awk '{print \"ids \" $1 \" \" $2}'");
  s.umask = 077;
  s.nofile = 321;
  s.new_session = true;
  auto p = spawnProcess(s);
  REQUIRE(p);
  const std::string out = readAll(p->stdout_fd);
  readAll(p->stderr_fd);
  CHECK(waitExit(*p) == 0);
  const std::string pid = std::to_string(p->pid);
  CHECK(out.rfind("0077\n321\n", 0) == 0);
  // Its session and process group are its own pid (signals to the group still reach it all).
  CHECK(out.find("ids " + pid + " " + pid + "\n") != std::string::npos);
  // Without them: this process's umask.
  const mode_t ours = ::umask(022);
  ::umask(ours);
  auto plain = spawnProcess(shell("umask"));
  REQUIRE(plain);
  const std::string plain_out = readAll(plain->stdout_fd);
  readAll(plain->stderr_fd);
  CHECK(waitExit(*plain) == 0);
  char expected[8];
  std::snprintf(expected, sizeof expected, "%04o\n", static_cast<unsigned>(ours));
  CHECK(plain_out == expected);
}

TEST_CASE("--pty: stdout is a raw terminal that is not the child's controlling one; its bytes outlive the child") {
  SpawnSpec s = shell("test -t 1 && echo terminal; test -t 2 || echo 'stderr a pipe' >&2; "
                      "(: < /dev/tty) 2>/dev/null && echo controlling; printf 'a\\nno newline'");
  s.stdout_terminal = true;
  s.new_session = true;  // as ranks are
  auto p = spawnProcess(s);
  REQUIRE(p);
  CHECK(::isatty(p->stdout_fd) == 1);
  CHECK(waitExit(*p) == 0);  // gone before anything is read: what it wrote is still there
  // "\n" stays "\n" (a cooked terminal writes "\r\n"); the last bytes need no newline.
  CHECK(readAll(p->stdout_fd) == "terminal\na\nno newline");
  CHECK(readAll(p->stderr_fd) == "stderr a pipe\n");
}
