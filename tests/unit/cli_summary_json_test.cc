// --summary-json: whose exit status it is, and what the session said.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "launcher/summary_json.h"

using namespace tlaunch;

TEST_CASE("a rank killed by a signal: origin rank with its node and the signal") {
  JobOutcome o;
  o.exit_code = 137;
  o.failed_rank = 3;
  o.summary = "rank 3 on node local1 was killed by signal 9 (Killed)";
  o.failed_node = "local1";  // filled by the session
  o.signal = 9;
  Json j = outcomeToJson("tl-x", o, 1.5);
  CHECK(j["origin"] == "rank");
  CHECK(j["exit_status"] == 137);
  CHECK(j["failed_rank"] == 3);
  CHECK(j["failed_node"] == "local1");
  CHECK(j["lost_nodes"] == Json::array());  // a rank failed: no node was lost
  CHECK(j["signal"] == 9);
  CHECK(j["reason"] == o.summary);
  CHECK(j["phase_seconds"].is_null());
}

TEST_CASE("tlaunch's own failure and a success") {
  JobOutcome o;
  o.exit_code = 64;
  o.summary = "no program given";
  Json j = outcomeToJson("tl-x", o, 0);
  CHECK(j["origin"] == "tlaunch");
  CHECK(j["meaning"] == "usage");
  CHECK(j["failed_rank"].is_null());
  CHECK(outcomeToJson("tl-x", JobOutcome{}, 0)["origin"] == "none");
}

TEST_CASE("the file is written whole") {
  auto path = std::filesystem::temp_directory_path() / "tlaunch-summary-test.json";
  REQUIRE(writeSummaryJson(path.string(), Json{{"a", 1}}));
  std::ifstream in(path);
  CHECK(Json::parse(in)["a"] == 1);
  std::filesystem::remove(path);
  CHECK_FALSE(writeSummaryJson("/nonexistent-dir/x.json", Json::object()));
}
