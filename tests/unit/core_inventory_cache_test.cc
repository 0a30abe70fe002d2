// A warm node's last inventory (daemon/inventory_cache.h): sent again only for the same request,
// within its TTL, from a file of ours; a node that failed a check is checked again.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "temp_dir.h"
#include <chrono>
#include <filesystem>
#include <fstream>

#include "daemon/inventory_cache.h"

namespace fs = std::filesystem;
using namespace tlaunch;
using tlaunch::testing::TempDir;

namespace {

InventoryRequest request() {
  InventoryRequest r;
  r.node_name = "node1";
  r.preflight = "quick";
  return r;
}

}  // namespace

TEST_CASE("inventory cache: the same request within the TTL gets the stored inventory", "[core][warm]") {
  TempDir tmp;
  const std::string file = (tmp.path() / "inventory").string();
  const Json inv = {{"hostname", "node1"}, {"free_port", 20001}};
  const Json key = inventoryCacheKey(request());
  CHECK_FALSE(loadCachedInventory(file, key));  // nothing yet
  storeCachedInventory(file, key, inv, "<topology>this node</topology>");
  auto hit = loadCachedInventory(file, key);
  REQUIRE(hit);
  CHECK(hit->inventory == inv);
  CHECK(hit->topology_xml == "<topology>this node</topology>");  // for the ranks' PMIx, kept aside
  CHECK(hit->age_s <= 1);
  struct stat st{};
  REQUIRE(::stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  // Another job's choices (here -g 8, then --preflight full) are another inventory.
  InventoryRequest gpus = request();
  gpus.gpus_required = 8;
  CHECK_FALSE(loadCachedInventory(file, inventoryCacheKey(gpus)));
  InventoryRequest full = request();
  full.preflight = "full";
  CHECK_FALSE(loadCachedInventory(file, inventoryCacheKey(full)));
}

TEST_CASE("inventory cache: a changed topology file or an old or foreign entry is a miss", "[core][warm]") {
  TempDir tmp;
  const std::string file = (tmp.path() / "inventory").string();
  InventoryRequest r = request();
  r.topology_xml = (tmp.path() / "topo.xml").string();
  { std::ofstream(r.topology_xml) << "<topology/>"; }
  const Json key = inventoryCacheKey(r);
  storeCachedInventory(file, key, {{"hostname", "node1"}}, "");
  REQUIRE(loadCachedInventory(file, key));
  { std::ofstream(r.topology_xml) << "<topology>another machine</topology>"; }
  CHECK_FALSE(loadCachedInventory(file, inventoryCacheKey(r)));

  // Older than the TTL.
  const long long old = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count() - kInventoryCacheTtl.count() - 1;
  const std::string bytes = encodeMessage({{"t", "inventory_cache"}, {"key", key}, {"at", old}, {"inv", {{"hostname", "x"}}}});
  { std::ofstream(file, std::ios::binary) << bytes; }
  CHECK_FALSE(loadCachedInventory(file, key));

  // Junk, and a symlink to somewhere else, are misses and not crashes.
  { std::ofstream(file, std::ios::binary) << std::string("\xff\x00junk", 6); }
  CHECK_FALSE(loadCachedInventory(file, key));
  fs::remove(file);
  fs::create_symlink(tmp.path() / "topo.xml", file);
  CHECK_FALSE(loadCachedInventory(file, key));
}

TEST_CASE("inventory cache: a node that failed a check or could not be read is not cached", "[core][warm]") {
  NodeInventory ok;
  ok.preflight = std::vector<PreflightItem>{};
  ok.preflight->push_back({});
  CHECK(worthCaching(ok));
  NodeInventory failed = ok;
  failed.preflight->back().status = PreflightStatus::fail;
  CHECK_FALSE(worthCaching(failed));
  NodeInventory no_topology = ok;
  no_topology.topology_error = "hwloc failed";
  CHECK_FALSE(worthCaching(no_topology));
}
