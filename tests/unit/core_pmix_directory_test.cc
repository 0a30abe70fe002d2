// The frontend's PMIx publish / lookup store (launcher/pmix_directory.h): a lookup that waits
// for a key named twice, and the bounds that keep the ranks' code from growing it without end.
#include <catch2/catch.hpp>

#include <vector>

#include "bootstrap/pmix_server.h"
#include "launcher/pmix_directory.h"

using namespace tlaunch;

namespace {
struct Sent {
  std::vector<Json> msgs;
  PmixDirectory directory{[this](int, const Json& m) { msgs.push_back(m); }};
  PmixReply lastStatus() const { return static_cast<PmixReply>(getInt(msgs.back(), "status", -1)); }
};

Json publish(int id, int rank, const std::vector<std::string>& keys) {
  Json kv = Json::array();
  for (const auto& k : keys) kv.push_back(Json::array({k, binary("v")}));
  return {{"t", "pub"}, {"id", id}, {"r", rank}, {"kv", kv}};
}
}  // namespace

TEST_CASE("pmix directory: a waiting lookup that names a key twice is answered once it is published") {
  Sent s;
  s.directory.onMessage(0, "lookup", {{"t", "lookup"}, {"id", 1}, {"r", 0}, {"keys", {"a", "a"}}, {"wait", 0}});
  CHECK(s.msgs.empty());  // waits
  s.directory.onMessage(1, "pub", publish(2, 1, {"a"}));
  REQUIRE(s.msgs.size() == 2);
  CHECK(getString(s.msgs[0], "t") == "pub_done");
  CHECK(getString(s.msgs[1], "t") == "lookup_done");
  CHECK(s.lastStatus() == PmixReply::ok);
}

TEST_CASE("pmix directory: past its bounds a publish or a waiting lookup is refused, not stored") {
  Sent s;
  std::vector<std::string> keys;
  for (size_t i = 0; i < PmixDirectory::kMaxEntries; ++i) keys.push_back("k" + std::to_string(i));
  s.directory.onMessage(0, "pub", publish(1, 0, keys));
  REQUIRE(s.lastStatus() == PmixReply::ok);
  s.directory.onMessage(0, "pub", publish(2, 0, {"one more"}));
  CHECK(s.lastStatus() == PmixReply::no_room);
  CHECK(s.directory.entries() == PmixDirectory::kMaxEntries);
  Sent w;  // an empty store: each lookup's scan is short
  for (size_t i = 0; i < PmixDirectory::kMaxWaiters; ++i)
    w.directory.onMessage(0, "lookup", {{"t", "lookup"}, {"id", 10 + i}, {"r", 0}, {"keys", {"never"}}, {"wait", 0}});
  CHECK(w.msgs.empty());  // all of them wait
  w.directory.onMessage(0, "lookup", {{"t", "lookup"}, {"id", 1}, {"r", 0}, {"keys", {"never"}}, {"wait", 0}});
  REQUIRE(w.msgs.size() == 1);
  CHECK(w.lastStatus() == PmixReply::no_room);
}

TEST_CASE("pmix directory: bytes and keys waited for are bounded too") {
  Sent s;
  Json big = {{"t", "pub"}, {"id", 1}, {"r", 0},
              {"kv", Json::array({Json::array({"big", binary(std::string(PmixDirectory::kMaxBytes, 'v'))})})}};
  s.directory.onMessage(0, "pub", big);
  CHECK(s.lastStatus() == PmixReply::no_room);
  CHECK(s.directory.entries() == 0);
  s.directory.onMessage(0, "pub", publish(2, 0, {"small"}));
  CHECK(s.lastStatus() == PmixReply::ok);
  std::vector<std::string> keys;
  for (size_t i = 0; i <= PmixDirectory::kMaxWaitingKeys; ++i) keys.push_back("w" + std::to_string(i));
  s.directory.onMessage(0, "lookup", {{"t", "lookup"}, {"id", 3}, {"r", 0}, {"keys", keys}, {"wait", 0}});
  CHECK(s.lastStatus() == PmixReply::no_room);
  keys.pop_back();  // exactly the bound: it waits
  const size_t before = s.msgs.size();
  s.directory.onMessage(0, "lookup", {{"t", "lookup"}, {"id", 4}, {"r", 0}, {"keys", keys}, {"wait", 0}});
  CHECK(s.msgs.size() == before);
  s.directory.onMessage(0, "lookup", {{"t", "lookup"}, {"id", 5}, {"r", 0}, {"keys", {"x"}}, {"wait", 0}});
  CHECK(s.lastStatus() == PmixReply::no_room);  // no key left to wait for
  s.directory.onRankExit(0);  // the waiter goes with its rank, and its keys with it
  s.directory.onMessage(0, "lookup", {{"t", "lookup"}, {"id", 6}, {"r", 1}, {"keys", {"x"}}, {"wait", 0}});
  CHECK(s.msgs.size() == before + 1);
}

