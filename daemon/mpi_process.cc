#include "daemon/mpi_process.h"

#include <fstream>

#include "daemon/descendants.h"

namespace tlaunch {
namespace {

bool mapsOfHoldMpi(pid_t pid, const std::string& proc_root) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line))
    if (mapsHoldMpiLibrary(line)) return true;
  return false;
}

}  // namespace

bool mapsHoldMpiLibrary(std::string_view maps) {
  for (std::string_view name : {"/libmpi.so", "/libmpich.so"}) {
    for (size_t at = maps.find(name); at != std::string_view::npos; at = maps.find(name, at + 1)) {
      const size_t end = at + name.size();
      if (end == maps.size() || maps[end] == '.' || maps[end] == '\n') return true;  // libmpi.so, libmpi.so.40
    }
  }
  return false;
}

bool runsMpiLibrary(pid_t rank_pid, const std::string& proc_root) {
  if (rank_pid <= 0) return false;
  if (mapsOfHoldMpi(rank_pid, proc_root)) return true;
  for (const ProcEntry& p : descendantsOf(rank_pid, listProcesses(proc_root)))
    if (mapsOfHoldMpi(p.pid, proc_root)) return true;
  return false;
}

}  // namespace tlaunch
