#pragma once
// The NVIDIA driver's own list of GPUs, through NVML loaded at run time (dlopen of
// libnvidia-ml.so.1, which the driver installs): no build dependency on CUDA, and nothing to
// load on a machine without the driver. Debian's hwloc has no NVML or CUDA component, so hwloc
// alone sees NVIDIA GPUs only as PCI devices: no UUID, a model only from the PCI database, and
// a GPU the driver cannot use (lost, failed at boot, hidden from a container) still counted.
#include <string>
#include <vector>

namespace tlaunch {

struct NvmlGpu {
  std::string busid;  // "dddd:bb:dd.f", lowercase hex, as hwloc's GPUs are named
  std::string uuid;   // "GPU-…"
  std::string name;   // "NVIDIA H100 80GB HBM3"
};

struct NvmlReport {
  enum class State { not_loaded, init_failed, ok };
  State state = State::not_loaded;
  std::string error;           // not_loaded: the loader's reason; init_failed: NVML's
  std::string driver_version;  // "580.159.04"
  std::vector<NvmlGpu> gpus;   // the devices that answered, in NVML's index order
  std::vector<std::string> device_errors;  // "NVML device 3: GPU is lost"
  int inaccessible = 0;  // devices this process may not open (a cgroup or container without them)
};

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

// Loads `library`, initialises NVML, lists its devices, shuts it down and unloads it.
NvmlReport readNvmlGpus(const std::string& library = kNvmlLibrary);

}  // namespace tlaunch
