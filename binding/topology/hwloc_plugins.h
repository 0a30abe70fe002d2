#pragma once
// Which of hwloc's plugins a process loads (tlaunchd, and tlaunch's topo and offline plans).

struct hwloc_topology;

namespace tlaunch {

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
