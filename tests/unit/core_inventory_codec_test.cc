// The node inventory's wire codec (bootstrap/inventory_codec.h): what a daemon on this machine
// reports survives the trip as CBOR, and a malformed report is refused naming the bad part.
#include <catch2/catch.hpp>

#include <algorithm>

#include "binding/fabric/fabric_discovery.h"
#include "binding/topology/hwloc_topology.h"
#include "bootstrap/inventory_codec.h"
#include "daemon/inventory.h"

using namespace tlaunch;

namespace {

Result<NodeInventory> throughCbor(const Json& j) { return inventoryFromJson(Json::from_cbor(Json::to_cbor(j))); }

}  // namespace

TEST_CASE("inventory: this machine's report round-trips through CBOR, every part typed") {
  InventoryRequest req;
  req.node_name = "here";
  req.preflight = "quick";
  const NodeInventory sent = collectInventory(req);
  REQUIRE(sent.topology);
  REQUIRE(sent.fabric);
  REQUIRE(sent.preflight);
  auto got = throughCbor(inventoryToJson(sent));
  REQUIRE(got);
  CHECK(got->node == "here");
  CHECK(got->hostname == sent.hostname);
  CHECK(got->free_port == sent.free_port);
  CHECK(*got->topology == *sent.topology);
  CHECK(*got->fabric == *sent.fabric);
  CHECK(*got->preflight == *sent.preflight);
  CHECK(got->port_mtu == sent.port_mtu);
  CHECK(inventoryToJson(*got) == inventoryToJson(sent));
  NodeInventory from_cache = sent;
  from_cache.topology_from_cache = true;
  auto got_cached = throughCbor(inventoryToJson(from_cache));
  REQUIRE(got_cached);
  CHECK_FALSE(got->topology_from_cache);
  CHECK(got_cached->topology_from_cache);  // what -v reports node by node
}

TEST_CASE("inventory: identical machines' topologies are parsed once, a malformed one is refused") {
  InventoryRequest req;
  req.node_name = "here";
  req.preflight = "off";
  NodeInventory a = collectInventory(req);
  REQUIRE(a.topology);
  NodeInventory b = a;
  b.node = "there";
  TopologyDecodeCache cache;
  auto got_a = inventoryFromJson(Json::from_cbor(Json::to_cbor(inventoryToJson(a))), &cache);
  auto got_b = inventoryFromJson(Json::from_cbor(Json::to_cbor(inventoryToJson(b))), &cache);
  REQUIRE(got_a);
  REQUIRE(got_b);
  CHECK(*got_a->topology == *a.topology);
  CHECK(*got_b->topology == *a.topology);
  CHECK(cache.parsed() == 1);
  Json bad = inventoryToJson(a);
  bad["topology_cbor"] = binary("\x81\x81\x81");  // truncated CBOR
  auto refused_bad = inventoryFromJson(bad, &cache);
  REQUIRE_FALSE(refused_bad);
  CHECK_THAT(refused_bad.error().message, Catch::Contains("a malformed topology"));
  bad["topology_cbor"] = "not bytes";
  CHECK_FALSE(inventoryFromJson(bad, &cache));
}

TEST_CASE("inventory: parts a node could not read arrive as their reasons") {
  NodeInventory inv;
  inv.node = "n1";
  inv.topology_error = "hwloc: cannot load topology.xml";
  inv.fabric_error = "cannot read /sys/class/net";
  auto got = throughCbor(inventoryToJson(inv));
  REQUIRE(got);
  CHECK_FALSE(got->topology);
  CHECK(got->topology_error == "hwloc: cannot load topology.xml");
  CHECK_FALSE(got->fabric);
  CHECK(got->fabric_error == "cannot read /sys/class/net");
  CHECK_FALSE(got->preflight);  // --preflight off
}

