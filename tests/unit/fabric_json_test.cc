// NodeFabric and NetworkChoice travel as JSON from the daemons: exact round trips, clean errors.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "binding/fabric/fabric_json.h"
#include "fabric_test_builder.h"
#include "fabric_test_support.h"

using namespace tlaunch;
using namespace tlaunch::testing;

TEST_CASE("a discovered capture round-trips exactly through JSON text") {
  TempDir tmp{"tlaunch-capture", manyFilesBase()};
  auto root = extractCapture(kMlx4Tarball, tmp.path());
  if (!root) {
    FAIL("fixture " << kMlx4Tarball << " missing (tests/fixtures is part of the repository)");
  }
  auto fabric = discoverFabric(root->string(), {liveIf("ib0", "10.1.0.5", 16), liveIf("lo", "127.0.0.1", 8)});
  REQUIRE(fabric);
  std::string text = fabricToJson(*fabric).dump();
  auto back = fabricFromJson(nlohmann::json::parse(text));
  REQUIRE(back);
  CHECK(*back == *fabric);
  CHECK(fabricToJson(*back).dump() == text);
}

TEST_CASE("RoCE GIDs, rates with fractions and unknown types round-trip") {
  FabricBuilder b = FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.1").ib("mlx5_1", 2, "ib1", "10.1.0.1");
  b.port("mlx5_1", 2).rate = "2.5 Gb/sec (1X SDR)";
  b.port("mlx5_1", 2).rate_gbps = 2.5;
  b.port("mlx5_0", 1).gids.push_back(makeGidEntry(7, ipv4Gid(10, 3, 0, 9), GidType::unknown, ""));
  NodeFabric fabric = b.build();
  fabric.notes.emplace_back("scif0: does not resolve");
  auto back = fabricFromJson(nlohmann::json::parse(fabricToJson(fabric).dump()));
  REQUIRE(back);
  CHECK(*back == fabric);
  CHECK(back->devices[0].ports[0].gids[3].type == GidType::roce_v2);
}

TEST_CASE("malformed fabric JSON is an error naming the problem, never a crash") {
  NodeFabric fabric = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").build();
  nlohmann::json good = fabricToJson(fabric);

  auto missing = good;
  missing["devices"][0]["ports"][0].erase("state");
  auto r1 = fabricFromJson(missing);
  REQUIRE_FALSE(r1);
  CHECK(r1.error().code == Errc::protocol);
  CHECK(r1.error().message.find("state") != std::string::npos);

  auto wrongType = good;
  wrongType["interfaces"][0]["mtu"] = "big";
  CHECK_FALSE(fabricFromJson(wrongType));

  auto badEnum = good;
  badEnum["devices"][0]["ports"][0]["link_layer"] = "Omni-Path";
  auto r3 = fabricFromJson(badEnum);
  REQUIRE_FALSE(r3);
  CHECK(r3.error().message.find("Omni-Path") != std::string::npos);

  CHECK_FALSE(fabricFromJson(nlohmann::json::array()));
  CHECK_FALSE(fabricFromJson(nlohmann::json("text")));
}

TEST_CASE("a network choice round-trips through JSON") {
  std::vector<NodeFabricInput> nodes{
      {"node1", FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.1").build(), {}},
      {"node2", FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.2").build(), {}},
  };
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  choice->nodes[1].efa = true;
  NodeFabric fabric = nodes[0].fabric;
  fabric.devices[0].vendor_id = 0x15b3;
  CHECK(fabricFromJson(nlohmann::json::parse(fabricToJson(fabric).dump())).value() == fabric);
  auto back = networkChoiceFromJson(nlohmann::json::parse(networkChoiceToJson(*choice).dump()));
  REQUIRE(back);
  CHECK(*back == *choice);
  auto bad = networkChoiceToJson(*choice);
  bad["kind"] = "carrier-pigeon";
  CHECK_FALSE(networkChoiceFromJson(bad));
}
