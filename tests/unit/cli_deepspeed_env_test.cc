// DeepSpeed's environment files and --time-limit's durations (issue 12 items 2 and 5).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "launcher/cli_values.h"
#include "launcher/deepspeed_env.h"
#include "bootstrap/rank_env.h"
#include "launcher/job_environment.h"

using namespace tlaunch;

TEST_CASE("deepspeed env files are looked up as deepspeed does: home, then the current directory") {
  CHECK(deepspeedEnvFileCandidates({{"HOME", "/home/u"}}) ==
        std::vector<std::string>{"/home/u/.deepspeed_env", "./.deepspeed_env"});
  CHECK(deepspeedEnvFileCandidates({{"HOME", "/home/u/"}, {"DS_ENV_FILE", "my.env"}}) ==
        std::vector<std::string>{"/home/u/my.env", "./my.env"});
  CHECK(deepspeedEnvFileCandidates({{"HOME", "/home/u"}, {"DS_ENV_FILE", "/etc/job.env"}}) ==
        std::vector<std::string>{"/etc/job.env"});
  CHECK(deepspeedEnvFileCandidates({}) == std::vector<std::string>{"./.deepspeed_env"});
}

TEST_CASE("an env file's lines: KEY=VALUE, comments and blanks skipped, quotes and blanks trimmed") {
  auto r = parseEnvFile("f", "NCCL_IB_HCA=mlx5_0,mlx5_1\n\n# a comment\n  export A = \"x y\"  \r\nB='1=2'\nC=\nD=v#1");
  REQUIRE(r);
  REQUIRE(r->size() == 5);
  CHECK((*r)[0].name == "NCCL_IB_HCA");
  CHECK((*r)[0].value == "mlx5_0,mlx5_1");
  CHECK((*r)[0].source == "f:1");
  CHECK((*r)[1].name == "A");
  CHECK((*r)[1].value == "x y");
  CHECK((*r)[1].source == "f:4");
  CHECK((*r)[2].value == "1=2");
  CHECK((*r)[3].value.empty());
  CHECK((*r)[4].value == "v#1");
  CHECK(parseEnvFile("f", "")->empty());
}

TEST_CASE("a malformed env file line is refused naming file:line") {
  auto r = parseEnvFile("/home/u/.deepspeed_env", "A=1\nthis is not an assignment\n");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Errc::usage);
  CHECK(r.error().message == "/home/u/.deepspeed_env:2: expected KEY=VALUE, found 'this is not an assignment'");
  auto name = parseEnvFile("x", "1A=2");
  REQUIRE_FALSE(name);
  CHECK(name.error().message.starts_with("x:1: '1A' is not a variable name"));
  CHECK_FALSE(parseEnvFile("x", "=value"));
  CHECK_FALSE(parseEnvFile("x", "A B=1"));
}

TEST_CASE("env files win over the environment, -x wins over env files, the later file over the earlier") {
  std::vector<EnvFileEntry> files = {{"A", "home", "~/.deepspeed_env:1"}, {"B", "home", "~/.deepspeed_env:2"},
                                     {"A", "here", "./.deepspeed_env:1"}};
  auto f = forwardEnvironment({{"A", "env"}, {"B", "env"}, {"C", "env"}}, {"B=cli"}, files);
  REQUIRE(f);
  CHECK(f->user_env["A"].value == "here");
  CHECK(f->user_env["A"].source == "./.deepspeed_env:1");
  CHECK(f->user_env["B"].value == "cli");
  CHECK(f->user_env["B"].source == "-x");
  CHECK(f->user_env["C"].source == "environment");
  CHECK(envValue(f->base_env, "A") == "here");
  CHECK(envValue(f->base_env, "B") == "cli");
  // A per-rank variable cannot come from a file either.
  auto bad = forwardEnvironment({}, {}, {{"LOCAL_RANK", "3", "./.deepspeed_env:7"}});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.starts_with("./.deepspeed_env:7: LOCAL_RANK differs per rank"));
}

TEST_CASE("time limit durations (--time-limit)") {
  CHECK(*parseDuration("--time-limit", "90s") == 90);
  CHECK(*parseDuration("--time-limit", "10m") == 600);
  CHECK(*parseDuration("--time-limit", "1h30m") == 5400);
  CHECK(*parseDuration("--time-limit", "2d") == 172'800);
  CHECK(*parseDuration("--time-limit", "1:30:00") == 5400);
  CHECK(*parseDuration("--time-limit", "05:00") == 300);
  CHECK(*parseDuration("--time-limit", "365d") == kMaxTimeLimitSeconds);
  auto bare = parseDuration("--time-limit", "30");
  REQUIRE_FALSE(bare);
  CHECK(bare.error().message.find("a unit is missing") != std::string::npos);
  for (const char* bad : {"", "0s", "366d", "10x", "m", "1:", ":30", "1:60", "1:2:3:4", "-5m", "1.5h", "10 m",
                          "9999999999999999999999s", "999999999d999999999d"})
    CHECK_FALSE(parseDuration("--time-limit", bad));
  CHECK(formatDuration(600) == "10m");
  CHECK(formatDuration(5400) == "1h30m");
  CHECK(formatDuration(45) == "45s");
  CHECK(formatDuration(90'061) == "1d1h1m1s");
}
