#include "binding/topology/hwloc_topology.h"

#include <hwloc.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>

#include "binding/topology/process_affinity.h"
#include "binding/topology/topology_cache.h"

namespace tlaunch {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

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

// Live discovery leaves out three of hwloc's backends (Debian ships them as plugins):
// - OpenCL and OpenGL start GPU vendors' driver stacks in every daemon of every job: NVIDIA's
//   OpenCL ICD initialises CUDA on each GPU (~230 ms per load on an H100), and clGetPlatformIDs
//   crashes with CUDA 12's ICD when hwloc's OpenCL support is a plugin (open-mpi/hwloc issue 641);
//   the GL backend opens X displays :0 to :5, locally and on 127.0.0.1:6000+. What they add, a
//   GPU's model and UUID, comes from NVML (gpu_driver_view.h).
// - pci (libpciaccess): the linux backend finds the same PCI devices, bridges and link speeds in
//   sysfs by itself. What libpciaccess adds is each device's names from pci.ids, a 1.3 MB file it
//   scans anew for every vendor (2-5 ms each: 25 ms for a GPU server's 8-10 vendors, in every
//   daemon of every job). A GPU's model then comes from NVML, or stays unnamed.
void skipCostlyBackends(hwloc_topology_t topo) {
  for (const char* backend : {"opencl", "gl", "pci"})
    hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, backend);
}

// Why hwloc refused a file, in words a user can act on.
std::string xmlProblem(const std::string& path, int err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::strerror(err ? err : ENOENT);
  std::string head(4096, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  auto pos = head.find("<topology");
  if (pos == std::string::npos) return "not an hwloc XML export (no <topology> element)";
  auto v = head.find("version=\"", pos);
  if (v != std::string::npos && v < head.find('>', pos) && head.compare(v + 9, 1, "2") > 0 &&
      head.compare(v + 9, 1, "9") <= 0)
    return "hwloc XML version " + head.substr(v + 9, head.find('"', v + 9) - v - 9) + " is newer than this hwloc (" +
           HWLOC_VERSION + ") can import";
  return std::string("hwloc could not parse it (") + std::strerror(err ? err : EINVAL) + ")";
}

}  // namespace

namespace {

// A topology object with the I/O tree tlaunch reads: important bridges, every PCI and OS device.
Result<TopologyPtr> newTopology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0)
    return fail(Errc::topology, "hwloc_topology_init failed: " + std::string(std::strerror(errno)));
  TopologyPtr topo(raw);
  hwloc_topology_set_type_filter(raw, HWLOC_OBJ_BRIDGE, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  hwloc_topology_set_type_filter(raw, HWLOC_OBJ_PCI_DEVICE, HWLOC_TYPE_FILTER_KEEP_ALL);
  hwloc_topology_set_type_filter(raw, HWLOC_OBJ_OS_DEVICE, HWLOC_TYPE_FILTER_KEEP_ALL);
  return topo;
}

std::string exportXml(hwloc_topology_t topo) {
  std::string xml;
  char* buffer = nullptr;
  int length = 0;
  if (hwloc_topology_export_xmlbuffer(topo, &buffer, &length, 0) == 0 && buffer && length > 0)
    xml.assign(buffer, static_cast<size_t>(length - 1));  // the length counts the final NUL
  if (buffer) hwloc_free_xmlbuffer(topo, buffer);
  return xml;
}

TopologySnapshot liveSnapshot(hwloc_topology_t topo, std::string* live_xml) {
  if (live_xml) *live_xml = exportXml(topo);
  TopologySnapshot snap;
  snap.live = true;
  snap.source = "live";
  SnapshotBuilder(topo).build(snap);
  keepAffinityOnly(snap);
  return snap;
}

// This machine, discovered without the costly backends; `flags`: hwloc's topology flags.
Result<TopologyPtr> discover(unsigned long flags) {
  auto topo = newTopology();
  if (!topo) return tl::unexpected<Error>(topo.error());
  skipCostlyBackends(topo->get());
  hwloc_topology_set_flags(topo->get(), flags);
  errno = 0;
  if (hwloc_topology_load(topo->get()) != 0)
    return fail(Errc::topology,
                "hwloc could not discover this machine's topology: " + std::string(std::strerror(errno)));
  return topo;
}

Result<TopologySnapshot> discoverLive(std::string* live_xml) {
  auto topo = discover(0);
  if (!topo) return tl::unexpected<Error>(topo.error());
  return liveSnapshot(topo->get(), live_xml);
}

