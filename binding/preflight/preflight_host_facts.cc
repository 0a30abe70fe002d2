#include "binding/preflight/preflight_host_facts.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tlaunch {
namespace fs = std::filesystem;

MemlockLimit readMemlockLimit() {
  MemlockLimit m;
  rlimit limit{};
  if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return m;
  m.known = true;
  m.soft_unlimited = limit.rlim_cur == RLIM_INFINITY;
  m.soft_bytes = m.soft_unlimited ? 0 : static_cast<std::uint64_t>(limit.rlim_cur);
  m.hard_unlimited = limit.rlim_max == RLIM_INFINITY;
  m.hard_bytes = m.hard_unlimited ? 0 : static_cast<std::uint64_t>(limit.rlim_max);
  return m;
}

std::vector<UverbsNode> findUverbsNodes(const NodeFabric& fabric, const std::string& sysfsRoot,
                                        const std::string& devDir) {
  std::vector<UverbsNode> out;
  for (const auto& device : fabric.devices) {
    UverbsNode node;
    node.device = device.name;
    std::error_code ec;
    fs::path verbsDir = fs::path(sysfsRoot) / "sys/class/infiniband" / device.name / "device/infiniband_verbs";
    for (fs::directory_iterator it(verbsDir, ec), end; !ec && it != end; it.increment(ec)) {
      std::ifstream ibdev(it->path() / "ibdev");
      std::string name;
      if (ibdev && std::getline(ibdev, name) && name != device.name) continue;
      node.path = (fs::path(devDir) / it->path().filename()).string();
      break;
    }
    if (!node.path.empty()) {
      int fd = ::open(node.path.c_str(), O_RDWR | O_CLOEXEC);
      if (fd >= 0) {
        node.accessible = true;
        ::close(fd);
      } else {
        node.error = std::strerror(errno);
      }
    }
    out.push_back(std::move(node));
  }
  return out;
}

std::vector<std::string> findGpudirectModules(const std::string& root) {
  std::vector<std::string> out;
  const fs::path r(root);
  std::error_code ec;
  for (const char* module : {"nvidia_peermem", "nv_peer_mem"})
    if (fs::is_directory(r / "sys/module" / module, ec))
      out.push_back(std::string(module) + " (/sys/module/" + module + ")");
  for (const char* peer : {"nv_mem", "nv_mem_nc"})
    if (fs::exists(r / "sys/kernel/mm/memory_peers" / peer / "version", ec))
      out.push_back(std::string("nv_peer_mem (/sys/kernel/mm/memory_peers/") + peer + ")");
  std::ifstream modules(r / "proc/modules");
  for (std::string line; std::getline(modules, line);)
    for (const char* module : {"nvidia_peermem", "nv_peer_mem"})
      if (line.rfind(std::string(module) + " ", 0) == 0) {
        std::string entry = std::string(module) + " (/proc/modules)";
        bool seen = false;
        for (const auto& o : out) seen = seen || o.rfind(std::string(module) + " ", 0) == 0;
        if (!seen) out.push_back(entry);
      }
  return out;
}

HostFacts gatherHostFacts(const NodeFabric& fabric, const std::string& sysfsRoot) {
  HostFacts facts;
  facts.memlock = readMemlockLimit();
  facts.uverbs = findUverbsNodes(fabric, sysfsRoot);
  facts.gpudirect_modules = findGpudirectModules(sysfsRoot);
  return facts;
}

}  // namespace tlaunch
