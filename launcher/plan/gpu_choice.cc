#include "launcher/plan/gpu_choice.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <system_error>

#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

// What chose the list, for messages: the variable, or the flag that gave `named`.
std::string chooser(const GpuList& list, const std::vector<int>& named) {
  if (!list.source.empty()) return list.source;
  return &named == &list.only && list.excluded.empty() && !list.only_from_exclude ? "--include" : "--exclude";
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

Result<std::vector<int>> chooseNodeGpus(const TopologySnapshot& topo, const GpuList& list, const std::string& node) {
  const int count = static_cast<int>(topo.gpus.size());
  if (list.none)
    return fail(Errc::usage, list.source + " leaves CUDA no GPU of " + node + ", but the job asks for GPU ranks",
                !list.slurm.empty() ? "ask Slurm for GPUs (--gres=gpu:N or --gpus-per-node), or run CPU ranks with -p"
                                    : "unset it to use every GPU, name GPUs by index (CUDA_VISIBLE_DEVICES=0,1 or "
                                      "--include), or run CPU ranks with -p");
  const auto out_of_range = [&](int i) { return i < 0 || i >= count; };
  for (const auto* named : {&list.only, &list.excluded}) {
    auto bad = std::find_if(named->begin(), named->end(), out_of_range);
    if (bad == named->end()) continue;
    if (count == 0) {
      const std::string flag = chooser(list, *named);
      return fail(Errc::usage, flag + " names GPU " + std::to_string(*bad) + " of " + node + ", which has no GPU",
                  flag == "--include" ? "name " + node + " without a GPU list (--include " + node +
                                            "); its ranks are CPU ranks (-p)"
                                      : "leave " + node + "'s GPU list out of --exclude (there is no GPU to leave "
                                        "out), or exclude the whole node (--exclude " + node + ")");
    }
    return fail(Errc::usage,
                chooser(list, *named) + " names GPU " + std::to_string(*bad) + " of " + node + ", which has " +
                    std::to_string(count) + " GPU(s)" +
                    (count > 1 ? " (0-" + std::to_string(count - 1) + ")" : count == 1 ? " (0)" : ""),
                "GPU indices count the node's GPUs in PCI bus order, as nvidia-smi lists them");
  }
  // CUDA_VISIBLE_DEVICES=3,1 gives local rank 0 GPU 3, as CUDA (and torchrun) would: a variable's
  // order stands. --include's lists are sets, as DeepSpeed's launcher takes them.
  std::vector<int> chosen;
  if (!list.source.empty() && !list.only.empty()) {
    for (int i : list.only)
      if (!contains(list.excluded, i)) chosen.push_back(i);
  } else {
    for (int i = 0; i < count; ++i)
      if ((list.only.empty() || contains(list.only, i)) && !contains(list.excluded, i)) chosen.push_back(i);
  }
  if (chosen.empty() && count > 0)
    return fail(Errc::usage, "--exclude leaves no GPU of " + node + " (it has " + std::to_string(count) + ")",
                "exclude the whole node instead (--exclude " + node + ")");
  return chosen;
}

Result<GpuList> withinSlurmAllocation(const GpuList& user, const std::string& allocated, const std::string& node) {
  GpuList out = user;
  out.slurm = allocated;
  if (allocated.empty()) return out;
  const std::string source = "Slurm's allocation on " + node + " (CUDA_VISIBLE_DEVICES=" + allocated + " in its step)";
  const auto slurm = gpuListFromCudaVisible(allocated, source);
  if (!slurm) return out;  // UUIDs: CUDA resolves Slurm's value, passed on unchanged
  if (slurm->none || !user.given()) {  // none: "NoDevFiles", a step on a GPU node given no GPU
    out = *slurm;
    out.slurm = allocated;
    return out;
  }
  if (user.none) return out;  // chooseNodeGpus says why no GPU is left
  const std::string fix = "choose among Slurm's GPUs there, or leave the choice to Slurm (no CUDA_VISIBLE_DEVICES, "
                          "no GPU list in --include/--exclude)";
  if (!user.only_from_exclude) {  // GPUs the user named: each must be Slurm's
    for (int g : user.only)
      if (!contains(slurm->only, g))
        return fail(Errc::usage,
                    chooser(user, user.only) + " names GPU " + std::to_string(g) + " of " + node +
                        ", which Slurm did not give this job (it has GPU(s) " + gpuIndexList(slurm->only) + " there)",
                    fix);
    if (!user.only.empty()) return out;
  }
  // What --exclude leaves: Slurm's GPUs less the excluded ones.
  out.only.clear();
  out.excluded.clear();
  for (int g : slurm->only)
    if ((user.only.empty() || contains(user.only, g)) && !contains(user.excluded, g)) out.only.push_back(g);
  if (out.only.empty())
    return fail(Errc::usage,
                "--exclude leaves none of the GPUs Slurm gave this job on " + node + " (" + gpuIndexList(slurm->only) +
                    ")",
                fix);
  return out;
}

std::optional<GpuList> gpuListFromCudaVisible(std::string_view value, const std::string& source) {
  GpuList list;
  list.source = source;
  size_t start = 0;
  while (start <= value.size()) {
    const size_t comma = std::min(value.find(',', start), value.size());
    const std::string_view entry = trimBlanks(value.substr(start, comma - start));
    if (entry.starts_with("GPU-") || entry.starts_with("MIG-")) {
      if (list.only.empty()) return std::nullopt;  // named by UUID: CUDA's to resolve, not an index list
      break;
    }
    int index = 0;
    const auto [end, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), index);
    if (entry.empty() || ec != std::errc{} || end != entry.data() + entry.size() || index < 0) break;
    if (std::find(list.only.begin(), list.only.end(), index) != list.only.end()) break;
    list.only.push_back(index);
    start = comma + 1;
  }
  list.none = list.only.empty();
  return list;
}

