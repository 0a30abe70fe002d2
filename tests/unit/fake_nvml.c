/* A stand-in for the NVIDIA driver's libnvidia-ml.so.1 (no GPU here), loaded by the real NVML
 * reader (binding/topology/nvml_reader.cc) through dlopen. Its values were recorded with the
 * real library on a cloud H100 VM (driver 580.159.04; tests/fixtures/PROVENANCE.md), its error
 * texts are that library's nvmlErrorString. Built once per FAKE_NVML_SCENARIO:
 *   0  one H100 that answers;
 *   1  nvmlInit fails as after a driver upgrade without reboot (NVML_ERROR_LIB_RM_VERSION_MISMATCH);
 *   2  two devices: the H100, and device 1 lost (NVML_ERROR_GPU_IS_LOST, "fallen off the bus");
 *   3  no NVML entry points but nvmlInit_v2 (a library that is not NVML);
 *   4  two devices: the H100, and device 1 that this process may not open (NVML_ERROR_NO_PERMISSION,
 *      as in a cgroup or container without it);
 *   5  the H100 with a bus id that is no bus id and fills its buffer without a terminating NUL. */
#include <stdio.h>
#include <string.h>

#include "binding/topology/nvml_abi.h"

#ifndef FAKE_NVML_SCENARIO
#error "FAKE_NVML_SCENARIO must be defined"
#endif

const char* nvmlErrorString(nvmlReturn_t rc) {
  switch (rc) {
    case TL_NVML_SUCCESS: return "Success";
    case TL_NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case TL_NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case TL_NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case TL_NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "Driver/library version mismatch";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlInit_v2(void) { return FAKE_NVML_SCENARIO == 1 ? TL_NVML_ERROR_LIB_RM_VERSION_MISMATCH : TL_NVML_SUCCESS; }

#if FAKE_NVML_SCENARIO != 3
static const char the_device = 0; /* its address is the one device handle */

nvmlReturn_t nvmlShutdown(void) { return TL_NVML_SUCCESS; }

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  snprintf(version, length, "%s", "580.159.04");
  return TL_NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = FAKE_NVML_SCENARIO == 2 || FAKE_NVML_SCENARIO == 4 ? 2 : 1;
  return TL_NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (index == 1 && FAKE_NVML_SCENARIO == 2) return TL_NVML_ERROR_GPU_IS_LOST;
  if (index == 1 && FAKE_NVML_SCENARIO == 4) return TL_NVML_ERROR_NO_PERMISSION;
  if (index != 0) return TL_NVML_ERROR_INVALID_ARGUMENT;
  *device = (nvmlDevice_t)&the_device;
  return TL_NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (device != (const void*)&the_device) return TL_NVML_ERROR_INVALID_ARGUMENT;
  memset(pci, 0, sizeof *pci);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", "0000:00:06.0");
  pci->bus = 0;
  pci->device = 6;
  pci->pciDeviceId = 0x233010de;
  pci->pciSubSystemId = 0x16c110de;
  snprintf(pci->busId, sizeof pci->busId, "%s", "00000000:00:06.0");
  if (FAKE_NVML_SCENARIO == 5) memset(pci->busId, 'Z', sizeof pci->busId);
  return TL_NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  if (device != (const void*)&the_device) return TL_NVML_ERROR_INVALID_ARGUMENT;
  snprintf(uuid, length, "%s", "GPU-1fb43360-0847-5ec0-e96a-a1f40f2f23ae");
  return TL_NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  if (device != (const void*)&the_device) return TL_NVML_ERROR_INVALID_ARGUMENT;
  snprintf(name, length, "%s", "NVIDIA H100 80GB HBM3");
  return TL_NVML_SUCCESS;
}
#endif
