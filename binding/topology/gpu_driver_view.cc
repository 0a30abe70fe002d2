#include "binding/topology/gpu_driver_view.h"

#include <algorithm>
#include <map>

namespace tlaunch {
namespace {

bool isNvidia(const GpuDevice& g) { return g.vendor == "NVIDIA"; }

bool hasNvmlOsDevice(const GpuDevice& g) {
  return std::any_of(g.os_devices.begin(), g.os_devices.end(),
                     [](const std::string& d) { return d.rfind("nvml", 0) == 0; });
}

}  // namespace

std::string GpuDriverFacts::problem() const {
  switch (nvml.state) {
    case NvmlReport::State::not_loaded: return "NVML does not load: " + nvml.error;
    case NvmlReport::State::init_failed: return "NVML does not start: " + nvml.error;
    case NvmlReport::State::ok: break;
  }
  return "";
}

std::string GpuDriverFacts::driverText() const {
  return "driver " + (nvml.driver_version.empty() ? std::string("(version unknown)") : nvml.driver_version);
}

bool hasNvidiaGpu(const TopologySnapshot& topo) {
  return std::any_of(topo.gpus.begin(), topo.gpus.end(), isNvidia);
}

GpuDriverFacts mergeNvml(TopologySnapshot& topo, NvmlReport nvml) {
  GpuDriverFacts facts;
  facts.consulted = true;
  facts.nvml = std::move(nvml);
  facts.nvidia_gpus = static_cast<int>(std::count_if(topo.gpus.begin(), topo.gpus.end(), isNvidia));
  if (!facts.answering()) return facts;

  std::map<std::string, std::pair<int, const NvmlGpu*>> by_busid;  // NVML index and entry
  const auto& listed = facts.nvml.gpus;
  for (size_t i = 0; i < listed.size(); ++i) by_busid[listed[i].busid] = {static_cast<int>(i), &listed[i]};
  std::vector<GpuDevice> kept;
  kept.reserve(topo.gpus.size());
  for (auto& g : topo.gpus) {
    if (!isNvidia(g)) {
      kept.push_back(std::move(g));
      continue;
    }
    auto it = by_busid.find(g.busid);
    if (it == by_busid.end()) {
      facts.unlisted.push_back(g.busid);
      continue;
    }
    const auto [index, entry] = it->second;
    if (!g.uuid && entry->uuid.rfind("GPU-", 0) == 0) g.uuid = entry->uuid;
    if (!entry->name.empty()) g.model = entry->name;  // the driver's name is the most specific
    if (!hasNvmlOsDevice(g)) g.os_devices.push_back("nvml" + std::to_string(index));
    kept.push_back(std::move(g));
  }
  topo.gpus = std::move(kept);
  return facts;
}

GpuDriverFacts consultNvidiaDriver(TopologySnapshot& topo, const std::string& library) {
  if (!topo.live || !hasNvidiaGpu(topo)) return {};
  return mergeNvml(topo, readNvmlGpus(library));
}

}  // namespace tlaunch
