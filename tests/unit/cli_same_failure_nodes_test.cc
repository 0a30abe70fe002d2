// The same failure on several nodes, said once (launcher/same_failure_nodes.h).
#include <catch2/catch.hpp>

#include "launcher/same_failure_nodes.h"

using namespace tlaunch;

TEST_CASE("the same failure on several nodes is one message naming them all") {
  const std::vector<NodeFailureText> in = {
      {"n1", "program 'x' not found on node n1 (PATH=/bin)"},
      {"n2", "program 'x' not found on node n2 (PATH=/bin)"},
      {"n3", "working directory /d does not exist on node n3"},
      {"n4", "program 'x' not found on node n4 (PATH=/bin)"},
  };
  const auto out = mergeSameFailures(in);
  REQUIRE(out.size() == 2);
  CHECK(out[0].message == "program 'x' not found on nodes n[1-2,4] (PATH=/bin)");
  CHECK(out[0].first == 0);
  CHECK(out[1].message == "working directory /d does not exist on node n3");
  CHECK(out[1].first == 2);
}

TEST_CASE("a node's name inside another word is not the node") {
  // "n1" is part of "/opt/n1bin": only the whole word names the node.
  const auto out = mergeSameFailures({{"n1", "/opt/n1bin/x does not exist on node n1"},
                                      {"n2", "/opt/n1bin/x does not exist on node n2"}});
  REQUIRE(out.size() == 1);
  CHECK(out[0].message == "/opt/n1bin/x does not exist on nodes n[1-2]");
  CHECK(mergeSameFailures({}).empty());
}