TEST_CASE("inventory: a malformed report is refused, naming the part") {
  InventoryRequest req;
  const Json good = inventoryToJson(collectInventory(req));
  auto refused = [&](const char* key, const Json& value, const std::string& says) {
    Json bad = good;
    if (std::string(key) == "topology") bad.erase("topology_cbor");  // the map form, read when no bytes come
    bad[key] = value;
    auto r = inventoryFromJson(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == Errc::protocol);
    CHECK(r.error().message.find(says) != std::string::npos);
  };
  refused("free_port", "29500", "'free_port' is not a port number");
  refused("probe_port", 70000, "'probe_port' is not a port number");
  refused("hostname", 7, "'hostname' is not a string");
  refused("topology", Json::array({1, 2}), "a malformed topology");
  refused("topology_cbor", Json::array({1, 2}), "a malformed topology");
  refused("fabric", Json::object({{"interfaces", 3}}), "a malformed fabric report");
  refused("preflight", "all good", "a malformed preflight report");
  refused("port_mtu", Json::object({{"mlx5_0:1", "4096"}}), "'port_mtu' of mlx5_0:1 is not a number");
  refused("slurm_gpus", 3, "'slurm_gpus' is not a string");
  refused("slurm_gpus", std::string(4097, '1'), "slurm_gpus of 4097 bytes");
  CHECK_FALSE(inventoryFromJson(Json::array()));
  CHECK_FALSE(inventoryFromJson(Json("inventory")));
}

TEST_CASE("inventory: the preflight's GPU check counts the GPUs of the node's topology") {
  InventoryRequest req;
  req.node_name = "gpu-node";
  req.topology_xml = std::string(TLAUNCH_SOURCE_DIR) + "/tests/fixtures/topologies/aws-g4dn.metal_2xXeon8259CL_8xT4_1xEFA_hwloc2.8.xml";
  req.gpus_required = 8;
  const NodeInventory inv = collectInventory(req);
  REQUIRE(inv.topology);
  REQUIRE(inv.topology->gpus.size() == 8);
  REQUIRE(inv.preflight);
  const auto gpus = std::find_if(inv.preflight->begin(), inv.preflight->end(), [](const PreflightItem& i) { return i.check == "gpus"; });
  REQUIRE(gpus != inv.preflight->end());
  CHECK(gpus->status == PreflightStatus::pass);
  CHECK(gpus->found == "8 GPUs");
  req.gpus_required = 9;  // more than the node has: refused, naming what it has
  const NodeInventory short_node = collectInventory(req);
  const auto refused = std::find_if(short_node.preflight->begin(), short_node.preflight->end(), [](const PreflightItem& i) { return i.check == "gpus"; });
  REQUIRE(refused != short_node.preflight->end());
  CHECK(refused->status == PreflightStatus::fail);
}

TEST_CASE("inventory: the GPUs of a Slurm step are the step's CUDA_VISIBLE_DEVICES, and travel") {
  const auto stepGpus = [](std::map<std::string, std::string> env) {
    return slurmStepGpus([&](const char* name) {
      auto it = env.find(name);
      return it == env.end() ? nullptr : it->second.c_str();
    });
  };
  // Slurm's GPU plugin sets both; under a device cgroup CUDA_VISIBLE_DEVICES counts from 0.
  CHECK(stepGpus({{"SLURM_STEP_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "2,3"}}) == "2,3");
  CHECK(stepGpus({{"SLURM_STEP_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1"}}) == "0,1");
  // The user's value carried into a step without GPUs is not Slurm's; nor is a lone SLURM_STEP_GPUS.
  CHECK(stepGpus({{"CUDA_VISIBLE_DEVICES", "0"}, {"SLURM_JOB_ID", "7"}}).empty());
  CHECK(stepGpus({{"SLURM_STEP_GPUS", ""}, {"CUDA_VISIBLE_DEVICES", "0"}}).empty());
  CHECK(stepGpus({{"SLURM_STEP_GPUS", "1"}}).empty());

  NodeInventory inv;
  inv.node = "node1";
  inv.slurm_gpus = "2,3";
  auto got = throughCbor(inventoryToJson(inv));
  REQUIRE(got);
  CHECK(got->slurm_gpus == "2,3");
  inv.slurm_gpus.clear();
  CHECK_FALSE(inventoryToJson(inv).contains("slurm_gpus"));
}
