#include "binding/topology/placement.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>

namespace tlaunch {
namespace {

constexpr int kPortActive = 4;       // IBV_PORT_ACTIVE
constexpr int kPortActiveDefer = 5;  // IBV_PORT_ACTIVE_DEFER

bool isHostBridge(const std::string& id) { return id.rfind("hb:", 0) == 0; }

// A set of cores that ranks share: one NUMA node, or every core when the snapshot has no NUMA ids (-1).
struct Domain {
  int numa = -1;
  std::vector<const std::vector<int>*> cores;
  std::vector<int> ranks;  // local ranks placed here, ascending
};

std::string describe(const Domain& d) { return d.numa >= 0 ? "NUMA node " + std::to_string(d.numa) : "the machine"; }

const NumaNode* findNuma(const TopologySnapshot& topo, int os_index) {
  for (const auto& n : topo.numa_nodes)
    if (n.os_index == os_index) return &n;
  return nullptr;
}

int packageOf(const TopologySnapshot& topo, int numa) {
  const NumaNode* n = numa >= 0 ? findNuma(topo, numa) : nullptr;
  return n ? n->package : -1;
}

Domain& domainFor(std::map<int, Domain>& domains, const TopologySnapshot& topo, int numa) {
  auto [it, inserted] = domains.try_emplace(numa);
  if (inserted) {
    it->second.numa = numa;
    for (const auto& n : topo.numa_nodes)
      if (numa < 0 || n.os_index == numa)
        for (const auto& core : n.cores) it->second.cores.push_back(&core);
  }
  return it->second;
}

std::vector<int> flatten(const std::vector<const std::vector<int>*>& cores, size_t first, size_t count) {
  std::vector<int> pus;
  for (size_t i = first; i < first + count && i < cores.size(); ++i)
    pus.insert(pus.end(), cores[i]->begin(), cores[i]->end());
  std::sort(pus.begin(), pus.end());
  return pus;
}

// The port of `hca` among the job's data ports ("mlx5_0:1"), or 0.
int dataPortOf(const HcaDevice& hca, const std::vector<std::string>& data_ports) {
  for (const auto& port : data_ports)
    if (port.size() > hca.name.size() + 1 && port.starts_with(hca.name) && port[hca.name.size()] == ':')
      return std::atoi(port.c_str() + hca.name.size() + 1);
  return 0;
}

// Nearest HCA per GPU rank, ties spread over the least-used candidate: among the job's data
// ports when the network choice named them (a management ConnectX nearer a GPU must not carry
// its UCX traffic), else among HCAs with an ACTIVE port.
void assignHcas(const TopologySnapshot& topo, const std::vector<int>& gpu_of_rank,
                const std::vector<std::string>& data_ports, std::vector<RankBinding>& ranks) {
  std::vector<const HcaDevice*> candidates;
  for (const auto& h : topo.hcas)
    if (dataPortOf(h, data_ports) > 0) candidates.push_back(&h);
  if (candidates.empty()) {  // no network choice, or its ports are not in this topology (another machine's XML)
    bool any_active = std::any_of(topo.hcas.begin(), topo.hcas.end(), hcaHasActivePort);
    for (const auto& h : topo.hcas)
      if (!any_active || hcaHasActivePort(h)) candidates.push_back(&h);
  }
  if (candidates.empty()) return;
  std::vector<int> uses(candidates.size(), 0);
  for (auto& rb : ranks) {
    const GpuDevice& gpu = topo.gpus[size_t(gpu_of_rank[size_t(rb.local_rank)])];
    // Across NUMA nodes, an HCA in the GPU's own package beats one in the other package.
    auto key = [&](const HcaDevice& h) {
      PciDistance d = pciDistance(gpu.pci_path, gpu.numa, h.pci_path, h.numa);
      int other_package = d == PciDistance::sys &&
                          (packageOf(topo, gpu.numa) < 0 || packageOf(topo, gpu.numa) != packageOf(topo, h.numa));
      return std::make_pair(d, other_package);
    };
    size_t best = 0;
    for (size_t i = 1; i < candidates.size(); ++i) {
      auto ki = key(*candidates[i]), kb = key(*candidates[best]);
      if (ki < kb || (ki == kb && uses[i] < uses[best])) best = i;
    }
    ++uses[best];
    const HcaDevice& h = *candidates[best];
    const int port = dataPortOf(h, data_ports);
    rb.hca = h.name + ":" + std::to_string(port > 0 ? port : hcaPreferredPort(h));
    rb.path = pciDistanceName(key(h).first);
  }
}

// Fewer CPU-only ranks than NUMA nodes with CPUs (one rank per node on an SNC/NPS machine, a
// hybrid MPI+OpenMP job): each rank gets an equal run of whole NUMA nodes, in order (a package
// each where packages divide evenly; a remainder of NUMA nodes is left free, as a remainder of
// cores is), not one NUMA node with the others' cores idle.
Result<std::vector<RankBinding>> spreadOverNumaNodes(const TopologySnapshot& topo, const BindingRequest& req,
                                                     const std::string& node, const std::vector<int>& cpu_numas) {
  const size_t n = static_cast<size_t>(req.ranks_per_node), per_rank = cpu_numas.size() / n;
  std::vector<RankBinding> out(n);
  for (size_t r = 0; r < n; ++r) {
    RankBinding& rb = out[r];
    rb.local_rank = static_cast<int>(r);
    std::map<int, Domain> domains;
    std::vector<const std::vector<int>*> cores;
    for (size_t i = r * per_rank; i < (r + 1) * per_rank; ++i) {
      const Domain& d = domainFor(domains, topo, cpu_numas[i]);
      cores.insert(cores.end(), d.cores.begin(), d.cores.end());
      rb.mem_nodes.push_back(cpu_numas[i]);
    }
    rb.numa = per_rank == 1 ? rb.mem_nodes.front() : -1;  // -1: more than one
    if (size_t(req.cpus_per_rank) > cores.size())
      return fail(Errc::resources,
                  "node " + node + ": " + std::to_string(req.cpus_per_rank) + " cores per rank asked, but local rank " +
                      std::to_string(r) + "'s NUMA nodes have " + std::to_string(cores.size()) + " cores",
                  "ask for at most " + std::to_string(cores.size()) + " cores per rank, or run fewer ranks per node");
    rb.cpus = flatten(cores, 0, req.cpus_per_rank > 0 ? size_t(req.cpus_per_rank) : cores.size());
  }
  return out;
}

}  // namespace

const char* pciDistanceName(PciDistance d) {
  switch (d) {
    case PciDistance::pix:
      return "PIX";
    case PciDistance::pxb:
      return "PXB";
    case PciDistance::phb:
      return "PHB";
    case PciDistance::node:
      return "NODE";
    case PciDistance::sys:
      return "SYS";
  }
  return "SYS";
}

PciDistance pciDistance(const std::vector<std::string>& a, int numa_a, const std::vector<std::string>& b, int numa_b) {
  size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  if (common == 0) return numa_a >= 0 && numa_a == numa_b ? PciDistance::node : PciDistance::sys;
  if (isHostBridge(a[common - 1])) return PciDistance::phb;
  // Below the deepest shared bridge, one more bridge per side is a switch's downstream port.
  return a.size() - common <= 1 && b.size() - common <= 1 ? PciDistance::pix : PciDistance::pxb;
}

bool hcaHasActivePort(const HcaDevice& hca) {
  return std::any_of(hca.ports.begin(), hca.ports.end(),
                     [](const HcaPort& p) { return p.state == kPortActive || p.state == kPortActiveDefer; });
}

int hcaPreferredPort(const HcaDevice& hca) {
  for (const auto& p : hca.ports)
    if (p.state == kPortActive || p.state == kPortActiveDefer) return p.number;
  return hca.ports.empty() ? 1 : hca.ports.front().number;
}

Result<std::vector<RankBinding>> planNodeBinding(const TopologySnapshot& topo, const BindingRequest& req,
                                                 const std::string& node, const std::vector<int>& gpus) {
  const int n = req.ranks_per_node;
  if (n < 1)
    return fail(Errc::usage, "node " + node + ": ranks per node must be at least 1 (got " + std::to_string(n) + ")");
  if (req.cpus_per_rank < 0)
    return fail(Errc::usage, "cores per rank must not be negative (got " + std::to_string(req.cpus_per_rank) + ")");
  for (int g : gpus)
    if (g < 0 || size_t(g) >= topo.gpus.size())
      return fail(Errc::usage, "node " + node + " has no GPU " + std::to_string(g) + " (it has " +
                                   std::to_string(topo.gpus.size()) + ")");
  if (req.use_gpus && !gpus.empty() && size_t(n) > gpus.size())
    return fail(Errc::resources,
                "node " + node + " has " + std::to_string(gpus.size()) +
                    " GPU(s) left by its GPU list (--include/--exclude or CUDA_VISIBLE_DEVICES) but the job asks for " + std::to_string(n) + " per node",
                "run at most " + std::to_string(gpus.size()) + " ranks there, or choose more of its GPUs");
  if (req.use_gpus && size_t(n) > topo.gpus.size())
    return fail(Errc::resources,
                "node " + node + " has " + std::to_string(topo.gpus.size()) + " GPUs but the job asks for " +
                    std::to_string(n) + " per node (-g " + std::to_string(n) + ")",
                topo.gpus.empty()
                    ? "run CPU-only ranks with -p, or choose nodes with GPUs"
                    : "use -g " + std::to_string(topo.gpus.size()) + " or fewer, or choose nodes with more GPUs");

  std::vector<int> cpu_numas;
  for (const auto& node_info : topo.numa_nodes)
    if (!node_info.cores.empty()) cpu_numas.push_back(node_info.os_index);

  if (!req.use_gpus && req.mode != BindMode::none && size_t(n) < cpu_numas.size())
    return spreadOverNumaNodes(topo, req, node, cpu_numas);

  std::vector<int> gpu_of_rank = gpus;  // local rank -> GPU index
  for (int r = static_cast<int>(gpu_of_rank.size()); req.use_gpus && r < n; ++r) gpu_of_rank.push_back(r);
  std::vector<RankBinding> out(static_cast<size_t>(n));
  std::map<int, int> load;  // ranks per NUMA node
  for (int r = 0; r < n; ++r) {
    RankBinding& rb = out[size_t(r)];
    rb.local_rank = r;
    if (req.use_gpus) {
      const GpuDevice& gpu = topo.gpus[size_t(gpu_of_rank[size_t(r)])];
      rb.gpu_busid = gpu.busid;
      rb.gpu_uuid = gpu.uuid;
      if (std::find(cpu_numas.begin(), cpu_numas.end(), gpu.numa) != cpu_numas.end()) rb.numa = gpu.numa;
    } else if (!cpu_numas.empty()) {
      rb.numa = cpu_numas[size_t(r) % cpu_numas.size()];
    }
    if (rb.numa >= 0) ++load[rb.numa];
  }
  // GPUs whose locality hwloc could not tell go to the least-loaded NUMA node, so cpusets stay disjoint.
  for (auto& rb : out) {
    if (rb.numa >= 0 || cpu_numas.empty()) continue;
    rb.numa = *std::min_element(cpu_numas.begin(), cpu_numas.end(), [&](int a, int b) { return load[a] < load[b]; });
    ++load[rb.numa];
  }
  std::map<int, Domain> domains;
  for (const auto& rb : out) domainFor(domains, topo, rb.numa).ranks.push_back(rb.local_rank);

  if (req.mode != BindMode::none) {
    for (auto& [numa, d] : domains) {
      const size_t k = d.ranks.size(), cores = d.cores.size();
      if (cores == 0)
        return fail(Errc::topology, "node " + node + ": the topology shows no CPU cores for " + describe(d),
                    "check the node's topology (lstopo), or run with --bind none");
      if (req.mode == BindMode::numa) {
        for (int r : d.ranks) out[size_t(r)].cpus = flatten(d.cores, 0, cores);
      } else {
        if (cores < k)
          return fail(Errc::resources,
                      "node " + node + ": " + describe(d) + " has " + std::to_string(cores) + " cores but " +
                          std::to_string(k) + " ranks are placed on it",
                      "run fewer ranks per node, or bind by NUMA node or not at all");
        const size_t share = cores / k;
        if (size_t(req.cpus_per_rank) > share)
          return fail(Errc::resources,
                      "node " + node + ": " + std::to_string(req.cpus_per_rank) + " cores per rank asked, but " +
                          describe(d) + " has " + std::to_string(cores) + " cores for " + std::to_string(k) +
                          " ranks (" + std::to_string(share) + " each)",
                      "ask for at most " + std::to_string(share) + " cores per rank, or run fewer ranks per node");
        const size_t take = req.cpus_per_rank > 0 ? size_t(req.cpus_per_rank) : share;
        for (size_t j = 0; j < k; ++j) out[size_t(d.ranks[j])].cpus = flatten(d.cores, j * share, take);
      }
      if (numa >= 0)
        for (int r : d.ranks) out[size_t(r)].mem_nodes = {numa};
    }
  }

  if (req.use_gpus && req.pair_hcas) assignHcas(topo, gpu_of_rank, req.data_ports, out);
  return out;
}

}  // namespace tlaunch
