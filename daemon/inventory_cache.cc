#include "daemon/inventory_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "binding/fabric/nccl_conf.h"
#include "bootstrap/keeper_protocol.h"  // epochSeconds
#include "tlaunch/own_file.h"
#include "tlaunch/replace_file.h"
#include "tlaunch/version.h"

namespace tlaunch {

namespace {

constexpr size_t kMaxCacheBytes = 64u << 20;

}  // namespace

// A file's identity for the key: a changed file (a fixed nccl.conf, a new topology XML) is a miss.
Json fileStamp(const std::string& path) {
  struct stat st{};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return nullptr;
  return Json::array({static_cast<long long>(st.st_size), static_cast<long long>(st.st_mtim.tv_sec),
                      static_cast<long long>(st.st_mtim.tv_nsec), static_cast<long long>(st.st_ino)});
}

std::string envOr(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

Json inventoryCacheKey(const InventoryRequest& req) {
  const std::string nccl_conf = envOr("NCCL_CONF_FILE");
  return {{"node", req.node_name},
          {"topology_xml", req.topology_xml},
          {"topology_file", fileStamp(req.topology_xml)},
          {"hwloc_xmlfile", envOr("HWLOC_XMLFILE")},
          {"sysfs_root", req.sysfs_root},
          {"preflight", req.preflight},
          {"expect_rdma", req.expect_rdma},
          {"rate", req.expect_rate_gbps},
          {"gpus", req.gpus_required},
          {"user_env", req.user_env},
          {"nccl_conf", {nccl_conf, fileStamp(nccl_conf), fileStamp(ncclUserHomeDir() + "/.nccl.conf"),
                         fileStamp("/etc/nccl.conf")}},
          {"version", kVersion}};
}

bool worthCaching(const NodeInventory& inv) {
  if (!inv.topology_error.empty() || !inv.fabric_error.empty()) return false;
  if (!inv.preflight) return true;
  return std::none_of(inv.preflight->begin(), inv.preflight->end(),
                      [](const PreflightItem& i) { return i.status == PreflightStatus::fail; });
}

std::optional<CachedInventory> loadCachedInventory(const std::string& path, const Json& key) {
  const auto file = readOwnFile(path, kMaxCacheBytes);
  if (!file) return std::nullopt;
  auto j = decodeMessage(file->bytes);
  if (!j || !j->contains("inv") || !(*j)["inv"].is_object() || !j->contains("key") || (*j)["key"] != key)
    return std::nullopt;
  const long long age = epochSeconds() - getInt(*j, "at");
  if (age < 0 || age >= kInventoryCacheTtl.count()) return std::nullopt;
  return CachedInventory{std::move((*j)["inv"]), age, getString(*j, "topology_xml")};
}

void storeCachedInventory(const std::string& path, const Json& key, const Json& inventory,
                          const std::string& topology_xml) {
  const std::string bytes = encodeMessage(
      {{"t", "inventory_cache"}, {"key", key}, {"at", epochSeconds()}, {"inv", inventory}, {"topology_xml", topology_xml}});
  replaceFileContents(path, bytes, 0600);  // a cache: one that cannot be written is not kept
}

}  // namespace tlaunch