// The whole machine for the cache, CPUs this process may not use included: its topology (kept
// while the XML is loaded again, so that hwloc's plugins stay loaded) and its XML.
std::optional<std::pair<TopologyPtr, std::string>> discoverWholeMachine() {
  auto topo = discover(HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  if (!topo) return std::nullopt;
  std::string xml = exportXml(topo->get());
  if (xml.empty()) return std::nullopt;
  return std::make_pair(std::move(*topo), std::move(xml));
}

// This machine from its cached whole-machine XML, restricted as a live load would be: hwloc reads
// this process's cgroup and cpuset and leaves out what they do not allow.
std::optional<TopologySnapshot> loadWholeMachineXml(const std::string& xml, std::string* live_xml) {
  auto topo = newTopology();
  if (!topo) return std::nullopt;
  if (hwloc_topology_set_xmlbuffer(topo->get(), xml.c_str(), static_cast<int>(xml.size() + 1)) != 0 ||
      hwloc_topology_set_flags(topo->get(), HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM |
                                                HWLOC_TOPOLOGY_FLAG_THISSYSTEM_ALLOWED_RESOURCES) != 0 ||
      hwloc_topology_load(topo->get()) != 0)
    return std::nullopt;
  return liveSnapshot(topo->get(), live_xml);
}

Result<TopologySnapshot> loadLive(std::string* live_xml, const std::string& cache_dir, bool* from_cache) {
  const auto facts = cache_dir.empty() ? std::nullopt : liveTopologyFacts();
  if (!facts) return discoverLive(live_xml);
  const std::string file = topologyCacheFile(cache_dir, *facts);
  if (auto cached = readCachedTopology(file, *facts)) {
    if (auto snap = loadWholeMachineXml(*cached, live_xml)) {
      if (from_cache) *from_cache = true;
      return std::move(*snap);
    }
  }
  auto whole = discoverWholeMachine();
  if (!whole) return discoverLive(live_xml);
  auto snap = loadWholeMachineXml(whole->second, live_xml);
  if (!snap) return discoverLive(live_xml);
  storeCachedTopology(cache_dir, file, *facts, whole->second);
  return std::move(*snap);
}

}  // namespace

Result<TopologySnapshot> loadTopology(const std::string& xml_path, std::string* live_xml,
                                      const std::string& cache_dir, bool* from_cache) {
  if (from_cache) *from_cache = false;
  std::string path = xml_path;
  if (path.empty()) {
    const char* env = std::getenv("HWLOC_XMLFILE");
    if (env && *env) path = env;
  }
  if (path.empty()) return loadLive(live_xml, cache_dir, from_cache);

  const std::string hint = "check the file, or re-export it on the node with `lstopo --of xml FILE`";
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    return fail(Errc::topology, "cannot read topology XML '" + path + "': it is a directory", hint);
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Errc::topology, "cannot read topology XML '" + path + "': " + std::strerror(errno), hint);
  // Read here, with a bound: hwloc would read `/dev/zero`, or a wrong multi-GB file, until memory
  // ran out. The largest machines' topologies are a few MB.
  constexpr std::size_t kMaxXmlBytes = 64u << 20;
  std::string xml;
  for (char chunk[65536]; in.read(chunk, sizeof chunk) || in.gcount() > 0;) {
    xml.append(chunk, static_cast<std::size_t>(in.gcount()));
    if (xml.size() > kMaxXmlBytes)
      return fail(Errc::topology, "topology XML '" + path + "' is larger than 64 MiB: not a topology", hint);
  }
  auto topo = newTopology();
  if (!topo) return tl::unexpected<Error>(topo.error());
  errno = 0;
  if (hwloc_topology_set_xmlbuffer(topo->get(), xml.c_str(), static_cast<int>(xml.size() + 1)) != 0 ||
      hwloc_topology_load(topo->get()) != 0) {
    std::string problem = xmlProblem(path, errno);
    return fail(Errc::topology, "cannot load topology XML '" + path + "': " + problem,
                problem.find("newer than") != std::string::npos
                    ? "export the topology with hwloc 2.x (`lstopo --of xml FILE`), which this hwloc can read"
                    : hint);
  }
  TopologySnapshot snap;
  snap.live = false;
  snap.source = path;
  SnapshotBuilder(topo->get()).build(snap);
  return snap;
}

}  // namespace tlaunch
