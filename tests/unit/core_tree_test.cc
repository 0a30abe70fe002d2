#include <catch2/catch.hpp>

#include <set>

#include "bootstrap/tree_shape.h"

using namespace tlaunch;

TEST_CASE("tree: every node has one parent, and is its parent's child", "[tree]") {
  for (int n : {1, 5, 32, 33, 100, 1000, 4096}) {
    for (int k : {2, 3, 32, 64}) {
      TreeShape t{n, k};
      std::multiset<int> seen;
      for (int v = -1; v < n; ++v)
        for (int c : t.childrenOf(v)) {
          REQUIRE(t.parentOf(c) == v);
          seen.insert(c);
        }
      REQUIRE(static_cast<int>(seen.size()) == n);  // all reached, none twice
      REQUIRE(static_cast<int>(std::set<int>(seen.begin(), seen.end()).size()) == n);
      for (int v = -1; v < n; ++v) REQUIRE(static_cast<int>(t.childrenOf(v).size()) <= k);
    }
  }
}

TEST_CASE("tree: the frontend talks to k daemons, 1000 nodes are 2 levels at k=32", "[tree]") {
  TreeShape t{1000, 32};
  REQUIRE(t.childrenOf(-1).size() == 32);
  REQUIRE(t.depth() == 2);
  REQUIRE(TreeShape{32, 32}.depth() == 1);  // a star: what the session runs today
  REQUIRE(TreeShape{33, 32}.depth() == 2);
  REQUIRE(t.subtreeOf(-1).size() == 1000);
  // Node 0's subtree: itself and its 32 children.
  REQUIRE(t.subtreeOf(0).size() == 33);
  REQUIRE(t.parentOf(32) == 0);
  REQUIRE(t.parentOf(31) == -1);
}
