#pragma once
// What the NVIDIA driver (NVML) says of the GPUs hwloc found on the live machine, merged into
// the snapshot (pure): each GPU's UUID and model filled in from NVML, and the GPUs NVML does not
// list left out of the plan. CUDA does not number those either, so leaving them out keeps the
// plan's GPU r CUDA's device r under CUDA_DEVICE_ORDER=PCI_BUS_ID.
#include <string>
#include <vector>

#include "binding/topology/nvml_reader.h"
#include "tlaunch/topology.h"

namespace tlaunch {

struct GpuDriverFacts {
  bool consulted = false;  // the live machine has NVIDIA GPUs, so NVML was asked
  NvmlReport::State state = NvmlReport::State::not_loaded;
  std::string error;                      // why NVML did not load or start
  std::string driver_version;
  int nvidia_gpus = 0;                    // NVIDIA GPUs hwloc found on PCI
  std::vector<std::string> unlisted;      // their bus ids that NVML does not list (left out)
  std::vector<std::string> device_errors;  // devices NVML counts but cannot query
};

// True when `topo` holds an NVIDIA GPU (hwloc's vendor name).
bool hasNvidiaGpu(const TopologySnapshot& topo);

// Merges `nvml` into `topo` as described above. Without a working NVML, `topo` stays as hwloc
// found it and the facts say why.
GpuDriverFacts mergeNvml(TopologySnapshot& topo, const NvmlReport& nvml);

}  // namespace tlaunch
