// DeepSpeed's environment files and --time-limit's durations (issue 12 items 2 and 5).
#include <catch2/catch.hpp>

#include <map>
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
  CHECK(deepspeedEnvFileCandidates({{"HOME", "/home/u"}, {"DS_ENV_FILE", "./r.env"}}) == std::vector<std::string>{"./r.env"});
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

TEST_CASE("an env file's comment after a value is no part of it, as the shell reads the line") {
  auto r = parseEnvFile("f", "W=\"a b\" # c\nH='mlx5_0,mlx5_1'  # rails\nU=x # note\nK=\"a\"b\nT=a\t# tab\nO=\"open # not a comment");
  REQUIRE(r);
  REQUIRE(r->size() == 6);
  CHECK((*r)[0].value == "a b");
  CHECK((*r)[1].value == "mlx5_0,mlx5_1");
  CHECK((*r)[2].value == "x");
  CHECK((*r)[3].value == "\"a\"b");  // not one quoted word: as written
  CHECK((*r)[4].value == "a");
  CHECK((*r)[5].value == "\"open # not a comment");  // an unclosed quote: as written
}

TEST_CASE("MASTER_ADDR and --master-addr: an address or a host name, never HOST:PORT") {
  for (const char* good : {"10.1.2.3", "node1", "node-1.cluster.local", "fd00::1", "::1", "n1.", "gpu01"}) {
    INFO(good);
    CHECK(badHostOrAddress(good).empty());
  }
  for (const char* bad : {"127.0.0.1:29500", "node1:29500", "999.1.1.1", "...", "a..b", "-n1", "n1-", "", "[::1]",
                          "not_a_host!", "1.2.3"}) {
    INFO(bad);
    CHECK_FALSE(badHostOrAddress(bad).empty());
  }
  CHECK(badHostOrAddress("node1:29500").find("--master-port") != std::string::npos);
  auto port = forwardEnvironment({}, {"MASTER_PORT= 29555"}, {});
  REQUIRE_FALSE(port);
  CHECK(port.error().message.find("MASTER_PORT must be a port") != std::string::npos);
  CHECK_FALSE(forwardEnvironment({}, {"MASTER_PORT=+80"}, {}));
  CHECK(forwardEnvironment({}, {"MASTER_PORT=29500"}, {}));
  auto addr = forwardEnvironment({}, {"MASTER_ADDR=1.2.3.4:5"}, {});
  REQUIRE_FALSE(addr);
  CHECK(addr.error().message.find("HOST:PORT") != std::string::npos);
}

TEST_CASE("what tlaunch or the PMIx server sets per rank cannot be exported, and the message says why") {
  auto world = forwardEnvironment({}, {"WORLD_SIZE=1"}, {});
  REQUIRE_FALSE(world);
  CHECK(world.error().message.find("WORLD_SIZE comes from the job's plan") != std::string::npos);
  auto pmix = forwardEnvironment({}, {"PMIX_RANK=3"}, {});
  REQUIRE_FALSE(pmix);
  CHECK(pmix.error().message.find("PMIx server") != std::string::npos);
  CHECK(forwardEnvironment({}, {"PMIX_MCA_ptl_tcp_if_include=eth0"}, {}));
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
  // Too big, however many digits: said as out of the range, not as no duration at all.
  for (const char* huge : {"9999999999999999999999s", "1000000000h", "999999999d999999999d", "99999999:00:00"}) {
    auto r = parseDuration("--time-limit", huge);
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("must be from 1s to 365d") != std::string::npos);
  }
  CHECK(formatDuration(600) == "10m");
  CHECK(formatDuration(5400) == "1h30m");
  CHECK(formatDuration(45) == "45s");
  CHECK(formatDuration(90'061) == "1d1h1m1s");
}

// tlaunch run from inside a rank (a driver script that launches jobs of its own): the outer
// job's NCCL check set NCCL_DEBUG=INFO and a NCCL_DEBUG_FILE in its job directory. Taken for
// the user's, the inner job's NCCL logs went into the outer job's directory.
TEST_CASE("a job started inside a rank does not take the outer job's NCCL log settings for the user's") {
  const std::map<std::string, std::string> inside = {
      {"TLAUNCH_JOB_ID", "tl-3d66b11ff0"},
      {"NCCL_DEBUG", "INFO"},
      {"NCCL_DEBUG_SUBSYS", "INIT,BOOTSTRAP,NET,ENV"},
      {"NCCL_DEBUG_FILE", "/tmp/tlaunch.tl-3d66b11ff0.local0.449cd633.nccl/nccl.rank0.%h.%p.log"},
      {"HOME", "/root"}};
  auto f = forwardEnvironment(inside, {}, {});
  REQUIRE(f);
  CHECK(f->user_env.count("NCCL_DEBUG") == 0);
  CHECK(f->user_env.count("NCCL_DEBUG_FILE") == 0);
  CHECK(f->user_env.count("NCCL_DEBUG_SUBSYS") == 0);
  CHECK(f->user_env.count("HOME") == 1);
  // The user's own settings, outside a job or pointing elsewhere, stay theirs.
  auto own = inside;
  own["NCCL_DEBUG_FILE"] = "/scratch/me/nccl.%h.%p.log";
  auto g = forwardEnvironment(own, {}, {});
  REQUIRE(g);
  CHECK(g->user_env.count("NCCL_DEBUG") == 1);
  CHECK(g->user_env.count("NCCL_DEBUG_FILE") == 1);
  // -x puts one back on purpose.
  auto x = forwardEnvironment(inside, {"NCCL_DEBUG=WARN"}, {});
  REQUIRE(x);
  CHECK(x->user_env.at("NCCL_DEBUG").value == "WARN");
}
