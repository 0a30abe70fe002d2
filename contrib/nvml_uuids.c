/* GPU index, PCI bus id and UUID through NVML loaded at run time (dlopen libnvidia-ml.so.1):
 * no build dependency on CUDA. Prints "index,busid,uuid" per GPU; exits 2 when NVML cannot be
 * loaded or initialised. Built by contrib/gpu-check.sh: cc -I SRC -o nvml_uuids nvml_uuids.c -ldl */
#include <dlfcn.h>
#include <stdio.h>

#include "binding/topology/nvml_abi.h"

int main(void) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "nvml_uuids: %s\n", dlerror());
    return 2;
  }
  nvmlReturn_t (*init)(void) = (nvmlReturn_t(*)(void))dlsym(lib, "nvmlInit_v2");
  nvmlReturn_t (*count)(unsigned*) = (nvmlReturn_t(*)(unsigned*))dlsym(lib, "nvmlDeviceGetCount_v2");
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) =
      (nvmlReturn_t(*)(unsigned, nvmlDevice_t*))dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) =
      (nvmlReturn_t(*)(nvmlDevice_t, char*, unsigned))dlsym(lib, "nvmlDeviceGetUUID");
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) =
      (nvmlReturn_t(*)(nvmlDevice_t, nvmlPciInfo_t*))dlsym(lib, "nvmlDeviceGetPciInfo_v3");
  if (!init || !count || !handle || !uuid || !pci) {
    fprintf(stderr, "nvml_uuids: libnvidia-ml.so.1 lacks an NVML v2/v3 entry point\n");
    return 2;
  }
  unsigned n = 0;
  if (init() != 0 || count(&n) != 0) {
    fprintf(stderr, "nvml_uuids: nvmlInit/nvmlDeviceGetCount failed\n");
    return 2;
  }
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t dev;
    char id[TL_NVML_UUID_BUFFER_SIZE] = {0};
    nvmlPciInfo_t info = {0};
    if (handle(i, &dev) != 0 || uuid(dev, id, sizeof id) != 0 || pci(dev, &info) != 0) {
      fprintf(stderr, "nvml_uuids: GPU %u: query failed\n", i);
      return 2;
    }
    printf("%u,%s,%s\n", i, info.busId, id);
  }
  return 0;
}
