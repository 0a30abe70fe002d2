#include "binding/topology/hwloc_plugins.h"

#include <hwloc.h>

#include <cstdlib>

namespace tlaunch {

HwlocPluginsWithoutUnused::HwlocPluginsWithoutUnused() {
  constexpr const char* kVariable = "HWLOC_PLUGINS_BLACKLIST";
  const bool users = std::getenv(kVariable) != nullptr;
  if (!users) ::setenv(kVariable, "hwloc_opencl,hwloc_gl,hwloc_pci,hwloc_xml_libxml", 1);
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) == 0) keep_ = topo;
  if (!users) ::unsetenv(kVariable);
}

HwlocPluginsWithoutUnused::~HwlocPluginsWithoutUnused() {
  if (keep_) hwloc_topology_destroy(keep_);
}

}  // namespace tlaunch
