// Slurm hostlist expressions: expansion, compression, errors.
#include <catch2/catch.hpp>

#include "launcher/hostlist.h"

using tlaunch::compressHostlist;
using tlaunch::expandHostlist;
using Names = std::vector<std::string>;

TEST_CASE("hosts: hostlist: plain names and ranges expand in order", "[hosts][hostlist]") {
  CHECK(*expandHostlist("node1") == Names{"node1"});
  CHECK(*expandHostlist("a,b , c") == Names{"a", "b", "c"});
  CHECK(*expandHostlist("node[1-3]") == Names{"node1", "node2", "node3"});
  CHECK(*expandHostlist("n[3,1-2]") == Names{"n3", "n1", "n2"});
  CHECK(*expandHostlist("n[5]") == Names{"n5"});
}

TEST_CASE("hosts: hostlist: zero padding is kept from the lower bound", "[hosts][hostlist]") {
  CHECK(*expandHostlist("gpu[01-04,07],cpu[1-3]") ==
        Names{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07", "cpu1", "cpu2", "cpu3"});
  CHECK(*expandHostlist("n[08-11]") == Names{"n08", "n09", "n10", "n11"});
  CHECK(*expandHostlist("n[8-11]") == Names{"n8", "n9", "n10", "n11"});
  CHECK(*expandHostlist("n[098-101]") == Names{"n098", "n099", "n100", "n101"});
}

TEST_CASE("hosts: hostlist: several bracket groups, leftmost slowest, suffixes", "[hosts][hostlist]") {
  CHECK(*expandHostlist("rack[1-2]-node[01-02]") ==
        Names{"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"});
  CHECK(*expandHostlist("n[1-2].ib,login") == Names{"n1.ib", "n2.ib", "login"});
}

TEST_CASE("hosts: hostlist: bad syntax is an error quoting the expression", "[hosts][hostlist]") {
  for (const char* bad : {"node[1-3", "node1-3]", "node[]", "node[a-b]", "node[3-1]", "node[1,,2]", "node[[1]]",
                          "node[1-2-3]", "node[1234567890]", "", " , "}) {
    INFO(bad);
    auto r = expandHostlist(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == tlaunch::Errc::usage);
    CHECK_THAT(r.error().message, Catch::Contains("'" + std::string(bad) + "'"));
  }
  CHECK_THAT(expandHostlist("node[3-1]").error().message, Catch::Contains("backwards"));
}

TEST_CASE("hosts: hostlist: huge expansions are refused, not allocated", "[hosts][hostlist]") {
  auto r = expandHostlist("a[0-999999]b[0-9]");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("more than"));
}

TEST_CASE("hosts: hostlist: compress merges neighbours and round-trips", "[hosts][hostlist]") {
  CHECK(compressHostlist({"node01", "node02", "node03", "node07"}) == "node[01-03,07]");
  CHECK(compressHostlist({"node9", "node10", "node11"}) == "node[9-11]");
  CHECK(compressHostlist({"login", "n1"}) == "login,n1");
  CHECK(compressHostlist({}).empty());
  const std::vector<Names> samples{
      {"n1", "n01", "n001"},
      {"gpu01", "gpu02", "cpu1", "gpu03"},
      {"n1.ib", "n2.ib", "n3.eth"},
      {"rack1-node01", "rack1-node02", "rack2-node01"},
      {"n098", "n099", "n100", "n101", "n0"},
      {"n3", "n1", "n2", "n2"},
      {"x", "y0", "y00", "y10"},
  };
  for (const auto& names : samples) {
    const std::string expr = compressHostlist(names);
    INFO(expr);
    auto back = expandHostlist(expr);
    REQUIRE(back);
    CHECK(*back == names);
  }
}

TEST_CASE("hosts: hostlist: splitOutsideBrackets ignores separators inside brackets", "[hosts][hostlist]") {
  auto parts = tlaunch::splitOutsideBrackets("a[1,2]:0,1@b", '@');
  REQUIRE(parts.size() == 2);
  CHECK(parts[0] == "a[1,2]:0,1");
  CHECK(parts[1] == "b");
  CHECK(tlaunch::splitOutsideBrackets("n[1,2],m", ',').size() == 2);
}
