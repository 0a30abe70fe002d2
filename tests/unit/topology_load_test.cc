// Loading recorded and live topologies into TopologySnapshot, and its JSON round trip.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <utility>

#include "binding/topology/hwloc_plugins.h"
#include "binding/topology/hwloc_topology.h"
#include "binding/topology/topology_json.h"
#include "topology_test_fixtures.h"

using namespace tlaunch;
using tlaunch::test::HwlocXml;
using tlaunch::test::fileName;

namespace {

size_t puCount(const TopologySnapshot& t) {
  size_t n = 0;
  for (const auto& node : t.numa_nodes)
    for (const auto& core : node.cores) n += core.size();
  return n;
}

std::vector<std::string> hcaNames(const TopologySnapshot& t) {
  std::vector<std::string> names;
  for (const auto& h : t.hcas) names.push_back(h.name);
  std::sort(names.begin(), names.end());
  return names;
}

// What PROVENANCE.md says each machine has.
struct Expected {
  size_t gpus;
  std::vector<std::string> hcas;  // sorted
  size_t numa_nodes;
  size_t pus;
};

const std::map<std::string, Expected>& provenance() {
  static const std::map<std::string, Expected> table{
      {"aws-g4dn", {8, {"rdmap197s0"}, 2, 96}},
      {"azure-hbv4", {0, {"mlx5_an0", "mlx5_ib0"}, 4, 176}},
      {"cloud-vm-firecracker", {1, {}, 1, 16}},
      {"ibm-power8-minsky", {4, {}, 2, 16}},
      {"jsc-jureca-booster", {0, {"hfi1_0", "hfi1_1"}, 1, 272}},
      {"jsc-jureca-dc-gpu", {4, {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}, 8, 256}},
      {"jsc-juwels-booster", {4, {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}, 8, 96}},
      {"jsc-juwels-cluster-gpu", {4, {"mlx5_0", "mlx5_1"}, 2, 80}},
      {"llnl-corona282", {8, {"mlx5_0"}, 2, 96}},
      {"llnl-ipa20", {4, {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}, 8, 224}},
      {"llnl-sierra3682", {4, {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}, 6, 176}},
      {"llnl-tioga29", {8, {}, 4, 128}},
      {"nvidia-dgx2h", {16, {}, 2, 4}},
      {"ornl-summit", {6, {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}, 2, 168}},
      {"hwloc-linux_32em64t", {0, {"mlx4_0"}, 2, 16}},
      {"hwloc-linux_40intel64", {0, {"qib0"}, 4, 40}},
  };
  return table;
}

const Expected* expectedFor(const std::string& path) {
  for (const auto& [prefix, e] : provenance())
    if (fileName(path).rfind(prefix, 0) == 0) return &e;
  return nullptr;
}

struct ScopedEnv {
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("every recorded topology loads with the GPUs, HCAs, NUMA nodes and PUs its machine has", "[topology]") {
  for (const auto& path : test::topologyFixtures()) {
    INFO(fileName(path));
    auto t = loadTopology(path);
    REQUIRE(t.has_value());
    CHECK_FALSE(t->live);
    CHECK(t->source == path);
    const Expected* e = expectedFor(path);
    REQUIRE(e != nullptr);  // a new fixture needs its row in provenance()
    CHECK(t->gpus.size() == e->gpus);
    CHECK(hcaNames(*t) == e->hcas);
    CHECK(t->numa_nodes.size() == e->numa_nodes);
    CHECK(puCount(*t) == e->pus);
  }
}

TEST_CASE("snapshots agree with hwloc itself: PUs once each, in their NUMA node, GPUs sorted and on GPU vendors",
          "[topology]") {
  const std::regex busid("^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-7]$");
  for (const auto& path : test::topologyFixtures()) {
    INFO(fileName(path));
    auto t = loadTopology(path);
    REQUIRE(t.has_value());
    HwlocXml hw(path);
    REQUIRE(hw.ok());
    std::set<int> seen;
    for (const auto& node : t->numa_nodes) {
      hwloc_obj_t obj = hwloc_get_numanode_obj_by_os_index(hw.get(), unsigned(node.os_index));
      REQUIRE(obj != nullptr);
      for (const auto& core : node.cores) {
        CHECK_FALSE(core.empty());
        for (int pu : core) {
          CHECK(seen.insert(pu).second);
          CHECK(hwloc_bitmap_isset(obj->cpuset, unsigned(pu)));
        }
      }
    }
    CHECK(seen.size() == size_t(hwloc_get_nbobjs_by_type(hw.get(), HWLOC_OBJ_PU)));
    for (size_t i = 0; i < t->gpus.size(); ++i) {
      const auto& g = t->gpus[i];
      CHECK(std::regex_match(g.busid, busid));
      if (i > 0) CHECK(t->gpus[i - 1].busid < g.busid);
      hwloc_obj_t pci = hw.pci(g.busid);
      REQUIRE(pci != nullptr);
      unsigned vendor = pci->attr->pcidev.vendor_id;
      CHECK((vendor == 0x10de || vendor == 0x1002));
      // A known NUMA node is a CPU node (never a POWER9 GPU-memory node).
      if (g.numa >= 0) {
        auto it = std::find_if(t->numa_nodes.begin(), t->numa_nodes.end(),
                               [&](const NumaNode& n) { return n.os_index == g.numa; });
        REQUIRE(it != t->numa_nodes.end());
        CHECK_FALSE(it->cores.empty());
      }
    }
    for (const auto& h : t->hcas) {
      CHECK_FALSE(h.ports.empty());
      REQUIRE(hw.osdev(h.name) != nullptr);
      if (!h.busid.empty()) CHECK(std::regex_match(h.busid, busid));
    }
  }
}

TEST_CASE("GPUs known only as PCI devices are found, and BMC display chips are not GPUs", "[topology]") {
  for (const char* prefix : {"jsc-juwels-booster", "jsc-jureca-dc-gpu", "jsc-juwels-cluster-gpu"}) {
    auto path = test::topologyFixture(prefix);
    if (path.empty()) continue;
    INFO(prefix);
    auto t = loadTopology(path);
    REQUIRE(t.has_value());
    REQUIRE(t->gpus.size() == 4);
    for (const auto& g : t->gpus) {
      CHECK(g.os_devices.empty());
      CHECK(g.vendor == "NVIDIA");
    }
  }
  // Summit's ASPEED VGA has a DRM "card0" but is not a GPU.
  auto summit = test::topologyFixture("ornl-summit");
  if (summit.empty()) return;
  auto t = loadTopology(summit);
  REQUIRE(t.has_value());
  for (const auto& g : t->gpus) CHECK(g.busid != "0002:02:00.0");
  CHECK(t->gpus.front().uuid == std::optional<std::string>("GPU-b1116e98-729c-a66f-e021-0175234c01e4"));
  CHECK(t->gpus.front().model == "Tesla V100-SXM2-16GB");
}

TEST_CASE("Summit's disallowed PUs are left out", "[topology]") {
  auto path = test::topologyFixture("ornl-summit");
  if (path.empty()) return;
  auto t = loadTopology(path);
  REQUIRE(t.has_value());
  HwlocXml all(path, /*include_disallowed=*/true);
  REQUIRE(all.ok());
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(all.get());
  hwloc_const_cpuset_t complete = hwloc_topology_get_complete_cpuset(all.get());
  REQUIRE_FALSE(hwloc_bitmap_isequal(allowed, complete));  // the fixture has disallowed PUs
  for (const auto& node : t->numa_nodes)
    for (const auto& core : node.cores)
      for (int pu : core) CHECK(hwloc_bitmap_isset(allowed, unsigned(pu)));
  CHECK(puCount(*t) == size_t(hwloc_bitmap_weight(allowed)));
}

TEST_CASE("POWER9 GPU-memory NUMA nodes are kept without cores, and GPUs sit on CPU nodes", "[topology]") {
  auto path = test::topologyFixture("llnl-sierra3682");
  if (path.empty()) return;
  auto t = loadTopology(path);
  REQUIRE(t.has_value());
  std::vector<int> memory_only, with_cpus;
  for (const auto& n : t->numa_nodes) (n.cores.empty() ? memory_only : with_cpus).push_back(n.os_index);
  CHECK(memory_only == std::vector<int>{252, 253, 254, 255});
  CHECK(with_cpus == std::vector<int>{0, 8});
  for (const auto& g : t->gpus) CHECK((g.numa == 0 || g.numa == 8));
}

TEST_CASE("HCA ports carry the state and netdevs hwloc recorded, zeroed UUIDs count as unknown", "[topology]") {
  auto path = test::topologyFixture("llnl-ipa20");
  if (path.empty()) return;
  auto t = loadTopology(path);
  REQUIRE(t.has_value());
  std::map<std::string, HcaDevice> by_name;
  for (const auto& h : t->hcas) by_name[h.name] = h;
  CHECK(by_name["mlx5_0"].ports == std::vector<HcaPort>{{1, 4, {"hsi0"}}});
  CHECK(by_name["mlx5_1"].ports == std::vector<HcaPort>{{1, 1, {"ibs2f1"}}});
  CHECK(by_name["mlx5_2"].ports == std::vector<HcaPort>{{1, 1, {"ibp94s0"}}});
  CHECK(by_name["mlx5_2"].busid == "0000:5e:00.0");
  CHECK(by_name["mlx5_2"].numa == 1);
  for (const auto& g : t->gpus) CHECK_FALSE(g.uuid.has_value());  // the export has GPU-00000000-…
  CHECK(t->gpus.front().model == "NVIDIA H100 80GB HBM3");
}

TEST_CASE("snapshot JSON round-trips exactly, and two loads are identical", "[topology]") {
  for (const auto& path : test::topologyFixtures()) {
    INFO(fileName(path));
    auto a = loadTopology(path);
    auto b = loadTopology(path);
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    CHECK(*a == *b);
    nlohmann::json j = topologyToJson(*a);
    auto back = topologyFromJson(nlohmann::json::parse(j.dump()));
    REQUIRE(back.has_value());
    CHECK(*back == *a);
    auto cbor = topologyFromJson(nlohmann::json::from_cbor(nlohmann::json::to_cbor(j)));
    REQUIRE(cbor.has_value());
    CHECK(*cbor == *a);
  }
}

TEST_CASE("malformed snapshot JSON is a protocol error naming the problem", "[topology]") {
  TopologySnapshot t;
  t.source = "live";
  t.numa_nodes.push_back({0, 0, 1, {{0, 1}}});
  nlohmann::json j = topologyToJson(t);
  j["numa_nodes"][0]["cores"] = "0-1";
  auto r = topologyFromJson(j);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code == Errc::protocol);
  j = topologyToJson(t);
  j.erase("gpus");
  r = topologyFromJson(j);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message.find("gpus") != std::string::npos);
}

