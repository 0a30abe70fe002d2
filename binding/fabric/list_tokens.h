#pragma once
// The items of the lists users give NCCL, UCX, Gloo and Open MPI ("ib0,ib1", PATH-like values).
#include <string>
#include <string_view>
#include <vector>

namespace tlaunch {

// "a,,b," split at ',': {"a", "b"} (empty items are left out).
inline std::vector<std::string> splitNonEmpty(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto pos = text.find(sep, start);
    if (pos == std::string_view::npos) pos = text.size();
    if (pos > start) out.emplace_back(text.substr(start, pos - start));
    start = pos + 1;
  }
  return out;
}

}  // namespace tlaunch
