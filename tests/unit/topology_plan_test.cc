// planNodeBinding over every recorded machine: invariants, hand-checked manifests, errors, corner cases.
#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>

#include "binding/topology/binding_manifest.h"
#include "binding/topology/placement.h"
#include "binding/topology/cpu_list.h"
#include "binding/topology/hwloc_topology.h"
#include "topology_test_fixtures.h"

using namespace tlaunch;
using tlaunch::test::fileName;
using tlaunch::test::HwlocXml;

namespace {

// ---- Independent expectations, computed from hwloc's own tree (not from the code under test) ----

// CPU NUMA nodes (OS indices) local to an I/O object: those of its nearest non-I/O ancestor.
std::vector<int> localCpuNumas(const HwlocXml& hw, hwloc_obj_t io) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(hw.get(), io);
  std::vector<int> out;
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(hw.get(), HWLOC_OBJ_NUMANODE, n));)
    if (!hwloc_bitmap_iszero(n->cpuset) && hwloc_bitmap_isset(anc->nodeset, n->os_index))
      out.push_back(int(n->os_index));
  return out;
}

// NUMA nodes with CPUs, by OS index: where -p ranks go round-robin.
std::vector<int> cpuNumas(const HwlocXml& hw) {
  std::vector<int> out;
  for (hwloc_obj_t n = nullptr; (n = hwloc_get_next_obj_by_type(hw.get(), HWLOC_OBJ_NUMANODE, n));)
    if (!hwloc_bitmap_iszero(n->cpuset)) out.push_back(int(n->os_index));
  std::sort(out.begin(), out.end());
  return out;
}

int bridgesBetween(hwloc_obj_t dev, hwloc_obj_t ancestor) {
  int n = 0;
  for (hwloc_obj_t p = dev->parent; p && p != ancestor; p = p->parent)
    if (p->type == HWLOC_OBJ_BRIDGE) ++n;
  return n;
}

// 0 PIX, 1 PXB, 2 PHB, 3 NODE, 4 SYS, from the common ancestor of the two PCI functions.
// hwloc_get_common_ancestor_obj() compares depths, which I/O objects do not have: walk parents instead.
hwloc_obj_t commonAncestor(hwloc_obj_t a, hwloc_obj_t b) {
  std::set<hwloc_obj_t> above_a;
  for (hwloc_obj_t p = a; p; p = p->parent) above_a.insert(p);
  for (hwloc_obj_t p = b; p; p = p->parent)
    if (above_a.count(p)) return p;
  return nullptr;
}

int expectedDistance(const HwlocXml& hw, hwloc_obj_t gpu, hwloc_obj_t hca) {
  hwloc_obj_t common = commonAncestor(gpu, hca);
  if (common->type == HWLOC_OBJ_BRIDGE) {
    if (common->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) return 2;
    return bridgesBetween(gpu, common) <= 1 && bridgesBetween(hca, common) <= 1 ? 0 : 1;
  }
  auto a = localCpuNumas(hw, gpu), b = localCpuNumas(hw, hca);
  return a.size() == 1 && a == b ? 3 : 4;
}

const char* distanceName(int d) { return std::array{"PIX", "PXB", "PHB", "NODE", "SYS"}[size_t(d)]; }

bool portActive(hwloc_obj_t osdev) {
  for (unsigned i = 0; i < osdev->infos_count; ++i) {
    std::string name = osdev->infos[i].name, value = osdev->infos[i].value;
    if (name.rfind("Port", 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) == "State" &&
        (value == "4" || value == "5"))
      return true;
  }
  return false;
}

// The HCAs a GPU rank may be paired with: those with an ACTIVE port, or all when none is.
std::vector<hwloc_obj_t> candidateHcas(const HwlocXml& hw) {
  std::vector<hwloc_obj_t> all, active;
  for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_osdev(hw.get(), o));) {
    if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_OPENFABRICS) continue;
    all.push_back(o);
    if (portActive(o)) active.push_back(o);
  }
  return active.empty() ? all : active;
}

