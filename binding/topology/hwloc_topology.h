#pragma once
// [edge] hwloc → TopologySnapshot: the live machine, or an XML export recorded elsewhere.
#include <string>

#include "tlaunch/result.h"
#include "tlaunch/topology.h"

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

}  // namespace tlaunch
