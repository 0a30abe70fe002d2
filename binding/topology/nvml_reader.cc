#include "binding/topology/nvml_reader.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "binding/topology/nvml_abi.h"

namespace tlaunch {
namespace {

using NvmlReturn = nvmlReturn_t;
using NvmlDevice = nvmlDevice_t;
using NvmlPciInfo = nvmlPciInfo_t;
constexpr unsigned kNameSize = TL_NVML_NAME_BUFFER_SIZE;
constexpr unsigned kUuidSize = TL_NVML_UUID_BUFFER_SIZE;
constexpr unsigned kVersionSize = TL_NVML_DRIVER_VERSION_BUFFER_SIZE;

struct NvmlLibrary {
  void* handle = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned) = nullptr;
  NvmlReturn (*count)(unsigned*) = nullptr;
  NvmlReturn (*by_index)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*pci_info)(NvmlDevice, NvmlPciInfo*) = nullptr;
  NvmlReturn (*uuid)(NvmlDevice, char*, unsigned) = nullptr;
  NvmlReturn (*name)(NvmlDevice, char*, unsigned) = nullptr;

  NvmlLibrary() = default;
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;
  ~NvmlLibrary() {
    if (handle) ::dlclose(handle);
  }
  std::string errorText(NvmlReturn rc) const {
    const char* text = error_string ? error_string(rc) : nullptr;
    return text && *text ? std::string(text) : "NVML error " + std::to_string(rc);
  }
};

template <typename F>
bool resolve(void* handle, const char* symbol, F& out) {
  out = reinterpret_cast<F>(::dlsym(handle, symbol));
  return out != nullptr;
}

// "00000000:18:00.0" → "0000:18:00.0", in hwloc's form; "" when it is not a bus id.
std::string hwlocBusId(const char* nvml) {
  unsigned domain = 0, bus = 0, device = 0, function = 0;
  if (std::sscanf(nvml, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) return "";
  char out[32];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%01x", domain, bus, device, function);
  return out;
}

}  // namespace

NvmlReport readNvmlGpus(const std::string& library) {
  NvmlReport report;
  NvmlLibrary nvml;
  nvml.handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!nvml.handle) {
    const char* why = ::dlerror();
    report.error = why ? why : library + ": cannot be loaded";
    return report;
  }
  void* h = nvml.handle;
  if (!resolve(h, "nvmlInit_v2", nvml.init) || !resolve(h, "nvmlShutdown", nvml.shutdown) ||
      !resolve(h, "nvmlDeviceGetCount_v2", nvml.count) || !resolve(h, "nvmlDeviceGetHandleByIndex_v2", nvml.by_index) ||
      !resolve(h, "nvmlDeviceGetPciInfo_v3", nvml.pci_info) || !resolve(h, "nvmlDeviceGetUUID", nvml.uuid) ||
      !resolve(h, "nvmlDeviceGetName", nvml.name)) {
    report.error = library + " lacks an NVML entry point this tlaunch uses (a driver older than 319?)";
    return report;
  }
  resolve(h, "nvmlErrorString", nvml.error_string);
  resolve(h, "nvmlSystemGetDriverVersion", nvml.driver_version);

  if (NvmlReturn rc = nvml.init(); rc != 0) {
    report.state = NvmlReport::State::init_failed;
    report.error = nvml.errorText(rc);
    return report;
  }
  report.state = NvmlReport::State::ok;
  if (char version[kVersionSize] = {}; nvml.driver_version && nvml.driver_version(version, kVersionSize) == 0)
    report.driver_version = version;
  unsigned count = 0;
  if (NvmlReturn rc = nvml.count(&count); rc != 0) {
    report.device_errors.push_back("NVML device count: " + nvml.errorText(rc));
    count = 0;
  }
  for (unsigned i = 0; i < count; ++i) {
    const std::string which = "NVML device " + std::to_string(i) + ": ";
    NvmlDevice device = nullptr;
    NvmlPciInfo pci{};
    char uuid[kUuidSize] = {}, name[kNameSize] = {};
    NvmlReturn rc = nvml.by_index(i, &device);
    if (rc == 0) rc = nvml.pci_info(device, &pci);
    if (rc == TL_NVML_ERROR_NO_PERMISSION) {
      ++report.inaccessible;
      continue;
    }
    if (rc != 0) {
      report.device_errors.push_back(which + nvml.errorText(rc));
      continue;
    }
    pci.busId[sizeof pci.busId - 1] = '\0';
    NvmlGpu gpu;
    gpu.busid = hwlocBusId(pci.busId);
    if (gpu.busid.empty()) {
      report.device_errors.push_back(which + "bus id '" + std::string(pci.busId) + "' unreadable");
      continue;
    }
    if (nvml.uuid(device, uuid, kUuidSize) == 0) gpu.uuid = std::string(uuid, ::strnlen(uuid, kUuidSize));
    if (nvml.name(device, name, kNameSize) == 0) gpu.name = std::string(name, ::strnlen(name, kNameSize));
    report.gpus.push_back(std::move(gpu));
  }
  nvml.shutdown();
  return report;
}

}  // namespace tlaunch