TEST_CASE("rank binding JSON round-trips", "[topology]") {
  RankBinding b{3, "0000:4e:00.0", std::nullopt, "mlx5_0:1", "PIX", 3, {42, 43, 154, 155}, {3}};
  auto back = rankBindingFromJson(nlohmann::json::parse(rankBindingToJson(b).dump()));
  REQUIRE(back.has_value());
  CHECK(*back == b);
  CHECK_FALSE(rankBindingFromJson(nlohmann::json{{"local_rank", "x"}}).has_value());
}

TEST_CASE("the live machine loads with its allowed CPUs", "[topology]") {
  auto t = loadTopology("");
  REQUIRE(t.has_value());
  CHECK(t->live);
  CHECK(t->source == "live");
  CHECK(puCount(*t) > 0);
}

namespace {

// What a forked child wrote into the pipe whose read end is `fd` (the write end already closed
// here), and its wait status once it is gone.
std::pair<std::string, int> childOutput(int fd, pid_t pid) {
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  ::close(fd);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {text, status};
}

// hwloc names the backends it runs when HWLOC_COMPONENTS_VERBOSE is set: one load in a child
// process (hwloc reads the variable when its first topology of a process starts).
std::string liveDiscoveryBackends() {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("HWLOC_COMPONENTS_VERBOSE", "1", 1);
    ::dup2(out[1], STDERR_FILENO);
    ::_exit(loadTopology("").has_value() ? 0 : 1);
  }
  ::close(out[1]);
  auto [text, status] = childOutput(out[0], pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  const std::string marker = "Final list of enabled discovery components: ";
  const auto at = text.find(marker);
  REQUIRE(at != std::string::npos);
  return text.substr(at + marker.size(), text.find('\n', at) - at - marker.size());
}

}  // namespace

