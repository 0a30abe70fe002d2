#include "binding/topology/hwloc_topology.h"

#include <hwloc.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>
#include <system_error>
#include <utility>

#include "binding/topology/hwloc_snapshot.h"
#include "binding/topology/process_affinity.h"
#include "binding/topology/topology_cache.h"

namespace tlaunch {
namespace {

struct TopologyDeleter {
  void operator()(hwloc_topology* t) const { hwloc_topology_destroy(t); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

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
  readSnapshot(topo, snap);
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
  readSnapshot(topo->get(), snap);
  return snap;
}

}  // namespace tlaunch
