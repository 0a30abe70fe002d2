// A node's launch on the wire (bootstrap/node_launch_json.h): what every node shares (the base
// environment, the variables every rank has, the PMIx geometry) travels once per job and comes
// back whole on the node; a launch that needs a shared part that did not arrive is refused.
#include <catch2/catch.hpp>

#include <algorithm>

#include "bootstrap/node_launch_json.h"

using namespace tlaunch;

namespace {

NodeLaunch node(int index, int ranks_per_node) {
  NodeLaunch n;
  n.job_id = "tl-1";
  n.node_name = "node" + std::to_string(index + 1);
  n.argv = {"python", "train.py"};
  n.cwd = "/work";
  n.base_env = {"PATH=/usr/bin", "HOME=/root"};
  for (int l = 0; l < ranks_per_node; ++l) {
    RankSpec r;
    r.rank = index * ranks_per_node + l;
    r.local_rank = l;
    r.env = {"WORLD_SIZE=8", "MASTER_ADDR=10.0.0.1", "RANK=" + std::to_string(r.rank),
             "LOCAL_RANK=" + std::to_string(l), "NODE_RANK=" + std::to_string(index), "NCCL_SOCKET_IFNAME=ib0"};
    r.cpus = {l};
    n.ranks.push_back(std::move(r));
  }
  n.pmix.enabled = true;
  n.pmix.this_node = index;
  return n;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("node launch: the shared part leaves every launch and comes back whole on the node") {
  std::vector<NodeLaunch> nodes = {node(0, 4), node(1, 4)};
  nodes[1].ranks[2].env.emplace_back("CUDA_VISIBLE_DEVICES=2");  // one rank's own
  const SharedLaunch shared = sharedLaunchOf(nodes);
  CHECK(shared.has_base_env);
  CHECK(sorted(shared.rank_env) == sorted({"WORLD_SIZE=8", "MASTER_ADDR=10.0.0.1", "NCCL_SOCKET_IFNAME=ib0"}));
  const Json shared_wire = Json::from_cbor(Json::to_cbor(sharedLaunchToJson(shared)));
  auto shared_back = sharedLaunchFromJson(shared_wire);
  REQUIRE(shared_back);
  for (const auto& n : nodes) {
    const Json wire = Json::from_cbor(Json::to_cbor(nodeLaunchToJson(n, &shared)));
    CHECK_FALSE(wire.contains("base_env"));
    CHECK(wire["node_env"] == Json::array({"NODE_RANK=" + std::to_string(n.pmix.this_node)}));
    CHECK(wire["ranks"][0]["env"].size() == 2);  // RANK and LOCAL_RANK only
    auto back = nodeLaunchFromJson(wire, &*shared_back);
    REQUIRE(back);
    CHECK(back->base_env == n.base_env);
    REQUIRE(back->ranks.size() == n.ranks.size());
    for (size_t i = 0; i < n.ranks.size(); ++i) {
      CHECK(sorted(back->ranks[i].env) == sorted(n.ranks[i].env));
      CHECK(back->ranks[i].cpus == n.ranks[i].cpus);
    }
    // Without the shared part it arrived before, the launch cannot be made whole.
    auto orphan = nodeLaunchFromJson(wire, nullptr);
    REQUIRE_FALSE(orphan);
    CHECK_THAT(orphan.error().message, Catch::Contains("shared part"));
  }
  // Without a shared part the launch is complete by itself.
  auto alone = nodeLaunchFromJson(nodeLaunchToJson(nodes[0]));
  REQUIRE(alone);
  CHECK(alone->base_env == nodes[0].base_env);
  CHECK(sorted(alone->ranks[3].env) == sorted(nodes[0].ranks[3].env));
  CHECK_FALSE(alone->pmix.oversubscribed);
  // An oversubscribed node is told so (its PMIx server says it to the ranks).
  nodes[1].pmix.oversubscribed = true;
  auto told = nodeLaunchFromJson(Json::from_cbor(Json::to_cbor(nodeLaunchToJson(nodes[1], &shared))), &*shared_back);
  REQUIRE(told);
  CHECK(told->pmix.oversubscribed);
  // --pty's window size comes with the launch; a size no terminal has is cut to one.
  nodes[1].stdout_terminal = true;
  nodes[1].terminal_columns = 109;
  nodes[1].terminal_rows = 40;
  auto sized = nodeLaunchFromJson(nodeLaunchToJson(nodes[1], &shared), &*shared_back);
  REQUIRE(sized);
  CHECK((sized->stdout_terminal && sized->terminal_columns == 109 && sized->terminal_rows == 40));
  Json huge = nodeLaunchToJson(nodes[1], &shared);
  huge["terminal_size"] = Json::array({1 << 20, -5});
  auto cut = nodeLaunchFromJson(huge, &*shared_back);
  REQUIRE(cut);
  CHECK((cut->terminal_columns == 65535 && cut->terminal_rows == 0));
  huge["terminal_size"] = Json::array({"wide", 3});
  CHECK_FALSE(nodeLaunchFromJson(huge, &*shared_back));
  // A value of another type is a malformed launch, refused, not read as true or false.
  Json odd = nodeLaunchToJson(nodes[1], &shared);
  odd["pmix"]["oversubscribed"] = "yes";
  auto refused = nodeLaunchFromJson(odd, &*shared_back);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == Errc::protocol);
}

TEST_CASE("node launch: the PMIx geometry as rank runs, checked against what a job can be") {
  PmixSpec p;
  p.nspace = "tlaunch.tl-1";
  p.node_names = {"node1", "node2", "node3"};
  p.ranks_by_node = {{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 10, 11}};
  const Json g = pmixGeometryToJson(p);
  CHECK(g["rank_runs"][0] == Json::array({0, 4}));
  CHECK(g["rank_runs"][2] == Json::array({8, 1, 10, 2}));
  PmixSpec back;
  back.this_node = 1;
  REQUIRE(applyPmixGeometry(Json::from_cbor(Json::to_cbor(g)), back));
  CHECK(back.nspace == p.nspace);
  CHECK(back.node_names == p.node_names);
  CHECK(back.ranks_by_node == p.ranks_by_node);

  Json huge = g;
  huge["rank_runs"][0] = Json::array({0, 1LL << 40});  // a hostile count: no allocation of it
  auto refused = applyPmixGeometry(huge, back);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message, Catch::Contains("more ranks than a job can have"));
  Json short_runs = g;
  short_runs["rank_runs"].erase(2);
  CHECK_FALSE(applyPmixGeometry(short_runs, back));
  back.this_node = 3;  // outside the geometry
  CHECK_FALSE(applyPmixGeometry(g, back));
  CHECK_FALSE(applyPmixGeometry(Json::array(), back));
}
