// The gathering of a job's fences across nodes (bootstrap/fence_collector.h), as the frontend
// and the PMIx test harness run it.
#include <catch2/catch.hpp>

#include <utility>

#include "bootstrap/fence_collector.h"

using tlaunch::FenceCollector;

TEST_CASE("fence collector: complete when the last node contributes, in node order whatever the arrival order") {
  FenceCollector<unsigned long> f;
  CHECK_FALSE(f.contribute(1, 2, 3, "c"));
  CHECK_FALSE(f.contribute(1, 0, 3, "a"));
  CHECK(f.inProgress() == 1);
  auto all = f.contribute(1, 1, 3, "b");
  REQUIRE(all);
  CHECK(*all == "abc");
  CHECK(f.inProgress() == 0);  // forgotten once complete: the next fence starts afresh
}

TEST_CASE("fence collector: fences are independent, a repeat or an unknown node changes nothing") {
  FenceCollector<std::pair<int, int>> f;  // (job, fence), as the harness keys them
  CHECK_FALSE(f.contribute({1, 7}, 0, 2, "x"));
  CHECK_FALSE(f.contribute({1, 7}, 0, 2, "again"));  // a second contribution of node 0 is ignored
  CHECK_FALSE(f.contribute({1, 7}, 5, 2, "stranger"));  // no node 5 in a 2-node job
  CHECK_FALSE(f.contribute({2, 7}, 1, 2, "other job"));
  auto all = f.contribute({1, 7}, 1, 2, "y");
  REQUIRE(all);
  CHECK(*all == "xy");
  CHECK(f.inProgress() == 1);  // job 2's fence still waits
}

TEST_CASE("fence collector: abandoning returns what was in progress so each can be failed, then nothing is") {
  FenceCollector<unsigned long> f;
  CHECK_FALSE(f.contribute(3, 0, 2, ""));
  CHECK_FALSE(f.contribute(4, 1, 2, ""));
  CHECK(f.abandonAll() == std::vector<unsigned long>{3, 4});
  CHECK(f.inProgress() == 0);
  CHECK(f.abandonAll().empty());
}

TEST_CASE("fence collector: empty contributions (a fence without data) still complete") {
  FenceCollector<unsigned long> f;
  CHECK_FALSE(f.contribute(1, 0, 2, ""));
  auto all = f.contribute(1, 1, 2, "");
  REQUIRE(all);
  CHECK(all->empty());
}

// What a fence holds so far, for the frontend's bound on a result that must fit in one frame.
TEST_CASE("fence collector: the bytes a fence holds so far count each node's share once") {
  FenceCollector<unsigned long> f;
  CHECK(f.bytesSoFar(9) == 0);
  CHECK_FALSE(f.open(9));
  CHECK_FALSE(f.contribute(9, 0, 3, "abcd"));
  CHECK_FALSE(f.contribute(9, 0, 3, "a repeat is not counted"));
  CHECK_FALSE(f.contribute(9, 2, 3, "ef"));
  CHECK(f.open(9));
  CHECK(f.bytesSoFar(9) == 6);
  f.abandon(9);
  CHECK_FALSE(f.open(9));
  CHECK(f.bytesSoFar(9) == 0);
}
