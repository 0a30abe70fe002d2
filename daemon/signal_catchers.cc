#include "daemon/signal_catchers.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tlaunch {

bool catchesSignal(std::string_view status_text, int sig) {
  if (sig < 1 || sig > 64) return false;
  constexpr std::string_view kField = "\nSigCgt:";
  const auto at = status_text.find(kField);
  if (at == std::string_view::npos) return false;
  const std::string hex(status_text.substr(at + kField.size(), 32));
  char* end = nullptr;
  const std::uint64_t mask = std::strtoull(hex.c_str(), &end, 16);
  if (end == hex.c_str()) return false;
  return (mask >> (sig - 1)) & 1U;
}

std::vector<pid_t> forwardTargets(pid_t leader, int sig, const std::vector<ProcEntry>& procs,
                                  const std::function<std::string(pid_t)>& statusOf) {
  std::vector<pid_t> out;
  for (const auto& p : procs)
    if (p.pgid == leader && p.state != 'Z' && catchesSignal(statusOf(p.pid), sig)) out.push_back(p.pid);
  if (out.empty()) out.push_back(leader);
  return out;
}

std::string procStatus(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::ostringstream text;
  text << "\n" << in.rdbuf();  // the leading newline lets the first line match as every other
  return in ? text.str() : std::string();
}

}  // namespace tlaunch