hwloc_obj_t pciOf(hwloc_obj_t osdev) {
  return osdev->parent && osdev->parent->type == HWLOC_OBJ_PCI_DEVICE ? osdev->parent : osdev;
}

std::string hcaName(const std::string& hca_port) { return hca_port.substr(0, hca_port.find(':')); }

std::vector<int> numaCpus(const HwlocXml& hw, int os_index) {
  return HwlocXml::ids(hwloc_get_numanode_obj_by_os_index(hw.get(), unsigned(os_index))->cpuset);
}

bool includes(const std::vector<int>& big, const std::vector<int>& small) {
  return std::all_of(small.begin(), small.end(),
                     [&](int x) { return std::find(big.begin(), big.end(), x) != big.end(); });
}

int coresIn(const HwlocXml& hw, int numa_os) {
  hwloc_obj_t n = hwloc_get_numanode_obj_by_os_index(hw.get(), unsigned(numa_os));
  int cores = hwloc_get_nbobjs_inside_cpuset_by_type(hw.get(), n->cpuset, HWLOC_OBJ_CORE);
  return cores > 0 ? cores : hwloc_get_nbobjs_inside_cpuset_by_type(hw.get(), n->cpuset, HWLOC_OBJ_PU);
}

void checkInvariants(const HwlocXml& hw, const TopologySnapshot& topo, const BindingRequest& req,
                     const std::vector<RankBinding>& plan) {
  REQUIRE(plan.size() == size_t(req.ranks_per_node));
  std::set<int> used;
  std::map<int, std::set<size_t>> sizes_per_numa;
  for (size_t r = 0; r < plan.size(); ++r) {
    const RankBinding& b = plan[r];
    INFO("local rank " << r << " cpus " << formatCpuList(b.cpus));
    CHECK(b.local_rank == int(r));
    REQUIRE_FALSE(b.cpus.empty());
    for (int pu : b.cpus) CHECK(used.insert(pu).second);  // disjoint
    // Whole cores: a rank holding one hyperthread holds its siblings.
    for (int pu : b.cpus) {
      hwloc_obj_t obj = hwloc_get_pu_obj_by_os_index(hw.get(), unsigned(pu));
      REQUIRE(obj != nullptr);
      if (hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(hw.get(), HWLOC_OBJ_CORE, obj))
        CHECK(includes(b.cpus, HwlocXml::ids(core->cpuset)));
    }
    if (!req.use_gpus && plan.size() < cpuNumas(hw).size()) {
      // Fewer CPU-only ranks than NUMA nodes: an equal run of whole NUMA nodes each, in order.
      const auto numas = cpuNumas(hw);
      const size_t k = numas.size() / plan.size();
      const std::vector<int> mine(numas.begin() + static_cast<long>(r * k), numas.begin() + static_cast<long>((r + 1) * k));
      CHECK(b.mem_nodes == mine);
      CHECK(b.numa == (k == 1 ? mine.front() : -1));
      std::vector<int> allowed;
      for (int m : mine) {
        const auto c = numaCpus(hw, m);
        allowed.insert(allowed.end(), c.begin(), c.end());
      }
      CHECK(includes(allowed, b.cpus));
      size_t whole = 0;  // every core of its NUMA nodes
      for (int m : mine) whole += static_cast<size_t>(coresIn(hw, m));
      CHECK(b.cpus.size() >= whole);
      continue;
    }
    REQUIRE(b.numa >= 0);
    CHECK(includes(numaCpus(hw, b.numa), b.cpus));
    CHECK(b.mem_nodes == std::vector<int>{b.numa});
    sizes_per_numa[b.numa].insert(b.cpus.size());

    if (!req.use_gpus) {
      const auto numas = cpuNumas(hw);
      CHECK(b.numa == numas[r % numas.size()]);
      CHECK_FALSE(b.gpu_busid.has_value());
      CHECK_FALSE(b.hca.has_value());
      continue;
    }
    REQUIRE(b.gpu_busid == topo.gpus[r].busid);
    hwloc_obj_t gpu = hw.pci(*b.gpu_busid);
    REQUIRE(gpu != nullptr);
    auto local = localCpuNumas(hw, gpu);
    if (local.size() == 1) CHECK(b.numa == local.front());  // the GPU's own NUMA node
    auto hcas = candidateHcas(hw);
    if (hcas.empty()) {
      CHECK_FALSE(b.hca.has_value());
      CHECK(b.path.empty());
      continue;
    }
    REQUIRE(b.hca.has_value());
    int best = 4;
    for (hwloc_obj_t h : hcas) best = std::min(best, expectedDistance(hw, gpu, pciOf(h)));
    hwloc_obj_t chosen = hw.osdev(hcaName(*b.hca));
    REQUIRE(chosen != nullptr);
    REQUIRE(std::find(hcas.begin(), hcas.end(), chosen) != hcas.end());
    CHECK(expectedDistance(hw, gpu, pciOf(chosen)) == best);
    CHECK(b.path == distanceName(best));
  }
  for (const auto& [numa, sizes] : sizes_per_numa) {
    INFO("NUMA node " << numa);
    CHECK(sizes.size() == 1);  // an even split
  }
}

