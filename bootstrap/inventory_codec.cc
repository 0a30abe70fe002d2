#include "bootstrap/inventory_codec.h"

#include "binding/fabric/fabric_json.h"
#include "binding/preflight/preflight_report.h"
#include "binding/topology/topology_json.h"
#include "bootstrap/bounded_cbor.h"

namespace tlaunch {

namespace {

constexpr size_t kMaxSlurmGpusBytes = 4096;

Result<std::string> stringField(const Json& j, const char* key, bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) return fail(Errc::protocol, std::string("no '") + key + "'");
    return std::string();
  }
  if (!it->is_string()) return fail(Errc::protocol, std::string("'") + key + "' is not a string");
  return it->get<std::string>();
}

Result<int> portField(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return 0;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 65535)
    return fail(Errc::protocol, std::string("'") + key + "' is not a port number");
  return static_cast<int>(it->get<int64_t>());
}

}  // namespace

Result<std::shared_ptr<const TopologySnapshot>> TopologyDecodeCache::decode(std::string_view cbor) {
  const std::string key(cbor);
  if (auto it = seen_.find(key); it != seen_.end()) return it->second;
  auto j = parseBoundedCbor(cbor);
  if (!j) return tl::unexpected(j.error());
  auto t = topologyFromJson(*j);
  if (!t) return tl::unexpected(t.error());
  ++parsed_;
  auto shared = std::make_shared<const TopologySnapshot>(std::move(*t));
  if (seen_.size() < kMaxEntries) seen_.emplace(key, shared);
  return shared;
}

Json inventoryToJson(const NodeInventory& inv) {
  Json j = {{"hostname", inv.hostname},
            {"boot_id", inv.boot_id},
            {"pid_ns", inv.pid_ns},
            {"node", inv.node},
            {"version", inv.version},
            {"free_port", inv.free_port},
            {"probe_port", inv.probe_port}};
  if (inv.topology) {
    std::vector<std::uint8_t> cbor;
    Json::to_cbor(topologyToJson(*inv.topology), cbor);
    j["topology_cbor"] = Json::binary(std::move(cbor));
  }
  else j["topology_error"] = inv.topology_error;
  if (inv.fabric) j["fabric"] = fabricToJson(*inv.fabric);
  else j["fabric_error"] = inv.fabric_error;
  if (inv.preflight) j["preflight"] = preflightToJson(*inv.preflight);
  if (!inv.port_mtu.empty()) j["port_mtu"] = inv.port_mtu;
  if (!inv.slurm_gpus.empty()) j["slurm_gpus"] = inv.slurm_gpus;
  if (inv.topology_from_cache) j["topology_cached"] = true;
  if (inv.master_port_in_use) j["master_port_in_use"] = true;
  return j;
}

Result<NodeInventory> inventoryFromJson(const Json& j, TopologyDecodeCache* cache) {
  if (!j.is_object()) return fail(Errc::protocol, "the inventory is not a map");
  NodeInventory inv;
  auto text = [&](const char* key, bool required, std::string& out) -> Result<void> {
    auto v = stringField(j, key, required);
    if (!v) return tl::unexpected(v.error());
    out = std::move(*v);
    return {};
  };
  for (auto r : {text("hostname", false, inv.hostname), text("boot_id", false, inv.boot_id), text("pid_ns", false, inv.pid_ns), text("node", false, inv.node),
                 text("version", false, inv.version), text("topology_error", false, inv.topology_error),
                 text("fabric_error", false, inv.fabric_error), text("slurm_gpus", false, inv.slurm_gpus)})
    if (!r) return tl::unexpected(r.error());
  // A list of GPU indices: even 1,000 GPUs fit in 4 KiB.
  if (inv.slurm_gpus.size() > kMaxSlurmGpusBytes)
    return fail(Errc::protocol,
                "a malformed inventory: slurm_gpus of " + std::to_string(inv.slurm_gpus.size()) + " bytes");
  for (auto [key, out] : {std::pair{"free_port", &inv.free_port}, std::pair{"probe_port", &inv.probe_port}}) {
    auto port = portField(j, key);
    if (!port) return tl::unexpected(port.error());
    *out = *port;
  }
  if (auto it = j.find("cached_s"); it != j.end() && it->is_number_integer())
    inv.cached_age_s = static_cast<int>(std::clamp<int64_t>(it->get<int64_t>(), 0, 86'400));
  if (auto it = j.find("topology_cached"); it != j.end() && it->is_boolean()) inv.topology_from_cache = it->get<bool>();
  if (auto it = j.find("master_port_in_use"); it != j.end() && it->is_boolean()) inv.master_port_in_use = it->get<bool>();
  if (auto it = j.find("topology_cbor"); it != j.end()) {
    if (!it->is_binary()) return fail(Errc::protocol, "a malformed topology: not a byte string");
    const auto& bytes = it->get_binary();
    const std::string_view cbor(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    TopologyDecodeCache one_off;
    auto t = (cache ? *cache : one_off).decode(cbor);
    if (!t) return fail(Errc::protocol, "a malformed topology: " + t.error().message);
    inv.topology = std::move(*t);
  } else if (auto it2 = j.find("topology"); it2 != j.end()) {
    auto t = topologyFromJson(*it2);
    if (!t) return fail(Errc::protocol, "a malformed topology: " + t.error().message);
    inv.topology = std::make_shared<const TopologySnapshot>(std::move(*t));
  } else if (inv.topology_error.empty()) {
    inv.topology_error = "no topology reported";
  }
  if (auto it = j.find("fabric"); it != j.end()) {
    auto f = fabricFromJson(*it);
    if (!f) return fail(Errc::protocol, "a malformed fabric report: " + f.error().message);
    inv.fabric = std::move(*f);
  } else if (inv.fabric_error.empty()) {
    inv.fabric_error = "not reported";
  }
  if (auto it = j.find("preflight"); it != j.end()) {
    auto p = preflightFromJson(*it);
    if (!p) return fail(Errc::protocol, "a malformed preflight report: " + p.error().message);
    inv.preflight = std::move(*p);
  }
  if (auto it = j.find("port_mtu"); it != j.end()) {
    if (!it->is_object()) return fail(Errc::protocol, "'port_mtu' is not a map");
    for (const auto& [port, mtu] : it->items()) {
      if (!mtu.is_number_integer()) return fail(Errc::protocol, "'port_mtu' of " + port + " is not a number");
      inv.port_mtu[port] = mtu.get<int>();
    }
  }
  return inv;
}

}  // namespace tlaunch
