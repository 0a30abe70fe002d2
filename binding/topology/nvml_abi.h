/* The few NVML types and values tlaunch uses, as the driver's nvml.h declares them (a stable C
 * ABI since driver 319; the _v2/_v3 entry points are the current ones). C and C++ alike: the NVML
 * reader, its stand-in for tests (tests/unit/fake_nvml.c) and contrib/nvml_uuids.c share it. */
#pragma once

typedef int nvmlReturn_t;
typedef void* nvmlDevice_t;
typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32]; /* "00000000:18:00.0" */
} nvmlPciInfo_t;

#define TL_NVML_SUCCESS 0
#define TL_NVML_ERROR_INVALID_ARGUMENT 2
#define TL_NVML_ERROR_NO_PERMISSION 4 /* not this process's device (cgroup, container) */
#define TL_NVML_ERROR_GPU_IS_LOST 15
#define TL_NVML_ERROR_LIB_RM_VERSION_MISMATCH 18
#define TL_NVML_NAME_BUFFER_SIZE 96           /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define TL_NVML_UUID_BUFFER_SIZE 96           /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define TL_NVML_DRIVER_VERSION_BUFFER_SIZE 80 /* NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE */
