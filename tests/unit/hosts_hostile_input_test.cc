// Host lists and hostfiles that once crashed or stalled the parsers (found by tests/fuzz):
// deep patterns, many big expressions, --include against a big host list.
#include <catch2/catch.hpp>

#include <string>

#include "launcher/hostlist.h"
#include "launcher/node_source.h"

using namespace tlaunch;

TEST_CASE("hosts: hostlist: a pattern of 100,000 bracket groups expands without recursion", "[hosts][hostlist]") {
  std::string pattern = "a";
  for (int i = 0; i < 100000; ++i) pattern += "[1]";
  auto names = expandHostlist(pattern);
  REQUIRE(names);
  REQUIRE(names->size() == 1);
  CHECK(names->front() == "a" + std::string(100000, '1'));
  // Several groups still vary leftmost slowest.
  CHECK(*expandHostlist("[1-2]x[3-4][5]") == std::vector<std::string>{"1x35", "1x45", "2x35", "2x45"});
}

TEST_CASE("hosts: hostlist: a smaller limit is checked before expanding", "[hosts][hostlist]") {
  CHECK(expandHostlist("n[1-10]", 10));
  auto over = expandHostlist("n[1-10],m", 10);
  REQUIRE_FALSE(over);
  CHECK_THAT(over.error().message, Catch::Contains("than the 10 still allowed"));
}

TEST_CASE("hosts: hostfile: 100,000 names in all, refused before expanding more", "[hosts][node_source]") {
  // Each line alone is under the hostlist limit; 20 of them would be 1.2 million entries. The
  // second line is refused before it is expanded (--hosts and --include/--exclude count the
  // same way, through expandHostSpec).
  std::string content;
  for (int i = 0; i < 20; ++i) content += "h" + std::to_string(i) + "[0-59999]\n";
  auto file = parseHostfile(content, "big.hosts");
  REQUIRE_FALSE(file);
  CHECK_THAT(file.error().message, Catch::Contains("big.hosts:2: ") && Catch::Contains("still allowed"));
}

TEST_CASE("hosts: --include of 50,000 names among 50,000 hosts is not quadratic", "[hosts][node_source]") {
  auto hosts = parseHostsOption("n[00000-49999]:2");
  REQUIRE(hosts);
  auto chosen = applyIncludeExclude(*hosts, "N[00000-49999]:1", "");  // names compare case-insensitively
  REQUIRE(chosen);
  REQUIRE(chosen->size() == 50000);
  CHECK(chosen->back().name == "n49999");
  CHECK(chosen->back().only_slots == std::vector<int>{1});
  // A long --hosts list is read once, not copied once per item.
  std::string many;
  for (int i = 0; i < 20000; ++i) many += (i ? ",h" : "h") + std::to_string(i);
  auto parsed = parseHostsOption(many);
  REQUIRE(parsed);
  CHECK(parsed->size() == 20000);
}
