#pragma once
// [edge] hwloc → TopologySnapshot: the live machine, or an XML export recorded elsewhere.
#include <string>

#include "tlaunch/result.h"
#include "tlaunch/topology.h"

struct hwloc_topology;  // hwloc.h's hwloc_topology_t points to one

namespace tlaunch {

// Loads the topology with PCI and OS-device discovery enabled (on the live machine without hwloc's
// OpenCL, OpenGL and libpciaccess backends, which start GPU drivers or cost milliseconds per
// vendor: see skipCostlyBackends).
// xml_path empty → the live machine, unless HWLOC_XMLFILE is set (then that file, live = false).
// Old hwloc 1.x (v1 format) exports load too. Only allowed PUs are kept (cgroup / Summit's reserved
// cores). Fails with Errc::topology naming the file and hwloc's reason.
// `live_xml`: for the live machine only, the loaded topology exported as hwloc v2 XML (the
// daemon hands it to its ranks through PMIx, so that each need not discover it again).
// `cache_dir`: for the live machine, a directory of this user's where the whole machine's XML is
// kept for the next load of this boot (topology_cache.h); "" = discover every time.
// `from_cache`: set to whether the live machine came from that cache (for -v).
Result<TopologySnapshot> loadTopology(const std::string& xml_path, std::string* live_xml = nullptr,
                                      const std::string& cache_dir = "", bool* from_cache = nullptr);

// hwloc dlopens every plugin in its directory at a process's first topology and keeps them while
// one exists. Debian's OpenCL, OpenGL, libpciaccess and libxml2 ones pull in libOpenCL, libX11,
// ICU and more: ~3 ms of a daemon's start, for backends live discovery leaves out (see
// skipCostlyBackends) and an XML parser hwloc has built in. While this object lives, hwloc's
// plugins are the others only (HWLOC_PLUGINS_BLACKLIST, unless the user set it). It sets and
// restores that variable: make it before any thread exists, and keep it for the process's life.
class HwlocPluginsWithoutUnused {
 public:
  HwlocPluginsWithoutUnused();
  ~HwlocPluginsWithoutUnused();
  HwlocPluginsWithoutUnused(const HwlocPluginsWithoutUnused&) = delete;
  HwlocPluginsWithoutUnused& operator=(const HwlocPluginsWithoutUnused&) = delete;

 private:
  ::hwloc_topology* keep_ = nullptr;  // an empty topology: it holds the plugins loaded
};

}  // namespace tlaunch