std::vector<ManifestRow> rowsFor(const std::vector<RankBinding>& plan, const std::string& node, int first_rank = 0) {
  std::vector<ManifestRow> rows;
  for (const auto& b : plan) rows.push_back({first_rank + b.local_rank, node, b});
  return rows;
}

std::string manifestFor(const std::string& prefix, int gpus, const std::string& node) {
  auto path = test::topologyFixture(prefix);
  if (path.empty()) return {};
  auto topo = loadTopology(path);
  REQUIRE(topo.has_value());
  auto plan = planNodeBinding(*topo, {gpus, true, BindMode::core, 0, {}}, node);
  REQUIRE(plan.has_value());
  return renderManifestTable(rowsFor(*plan, node));
}

}  // namespace

TEST_CASE(
    "every machine, every GPU count and several -p counts: disjoint whole cores on the right NUMA node, "
    "nearest HCA",
    "[topology][plan]") {
  for (const auto& path : test::topologyFixtures()) {
    INFO(fileName(path));
    auto topo = loadTopology(path);
    REQUIRE(topo.has_value());
    HwlocXml hw(path);
    REQUIRE(hw.ok());
    std::vector<BindingRequest> requests;
    for (int g = 1; g <= int(topo->gpus.size()); ++g) requests.push_back({g, true, BindMode::core, 0, {}});
    int cpu_numas = 0, cores = 0;
    for (const auto& n : topo->numa_nodes) {
      cpu_numas += !n.cores.empty();
      cores += int(n.cores.size());
    }
    for (int p : std::set<int>{1, 2, cpu_numas, cpu_numas + 1, cores})
      requests.push_back({p, false, BindMode::core, 0, {}});
    for (const auto& req : requests) {
      INFO((req.use_gpus ? "-g " : "-p ") << req.ranks_per_node);
      auto plan = planNodeBinding(*topo, req, "n1");
      if (plan) {
        checkInvariants(hw, *topo, req, *plan);
        continue;
      }
      // Only a real shortage may fail: some NUMA node gets more ranks than it has cores.
      CHECK(plan.error().code == Errc::resources);
      CHECK_THAT(plan.error().message, Catch::StartsWith("node n1: NUMA node"));
      std::map<int, int> ranks_on;
      const auto numas = cpuNumas(hw);
      for (int r = 0; r < req.ranks_per_node; ++r) {
        if (req.use_gpus) {
          auto local = localCpuNumas(hw, hw.pci(topo->gpus[size_t(r)].busid));
          REQUIRE(local.size() == 1);
          ++ranks_on[local.front()];
        } else {
          ++ranks_on[numas[size_t(r) % numas.size()]];
        }
      }
      bool short_somewhere = false;
      for (const auto& [numa, k] : ranks_on) short_somewhere |= coresIn(hw, numa) < k;
      CHECK(short_somewhere);
    }
  }
}

