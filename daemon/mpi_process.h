#pragma once
// Whether a rank is an MPI program: an MPI library (Open MPI's libmpi.so, MPICH's libmpich.so,
// Intel MPI's) mapped into the rank's process or one below it (a wrapper script's child), read
// from /proc/PID/maps when the rank connects to the node's PMIx server (MPI_Init). The frontend
// needs it for --keep-going: an MPI program's other ranks wait for a failed one for ever (Open
// MPI 4.1 does not abort them), a fault-aware program on PMIx alone goes on.
#include <sys/types.h>

#include <string>
#include <string_view>

namespace tlaunch {

// True if a line of /proc/PID/maps text maps an MPI library.
bool mapsHoldMpiLibrary(std::string_view maps);

// `rank_pid` or one of its descendants has an MPI library mapped.
bool runsMpiLibrary(pid_t rank_pid, const std::string& proc_root = "/proc");

}  // namespace tlaunch
