#include "launcher/plan/gpu_choice.h"

#include <algorithm>

namespace tlaunch {

Result<std::vector<int>> chooseNodeGpus(const TopologySnapshot& topo, const GpuList& list, const std::string& node) {
  const int count = static_cast<int>(topo.gpus.size());
  const auto out_of_range = [&](int i) { return i < 0 || i >= count; };
  for (const auto* named : {&list.only, &list.excluded}) {
    auto bad = std::find_if(named->begin(), named->end(), out_of_range);
    if (bad == named->end()) continue;
    const std::string flag = named == &list.only && list.excluded.empty() ? "--include" : "--exclude";
    return fail(Errc::usage,
                flag + " names GPU " + std::to_string(*bad) + " of " + node + ", which has " + std::to_string(count) +
                    " GPU(s)" + (count > 0 ? " (0-" + std::to_string(count - 1) + ")" : ""),
                "GPU indices count the node's GPUs in PCI bus order, as nvidia-smi lists them");
  }
  std::vector<int> chosen;
  for (int i = 0; i < count; ++i) {
    const bool in = list.only.empty() || std::find(list.only.begin(), list.only.end(), i) != list.only.end();
    const bool out = std::find(list.excluded.begin(), list.excluded.end(), i) != list.excluded.end();
    if (in && !out) chosen.push_back(i);
  }
  if (chosen.empty() && count > 0)
    return fail(Errc::usage, "--exclude leaves no GPU of " + node + " (it has " + std::to_string(count) + ")",
                "exclude the whole node instead (--exclude " + node + ")");
  return chosen;
}

std::string gpuIndexList(const std::vector<int>& gpus) {
  std::string out;
  for (int g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g);
  return out;
}

}  // namespace tlaunch