TEST_CASE("plans and fingerprints are the same for two loads of a machine, and ignore host names", "[topology][plan]") {
  for (const auto& path : test::topologyFixtures()) {
    INFO(fileName(path));
    auto a = loadTopology(path), b = loadTopology(path);
    REQUIRE((a && b));
    BindingRequest req{std::max<int>(1, int(a->gpus.size())), !a->gpus.empty(), BindMode::core, 0, {}};
    auto pa = planNodeBinding(*a, req, "n1"), pb = planNodeBinding(*b, req, "n2");
    if (!pa) continue;  // the trimmed DGX-2 export has 2 cores per 8 GPUs
    REQUIRE(pb.has_value());
    CHECK(*pa == *pb);
    CHECK(manifestFingerprint(rowsFor(*pa, "n1")) == manifestFingerprint(rowsFor(*pb, "n2")));
    CHECK(renderManifestTable(rowsFor(*pa, "n1")) == renderManifestTable(rowsFor(*pb, "n1")));
  }
}

// The three tables below were worked out by hand from `lstopo-no-graphics --input FILE -v` and
// `hwloc-calc --if xml --input FILE -p --pi --intersect PU node:N` (see the comments).

TEST_CASE("manifest of the Dell XE8640 (4x H100): only mlx5_0 is ACTIVE, so every GPU uses it", "[topology][plan]") {
  // GPUs by bus id: 4e (NUMA 3, cuda0), 5f (NUMA 1), cb (NUMA 7), db (NUMA 5); UUIDs zeroed in the export.
  // mlx5_0 (4d:00.0, Port1State=4) shares the PEX switch with 4e → PIX; mlx5_1/2/3 have Port1State=1 (DOWN).
  // Each GPU has its SNC NUMA node (14 cores, 2 threads) to itself.
  const std::string expected =
      "rank  node   local_rank  gpu           hca       path  numa  cpuset\n"
      "0     ipa20  0           0000:4e:00.0  mlx5_0:1  PIX   3     42-55,154-167\n"
      "1     ipa20  1           0000:5f:00.0  mlx5_0:1  SYS   1     14-27,126-139\n"
      "2     ipa20  2           0000:cb:00.0  mlx5_0:1  SYS   7     98-111,210-223\n"
      "3     ipa20  3           0000:db:00.0  mlx5_0:1  SYS   5     70-83,182-195\n";
  auto got = manifestFor("llnl-ipa20", 4, "ipa20");
  if (!got.empty()) CHECK(got == expected);
}

TEST_CASE("manifest of the Summit node: 3 GPUs per socket share 21 allowed cores, socket-direct HCAs alternate",
          "[topology][plan]") {
  // NUMA 0 = PUs 0-83 (21 SMT4 cores; 84-87 disallowed), NUMA 8 = PUs 88-171: 7 cores (28 PUs) per GPU.
  // mlx5_0/1 sit on host bridge 0003, the GPUs on 0004 (same socket) → NODE, round-robin 0,1,0; likewise 2,3,2.
  const std::string expected =
      "rank  node    local_rank  gpu                                                      hca       path  numa  cpuset\n"
      "0     h17n08  0           0004:04:00.0 (GPU-b1116e98-729c-a66f-e021-0175234c01e4)  mlx5_0:1  NODE  0     0-27\n"
      "1     h17n08  1           0004:05:00.0 (GPU-8806b2a3-1eac-fc16-ef77-2687e1d588a3)  mlx5_1:1  NODE  0     28-55\n"
      "2     h17n08  2           0004:06:00.0 (GPU-d2b14138-b377-d569-2c33-1091f67bbf41)  mlx5_0:1  NODE  0     56-83\n"
      "3     h17n08  3           0035:03:00.0 (GPU-92d74320-0965-cf64-e8d7-dee9993fbf2e)  mlx5_2:1  NODE  8     88-115\n"
      "4     h17n08  4           0035:04:00.0 (GPU-1ae3f431-bab1-4bbd-54e9-74cfac47b681)  mlx5_3:1  NODE  8     116-143\n"
      "5     h17n08  5           0035:05:00.0 (GPU-bcef91e3-5c54-32ce-5226-31113b0263e8)  mlx5_2:1  NODE  8     144-171\n";
  auto got = manifestFor("ornl-summit", 6, "h17n08");
  if (!got.empty()) CHECK(got == expected);
}

