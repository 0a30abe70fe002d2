#pragma once
// Plain data describing one node's hardware as far as placement cares (NUMA nodes, cores, GPUs,
// RDMA devices and their PCI ancestry), and the per-rank binding planned from it. Daemons build a
// TopologySnapshot with hwloc and send it to the frontend, which plans; both ends only need this header.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tlaunch {

// One NUMA node. GPU-memory nodes (POWER9 with coherent GPUs) and CPU-less memory have no cores.
struct NumaNode {
  int os_index = -1;
  int package = -1;                     // OS index of the enclosing package, -1 if none
  std::uint64_t memory_bytes = 0;       // local memory as hwloc reports it (0 if unknown)
  std::vector<std::vector<int>> cores;  // each core = its allowed PU OS indices (hyperthreads together)
  bool operator==(const NumaNode&) const = default;
};

struct GpuDevice {
  std::string busid;                    // "dddd:bb:dd.f", lowercase hex
  std::optional<std::string> uuid;      // "GPU-…" (NVML) or AMD's id (ROCm-SMI); none when unknown/zeroed
  std::string vendor;                   // "NVIDIA", "AMD", "Intel" or "pci:xxxx"
  std::string model;                    // as the driver or the PCI database names it; may be empty
  int numa = -1;                        // OS index of the CPU NUMA node it is attached to, -1 unknown
  std::vector<std::string> pci_path;    // bridges from the host bridge ("hb:dddd:bb-bb") down to the parent
  std::vector<std::string> os_devices;  // e.g. "cuda0", "nvml0", "rsmi3", "card1"; empty if PCI-only
  bool operator==(const GpuDevice&) const = default;
};

struct HcaPort {
  int number = 1;
  int state = 0;                     // ibv_port_state as hwloc recorded it (1 DOWN … 4 ACTIVE); 0 = unknown
  std::vector<std::string> netdevs;  // IPoIB / RoCE netdevs hwloc attaches to this port
  bool operator==(const HcaPort&) const = default;
};

// An RDMA device (hwloc "OpenFabrics" OS device): mlx5_*, mlx4_*, hfi1_*, qib*, EFA rdmap*, …
struct HcaDevice {
  std::string name;   // "mlx5_2"
  std::string busid;  // PCI bus id of its function, "" if hwloc gave none
  int numa = -1;
  std::vector<std::string> pci_path;  // same form as GpuDevice::pci_path
  std::vector<HcaPort> ports;         // at least one
  bool operator==(const HcaDevice&) const = default;
};

struct TopologySnapshot {
  bool live = false;                 // true when this is the machine the process runs on (binding may be applied)
  std::string source;                // "live" or the XML file it was loaded from
  std::vector<NumaNode> numa_nodes;  // by OS index; every allowed core appears in exactly one
  std::vector<GpuDevice> gpus;       // by PCI bus id: local rank r ↔ GPU r ↔ CUDA_DEVICE_ORDER=PCI_BUS_ID
  std::vector<HcaDevice> hcas;       // by PCI bus id, then name
  bool operator==(const TopologySnapshot&) const = default;
};

// How ranks are pinned: not at all, to their whole NUMA node, or to a disjoint set of cores.
enum class BindMode { none, numa, core };

struct BindingRequest {
  int ranks_per_node = 1;
  bool use_gpus = false;  // -g: local rank r drives GPU r; otherwise -p: CPU-only ranks
  BindMode mode = BindMode::core;
  int cpus_per_rank = 0;  // cores per rank in core mode; 0 = even split of the NUMA node's cores
  // The node's data ports of the job's network ("mlx5_0:1"): a rank's HCA is the nearest of
  // these. Empty: the nearest HCA with an ACTIVE port.
  std::vector<std::string> data_ports;
  bool pair_hcas = true;  // false: the job uses no HCA (--net tcp, no RDMA): no rank is given one
};

// PCI distance between a GPU and an HCA, nearest first (same words as `nvidia-smi topo -m`).
// PIX: one PCIe switch (or bridge) in between; PXB: several bridges, no host bridge;
// PHB: through one host bridge; NODE: different host bridges, same NUMA node; SYS: across NUMA nodes.
struct RankBinding {
  int local_rank = 0;
  std::optional<std::string> gpu_busid;
  std::optional<std::string> gpu_uuid;
  std::optional<std::string> hca;  // "mlx5_2:1"
  std::string path;                // "PIX","PXB","PHB","NODE","SYS"; "" without GPU or HCA
  int numa = -1;                   // OS index, -1 when not tied to one NUMA node
  std::vector<int> cpus;           // PU OS indices; empty = no CPU binding
  std::vector<int> mem_nodes;      // NUMA OS indices for MPOL_BIND; empty = no memory binding
  bool operator==(const RankBinding&) const = default;
};

}  // namespace tlaunch
