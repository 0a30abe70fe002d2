#pragma once
// Recorded hwloc topologies for the topology tests: every XML under $TLAUNCH_FIXTURES_DIR/topologies
// plus hwloc's two expected sysfs outputs. A missing fixture fails the test.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

namespace tlaunch::test {

inline std::string fixturesDir() { return TLAUNCH_FIXTURES_DIR; }

inline std::string fileName(const std::string& path) { return std::filesystem::path(path).filename().string(); }

inline std::string fixture(const std::string& relative) { return fixturesDir() + "/" + relative; }

inline std::vector<std::string> topologyFixtures() {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  const fs::path dir = fs::path(fixturesDir()) / "topologies";
  if (!fs::is_directory(dir)) {
    FAIL("fixtures not found at " << dir.string() << " (tests/fixtures is part of the repository)");
  }
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".xml") files.push_back(e.path().string());
  for (const char* f : {"sysfs/hwloc-linux_32em64t-2n8c+1mic.expected-lstopo-v2.x.xml",
                        "sysfs/hwloc-linux_40intel64-2g2n4c.expected-lstopo-v2.x.xml"})
    if (fs::exists(fixture(f))) files.push_back(fixture(f));
  std::sort(files.begin(), files.end());
  return files;
}

// The fixture whose file name starts with prefix, (a missing one fails the test).
inline std::string topologyFixture(const std::string& prefix) {
  for (const auto& f : topologyFixtures())
    if (std::filesystem::path(f).filename().string().rfind(prefix, 0) == 0) return f;
  FAIL("fixture " << prefix << "* not found (tests/fixtures is part of the repository)");
  return {};
  return {};
}

}  // namespace tlaunch::test

#include <hwloc.h>

namespace tlaunch::test {

// hwloc itself, loaded independently of the code under test, to cross-check what it extracted.
class HwlocXml {
 public:
  explicit HwlocXml(const std::string& path, bool include_disallowed = false) {
    hwloc_topology_init(&topo_);
    hwloc_topology_set_io_types_filter(topo_, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (include_disallowed) hwloc_topology_set_flags(topo_, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
    ok_ = hwloc_topology_set_xml(topo_, path.c_str()) == 0 && hwloc_topology_load(topo_) == 0;
  }
  ~HwlocXml() { hwloc_topology_destroy(topo_); }
  HwlocXml(const HwlocXml&) = delete;
  HwlocXml& operator=(const HwlocXml&) = delete;

  bool ok() const { return ok_; }
  hwloc_topology_t get() const { return topo_; }

  hwloc_obj_t pci(const std::string& busid) const { return hwloc_get_pcidev_by_busidstring(topo_, busid.c_str()); }

  hwloc_obj_t osdev(const std::string& name) const {
    for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(topo_, o));)
      if (o->name && name == o->name) return o;
    return nullptr;
  }

  static std::vector<int> ids(hwloc_const_bitmap_t set) {
    std::vector<int> out;
    for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i)) out.push_back(i);
    return out;
  }

 private:
  hwloc_topology_t topo_ = nullptr;
  bool ok_ = false;
};

}  // namespace tlaunch::test
