// InfiniBand partitions: P_Key tables and IPoIB P_Keys from sysfs, the job's partition in the
// network choice (a pkey child such as ib0.8001), and the variables that put NCCL's and UCX's
// queue pairs in it. Verbs send with P_Key table entry 0 unless told otherwise.
#include <catch2/catch.hpp>

#include <map>

#include <nlohmann/json.hpp>

#include "binding/fabric/fabric_discovery.h"
#include "binding/fabric/fabric_env.h"
#include "binding/fabric/fabric_json.h"
#include "fabric_env_lookup.h"
#include "fabric_test_builder.h"

using namespace tlaunch;
using namespace tlaunch::testing;

namespace {

// Two nodes whose IPoIB parent ib0 has no address and whose child ib0.8001 carries the job's
// subnet; the subnet manager put partition 0x8001 at entry `index1` / `index2` of the tables.
std::vector<NodeFabricInput> partitionedNodes(int index1, int index2) {
  auto node = [](const std::string& address, int index) {
    return FabricBuilder().ib("mlx5_0", 1, "ib0", "").pkeyChild("mlx5_0", 1, "ib0.8001", address, 0x8001, index,
                                                                0x8001);
  };
  return {{"node1", node("10.1.0.1", index1).build(), {}}, {"node2", node("10.1.0.2", index2).build(), {}}};
}

bool hasNote(const NetworkChoice& choice, const std::string& text) {
  for (const auto& n : choice.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("P_Keys from sysfs: the port's valid table entries and each IPoIB netdev's own") {
  TempDir tmp;
  SysfsTree t(tmp.path());
  t.addDevice("mlx5_0", "0000:17:00.0");
  t.addPort("mlx5_0", 1, "InfiniBand");
  const std::string gid = "fe80:0000:0000:0000:b859:9f03:00d4:1a01";
  t.addGid("mlx5_0", 1, 0, gid);
  const fs::path pkeys = t.portDir("mlx5_0", 1) / "pkeys";
  writeFile(pkeys / "0", "0xffff\n");
  writeFile(pkeys / "1", "0x8001\n");
  writeFile(pkeys / "2", "0x0000\n");   // empty entries, as most of a 128-entry table is
  writeFile(pkeys / "3", "0x0002\n");   // limited membership of partition 2
  writeFile(pkeys / "10", "0x8000\n");  // the invalid P_Key: no partition
  writeFile(pkeys / "12", "0x8003\n");  // after 3 and 10 by number, not by text
  writeFile(t.addNetdev("ib0", kArphrdInfiniband, "0000:17:00.0", 0, ipoibAddress(gid)) / "pkey", "0xffff\n");
  writeFile(t.addNetdev("ib0.8001", kArphrdInfiniband, "0000:17:00.0", 0, ipoibAddress(gid)) / "pkey", "0x8001\n");
  // A port of the default partition only: entry 0 is read, not the 128 sysfs files of its table.
  t.addDevice("mlx5_2", "0000:19:00.0");
  t.addPort("mlx5_2", 1, "InfiniBand");
  const std::string gid2 = "fe80:0000:0000:0000:b859:9f03:00d4:1a02";
  t.addGid("mlx5_2", 1, 0, gid2);
  writeFile(t.portDir("mlx5_2", 1) / "pkeys/0", "0xffff\n");
  writeFile(t.portDir("mlx5_2", 1) / "pkeys/1", "0x8005\n");
  writeFile(t.addNetdev("ib2", kArphrdInfiniband, "0000:19:00.0", 0, ipoibAddress(gid2)) / "pkey", "0xffff\n");
  // A tenant's port whose entry 0 is a limited membership: the whole table, for a full one.
  t.addDevice("mlx5_3", "0000:1a:00.0");
  t.addPort("mlx5_3", 1, "InfiniBand");
  writeFile(t.portDir("mlx5_3", 1) / "pkeys/0", "0x7fff\n");
  writeFile(t.portDir("mlx5_3", 1) / "pkeys/1", "0x8002\n");
  t.addDevice("mlx5_1", "0000:18:00.0");  // RoCE: P_Keys mean nothing there and are not read
  t.addPort("mlx5_1", 1, "Ethernet");
  writeFile(t.portDir("mlx5_1", 1) / "pkeys/0", "0xffff\n");

  auto fabric = discoverFabric(tmp.path().string(), {});
  REQUIRE(fabric);
  const RdmaPort& ib = fabric->devices.at(0).ports.at(0);
  CHECK(ib.pkeys == std::vector<PkeyEntry>{{0, 0xffff}, {1, 0x8001}, {3, 0x0002}, {12, 0x8003}});
  CHECK(fabric->devices.at(1).ports.at(0).pkeys.empty());  // mlx5_1, RoCE
  CHECK(fabric->devices.at(2).ports.at(0).pkeys == std::vector<PkeyEntry>{{0, 0xffff}});
  CHECK(fabric->devices.at(3).ports.at(0).pkeys == std::vector<PkeyEntry>{{0, 0x7fff}, {1, 0x8002}});
  CHECK(fabric->findInterface("ib0")->pkey == 0xffff);
  CHECK(fabric->findInterface("ib0.8001")->pkey == 0x8001);
  CHECK(fabric->findInterface("ib0.8001")->rdma_port == 1);

  // The inventory carries them to the frontend.
  CHECK(fabricFromJson(nlohmann::json::parse(fabricToJson(*fabric).dump())).value() == *fabric);
}

TEST_CASE("a job on a pkey child: NCCL_IB_PKEY is each node's table index, UCX_IB_PKEY the partition") {
  auto choice = chooseNetwork(partitionedNodes(1, 2), {});
  REQUIRE(choice);
  CHECK(choice->nodes[0].ifname == "ib0.8001");
  CHECK(choice->nodes[0].pkey == 0x8001);
  CHECK(choice->nodes[0].pkey_index == 1);
  CHECK(choice->nodes[1].pkey_index == 2);  // tables are per port: the index may differ, the partition not

  auto node1 = values(fabricEnv(*choice, 0, {}));
  CHECK(node1["NCCL_IB_PKEY"] == "1");
  CHECK(node1["UCX_IB_PKEY"] == "0x0001");
  CHECK(node1["NCCL_IB_HCA"] == "=mlx5_0:1");
  CHECK(node1["NCCL_SOCKET_IFNAME"] == "=ib0.8001");
  auto settings2 = fabricEnv(*choice, 1, {});
  CHECK(values(settings2)["NCCL_IB_PKEY"] == "2");
  CHECK(find(settings2, "NCCL_IB_PKEY").source ==
        "partition 0x8001 of ib0.8001, entry 2 of mlx5_0:1's P_Key table (verbs use entry 0 unless told)");

  auto back = networkChoiceFromJson(nlohmann::json::parse(networkChoiceToJson(*choice).dump()));
  REQUIRE(back);
  CHECK(*back == *choice);
}

TEST_CASE("the default partition (the parent ib0, entry 0) adds no P_Key variables") {
  std::vector<NodeFabricInput> nodes{
      {"node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").build(), {}},
      {"node2", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.2").build(), {}},
  };
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  CHECK(choice->nodes[0].pkey_index == -1);
  auto env = values(fabricEnv(*choice, 0, {}));
  CHECK(env.count("NCCL_IB_PKEY") == 0);
  CHECK(env.count("UCX_IB_PKEY") == 0);

  // A child whose partition the subnet manager put at entry 0 needs nothing either.
  auto atZero = partitionedNodes(1, 1);
  for (auto& node : atZero) {
    auto& port = node.fabric.devices[0].ports[0];
    port.pkeys = {{0, 0x8001}, {1, 0xffff}};
  }
  auto zero = chooseNetwork(atZero, {});
  REQUIRE(zero);
  CHECK(zero->nodes[0].pkey_index == -1);
  CHECK(values(fabricEnv(*zero, 0, {})).count("NCCL_IB_PKEY") == 0);

  // --net tcp keeps every layer off the HCAs (the plan sets sockets_only): no P_Key either.
  auto sockets = chooseNetwork(partitionedNodes(1, 1), {}).value();
  sockets.sockets_only = true;
  CHECK(values(fabricEnv(sockets, 0, {})).count("NCCL_IB_PKEY") == 0);
}

TEST_CASE("the job's partition: a full-membership entry first, then a limited one") {
  auto nodes = partitionedNodes(1, 1);
  // node1's table: limited membership at 1, full at 5 (IPoIB takes the full one).
  nodes[0].fabric.devices[0].ports[0].pkeys = {{0, 0xffff}, {1, 0x0001}, {5, 0x8001}};
  // node2's: only a limited membership.
  nodes[1].fabric.devices[0].ports[0].pkeys = {{0, 0xffff}, {3, 0x0001}};
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  CHECK(choice->nodes[0].pkey_index == 5);
  CHECK(choice->nodes[1].pkey_index == 3);
}

TEST_CASE("a rail whose table holds the partition at another index is left out of NCCL_IB_HCA, with a note") {
  auto nodes = partitionedNodes(1, 1);
  for (auto& node : nodes) {
    NodeFabric& f = node.fabric;
    // Two more ports on the same IB subnet: mlx5_1 has the partition at entry 1 too, mlx5_2 at 4.
    NodeFabric rails = FabricBuilder().ib("mlx5_1", 1, "ib1", "").ib("mlx5_2", 1, "ib2", "").build();
    rails.devices[0].ports[0].pkeys.push_back({1, 0x8001});
    rails.devices[1].ports[0].pkeys.push_back({4, 0x8001});
    for (auto& d : rails.devices) f.devices.push_back(d);
    for (auto& i : rails.interfaces) f.interfaces.push_back(i);
  }
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  CHECK(joinHcaPorts(choice->nodes[0]) == "mlx5_0:1,mlx5_1:1");
  CHECK(values(fabricEnv(*choice, 0, {}))["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1");
  CHECK(hasNote(*choice,
                "node1, node2: left out of the job's data ports (NCCL_IB_HCA, UCX_NET_DEVICES): mlx5_2:1 (its P_Key "
                "table holds ib0.8001's partition 0x8001 elsewhere than entry 1, and NCCL_IB_PKEY is one index for "
                "every port); to use them all the same, set NCCL_IB_HCA and UCX_NET_DEVICES with -x"));
}

TEST_CASE("a user's P_Key that puts the queue pairs in another partition is a conflict") {
  auto choice = chooseNetwork(partitionedNodes(1, 1), {});
  REQUIRE(choice);
  auto conflicting =
      fabricEnv(*choice, 0, UserEnv{{"NCCL_IB_PKEY", {"0", "-x"}}, {"UCX_IB_PKEY", {"auto", "environment"}}});
  CHECK(find(conflicting, "NCCL_IB_PKEY").conflict ==
        "is not the index of ib0.8001's partition 0x8001 (entry 1 on node1): NCCL's queue pairs join another "
        "partition");
  CHECK(find(conflicting, "UCX_IB_PKEY").conflict ==
        "does not select ib0.8001's partition 0x8001: UCX's queue pairs join another partition");
  auto agreeing = fabricEnv(*choice, 0, UserEnv{{"NCCL_IB_PKEY", {"1", "-x"}}, {"UCX_IB_PKEY", {"0x8001", "-x"}}});
  CHECK(find(agreeing, "NCCL_IB_PKEY").conflict.empty());
  CHECK(find(agreeing, "UCX_IB_PKEY").conflict.empty());  // UCX uses the low 15 bits
  CHECK(find(agreeing, "UCX_IB_PKEY").effective() == "0x8001");
}
