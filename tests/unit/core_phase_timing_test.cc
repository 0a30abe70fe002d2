// --verbose's per-phase timing line: the slow nodes stand out, whatever the node count.
#include <catch2/catch.hpp>

#include "launcher/phase_timing.h"

using tlaunch::phaseTimingSummary;

TEST_CASE("phase timing names the slowest nodes first, with the median") {
  CHECK(phaseTimingSummary({{"node1", 47.2}, {"node2", 246.0}, {"node3", 352.4}, {"node4", 138.0}}) ==
        "4 nodes in 352 ms (median 192 ms; slowest: node3 352, node2 246, node4 138)");
  CHECK(phaseTimingSummary({{"a", 10}, {"b", 10}}, 1) == "2 nodes in 10 ms (median 10 ms; slowest: a 10)");
  CHECK(phaseTimingSummary({{"solo", 5.6}}) == "1 node in 6 ms (solo)");
  CHECK(phaseTimingSummary({}) == "no nodes");
}

TEST_CASE("phase timing of 1,000 nodes stays one short line") {
  std::vector<std::pair<std::string, double>> times;
  for (int i = 0; i < 1000; ++i) times.emplace_back("n" + std::to_string(i), i == 517 ? 4000.0 : 100.0 + i % 7);
  const std::string line = phaseTimingSummary(times);
  CHECK(line.rfind("1000 nodes in 4000 ms (median 103 ms; slowest: n517 4000, ", 0) == 0);
  CHECK(line.size() < 120);
}
