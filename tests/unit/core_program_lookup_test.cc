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