TEST_CASE("live discovery runs hwloc's linux backend, not the OpenCL, OpenGL or libpciaccess ones", "[topology]") {
  const std::string backends = liveDiscoveryBackends();
  INFO(backends);
  CHECK(backends.find("linux(") != std::string::npos);
  CHECK(backends.find("pci(") == std::string::npos);
  CHECK(backends.find("opencl") == std::string::npos);
  CHECK(backends.find("gl(") == std::string::npos);
}

TEST_CASE("live discovery without libpciaccess still finds the machine's NICs and GPUs on PCI", "[topology]") {
  // Network controllers (class 02), display controllers (03), InfiniBand (0c06) and accelerators
  // (12) of this machine, from sysfs; each must be a PCI device of the live topology.
  std::set<std::string> wanted;
  std::error_code ec;
  for (const auto& dev : std::filesystem::directory_iterator("/sys/bus/pci/devices", ec)) {
    std::ifstream in(dev.path() / "class");
    std::string cls;
    if (!(in >> cls) || cls.size() < 6) continue;
    const std::string base = cls.substr(2, 2), sub = cls.substr(2, 4);
    if (base == "02" || base == "03" || base == "12" || sub == "0c06") wanted.insert(dev.path().filename().string());
  }
  std::string xml;
  auto t = loadTopology("", &xml);
  REQUIRE(t.has_value());
  std::set<std::string> found;
  const std::regex pcidev(R"re(type="PCIDev"[^>]*pci_busid="([0-9a-f:.]+)")re");
  for (std::sregex_iterator it(xml.begin(), xml.end(), pcidev), end; it != end; ++it) found.insert((*it)[1]);
  INFO("sysfs: " << wanted.size() << " such devices; the topology's PCI devices: " << found.size());
  for (const auto& busid : wanted) {
    INFO(busid);
    CHECK(found.count(busid) == 1);
  }
}

