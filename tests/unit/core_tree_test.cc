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

TEST_CASE("tree: routing finds the child on the way to a node, and nothing outside the subtree", "[tree]") {
  for (int k : {2, 3, 32}) {
    TreeShape t{200, k};
    for (int v = -1; v < t.nodes; ++v) {
      const auto sub = t.subtreeOf(v);
      const std::set<int> in(sub.begin(), sub.end());
      for (int x = 0; x < t.nodes; ++x) {
        REQUIRE(t.isInSubtree(x, v) == (in.count(x) == 1));
        const int c = t.childToward(v, x);
        if (x == v || !in.count(x)) {
          REQUIRE(c == -2);
        } else {
          REQUIRE(t.parentOf(c) == v);
          REQUIRE(t.isInSubtree(x, c));
        }
      }
    }
  }
  TreeShape t{7, 2};  // 0,1 under the frontend; 2,3 under 0; 4,5 under 1; 6 under 2
  REQUIRE(t.childToward(-1, 6) == 0);
  REQUIRE(t.childToward(0, 6) == 2);
  REQUIRE(t.childToward(1, 6) == -2);
  REQUIRE_FALSE(t.isInSubtree(7, -1));
  REQUIRE_FALSE(t.isInSubtree(-1, 0));
}
