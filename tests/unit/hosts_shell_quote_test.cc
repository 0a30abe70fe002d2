// POSIX quoting survives a real shell; splitting follows shell rules.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "bootstrap/shell_quote.h"
#include "launcher/ssh_starter.h"

using namespace tlaunch;

namespace {

const std::vector<std::string> kNasty{
    "plain",
    "with space",
    "",
    "it's",
    "\"double\"",
    "$HOME and ${PATH} and $(id) and `id`",
    "a;b && c || d | e & f",
    "back\\slash \\n \\",
    "line1\nline2\n",
    "tab\there",
    "*.py ?[ab]",
    "~",
    "'''",
    "x=y",
    "-n",
    "#not a comment",
    "!bang",
    "utf-8: żółw ✓",
};

// Runs `shell -c script` and returns its stdout.
std::string runShell(const std::string& shell, const std::string& script) {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::close(out[0]);
    ::close(out[1]);
    ::execl(shell.c_str(), shell.c_str(), "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  return text;
}

std::vector<std::string> splitNul(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\0', pos);
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::vector<std::string> shells() {
  std::vector<std::string> out;
  for (const char* s : {"/bin/sh", "/bin/dash", "/bin/bash", "/usr/bin/zsh"}) {
    if (::access(s, X_OK) == 0) out.push_back(s);
  }
  return out;
}

}  // namespace

TEST_CASE("hosts: shellQuote: every argument survives a real shell unchanged", "[hosts][shell_quote]") {
  for (const auto& shell : shells()) {
    INFO(shell);
    const std::string out = runShell(shell, "printf '%s\\0' " + shellJoin(kNasty));
    CHECK(splitNul(out) == kNasty);
  }
}

TEST_CASE("hosts: remoteDaemonCommand: the daemon gets its arguments unchanged, then node index and name",
          "[hosts][shell_quote][ssh]") {
  DaemonCommand command{"printf", {"%s\\0"}};
  command.args.insert(command.args.end(), kNasty.begin(), kNasty.end());
  NodeTarget node{3, "node 3;$x", "", {}};
  std::vector<std::string> expected = kNasty;
  expected.insert(expected.end(), {"--node-index", "3", "--node-name", "node 3;$x"});
  for (const auto& shell : shells()) {
    INFO(shell);
    CHECK(splitNul(runShell(shell, remoteDaemonCommand(command, node))) == expected);
  }
}

TEST_CASE("hosts: shellQuote: the quoted form", "[hosts][shell_quote]") {
  CHECK(shellQuote("a b") == "'a b'");
  CHECK(shellQuote("") == "''");
  CHECK(shellQuote("it's") == "'it'\\''s'");
  CHECK(shellJoin({"a", "b c"}) == "'a' 'b c'");
}

TEST_CASE("hosts: splitShellWords: shell-like splitting without expansion", "[hosts][shell_quote]") {
  using W = std::vector<std::string>;
  CHECK(*splitShellWords("-p gpu  -t 10", "x") == W{"-p", "gpu", "-t", "10"});
  CHECK(*splitShellWords("--comment='two words' -J \"a \\\"b\\\" $c\"", "x") ==
        W{"--comment=two words", "-J", "a \"b\" $c"});
  CHECK(*splitShellWords("a\\ b c\\\\d '' \"\"", "x") == W{"a b", "c\\d", "", ""});
  CHECK(*splitShellWords("a \\\n b", "x") == W{"a", "b"});
  CHECK(splitShellWords("   ", "x")->empty());
  for (const char* bad : {"'open", "\"open", "trailing\\"}) {
    INFO(bad);
    auto r = splitShellWords(bad, "--slurm-args");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Errc::usage);
    CHECK_THAT(r.error().message, Catch::StartsWith("--slurm-args:"));
  }
}

TEST_CASE("hosts: splitShellWords agrees with a real shell", "[hosts][shell_quote]") {
  const std::string line = "-p gpu --comment='it s' -J \"x \\\"y\\\" \\\\z\" a\\ b '' end";
  const std::string out = runShell("/bin/sh", "printf '%s\\0' " + line);
  CHECK(*splitShellWords(line, "x") == splitNul(out));
}
