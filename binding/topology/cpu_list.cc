#include "binding/topology/cpu_list.h"

#include <algorithm>
#include <charconv>

namespace tlaunch {

std::string formatCpuList(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ids[i]);
    if (j > i) out += '-' + std::to_string(ids[j]);
    i = j + 1;
  }
  return out;
}

namespace {
bool parseInt(std::string_view s, int& v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() && v >= 0;
}
}  // namespace

Result<std::vector<int>> parseCpuList(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  std::vector<int> ids;
  while (!text.empty()) {
    auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    auto dash = item.find('-');
    int lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!parseInt(item, lo)) return fail(Errc::usage, "bad CPU list item '" + std::string(item) + "'");
      hi = lo;
    } else if (!parseInt(item.substr(0, dash), lo) || !parseInt(item.substr(dash + 1), hi) || hi < lo) {
      return fail(Errc::usage, "bad CPU range '" + std::string(item) + "'");
    }
    for (int i = lo; i <= hi; ++i) ids.push_back(i);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace tlaunch
