// Start failures gathered into one report (launcher/start_failure_report.h): every node that
// could not be started is named in one run, causes grouped, and the job ends as soon as every
// node has connected or failed, or a window after the first failure.
#include <catch2/catch.hpp>

#include "launcher/start_failure_report.h"

using namespace tlaunch;
using Clock = StartFailureReport::Clock;
using namespace std::chrono_literals;

namespace {

// ssh's own words name the node's address, which differs from node to node.
std::string noRoute(const std::string& node, int address = 9) {
  return node + ": no route to " + node + ": the node is down or not reachable from this host's network\n"
         "  ssh said: ssh: connect to host " + node + " (10.0.0." + std::to_string(address) + ") port 22: No route to host";
}

}  // namespace

TEST_CASE("start failures: one failure reads as it always did") {
  StartFailureReport r(12s);
  const auto t0 = Clock::now();
  CHECK(r.empty());
  CHECK_FALSE(r.due(t0, 0));
  r.add(1, "dead1", noRoute("dead1"), true, t0);
  CHECK(r.has(1));
  CHECK_FALSE(r.has(0));
  CHECK(r.describe(3, {}) == "could not start tlaunchd on node dead1: " + noRoute("dead1"));
  CHECK(r.nodes() == std::vector<std::string>{"dead1"});
}

TEST_CASE("start failures: due once every node has connected or failed, else after the window") {
  StartFailureReport r(12s);
  const auto t0 = Clock::now();
  r.add(1, "dead1", noRoute("dead1"), true, t0);
  CHECK_FALSE(r.due(t0 + 1s, 2));   // two nodes still starting: wait for them
  CHECK(r.due(t0 + 1s, 0));         // nothing left to wait for
  CHECK_FALSE(r.due(t0 + 11s, 1));
  CHECK(r.due(t0 + 12s, 1));        // the window is counted from the first failure
  r.add(1, "dead1", "a second word on the same node", true, t0 + 5s);
  CHECK(r.nodes().size() == 1);
}

TEST_CASE("start failures: several are grouped by cause, each cause once with the nodes it hit") {
  StartFailureReport r(12s);
  const auto t0 = Clock::now();
  r.add(4, "dead4", noRoute("dead4", 4), true, t0);
  r.add(7, "n7", "tlaunchd not found at /opt/x on n7: install tlaunch there or pass --daemon-path", true, t0 + 1s);
  r.add(2, "dead2", noRoute("dead2", 2), true, t0 + 2s);
  r.add(9, "dead9", noRoute("dead9", 9), true, t0 + 3s);
  r.add(11, "n11", "could not run ssh: fork: Resource temporarily unavailable", false, t0 + 3s);
  CHECK(r.describe(1000, {"slow1", "slow2"}) ==
        "could not start tlaunchd on 5 of 1000 nodes:\n"
        "  " + noRoute("dead4", 4).replace(noRoute("dead4", 4).find('\n'), 1, "\n  ") + "\n"
        "    the same on 2 more nodes: dead2, dead9\n"
        "  n7: tlaunchd not found at /opt/x on n7: install tlaunch there or pass --daemon-path\n"
        "  n11: could not run ssh: fork: Resource temporarily unavailable\n"
        "  2 more nodes had not connected yet: slow1, slow2");
  CHECK(r.nodes() == std::vector<std::string>{"dead4", "n7", "dead2", "dead9", "n11"});
  // n11's failure is this host's (ssh could not be forked here): no reason to drop the node.
  CHECK(r.nodeSide() == std::vector<std::string>{"dead4", "n7", "dead2", "dead9"});
}

TEST_CASE("start failures: a name inside another word is not the node's, and long lists are cut") {
  StartFailureReport r(12s);
  const auto t0 = Clock::now();
  // "n1" appears in "n10" and "n1.example": only whole names are the node's.
  r.add(1, "n1", "n1: sshd on n1 refused; n10 is its twin; see n1.", true, t0);
  r.add(10, "n10", "n10: sshd on n10 refused; n10 is its twin; see n10.", true, t0);
  const std::string text = r.describe(2, {});
  CHECK(text.find("the same on") == std::string::npos);  // "n10 is its twin" differs once names are out
  StartFailureReport many(12s);
  std::vector<std::string> names;
  for (int i = 0; i < 30; ++i) many.add(i, "d" + std::to_string(i), "d" + std::to_string(i) + ": timed out", true, t0);
  const std::string listed = many.describe(30, {});
  CHECK_THAT(listed, Catch::StartsWith("could not start tlaunchd on 30 of 30 nodes:\n  d0: timed out\n"
                                       "    the same on 29 more nodes: d1, d2, "));
  CHECK_THAT(listed, Catch::EndsWith("d19, d20 and 9 more"));
}

TEST_CASE("start failures: many causes are cut to ten lines, nodes a failed node was to start are named") {
  StartFailureReport r(12s);
  const auto t0 = Clock::now();
  for (int i = 0; i < 15; ++i) {
    const std::string node = "n" + std::to_string(i);
    r.add(i, node, node + ": cause number " + std::to_string(i), true, t0);
  }
  r.add(15, "n15", "n15: cause number 14", true, t0);
  const std::string text = r.describe(100, {}, {"c1", "c2"});
  CHECK_THAT(text, Catch::StartsWith("could not start tlaunchd on 16 of 100 nodes:\n  n0: cause number 0\n"));
  CHECK_THAT(text, Catch::Contains("\n  n8: cause number 8\n  6 other causes on 7 nodes: n9, n10, n11, n12, n13, n14, n15\n"));
  CHECK(text.find("cause number 9") == std::string::npos);
  CHECK_THAT(text, Catch::EndsWith("\n  2 more nodes were to be started by a node that failed: c1, c2"));
}
