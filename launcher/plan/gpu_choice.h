#pragma once
// Which GPUs of a node its ranks use (DeepSpeed's --include node1:0,1 / --exclude node1:0),
// resolved against the GPUs the node reported. Pure.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tlaunch/result.h"
#include "tlaunch/topology.h"

namespace tlaunch {

// A node's GPU list as the command line gave it; indices count GPUs in PCI bus id order
// (nvidia-smi's order with CUDA_DEVICE_ORDER=PCI_BUS_ID). Both empty: every GPU.
struct GpuList {
  GpuList() = default;
  GpuList(std::vector<int> only_gpus, std::vector<int> excluded_gpus)
      : only(std::move(only_gpus)), excluded(std::move(excluded_gpus)) {}
  std::vector<int> only;      // --include node:0,1 (or --exclude with the node's slot count known)
  std::vector<int> excluded;  // --exclude node:0 where the slot count was not given
  std::string source;         // what chose it, for messages; "" = --include/--exclude
  bool none = false;          // it names no GPU (CUDA_VISIBLE_DEVICES="" or "-1"): GPU ranks cannot run
  bool only_from_exclude = false;  // `only` is what --exclude left of a hostfile's slot count
  std::string slurm;          // CUDA_VISIBLE_DEVICES that Slurm set on this node ("": none); CPU ranks get it
  std::vector<std::string> uuids;  // GPUs named by UUID ("GPU-…"), resolved on each node (resolveGpuUuids)
  bool given() const { return none || !only.empty() || !excluded.empty() || !uuids.empty(); }
};

// The user's CUDA_VISIBLE_DEVICES read as the GPU list of every node, the way torchrun users
// choose GPUs: its leading non-negative indices (CUDA ignores everything from the first entry
// it cannot use, and so does this; a repeated index ends the list too). A value that leaves no
// index ("", "-1") gives a list with `none` set. nullopt when it names GPUs another way (UUIDs
// "GPU-…", MIG instances "MIG-…"): that value passes to the ranks unchanged. `source` names the
// variable, its value and where it came from, for messages.
std::optional<GpuList> gpuListFromCudaVisible(std::string_view value, const std::string& source);

// A node's GPU list inside the GPUs Slurm gave the job there (`allocated`: the CUDA_VISIBLE_DEVICES
// of the daemon's Slurm step, "" = none). Without a list of the user's it is exactly Slurm's; with
// one, it is the user's, and a GPU Slurm did not give the job is a usage error naming the node.
// The result keeps `allocated` in `slurm`.
Result<GpuList> withinSlurmAllocation(const GpuList& user, const std::string& allocated, const std::string& node);

// CUDA_VISIBLE_DEVICES that names GPUs by UUID, as nvidia-smi -L shows them
// ("GPU-8932f937-d72c-…", or enough of the start to be unique, which CUDA also accepts): a list
// of its leading UUID entries, for resolveGpuUuids on each node (a bare "GPU-": a list naming no
// GPU, as CUDA reads it). nullopt when it does not start with a GPU UUID (indices: gpuListFromCudaVisible; MIG instances "MIG-…": CUDA's to resolve).
std::optional<GpuList> gpuUuidListFromCudaVisible(std::string_view value, const std::string& source);

// `list` with its UUIDs turned into the indices of the GPUs of `topo` they name, as CUDA reads
// them: each entry the one GPU whose UUID starts with it, up to the first entry that names none,
// several, or one already named (CUDA ignores the rest). No GPU named: `none`. A list without
// UUIDs comes back as it is; nullopt when the node's GPUs have no known UUID (NVML did not answer).
std::optional<GpuList> resolveGpuUuids(const GpuList& list, const TopologySnapshot& topo);

// The GPU indices the node's ranks use, ascending: local rank r drives the r-th of them.
// An index the node does not have is a usage error naming the node and its GPUs.
Result<std::vector<int>> chooseNodeGpus(const TopologySnapshot& topo, const GpuList& list, const std::string& node);

// "0,2,3": the form CUDA_VISIBLE_DEVICES takes.
std::string gpuIndexList(const std::vector<int>& gpus);

}  // namespace tlaunch
