#include "launcher/phase_timing.h"

#include <algorithm>
#include <cmath>

namespace tlaunch {

namespace {

std::string ms(double v) { return std::to_string(std::llround(v)); }

}  // namespace

std::string phaseTimingSummary(std::vector<std::pair<std::string, double>> times, size_t slowest) {
  if (times.empty()) return "no nodes";
  // Slowest first; equal times by name, so the text is stable.
  std::sort(times.begin(), times.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  const size_t mid = times.size() / 2;
  const double median = times.size() % 2 ? times[mid].second : (times[mid - 1].second + times[mid].second) / 2;
  std::string out = std::to_string(times.size()) + (times.size() == 1 ? " node" : " nodes") + " in " +
                    ms(times.front().second) + " ms";
  if (times.size() == 1) return out + " (" + times.front().first + ")";
  out += " (median " + ms(median) + " ms; slowest:";
  for (size_t i = 0; i < std::min(slowest, times.size()); ++i)
    out += (i ? ", " : " ") + times[i].first + " " + ms(times[i].second);
  return out + ")";
}

}  // namespace tlaunch
