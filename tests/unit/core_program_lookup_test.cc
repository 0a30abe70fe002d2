// How the daemon finds a rank's program (daemon/rank_spawner.h): as execvp would, with the rank's
// PATH, and never in the working directory unless the PATH says so.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "daemon/rank_spawner.h"
#include "temp_dir.h"

using namespace tlaunch;

namespace {
void writeExecutable(const std::filesystem::path& p) {
  std::ofstream(p) << "#!/bin/sh\nexit 0\n";
  ::chmod(p.c_str(), 0755);
}
}  // namespace

TEST_CASE("program lookup: an environment without PATH searches the system's path, not the working directory") {
  testing::TempDir dir("tlaunch-lookup");
  // A program named like a system one, planted in the job's working directory.
  writeExecutable(dir.path() / "true");
  const std::string cwd = dir.path().string();

  const std::string fallback = programSearchPath({"HOME=/root"});
  CHECK(fallback.find("/bin") != std::string::npos);
  CHECK(fallback.find("::") == std::string::npos);
  CHECK(fallback.front() != ':');
  CHECK(fallback.back() != ':');
  auto found = resolveProgram("true", fallback, cwd, "node1");
  REQUIRE(found);
  CHECK(found->rfind(cwd, 0) != 0);  // not the planted one
  CHECK(found->front() == '/');

  // PATH set, even to nothing: what the user said (an empty PATH means the working directory,
  // as for execvp and the shell).
  CHECK(programSearchPath({"PATH=/opt/x:/usr/bin"}) == "/opt/x:/usr/bin");
  CHECK(programSearchPath({"PATH="}).empty());
  auto from_cwd = resolveProgram("true", programSearchPath({"PATH="}), cwd, "node1");
  REQUIRE(from_cwd);
  CHECK(*from_cwd == (dir.path() / "true").string());
  // A variable whose name only begins with PATH is not PATH.
  CHECK(programSearchPath({"PATHX=/nowhere"}) == fallback);
}

TEST_CASE("program lookup: a missing program names the node and the PATH searched") {
  auto r = resolveProgram("no-such-program-tlaunch", "/usr/bin:/bin", "/", "node7");
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("node7") != std::string::npos);
  CHECK(r.error().message.find("/usr/bin:/bin") != std::string::npos);
}

// `torchrun train.py` runs it through Python; the same line under tlaunch must not say "not
// found, install it" for a file that is right there.
TEST_CASE("program lookup: a bare name of a file in the working directory says how to run it") {
  testing::TempDir dir("tlaunch-lookup");
  std::ofstream(dir.path() / "train.py") << "print('hi')\n";
  std::ofstream(dir.path() / "run") << "echo hi\n";
  const std::string cwd = dir.path().string();
  auto r = resolveProgram("train.py", "/usr/bin:/bin", cwd, "node7");
  REQUIRE_FALSE(r);
  INFO(r.error().message);
  CHECK(r.error().message.find("the working directory " + cwd + " has a file of that name") != std::string::npos);
  CHECK(r.error().hint.find("`python3 train.py`") != std::string::npos);
  auto other = resolveProgram("run", "/usr/bin:/bin", cwd, "node7");
  REQUIRE_FALSE(other);
  CHECK(other.error().hint.find("`chmod +x run; ./run`") != std::string::npos);  // not executable yet
  ::chmod((dir.path() / "run").c_str(), 0755);
  auto runnable = resolveProgram("run", "/usr/bin:/bin", cwd, "node7");
  REQUIRE_FALSE(runnable);
  CHECK(runnable.error().hint.find("`./run`") != std::string::npos);
}

TEST_CASE("program lookup: a directory, and a script whose #! interpreter is missing, are named as such") {
  testing::TempDir dir("tlaunch-lookup");
  const std::string cwd = dir.path().string();
  std::filesystem::create_directory(dir.path() / "pkg");
  auto directory = resolveProgram("./pkg", "/usr/bin", cwd, "node3");
  REQUIRE_FALSE(directory);
  CHECK(directory.error().code == Errc::program_not_executable);
  CHECK_THAT(directory.error().message, Catch::Contains("'./pkg' on node node3 is a directory"));
  CHECK_THAT(directory.error().hint, !Catch::Contains("chmod"));

  // exec fails with ENOENT on a file that exists: the message names the interpreter instead.
  std::ofstream(dir.path() / "train.py") << "#!  /opt/conda-gone/bin/python -u\nprint(1)\n";
  ::chmod((dir.path() / "train.py").c_str(), 0755);
  for (const auto& [program, path] : {std::pair{"./train.py", "/usr/bin"}, std::pair{"train.py", cwd.c_str()}}) {
    INFO(program);
    auto script = resolveProgram(program, path, cwd, "node3");
    REQUIRE_FALSE(script);
    CHECK_THAT(script.error().message, Catch::Contains("names '/opt/conda-gone/bin/python' in its first line (#!)"));
    CHECK_THAT(script.error().message, Catch::Contains("node3"));
  }
  writeExecutable(dir.path() / "ok.sh");  // #!/bin/sh exists
  CHECK(resolveProgram("./ok.sh", "/usr/bin", cwd, "node3"));
}

TEST_CASE("program lookup: a script without a #! line, or naming no executable interpreter, says so") {
  testing::TempDir dir("tlaunch-lookup");
  const std::string cwd = dir.path().string();
  auto script = [&](const char* name, const std::string& text) {
    std::ofstream(dir.path() / name) << text;
    ::chmod((dir.path() / name).c_str(), 0755);
    return resolveProgram(std::string("./") + name, "/usr/bin", cwd, "node3");
  };
  for (const auto& [name, text] : {std::pair{"bare.sh", std::string("echo hi\n")}, std::pair{"empty.sh", std::string()}}) {
    INFO(name);
    auto r = script(name, text);  // exec: "Exec format error"
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Errc::program_not_executable);
    CHECK_THAT(r.error().message, Catch::Contains("without a #! first line"));
    CHECK_THAT(r.error().hint, Catch::Contains("#!/bin/sh"));
    CHECK_THAT(r.error().hint, Catch::Contains(std::string("(bash ./") + name + ")"));
  }
  // A Python file is run by python3, and a path a shell would split comes quoted, to paste.
  auto py = script("my train.py", "import sys\n");
  REQUIRE_FALSE(py);
  CHECK_THAT(py.error().hint, Catch::Contains("(python3 './my train.py')"));
  for (const char* interpreter : {"/etc/passwd", "/tmp"}) {  // exec: EACCES, read as the script's own
    INFO(interpreter);
    auto r = script("odd.sh", std::string("#!") + interpreter + "\necho hi\n");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains(std::string("names '") + interpreter + "'"));
    CHECK_THAT(r.error().message, Catch::Contains("not an executable file"));
  }
  // A binary that is not ELF (a format binfmt_misc may run) is left to exec.
  CHECK(script("blob", std::string("MZ\0\0binary", 10)));
  CHECK(script("env.py", "#!/usr/bin/env python3\nprint(1)\n"));
}
