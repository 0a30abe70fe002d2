#include "binding/topology/topology_json.h"

#include <nlohmann/json.hpp>

namespace tlaunch {
namespace {

using nlohmann::json;

template <class T>
json optionalToJson(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// Field readers throw json::exception on a wrong type; the public functions turn that into an Error.
template <class T>
T field(const json& j, const char* key) {
  return j.at(key).get<T>();
}

std::optional<std::string> optionalString(const json& j, const char* key) {
  const json& v = j.at(key);
  if (v.is_null()) return std::nullopt;
  return v.get<std::string>();
}

}  // namespace

json topologyToJson(const TopologySnapshot& topo) {
  json numa = json::array();
  for (const auto& n : topo.numa_nodes)
    numa.push_back(
        {{"os_index", n.os_index}, {"package", n.package}, {"memory_bytes", n.memory_bytes}, {"cores", n.cores}});
  json gpus = json::array();
  for (const auto& g : topo.gpus)
    gpus.push_back({{"busid", g.busid},
                    {"uuid", optionalToJson(g.uuid)},
                    {"vendor", g.vendor},
                    {"model", g.model},
                    {"numa", g.numa},
                    {"pci_path", g.pci_path},
                    {"os_devices", g.os_devices}});
  json hcas = json::array();
  for (const auto& h : topo.hcas) {
    json ports = json::array();
    for (const auto& p : h.ports) ports.push_back({{"number", p.number}, {"state", p.state}, {"netdevs", p.netdevs}});
    hcas.push_back({{"name", h.name},
                    {"busid", h.busid},
                    {"numa", h.numa},
                    {"pci_path", h.pci_path},
                    {"ports", std::move(ports)}});
  }
  return {{"live", topo.live},
          {"source", topo.source},
          {"numa_nodes", std::move(numa)},
          {"gpus", std::move(gpus)},
          {"hcas", std::move(hcas)}};
}

Result<TopologySnapshot> topologyFromJson(const json& j) {
  try {
    TopologySnapshot t;
    t.live = field<bool>(j, "live");
    t.source = field<std::string>(j, "source");
    for (const auto& n : j.at("numa_nodes")) {
      t.numa_nodes.push_back(NumaNode{field<int>(n, "os_index"), field<int>(n, "package"),
                                      field<std::uint64_t>(n, "memory_bytes"),
                                      field<std::vector<std::vector<int>>>(n, "cores")});
    }
    for (const auto& g : j.at("gpus")) {
      t.gpus.push_back(GpuDevice{field<std::string>(g, "busid"), optionalString(g, "uuid"),
                                 field<std::string>(g, "vendor"), field<std::string>(g, "model"), field<int>(g, "numa"),
                                 field<std::vector<std::string>>(g, "pci_path"),
                                 field<std::vector<std::string>>(g, "os_devices")});
    }
    for (const auto& h : j.at("hcas")) {
      HcaDevice d{field<std::string>(h, "name"),
                  field<std::string>(h, "busid"),
                  field<int>(h, "numa"),
                  field<std::vector<std::string>>(h, "pci_path"),
                  {}};
      for (const auto& p : h.at("ports"))
        d.ports.push_back(
            HcaPort{field<int>(p, "number"), field<int>(p, "state"), field<std::vector<std::string>>(p, "netdevs")});
      t.hcas.push_back(std::move(d));
    }
    return t;
  } catch (const json::exception& e) {
    return fail(Errc::protocol, std::string("malformed topology snapshot from a daemon: ") + e.what(),
                "tlaunch and tlaunchd versions may differ; install the same version on every node");
  }
}

json rankBindingToJson(const RankBinding& b) {
  return {{"local_rank", b.local_rank},
          {"gpu_busid", optionalToJson(b.gpu_busid)},
          {"gpu_uuid", optionalToJson(b.gpu_uuid)},
          {"hca", optionalToJson(b.hca)},
          {"path", b.path},
          {"numa", b.numa},
          {"cpus", b.cpus},
          {"mem_nodes", b.mem_nodes}};
}

Result<RankBinding> rankBindingFromJson(const json& j) {
  try {
    return RankBinding{field<int>(j, "local_rank"),        optionalString(j, "gpu_busid"),
                       optionalString(j, "gpu_uuid"),      optionalString(j, "hca"),
                       field<std::string>(j, "path"),      field<int>(j, "numa"),
                       field<std::vector<int>>(j, "cpus"), field<std::vector<int>>(j, "mem_nodes")};
  } catch (const json::exception& e) {
    return fail(Errc::protocol, std::string("malformed rank binding: ") + e.what(),
                "tlaunch and tlaunchd versions may differ; install the same version on every node");
  }
}

}  // namespace tlaunch
