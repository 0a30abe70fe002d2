// The control protocol's dispatch table (bootstrap/message_router.h).
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "bootstrap/message_router.h"

using tlaunch::Json;
using tlaunch::MessageRouter;

namespace {

struct Seen {
  std::vector<std::string> calls;  // "handler:type:link"
};

}  // namespace

TEST_CASE("router: each type reaches its own handler with the message and the context") {
  Seen seen;
  MessageRouter<int> r;
  r.on("exit", [&](const std::string& t, Json&& m, int link) {
    seen.calls.push_back("exit:" + t + ":" + std::to_string(link) + ":" + std::to_string(m["r"].get<int>()));
  });
  r.on({"fence", "abort"}, [&](const std::string& t, Json&&, int link) {
    seen.calls.push_back("pmix:" + t + ":" + std::to_string(link));
  });
  CHECK(r.route(Json{{"t", "exit"}, {"r", 7}}, 2));
  CHECK(r.route(Json{{"t", "abort"}}, 3));
  CHECK(r.route(Json{{"t", "fence"}}, 1));
  CHECK(seen.calls == std::vector<std::string>{"exit:exit:2:7", "pmix:abort:3", "pmix:fence:1"});
}

TEST_CASE("router: a prefix claims the types that start with it, an exact type wins over it") {
  std::vector<std::string> got;
  MessageRouter<> r;
  r.onPrefix("rdma_", [&](const std::string& t, Json&&) { got.push_back("prefix:" + t); });
  r.on("rdma_special", [&](const std::string& t, Json&&) { got.push_back("exact:" + t); });
  CHECK(r.route(Json{{"t", "rdma_open"}}));
  CHECK(r.route(Json{{"t", "rdma_special"}}));
  CHECK_FALSE(r.route(Json{{"t", "rdma"}}));  // shorter than the prefix
  CHECK(got == std::vector<std::string>{"prefix:rdma_open", "exact:rdma_special"});
}

TEST_CASE("router: unknown types and messages without a string type are not routed") {
  int calls = 0;
  MessageRouter<> r;
  r.on("ping", [&](const std::string&, Json&&) { ++calls; });
  CHECK_FALSE(r.route(Json{{"t", "pong"}}));
  CHECK_FALSE(r.route(Json{{"t", 5}}));
  CHECK_FALSE(r.route(Json{{"x", "ping"}}));
  CHECK_FALSE(r.route(Json::array({"ping"})));
  CHECK_FALSE(r.route(Json()));
  CHECK(calls == 0);
  CHECK(r.handles("ping"));
  CHECK_FALSE(r.handles("pong"));
}

TEST_CASE("router: a type registered twice is refused at construction, not resolved silently") {
  MessageRouter<> r;
  r.on("exit", [](const std::string&, Json&&) {});
  CHECK_THROWS_AS(r.on("exit", [](const std::string&, Json&&) {}), std::logic_error);
  CHECK_THROWS_AS(r.on({"fence", "exit"}, [](const std::string&, Json&&) {}), std::logic_error);
  r.onPrefix("rdma_", [](const std::string&, Json&&) {});
  CHECK_THROWS_AS(r.onPrefix("rdma_", [](const std::string&, Json&&) {}), std::logic_error);
}

TEST_CASE("router: types() lists what a side understands, exact types sorted, then prefixes") {
  MessageRouter<> r;
  r.on("start", [](const std::string&, Json&&) {});
  r.on({"prepare", "config"}, [](const std::string&, Json&&) {});
  r.onPrefix("rdma_", [](const std::string&, Json&&) {});
  CHECK(r.types() == std::vector<std::string>{"config", "prepare", "start", "rdma_*"});
}
