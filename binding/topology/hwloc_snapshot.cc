#include "binding/topology/hwloc_snapshot.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace tlaunch {
namespace {

std::string formatBusId(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", unsigned(pci.domain), unsigned(pci.bus), unsigned(pci.dev),
                unsigned(pci.func));
  return buf;
}

std::string bridgeId(hwloc_obj_t bridge) {
  const auto& b = bridge->attr->bridge;
  if (b.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "hb:%04x:%02x-%02x", unsigned(b.downstream.pci.domain),
                  unsigned(b.downstream.pci.secondary_bus), unsigned(b.downstream.pci.subordinate_bus));
    return buf;
  }
  return formatBusId(b.upstream.pci);
}

// Bridges from the host bridge down to the device's parent.
std::vector<std::string> pciPath(hwloc_obj_t dev) {
  std::vector<std::string> path;
  for (hwloc_obj_t p = dev->parent; p && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) path.push_back(bridgeId(p));
  std::reverse(path.begin(), path.end());
  return path;
}

std::string_view info(hwloc_obj_t obj, const char* name) {
  const char* v = hwloc_obj_get_info_by_name(obj, name);
  return v ? std::string_view(v) : std::string_view{};
}

bool hasDigitsOnly(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool namedLike(std::string_view name, std::string_view prefix) {
  return name.substr(0, prefix.size()) == prefix && hasDigitsOnly(name.substr(prefix.size()));
}

enum class GpuOsDevKind { none, compute, opencl, drm };

// hwloc 1.x exports carry no subtype, so the device name decides.
GpuOsDevKind gpuOsDevKind(hwloc_obj_t osdev) {
  std::string_view name = osdev->name ? osdev->name : "";
  std::string_view sub = osdev->subtype ? osdev->subtype : "";
  if (sub == "CUDA" || sub == "NVML" || sub == "RSMI" || sub == "LevelZero" || namedLike(name, "cuda") ||
      namedLike(name, "nvml") || namedLike(name, "rsmi") || namedLike(name, "ze"))
    return GpuOsDevKind::compute;
  if (sub == "OpenCL" || name.substr(0, 6) == "opencl") return GpuOsDevKind::opencl;
  if (namedLike(name, "card") || namedLike(name, "renderD") || namedLike(name, "controlD")) return GpuOsDevKind::drm;
  return GpuOsDevKind::none;
}

bool isGpuVendor(unsigned vendor) { return vendor == 0x10de || vendor == 0x1002; }
bool isGpuClass(unsigned cls) { return cls == 0x0300 || cls == 0x0302 || cls == 0x0380; }

std::string vendorName(unsigned vendor) {
  switch (vendor) {
    case 0x10de:
      return "NVIDIA";
    case 0x1002:
      return "AMD";
    case 0x8086:
      return "Intel";
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "pci:%04x", vendor);
  return buf;
}

// A scrubbed or absent UUID ("GPU-00000000-0000-…") identifies nothing.
std::optional<std::string> realUuid(std::string_view v) {
  std::string_view body = v.substr(0, 4) == "GPU-" ? v.substr(4) : v;
  if (body.empty() || std::all_of(body.begin(), body.end(), [](char c) { return c == '0' || c == '-'; }))
    return std::nullopt;
  return std::string(v);
}

// hwloc's ROCm-SMI backend writes an AMD GPU's 64-bit unique id with "%llx"; ROCr names the
// device "GPU-%016llx" and matches ROCR_VISIBLE_DEVICES against that: one id in 16 starts with
// a zero, and unpadded it matches no device (HIP then stops reading the list there).
std::optional<std::string> amdUuid(std::string_view v) {
  auto id = realUuid(v);
  const auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  if (!id || id->size() >= 16 || !std::all_of(id->begin(), id->end(), hex))
    return id;
  return std::string(16 - id->size(), '0') + *id;
}

std::vector<hwloc_obj_t> osDevChildren(hwloc_obj_t pci) {
  std::vector<hwloc_obj_t> out;
  for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
    if (c->type == HWLOC_OBJ_OS_DEVICE) out.push_back(c);
  return out;
}

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(hwloc_topology_t topo) : topo_(topo) {}

  void build(TopologySnapshot& snap) {
    collectNumaAndCores(snap);
    for (const auto& n : snap.numa_nodes)
      if (!n.cores.empty()) cpu_numas_.push_back(n.os_index);
    collectGpus(snap);
    collectHcas(snap);
  }

 private:
  void collectNumaAndCores(TopologySnapshot& snap) {
    std::vector<hwloc_obj_t> numas;
    for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_NUMANODE, n));) numas.push_back(n);
    std::sort(numas.begin(), numas.end(), [](hwloc_obj_t a, hwloc_obj_t b) { return a->os_index < b->os_index; });
    for (hwloc_obj_t n : numas) {
      NumaNode node;
      node.os_index = int(n->os_index);
      node.memory_bytes = n->attr ? n->attr->numanode.local_memory : 0;
      if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo_, HWLOC_OBJ_PACKAGE, n))
        node.package = pkg->os_index != HWLOC_UNKNOWN_INDEX ? int(pkg->os_index) : int(pkg->logical_index);
      snap.numa_nodes.push_back(node);
    }
    if (snap.numa_nodes.empty()) snap.numa_nodes.push_back(NumaNode{});  // hwloc 2 always has one; be safe

    // Cores in hwloc's order (cache locality); machines without Core objects use PUs as cores.
    hwloc_bitmap_t covered = hwloc_bitmap_alloc();
    auto addUnit = [&](hwloc_const_cpuset_t set) {
      std::vector<int> pus;
      for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) pus.push_back(i);
      if (pus.empty()) return;
      hwloc_bitmap_or(covered, covered, set);
      size_t idx = 0;
      for (size_t k = 0; k < numas.size(); ++k)
        if (hwloc_bitmap_isset(numas[k]->cpuset, unsigned(pus.front()))) {
          idx = k;
          break;
        }
      snap.numa_nodes[idx].cores.push_back(std::move(pus));
    };
    for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_CORE, c));) addUnit(c->cpuset);
    for (hwloc_obj_t p = nullptr; (p = hwloc_get_next_obj_by_type(topo_, HWLOC_OBJ_PU, p));) {
      if (hwloc_bitmap_isincluded(p->cpuset, covered)) continue;
      addUnit(p->cpuset);
    }
    hwloc_bitmap_free(covered);
  }

  // The CPU NUMA node below the device's nearest non-I/O ancestor; -1 when none or several.
  int numaOf(hwloc_obj_t dev) const {
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo_, dev);
    if (!anc || !anc->nodeset) return -1;
    int found = -1;
    for (int os : cpu_numas_) {
      if (!hwloc_bitmap_isset(anc->nodeset, unsigned(os))) continue;
      if (found >= 0) return -1;
      found = os;
    }
    return found;
  }

  GpuDevice makeGpu(hwloc_obj_t pci, const std::vector<hwloc_obj_t>& osdevs) const {
    GpuDevice g;
    g.busid = formatBusId(pci->attr->pcidev);
    g.vendor = vendorName(pci->attr->pcidev.vendor_id);
    g.numa = numaOf(pci);
    g.pci_path = pciPath(pci);
    // Model: the most specific source first (NVML, ROCm-SMI, CUDA, Level Zero, OpenCL), then PCI names.
    int best_rank = 99;
    for (hwloc_obj_t o : osdevs) {
      std::string_view name = o->name ? o->name : "";
      g.os_devices.emplace_back(name);
      int rank = namedLike(name, "nvml")         ? 0
                 : namedLike(name, "rsmi")       ? 1
                 : namedLike(name, "cuda")       ? 2
                 : namedLike(name, "ze")         ? 3
                 : name.substr(0, 6) == "opencl" ? 4
                                                 : 5;
      std::string_view model = info(o, "GPUModel");
      if (!model.empty() && rank < best_rank) {
        g.model = std::string(model);
        best_rank = rank;
      }
      if (!g.uuid) g.uuid = realUuid(info(o, "NVIDIAUUID"));
      if (!g.uuid) g.uuid = amdUuid(info(o, "AMDUUID"));
    }
    if (g.model.empty()) g.model = std::string(info(pci, "PCIDevice"));
    return g;
  }

  void collectGpus(TopologySnapshot& snap) const {
    std::vector<GpuDevice> by_osdev, by_pci_class;
    for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(topo_, pci));) {
      const auto& a = pci->attr->pcidev;
      auto osdevs = osDevChildren(pci);
      bool compute = false, weak = false;
      std::vector<hwloc_obj_t> gpu_osdevs;
      for (hwloc_obj_t o : osdevs) {
        auto kind = gpuOsDevKind(o);
        if (kind == GpuOsDevKind::none) continue;
        gpu_osdevs.push_back(o);
        if (kind == GpuOsDevKind::compute)
          compute = true;
        else
          weak = true;
      }
      // DRM and OpenCL devices also exist for BMC VGA chips and iGPUs: only trust them on GPU vendors.
      bool gpu_vendor_display = isGpuVendor(a.vendor_id) && (a.class_id >> 8) == 0x03;
      if (compute || (weak && gpu_vendor_display))
        by_osdev.push_back(makeGpu(pci, gpu_osdevs));
      else if (isGpuVendor(a.vendor_id) && isGpuClass(a.class_id))
        by_pci_class.push_back(makeGpu(pci, {}));
    }
    snap.gpus = by_osdev.empty() ? std::move(by_pci_class) : std::move(by_osdev);
    std::sort(snap.gpus.begin(), snap.gpus.end(), [](const auto& x, const auto& y) { return x.busid < y.busid; });
  }

  void collectHcas(TopologySnapshot& snap) const {
    for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(topo_, o));) {
      if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
      HcaDevice h;
      h.name = o->name ? o->name : "";
      hwloc_obj_t pci = o->parent && o->parent->type == HWLOC_OBJ_PCI_DEVICE ? o->parent : nullptr;
      if (pci) {
        h.busid = formatBusId(pci->attr->pcidev);
        h.pci_path = pciPath(pci);
      }
      h.numa = numaOf(o);
      std::map<int, HcaPort> ports;
      for (unsigned i = 0; i < o->infos_count; ++i) {
        std::string_view key = o->infos[i].name;
        if (key.substr(0, 4) != "Port") continue;
        size_t end = 4;
        while (end < key.size() && key[end] >= '0' && key[end] <= '9') ++end;
        if (end == 4) continue;
        int num = std::atoi(std::string(key.substr(4, end - 4)).c_str());
        ports[num].number = num;
        if (key.substr(end) == "State") ports[num].state = std::atoi(o->infos[i].value);
      }
      if (ports.empty()) ports[1].number = 1;
      if (pci) {
        for (hwloc_obj_t net : osDevChildren(pci)) {
          if (net->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !net->name) continue;
          std::string_view port = info(net, "Port");
          int num = hasDigitsOnly(port) ? std::atoi(std::string(port).c_str()) : 1;
          ports[num].number = num;
          ports[num].netdevs.emplace_back(net->name);
        }
      }
      for (auto& [num, port] : ports) {
        std::sort(port.netdevs.begin(), port.netdevs.end());
        h.ports.push_back(std::move(port));
      }
      snap.hcas.push_back(std::move(h));
    }
    std::sort(snap.hcas.begin(), snap.hcas.end(),
              [](const auto& x, const auto& y) { return std::tie(x.busid, x.name) < std::tie(y.busid, y.name); });
  }

  hwloc_topology_t topo_;
  std::vector<int> cpu_numas_;
};

}  // namespace

void readSnapshot(hwloc_topology_t topo, TopologySnapshot& snap) { SnapshotBuilder(topo).build(snap); }

}  // namespace tlaunch
