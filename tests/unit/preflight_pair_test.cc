// The cross-node RDMA write test: the endpoint against fake HCAs joined into one fabric.
// The fake stands in only for the hardware (no HCA here); the real libibverbs path is covered
// by preflight_verbs_test.cc up to where a device would be needed. The coordinator across
// nodes is in preflight_pair_fabric_test.cc.
#include "preflight_pair_support.h"

using namespace tlaunch;
using namespace tlaunch::testing;

TEST_CASE("an RDMA write between two nodes' endpoints arrives intact and is verified by the target") {
  FakeCluster cluster(2);
  {
    auto a = RdmaEndpoint::open(cluster[0], spec());
    auto b = RdmaEndpoint::open(cluster[1], spec());
    REQUIRE(a);
    REQUIRE(b);
    CHECK((*a)->info().lid == 0x100);
    CHECK((*b)->info().lid == 0x200);
    CHECK_FALSE((*a)->info().global);
    auto c = (*a)->connect((*b)->info());
    INFO((c ? "" : c.error().error));
    REQUIRE(c);
    REQUIRE((*b)->connect((*a)->info()));
    CHECK(cluster[0].rtrs.back().dlid == 0x200);
    CHECK(cluster[0].rtrs.back().dest_qpn == (*b)->info().qpn);

    CHECK_FALSE((*b)->verify(42, 64 * 1024));  // nothing written yet
    auto w = (*a)->writeTo((*b)->info(), quick(42));
    REQUIRE(w);
    CHECK(w->bytes == 64 * 1024);
    CHECK(w->bandwidth_gbps > 0);
    CHECK(w->latency_us > 0);
    CHECK(cluster[0].writes == 1 + 4 + 3);
    auto v = (*b)->verify(42, w->bytes);
    REQUIRE(v);
    CHECK(*v == 64 * 1024);
    auto wrong = (*b)->verify(43, w->bytes);  // another seed's pattern
    REQUIRE_FALSE(wrong);
    CHECK(wrong.error().stage == "compare");
  }
  CHECK(cluster.clean());
}

TEST_CASE("RoCE endpoints route by the peer's GID at the smaller MTU") {
  FakeCluster cluster(2, 1, true);
  cluster[1].devices[0].ports[0].attr.active_mtu = 1024;
  auto a = RdmaEndpoint::open(cluster[0], spec(1, 3));
  auto b = RdmaEndpoint::open(cluster[1], spec(1, 3));
  REQUIRE(a);
  REQUIRE(b);
  CHECK((*a)->info().global);
  REQUIRE((*a)->connect((*b)->info()));
  const VerbsRtr& rtr = cluster[0].rtrs.back();
  CHECK(rtr.global);
  CHECK(rtr.dgid == cluster[1].devices[0].ports[0].gids[3]);
  CHECK(rtr.sgid_index == 3);
  CHECK(rtr.path_mtu == 1024);

  auto noGid = RdmaEndpoint::open(cluster[0], spec(1, -1));
  REQUIRE_FALSE(noGid);
  CHECK(noGid.error().stage == "query_gid");
}

TEST_CASE("an endpoint refuses a peer on another link layer and names both") {
  FakeCluster ib(1), roce(1, 1, true);
  auto a = RdmaEndpoint::open(ib[0], spec());
  auto b = RdmaEndpoint::open(roce[0], spec(1, 3));
  REQUIRE(a);
  REQUIRE(b);
  auto c = (*a)->connect((*b)->info());
  REQUIRE_FALSE(c);
  CHECK(c.error().stage == "qp_rtr");
  CHECK_THAT(c.error().error, Catch::Contains("InfiniBand") && Catch::Contains("RoCE"));
}

TEST_CASE("every failing verbs call names its stage and releases what the endpoint holds") {
  const std::vector<std::pair<std::string, std::string>> calls = {
      {"openDevice", "open_device"}, {"queryPort", "query_port"}, {"allocPd", "alloc_pd"}, {"regMr", "reg_mr"},
      {"createCq", "create_cq"},     {"createRcQp", "create_qp"}, {"qpToInit", "qp_init"}, {"qpToRtr", "qp_rtr"},
      {"qpToRts", "qp_rts"},         {"postRdmaWrite", "post_write"}, {"pollCq", "poll_cq"}};
  for (const auto& [call, stage] : calls) {
    SECTION(call) {
      FakeCluster cluster(2);
      cluster[0].fail_call = call;
      {
        std::string seen;
        auto a = RdmaEndpoint::open(cluster[0], spec());
        auto b = RdmaEndpoint::open(cluster[1], spec());
        REQUIRE(b);
        if (!a) {
          seen = a.error().stage;
        } else if (auto c = (*a)->connect((*b)->info()); !c) {
          seen = c.error().stage;
        } else {
          REQUIRE((*b)->connect((*a)->info()));
          auto w = (*a)->writeTo((*b)->info(), quick());
          REQUIRE_FALSE(w);
          seen = w.error().stage;
        }
        CHECK(seen == stage);
      }
      CHECK(cluster.clean());
    }
  }
}

TEST_CASE("a write that never completes times out, one that fails says the completion status") {
  for (auto mode : {FakeVerbs::Completion::never, FakeVerbs::Completion::error}) {
    FakeCluster cluster(2);
    cluster[0].completion = mode;
    auto a = RdmaEndpoint::open(cluster[0], spec());
    auto b = RdmaEndpoint::open(cluster[1], spec());
    REQUIRE((*a)->connect((*b)->info()));
    REQUIRE((*b)->connect((*a)->info()));
    auto w = (*a)->writeTo((*b)->info(), quick());
    REQUIRE_FALSE(w);
    CHECK(w.error().stage == "poll_cq");
    CHECK_THAT(w.error().error, Catch::Contains(mode == FakeVerbs::Completion::never ? "timed out" : "retry counter exceeded"));
  }
}

TEST_CASE("endpoint data survives the control plane's encoding, malformed data is refused") {
  RdmaEndpointInfo info{0x1234, true, GidBytes{1, 2, 3}, 0xabcdef, 4096, 0x7fff00001000, 0xdeadbeef, 1 << 20};
  auto back = rdmaInfoFromJson(rdmaInfoToJson(info));
  REQUIRE(back);
  CHECK(*back == info);
  auto j = rdmaInfoToJson(info);
  j.erase("qpn");
  CHECK_FALSE(rdmaInfoFromJson(j));
  j = rdmaInfoToJson(info);
  j["gid"] = nlohmann::json::binary({1, 2});
  CHECK_FALSE(rdmaInfoFromJson(j));
  CHECK_FALSE(rdmaInfoFromJson(nlohmann::json::array()));
  RdmaReply bad = rdmaReplyFromJson({{"ok", true}});
  CHECK_FALSE(bad.ok);
  CHECK(bad.stage == "protocol");
}
