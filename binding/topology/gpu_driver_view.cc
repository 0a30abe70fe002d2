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

bool hasNvidiaGpu(const TopologySnapshot& topo) {
  return std::any_of(topo.gpus.begin(), topo.gpus.end(), isNvidia);
}

GpuDriverFacts mergeNvml(TopologySnapshot& topo, const NvmlReport& nvml) {
  GpuDriverFacts facts;
  facts.consulted = true;
  facts.state = nvml.state;
  facts.error = nvml.error;
  facts.driver_version = nvml.driver_version;
  facts.device_errors = nvml.device_errors;
  facts.nvidia_gpus = static_cast<int>(std::count_if(topo.gpus.begin(), topo.gpus.end(), isNvidia));
  if (nvml.state != NvmlReport::State::ok) return facts;

  std::map<std::string, std::pair<int, const NvmlGpu*>> by_busid;  // NVML index and entry
  for (size_t i = 0; i < nvml.gpus.size(); ++i) by_busid[nvml.gpus[i].busid] = {static_cast<int>(i), &nvml.gpus[i]};
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

}  // namespace tlaunch
