// --nccl-check: the NCCL debug variables a rank gets, and the decision on the report (warn or
// end the job) on real NCCL log fixtures.
#include <string>
#include <vector>

#include "launcher/nccl/nccl_check.h"
#include "launcher/nccl/nccl_job_check.h"
#include "nccl_test_support.h"

using namespace tlaunch::nccl;
using namespace tlaunch::nccl::testing;
using Env = std::vector<std::pair<std::string, std::string>>;

TEST_CASE("nccl check: modes parse, anything else is refused") {
  CHECK(parseCheckMode("off") == CheckMode::off);
  CHECK(parseCheckMode("warn") == CheckMode::warn);
  CHECK(parseCheckMode("strict") == CheckMode::strict);
  CHECK_FALSE(parseCheckMode("on").has_value());
  CHECK(std::string(checkModeName(CheckMode::strict)) == "strict");
}

TEST_CASE("nccl check: warn sets INFO, the subsystems and a per-rank file in the job directory") {
  const std::string path = rankLogPath("/tmp/tlaunch-job", 3);
  CHECK(path == "/tmp/tlaunch-job/nccl.rank3.%h.%p.log");
  auto d = debugEnv(CheckMode::warn, {"PATH", "HOME"}, path);
  CHECK(d.source == LogSource::file);
  CHECK(d.env == Env{{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT,BOOTSTRAP,NET,ENV"}, {"NCCL_DEBUG_FILE", path}});
}

TEST_CASE("nccl check: off sets nothing and reads nothing") {
  auto d = debugEnv(CheckMode::off, {}, "/x");
  CHECK(d.source == LogSource::none);
  CHECK(d.env.empty());
}

TEST_CASE("nccl check: the user's NCCL_DEBUG wins and their stderr is parsed") {
  auto d = debugEnv(CheckMode::strict, {"NCCL_DEBUG"}, "/x");
  CHECK(d.source == LogSource::stderr_lines);
  CHECK(d.env.empty());
}

TEST_CASE("nccl check: the user's own subsystems or file are kept") {
  auto d = debugEnv(CheckMode::warn, {"NCCL_DEBUG_SUBSYS"}, "/x");
  CHECK(d.env == Env{{"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_FILE", "/x"}});
  auto f = debugEnv(CheckMode::warn, {"NCCL_DEBUG_FILE"}, "/x");
  CHECK(f.source == LogSource::none);
  CHECK(f.env.empty());  // no INFO level forced into the user's own file
}

TEST_CASE("nccl check: NET/IB on the planned interface passes") {
  auto report = reportOf("01");  // NET/IB on mlx4_0:1, bootstrap ib0
  auto d = decide(report, {true, {"ib0"}, {}}, CheckMode::strict);
  CHECK(d.action == Action::none);
  CHECK(d.reason.empty());
}

TEST_CASE("nccl check: a socket fallback on a job that expects RDMA warns, or fails when strict") {
  auto report = reportOf("02");  // NET/Socket: libibverbs missing
  auto w = decide(report, {true, {}, {}}, CheckMode::warn);
  CHECK(w.action == Action::warn);
  CHECK(w.reason.find("NET/Socket") != std::string::npos);
  CHECK(w.reason.find(report.verdict) != std::string::npos);
  CHECK(decide(report, {true, {}, {}}, CheckMode::strict).action == Action::fail);
  CHECK(decide(report, {true, {}, {}}, CheckMode::off).action == Action::none);
}

TEST_CASE("nccl check: a job that does not expect RDMA only gets the report") {
  auto report = reportOf("02");
  CHECK(decide(report, {false, {"eth0"}, {}}, CheckMode::strict).action == Action::none);
}

TEST_CASE("nccl check: a bootstrap interface other than the planned one is named") {
  auto report = reportOf("01");  // bootstraps on ib0
  auto d = decide(report, {true, {"ib1"}, {}}, CheckMode::strict);
  CHECK(d.action == Action::fail);
  CHECK(d.reason.find("bootstraps on ib0, not the planned ib1") != std::string::npos);
}

TEST_CASE("nccl check: each rank is held to its own node's planned interface") {
  // Fixture 01 as two daemons send it (both processes bootstrap on ib0), on a plan whose nodes
  // name their fabric interface differently: ib0 on the first node, ib1 on the second.
  const auto lines = linesOfTwoProcesses("01");
  auto run = [&](std::vector<std::string> rank_ifnames) {
    JobCheck check(CheckMode::strict, {true, {"ib0", "ib1"}, std::move(rank_ifnames)}, 2);
    check.onSummary({{"t", "nccl"}, {"r", 0}, {"lines", lines[0]}});
    REQUIRE(check.onSummary({{"t", "nccl"}, {"r", 1}, {"lines", lines[1]}}));
    return check.decision();
  };
  const auto mixed = run({"ib0", "ib1"});
  CHECK(mixed.action == Action::fail);
  CHECK(mixed.reason.find("NCCL bootstraps off the planned interface: rank 1 on ib0 (its node's is ib1)") !=
        std::string::npos);
  CHECK(mixed.reason.find("rank 0") == std::string::npos);
  CHECK(run({"ib0", "ib0"}).action == Action::none);  // both nodes planned on ib0
  CHECK(run({}).action == Action::none);              // nodes unknown: any planned name passes
}

TEST_CASE("nccl check: RDMA through a net plugin (AWS Libfabric) counts as RDMA") {
  auto report = reportOf("04");  // EFA through aws-ofi-nccl
  REQUIRE(report.transport == Transport::plugin);
  CHECK(decide(report, {true, {}, {}}, CheckMode::strict).action == Action::none);
}

TEST_CASE("nccl check: the plan's network choice gives the expectation") {
  tlaunch::NetworkChoice choice;
  choice.rdma = true;
  choice.nodes.resize(2);
  choice.nodes[0].ifname = "ib0";
  choice.nodes[1].ifname = "ib1";
  auto e = expectationFromNetwork(&choice);
  CHECK(e.rdma);
  CHECK(e.ifnames == std::vector<std::string>{"ib0", "ib1"});
  CHECK_FALSE(expectationFromNetwork(nullptr).rdma);  // loopback: no network chosen
  CHECK(expectationFromNetwork(nullptr).ifnames.empty());
}

TEST_CASE("nccl check: the frontend decides once every rank has reported, each rank once") {
  // Fixture 02 as two daemons would send it: each rank's lines.
  const auto lines = linesOfTwoProcesses("02");
  JobCheck check(CheckMode::strict, {true, {}, {}}, 2);
  CHECK_FALSE(check.onSummary({{"t", "nccl"}, {"r", 0}, {"lines", lines[0]}}));
  CHECK_FALSE(check.onSummary({{"t", "nccl"}, {"r", 0}, {"lines", lines[0]}}));  // again: ignored
  CHECK_FALSE(check.onSummary({{"t", "nccl"}, {"r", 7}, {"lines", lines[1]}}));  // not a rank
  CHECK_FALSE(check.complete());
  CHECK(check.toJson()["complete"] == false);
  CHECK(check.onSummary({{"t", "nccl"}, {"r", 1}, {"lines", lines[1]}}));
  CHECK(check.complete());
  CHECK(check.report().transport == Transport::socket);
  CHECK(check.decision().action == Action::fail);
  auto j = check.toJson();
  CHECK(j["action"] == "fail");
  CHECK(j["verdict"] == check.report().verdict);
  CHECK(j["transport"] == "Socket");
}