TEST_CASE("pmix directory: a lookup of many keys in a full store finds each, and first-read entries go") {
  Sent s;
  std::vector<std::string> keys;
  for (size_t i = 0; i < PmixDirectory::kMaxEntries; ++i) keys.push_back("k" + std::to_string(i));
  Json pub = publish(1, 0, keys);
  pub["persist"] = 1;  // PMIX_PERSIST_FIRST_READ
  s.directory.onMessage(0, "pub", pub);
  REQUIRE(s.lastStatus() == PmixReply::ok);
  keys.resize(50'000);
  s.directory.onMessage(1, "lookup", {{"t", "lookup"}, {"id", 2}, {"r", 1}, {"keys", keys}, {"wait", 0}});
  REQUIRE(s.lastStatus() == PmixReply::ok);
  REQUIRE(s.msgs.back()["found"].size() == 50'000);
  CHECK(s.msgs.back()["found"][49'999][0] == "k49999");
  CHECK(s.directory.entries() == PmixDirectory::kMaxEntries - 50'000);
  // A waiter answered by a later publish of one of its keys, oldest first.
  s.directory.onMessage(1, "lookup", {{"t", "lookup"}, {"id", 3}, {"r", 1}, {"keys", {"k0", "late"}}, {"wait", 0}});
  s.directory.onMessage(1, "lookup", {{"t", "lookup"}, {"id", 4}, {"r", 2}, {"keys", {"late"}}, {"wait", 0}});
  const size_t before = s.msgs.size();
  s.directory.onMessage(0, "pub", publish(5, 0, {"late", "k0"}));
  REQUIRE(s.msgs.size() == before + 3);
  CHECK(s.msgs[before + 1]["id"] == 3);
  CHECK(s.msgs[before + 2]["id"] == 4);
}

TEST_CASE("pmix directory: a lookup that waits long for a name nobody published is told once, per set of keys") {
  Sent s;
  const auto start = PmixDirectory::Clock::now();
  for (int rank : {3, 0, 1, 2})
    s.directory.onMessage(0, "lookup", {{"t", "lookup"}, {"id", rank}, {"r", rank}, {"keys", {"port"}}, {"wait", 0}});
  s.directory.onMessage(1, "lookup", {{"t", "lookup"}, {"id", 9}, {"r", 9}, {"keys", {"a\x1b", "b"}}, {"wait", 0}});
  CHECK(s.directory.tick(start + std::chrono::seconds(5)).empty());
  const auto notes = s.directory.tick(start + PmixDirectory::kLongWait + std::chrono::seconds(1));
  REQUIRE(notes.size() == 2);
  const std::string joined = notes[0] + "\n" + notes[1];
  CHECK_THAT(joined, Catch::Contains("ranks 0-3 waited 30 s for PMIx name 'port' (MPI_Lookup_name, MPI_Comm_connect) "
                                     "that no rank of this job published"));
  CHECK_THAT(joined, Catch::Contains("rank 9 waited 30 s for PMIx names 'a\\x1b', 'b'"));
  CHECK(s.msgs.empty());  // still waiting: the note answers nothing
  CHECK(s.directory.tick(start + std::chrono::minutes(5)).empty());  // said once
  s.directory.onMessage(1, "pub", publish(20, 5, {"port"}));
  CHECK(s.msgs.size() == 5);  // the publish, and the four lookups it answers
}
