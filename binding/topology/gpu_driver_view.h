#pragma once
// What the NVIDIA driver (NVML) says of the GPUs hwloc found on the live machine, merged into
// the snapshot: each GPU's UUID and model filled in from NVML, and the GPUs NVML does not list
// left out of the plan. CUDA does not number those either, so leaving them out keeps the plan's
// GPU r CUDA's device r under CUDA_DEVICE_ORDER=PCI_BUS_ID. mergeNvml is pure; consultNvidiaDriver
// is the one call the daemon's inventory and `tlaunch topo` make.
#include <string>
#include <vector>

#include "binding/topology/nvml_reader.h"
#include "tlaunch/topology.h"

namespace tlaunch {

struct GpuDriverFacts {
  bool consulted = false;              // the live machine has NVIDIA GPUs, so NVML was asked
  NvmlReport nvml;                     // what it answered
  int nvidia_gpus = 0;                 // NVIDIA GPUs hwloc found on PCI
  std::vector<std::string> unlisted;   // their bus ids that NVML does not list (left out)

  bool answering() const { return nvml.state == NvmlReport::State::ok; }
  // "NVML does not load: …" or "NVML does not start: …"; "" when it answers.
  std::string problem() const;
  // "driver 580.159.04", or "driver (version unknown)".
  std::string driverText() const;
};

// True when `topo` holds an NVIDIA GPU (hwloc's vendor name).
bool hasNvidiaGpu(const TopologySnapshot& topo);

// Merges `nvml` into `topo` as described above. Without a working NVML, `topo` stays as hwloc
// found it and the facts say why.
GpuDriverFacts mergeNvml(TopologySnapshot& topo, NvmlReport nvml);

// On a live topology with NVIDIA GPUs: reads NVML from `library` and merges it; otherwise
// nothing is asked and the facts say so (consulted false).
GpuDriverFacts consultNvidiaDriver(TopologySnapshot& topo, const std::string& library = kNvmlLibrary);

}  // namespace tlaunch
