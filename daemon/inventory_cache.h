#pragma once
// A warm node's last inventory (tlaunch --keep-daemons): its keeper gives every daemon it starts
// the path of a file in a directory of its own (0700). A daemon whose request is the one the file
// was taken for, less than kInventoryCacheTtl ago, sends that inventory and preflight again (with
// a fresh free port) instead of loading the topology and probing the devices once more: the
// edit-run loop pays them once a minute, not on every run. A stale, foreign or malformed file is
// ignored and replaced. `tlaunch preflight` always checks afresh.
#include <chrono>
#include <optional>
#include <string>

#include "bootstrap/message.h"
#include "daemon/inventory.h"

namespace tlaunch {

inline constexpr std::chrono::seconds kInventoryCacheTtl{60};

// What the inventory depends on: what the job chooses, and the files the preflight reads (the
// same machine is implied by the file's place).
Json inventoryCacheKey(const InventoryRequest& req);
// A node that failed a check is checked again next time: the user is likely fixing it.
bool worthCaching(const NodeInventory& inv);

struct CachedInventory {
  Json inventory;  // inventoryToJson's form
  long long age_s = 0;
  std::string topology_xml;  // the live topology for the ranks' PMIx, as collectInventory gave it
};
std::optional<CachedInventory> loadCachedInventory(const std::string& path, const Json& key);
// Best effort: a cache that cannot be written only costs the next job the full inventory.
void storeCachedInventory(const std::string& path, const Json& key, const Json& inventory,
                          const std::string& topology_xml);

}  // namespace tlaunch
