#include "binding/topology/nvml_reader.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace tlaunch {
namespace {

// The few NVML types and entry points used, as nvml.h declares them (stable C ABI since
// driver 319; the _v2/_v3 names are the current ones).
using NvmlReturn = int;
using NvmlDevice = void*;
struct NvmlPciInfo {  // nvmlPciInfo_t
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];  // "00000000:18:00.0"
};
constexpr unsigned kNameSize = 96;     // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidSize = 96;     // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kVersionSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
constexpr NvmlReturn kNoPermission = 4;  // NVML_ERROR_NO_PERMISSION: not this process's device

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
    if (rc == kNoPermission) {
      ++report.inaccessible;
      continue;
    }
    if (rc != 0) {
      report.device_errors.push_back(which + nvml.errorText(rc));
      continue;
    }
    pci.bus_id[sizeof pci.bus_id - 1] = '\0';
    NvmlGpu gpu;
    gpu.busid = hwlocBusId(pci.bus_id);
    if (gpu.busid.empty()) {
      report.device_errors.push_back(which + "bus id '" + std::string(pci.bus_id) + "' unreadable");
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