TEST_CASE("manifest of the JUWELS Booster node: PCI-only A100s, each with its own NUMA node and HCA",
          "[topology][plan]") {
  // A100s at 03 (NUMA 3), 44 (NUMA 1), 84 (NUMA 7), c4 (NUMA 5); each shares a switch with one
  // ConnectX-6 (04 mlx5_0, 43 mlx5_1, 83 mlx5_2, c3 mlx5_3, all ACTIVE) → PIX. 6 cores × 2 PUs per NUMA node.
  const std::string expected =
      "rank  node     local_rank  gpu           hca       path  numa  cpuset\n"
      "0     jwb0004  0           0000:03:00.0  mlx5_0:1  PIX   3     18-23,66-71\n"
      "1     jwb0004  1           0000:44:00.0  mlx5_1:1  PIX   1     6-11,54-59\n"
      "2     jwb0004  2           0000:84:00.0  mlx5_2:1  PIX   7     42-47,90-95\n"
      "3     jwb0004  3           0000:c4:00.0  mlx5_3:1  PIX   5     30-35,78-83\n";
  auto got = manifestFor("jsc-juwels-booster", 4, "jwb0004");
  if (!got.empty()) CHECK(got == expected);
}

TEST_CASE("a rank's HCA is the nearest of the job network's data ports, not a nearer port off that network",
          "[topology][plan]") {
  auto path = test::topologyFixture("llnl-ipa20");
  if (path.empty()) return;
  auto topo = loadTopology(path);
  REQUIRE(topo.has_value());
  // As if mlx5_0 (ACTIVE, beside GPU 0) were a management port and mlx5_1..3 the fabric's.
  BindingRequest req{4, true, BindMode::core, 0, {}};
  req.data_ports = {"mlx5_1:1", "mlx5_2:1", "mlx5_3:1"};
  auto plan = planNodeBinding(*topo, req, "ipa20");
  REQUIRE(plan.has_value());
  std::set<std::string> used;
  for (const auto& rb : *plan) {
    REQUIRE(rb.hca.has_value());
    CHECK(std::find(req.data_ports.begin(), req.data_ports.end(), *rb.hca) != req.data_ports.end());
    used.insert(*rb.hca);
  }
  CHECK(used.size() == 3);  // 4 GPUs spread over the 3 data ports
  const std::string table = renderManifestTable(rowsFor(*plan, "ipa20"));
  INFO(table);
  CHECK(table.find("mlx5_0") == std::string::npos);

  SECTION("data ports this topology does not have (another machine's XML): the nearest ACTIVE HCA, as before") {
    req.data_ports = {"mlx5_9:1"};
    auto fallback = planNodeBinding(*topo, req, "ipa20");
    REQUIRE(fallback.has_value());
    for (const auto& rb : *fallback) CHECK(rb.hca == std::optional<std::string>("mlx5_0:1"));
  }

  SECTION("a job on sockets (--net tcp) uses no HCA: none is paired (the plan showed one per rank)") {
    req.pair_hcas = false;
    auto sockets = planNodeBinding(*topo, req, "ipa20");
    REQUIRE(sockets.has_value());
    for (const auto& rb : *sockets) {
      CHECK_FALSE(rb.hca.has_value());
      CHECK(rb.gpu_busid.has_value());
    }
  }
}
