#include "daemon/signal_catchers.h"

#include <csignal>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "daemon/stack_target.h"

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
  std::unordered_map<pid_t, pid_t> parent;  // the group's live members
  for (const auto& p : procs)
    if (p.pgid == leader && p.state != 'Z') parent[p.pid] = p.ppid;
  std::unordered_set<pid_t> catching;
  for (const auto& [pid, ppid] : parent)
    if (catchesSignal(statusOf(pid), sig)) catching.insert(pid);
  std::vector<pid_t> out;
  for (pid_t pid : catching) {
    bool topmost = true;
    // Up the parent links while they stay in the group (bounded: a pid cycle cannot occur, but
    // a list read while processes come and go is no proof of that).
    pid_t up = parent[pid];
    for (size_t steps = 0; topmost && parent.count(up) && steps < parent.size(); ++steps, up = parent[up])
      topmost = !catching.count(up);
    if (topmost) out.push_back(pid);
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) out.push_back(leader);
  return out;
}

std::vector<pid_t> teardownTargets(pid_t leader, const std::vector<ProcEntry>& procs,
                                   const std::function<std::string(pid_t)>& statusOf,
                                   const std::function<std::string(pid_t)>& nameOf) {
  std::unordered_map<pid_t, pid_t> parent;  // the group's live members
  for (const auto& p : procs)
    if (p.pgid == leader && p.state != 'Z') parent[p.pid] = p.ppid;
  std::unordered_set<pid_t> catching, owners;  // owners: catchers that are no wrapper
  for (const auto& [pid, ppid] : parent)
    if (catchesSignal(statusOf(pid), SIGTERM)) {
      catching.insert(pid);
      if (!isWrapperCommand(nameOf(pid))) owners.insert(pid);
    }
  if (catching.empty()) return {-leader};
  // Up the parent links within the group, bounded (a list read while processes come and go).
  auto anyAbove = [&](pid_t pid, const std::unordered_set<pid_t>& set) {
    pid_t up = parent[pid];
    for (size_t steps = 0; parent.count(up) && steps < parent.size(); ++steps, up = parent[up])
      if (set.count(up)) return true;
    return false;
  };
  // Ancestors of a program that catches it. Not of a wrapper that does: a shell's child inherits
  // its trap's handler between fork and exec, which would spare the shell for a `sleep`.
  std::unordered_set<pid_t> waiting_wrappers;
  for (pid_t pid : owners) {
    pid_t up = parent[pid];
    for (size_t steps = 0; parent.count(up) && steps < parent.size(); ++steps, up = parent[up])
      waiting_wrappers.insert(up);
  }
  std::vector<pid_t> out;
  for (const auto& [pid, ppid] : parent) {
    if (anyAbove(pid, owners)) continue;
    if (waiting_wrappers.count(pid) && isWrapperCommand(nameOf(pid))) continue;
    out.push_back(pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string procStatus(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::ostringstream text;
  text << "\n" << in.rdbuf();  // the leading newline lets the first line match as every other
  return in ? text.str() : std::string();
}

}  // namespace tlaunch