std::optional<GpuList> gpuUuidListFromCudaVisible(std::string_view value, const std::string& source) {
  GpuList list;
  list.source = source;
  for (size_t start = 0; start <= value.size();) {
    const size_t comma = std::min(value.find(',', start), value.size());
    const std::string_view entry = trimBlanks(value.substr(start, comma - start));
    if (!entry.starts_with("GPU-") || entry.size() == 4) break;
    list.uuids.emplace_back(entry);
    start = comma + 1;
  }
  if (list.uuids.empty()) {
    if (!trimBlanks(value).starts_with("GPU-")) return std::nullopt;
    list.none = true;  // a bare "GPU-": CUDA sees no GPU
  }
  return list;
}

std::optional<GpuList> resolveGpuUuids(const GpuList& list, const TopologySnapshot& topo) {
  if (list.uuids.empty()) return list;
  const auto& gpus = topo.gpus;
  if (std::none_of(gpus.begin(), gpus.end(), [](const GpuDevice& g) { return g.uuid.has_value(); }))
    return std::nullopt;
  const auto startsWith = [](const std::string& uuid, const std::string& entry) {
    return uuid.size() >= entry.size() &&
           std::equal(entry.begin(), entry.end(), uuid.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
           });
  };
  GpuList out = list;
  out.uuids.clear();
  for (const auto& entry : list.uuids) {
    int found = -1, matches = 0;
    for (size_t i = 0; i < gpus.size(); ++i)
      if (gpus[i].uuid && startsWith(*gpus[i].uuid, entry)) {
        found = static_cast<int>(i);
        ++matches;
      }
    if (matches != 1 || contains(out.only, found)) break;
    out.only.push_back(found);
  }
  out.none = out.only.empty();
  return out;
}

std::string gpuIndexList(const std::vector<int>& gpus) {
  std::string out;
  for (int g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out;
}

}  // namespace tlaunch
