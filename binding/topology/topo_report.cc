#include "binding/topology/topo_report.h"

#include <cmath>

#include "binding/topology/binding_manifest.h"
#include "binding/topology/placement.h"
#include "binding/topology/cpu_list.h"
#include "tlaunch/strings.h"

namespace tlaunch {
namespace {

using Rows = std::vector<std::vector<std::string>>;

std::vector<int> numaCpus(const TopologySnapshot& topo, int numa) {
  std::vector<int> cpus;
  for (const auto& n : topo.numa_nodes)
    if (n.os_index == numa && numa >= 0)
      for (const auto& core : n.cores) cpus.insert(cpus.end(), core.begin(), core.end());
  return cpus;
}

std::string orDash(const std::string& s) { return s.empty() ? "-" : s; }
std::string numaText(int numa) { return numa >= 0 ? std::to_string(numa) : "-"; }
std::string affinity(const TopologySnapshot& topo, int numa) { return orDash(formatCpuList(numaCpus(topo, numa))); }

std::string memoryText(std::uint64_t bytes) {
  if (bytes == 0) return "-";
  const double gib = double(bytes) / double(1ull << 30);
  return gib >= 1 ? std::to_string(std::llround(gib)) + " GiB"
                  : std::to_string(std::llround(double(bytes) / double(1 << 20))) + " MiB";
}

std::string portState(int state) {
  switch (state) {
    case 1:
      return "DOWN";
    case 2:
      return "INIT";
    case 3:
      return "ARMED";
    case 4:
      return "ACTIVE";
    case 5:
      return "ACTIVE_DEFER";
  }
  return "state unknown";
}

void numaSection(const TopologySnapshot& topo, std::string& out) {
  Rows rows{{"NUMA", "package", "cores", "CPUs", "memory"}};
  for (const auto& n : topo.numa_nodes) {
    size_t pus = 0;
    for (const auto& c : n.cores) pus += c.size();
    std::string cores = std::to_string(n.cores.size()) + (n.cores.empty() ? " (memory only)" : "");
    rows.push_back({numaText(n.os_index), n.package >= 0 ? std::to_string(n.package) : "-", cores,
                    orDash(formatCpuList(numaCpus(topo, n.os_index))), memoryText(n.memory_bytes)});
  }
  out += "NUMA nodes\n" + alignColumns(rows, "  ");
}

void matrixSection(const TopologySnapshot& topo, std::string& out) {
  if (topo.gpus.empty()) {
    out +=
        "\nGPUs: none found (hwloc shows no CUDA/NVML/ROCm/OpenCL device and no NVIDIA/AMD display-class PCI device)\n";
    return;
  }
  Rows rows{{""}};
  for (const auto& h : topo.hcas) rows[0].push_back(h.name);
  rows[0].insert(rows[0].end(), {"NUMA", "CPU affinity"});
  for (size_t i = 0; i < topo.gpus.size(); ++i) {
    const GpuDevice& g = topo.gpus[i];
    rows.push_back({"GPU" + std::to_string(i)});
    for (const auto& h : topo.hcas)
      rows.back().push_back(pciDistanceName(pciDistance(g.pci_path, g.numa, h.pci_path, h.numa)));
    rows.back().insert(rows.back().end(), {numaText(g.numa), affinity(topo, g.numa)});
  }
  out += "\nGPU x HCA PCI paths" + std::string(topo.hcas.empty() ? " (no RDMA devices)" : "") + "\n" +
         alignColumns(rows, "  ");

  Rows gpus{{"", "bus id", "model", "uuid", "devices"}};
  for (size_t i = 0; i < topo.gpus.size(); ++i) {
    const GpuDevice& g = topo.gpus[i];
    const bool model_names_vendor = g.model.rfind(g.vendor, 0) == 0;
    gpus.push_back({"GPU" + std::to_string(i), g.busid,
                    model_names_vendor ? g.model : g.vendor + (g.model.empty() ? "" : " " + g.model),
                    g.uuid.value_or("-"), g.os_devices.empty() ? "PCI only" : joinStrings(g.os_devices, ",")});
  }
  out += "\nGPUs (CUDA_DEVICE_ORDER=PCI_BUS_ID order)\n" + alignColumns(gpus, "  ");
}

void hcaSection(const TopologySnapshot& topo, std::string& out) {
  if (topo.hcas.empty()) {
    out += "\nRDMA devices: none found (hwloc shows no OpenFabrics device)\n";
    return;
  }
  Rows rows{{"HCA", "bus id", "NUMA", "CPU affinity", "ports"}};
  for (const auto& h : topo.hcas) {
    std::vector<std::string> ports;
    for (const auto& p : h.ports)
      ports.push_back(std::to_string(p.number) + " " + portState(p.state) +
                      (p.netdevs.empty() ? "" : " (" + joinStrings(p.netdevs, ",") + ")"));
    rows.push_back({h.name, orDash(h.busid), numaText(h.numa), affinity(topo, h.numa), joinStrings(ports, "; ")});
  }
  out += "\nRDMA devices\n" + alignColumns(rows, "  ");
}

void pairingSection(const TopologySnapshot& topo, const std::vector<RankBinding>& pairing, std::string& out) {
  if (pairing.empty()) return;
  Rows rows{{"local rank", "GPU", "HCA", "path", "NUMA", "CPUs"}};
  for (const auto& b : pairing) {
    std::string gpu = "-";
    for (size_t i = 0; i < topo.gpus.size(); ++i)
      if (b.gpu_busid && topo.gpus[i].busid == *b.gpu_busid) gpu = "GPU" + std::to_string(i) + " " + *b.gpu_busid;
    rows.push_back({std::to_string(b.local_rank), gpu, b.hca.value_or("-"), orDash(b.path),
                    b.numa < 0 && !b.mem_nodes.empty() ? formatCpuList(b.mem_nodes) : numaText(b.numa),  // several
                    orDash(formatCpuList(b.cpus))});
  }
  out += "\nChosen binding\n" + alignColumns(rows, "  ");
  std::vector<std::string> skipped;
  bool any_active = false;
  for (const auto& h : topo.hcas) {
    if (hcaHasActivePort(h))
      any_active = true;
    else
      skipped.push_back(h.name);
  }
  if (any_active && !skipped.empty() && pairing.front().gpu_busid)
    out += "  not paired (no ACTIVE port): " + joinStrings(skipped, ", ") + "\n";
}

void driverSection(const GpuDriverFacts& d, std::string& out) {
  if (!d.consulted) return;
  if (!d.answering()) {
    out += "NVIDIA driver: " + d.problem() + "; bus ids and PCI names only\n";
    return;
  }
  out += "NVIDIA " + d.driverText() + ": models and UUIDs from NVML\n";
  if (!d.unlisted.empty()) out += "  left out (on PCI, not listed by NVML): " + joinStrings(d.unlisted, ", ") + "\n";
  for (const auto& e : d.nvml.device_errors) out += "  " + e + "\n";
}

}  // namespace

std::string renderTopoReport(const TopologySnapshot& topo, const std::vector<RankBinding>& pairing,
                             const GpuDriverFacts& driver) {
  std::string out = topo.live ? "Topology of this machine (live)\n\n"
                              : "Topology from " + topo.source + " (recorded; binding is reported, not applied)\n\n";
  numaSection(topo, out);
  matrixSection(topo, out);
  driverSection(driver, out);
  hcaSection(topo, out);
  pairingSection(topo, pairing, out);
  if (!topo.gpus.empty() && !topo.hcas.empty())
    out +=
        "\nPIX = one PCIe switch, PXB = several PCIe bridges, PHB = through a PCIe host bridge,\n"
        "NODE = between host bridges of one NUMA node, SYS = across NUMA nodes\n";
  return out;
}

}  // namespace tlaunch