TEST_CASE("HWLOC_XMLFILE replaces the live machine when no file is given", "[topology]") {
  auto path = test::topologyFixture("jsc-juwels-booster");
  if (path.empty()) return;
  ScopedEnv env("HWLOC_XMLFILE", path);
  auto t = loadTopology("");
  REQUIRE(t.has_value());
  CHECK_FALSE(t->live);
  CHECK(t->source == path);
  CHECK(t->gpus.size() == 4);
}

TEST_CASE("a topology that does not load is an error naming the file and the reason", "[topology]") {
  const auto dir = std::filesystem::temp_directory_path() / ("tlaunch-topo-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  struct Case {
    std::string file, content, reason;
  };
  std::vector<Case> cases{
      {(dir / "missing.xml").string(), "", "No such file"},
      {(dir / "not-xml.xml").string(), "this is not XML\n", "not an hwloc XML"},
      {(dir / "v3.xml").string(),
       "<?xml version=\"1.0\"?>\n<topology version=\"3.0\">\n<object type=\"Machine\" os_index=\"0\"/>\n</topology>\n",
       "version 3.0"},
      {(dir / "truncated.xml").string(), "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Mach",
       "could not parse"},
  };
  for (const auto& c : cases) {
    INFO(c.file);
    if (!c.content.empty()) std::ofstream(c.file) << c.content;
    auto t = loadTopology(c.file);
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().code == Errc::topology);
    CHECK_THAT(t.error().message, Catch::Contains(c.file) && Catch::Contains(c.reason));
    CHECK_FALSE(t.error().hint.empty());
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("the live machine's topology comes with its XML for the ranks, a recorded one does not", "[topology]") {
  std::string xml;
  auto live = loadTopology("", &xml);
  REQUIRE(live.has_value());
  REQUIRE_FALSE(xml.empty());
  CHECK(xml.rfind("<?xml", 0) == 0);
  CHECK(xml.back() != '\0');
  // What a rank would load from it is this machine again.
  const auto file = std::filesystem::temp_directory_path() / ("tlaunch-live-topology-" + std::to_string(::getpid()) + ".xml");
  { std::ofstream(file) << xml; }
  auto again = loadTopology(file.string());
  std::filesystem::remove(file);
  REQUIRE(again.has_value());
  CHECK(again->numa_nodes == live->numa_nodes);
  CHECK(again->gpus == live->gpus);

  std::string none = "untouched";
  REQUIRE(loadTopology(test::topologyFixtures().front(), &none));
  CHECK(none == "untouched");  // a file is not this machine: nothing for the ranks
}

namespace {

// In a child (hwloc loads its plugins once per process): HwlocPluginsWithoutUnused, then a live
// load and a recorded XML's; stderr (HWLOC_PLUGINS_VERBOSE) and whether all went well.
std::pair<std::string, bool> pluginsChild(const char* users_blacklist) {
  int out[2];
  REQUIRE(::pipe(out) == 0);
  const auto fixture = test::topologyFixture("jsc-juwels-booster");
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setenv("HWLOC_PLUGINS_VERBOSE", "1", 1);
    if (users_blacklist) ::setenv("HWLOC_PLUGINS_BLACKLIST", users_blacklist, 1);
    ::dup2(out[1], STDERR_FILENO);
    bool ok = true;
    {
      const HwlocPluginsWithoutUnused plugins;
      const char* after = std::getenv("HWLOC_PLUGINS_BLACKLIST");
      ok = users_blacklist ? after && std::string(after) == users_blacklist : after == nullptr;
      auto live = loadTopology("");
      auto recorded = loadTopology(fixture);  // hwloc's own XML parser, without libxml2
      ok = ok && live && puCount(*live) > 0 && recorded && recorded->gpus.size() == 4;
    }
    std::fprintf(stderr, "child ok=%d\n", ok ? 1 : 0);
    ::_exit(0);
  }
  ::close(out[1]);
  auto [text, status] = childOutput(out[0], pid);
  return {text, WIFEXITED(status) && WEXITSTATUS(status) == 0 && text.find("child ok=1") != std::string::npos};
}

}  // namespace

TEST_CASE("tlaunchd loads hwloc's plugins without the OpenCL, OpenGL, libpciaccess and libxml2 ones",
          "[topology]") {
  auto [text, ok] = pluginsChild(nullptr);
  INFO(text);
  CHECK(ok);
  for (const char* plugin : {"hwloc_opencl", "hwloc_gl", "hwloc_pci", "hwloc_xml_libxml"})
    if (text.find(std::string("found `/")) != std::string::npos && text.find(plugin) != std::string::npos)
      CHECK(text.find(std::string("Plugin `") + plugin + "' is blacklisted") != std::string::npos);
}

TEST_CASE("a HWLOC_PLUGINS_BLACKLIST of the user's is kept as it is", "[topology]") {
  auto [text, ok] = pluginsChild("hwloc_gl");
  INFO(text);
  CHECK(ok);
  CHECK(text.find("Plugin `hwloc_gl' is blacklisted") != std::string::npos);
  CHECK(text.find("Plugin `hwloc_opencl' is blacklisted") == std::string::npos);
}
