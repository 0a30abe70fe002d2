// Preflight results as a table for people and JSON for programs.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "binding/preflight/preflight_report.h"

using namespace tlaunch;

namespace {

std::vector<PreflightItem> sample() {
  return {
      {"port_state", "node1", "mlx4_0:1", PreflightStatus::pass, "ACTIVE (LinkUp)", "ACTIVE (LinkUp)", ""},
      {"memlock", "node1", "", PreflightStatus::fail, "8 MiB", "unlimited (at least 1024 MiB)",
       "run `ulimit -l unlimited` before tlaunch (the hard limit allows it)"},
      {"port_state", "node2", "qib0:1", PreflightStatus::warn, "ACTIVE (Polling)", "ACTIVE (LinkUp)", "check the cable"},
      {"uverbs", "node2", "", PreflightStatus::skip, "sysfs root is a capture", "", ""},
      {"cross_rate", "", "", PreflightStatus::pass, "56 Gb/sec (4X FDR) x1", "the same port rates on every node", ""},
  };
}

}  // namespace

TEST_CASE("the table has one block per node, aligned columns, and the fixes") {
  std::string table = renderPreflightTable(sample());
  CHECK(table ==
        "node1 (1 pass, 0 warn, 1 fail, 0 skip)\n"
        "  CHECK       DEVICE    STATUS  FOUND            EXPECTED\n"
        "  port_state  mlx4_0:1  pass    ACTIVE (LinkUp)  ACTIVE (LinkUp)\n"
        "  memlock               fail    8 MiB            unlimited (at least 1024 MiB)\n"
        "  fix memlock: run `ulimit -l unlimited` before tlaunch (the hard limit allows it)\n"
        "node2 (0 pass, 1 warn, 0 fail, 1 skip)\n"
        "  CHECK       DEVICE  STATUS  FOUND                    EXPECTED\n"
        "  port_state  qib0:1  warn    ACTIVE (Polling)         ACTIVE (LinkUp)\n"
        "  uverbs              skip    sysfs root is a capture\n"
        "  fix port_state qib0:1: check the cable\n"
        "all nodes (1 pass, 0 warn, 0 fail, 0 skip)\n"
        "  CHECK       DEVICE  STATUS  FOUND                  EXPECTED\n"
        "  cross_rate          pass    56 Gb/sec (4X FDR) x1  the same port rates on every node\n");
  CHECK(preflightSummary(sample()) == "2 pass, 1 warn, 1 fail, 1 skip");
  CHECK_FALSE(preflightPassed(sample()));
}

TEST_CASE("a finding of several lines keeps the table's columns: its first line there, the rest below") {
  std::vector<PreflightItem> items = {
      {"network", "", "", PreflightStatus::fail, "2 node(s) lack a usable fabric interface:\n  n1: no RDMA device\n  n2: ib0 down",
       "one fabric subnet common to every node", "name it with --net-if"},
      {"cross_rate", "", "", PreflightStatus::pass, "100 Gb/sec", "the same port rates on every node", ""}};
  CHECK(renderPreflightTable(items) ==
        "all nodes (1 pass, 0 warn, 1 fail, 0 skip)\n"
        "  CHECK       DEVICE  STATUS  FOUND                                              EXPECTED\n"
        "  network             fail    2 node(s) lack a usable fabric interface: (below)  one fabric subnet common to every node\n"
        "  cross_rate          pass    100 Gb/sec                                         the same port rates on every node\n"
        "  network:\n"
        "      n1: no RDMA device\n"
        "      n2: ib0 down\n"
        "  fix network: name it with --net-if\n");
}

TEST_CASE("preflight JSON round-trips and rejects malformed reports") {
  auto items = sample();
  nlohmann::json j = preflightToJson(items);
  CHECK(j[1]["status"] == "fail");
  CHECK(j[1]["fix"] == items[1].fix);
  auto back = preflightFromJson(nlohmann::json::parse(j.dump()));
  REQUIRE(back);
  CHECK(*back == items);

  auto bad = j;
  bad[0]["status"] = "maybe";
  auto r = preflightFromJson(bad);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == Errc::protocol);
  CHECK(r.error().message.find("maybe") != std::string::npos);
  bad = j;
  bad[2].erase("found");
  CHECK_FALSE(preflightFromJson(bad));
  CHECK_FALSE(preflightFromJson(nlohmann::json::object()));
}
