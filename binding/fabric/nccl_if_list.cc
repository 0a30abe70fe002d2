#include "binding/fabric/nccl_if_list.h"

#include <cstdlib>

namespace tlaunch {
namespace {

std::vector<std::string_view> splitKeepEmpty(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    auto pos = text.find(sep, start);
    parts.push_back(text.substr(start, pos == std::string_view::npos ? pos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return parts;
}

bool matchName(std::string_view name, std::string_view ref, bool exact) {
  if (exact) return name == ref;
  return name.substr(0, ref.size()) == ref;
}

}  // namespace

NcclIfList parseNcclIfList(std::string_view value) {
  NcclIfList list;
  if (!value.empty() && value.front() == '^') {
    list.negate = true;
    value.remove_prefix(1);
  }
  if (!value.empty() && value.front() == '=') {
    list.exact = true;
    value.remove_prefix(1);
  }
  for (std::string_view token : splitKeepEmpty(value, ',')) {
    auto fields = splitKeepEmpty(token, ':');
    if (fields[0].empty()) continue;  // NCCL skips entries without a name
    NcclIfEntry entry{std::string(fields[0]), -1};
    if (fields.size() > 1 && !fields[1].empty()) entry.port = std::atoi(std::string(fields[1]).c_str());
    list.entries.push_back(std::move(entry));
  }
  return list;
}

bool ncclIfListSelects(const NcclIfList& list, std::string_view name, int port) {
  bool matched = list.entries.empty();
  for (const auto& entry : list.entries) {
    bool portOk = port == -1 || entry.port == -1 || port == entry.port;
    if (matchName(name, entry.prefix, list.exact) && portOk) {
      matched = true;
      break;
    }
  }
  return matched != list.negate;
}

}  // namespace tlaunch
