// Telling an MPI program by the libraries it maps (daemon/mpi_process.h), from a /proc tree
// written here: a wrapper shell whose child maps Open MPI's libmpi, and a PMIx-only program.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "daemon/mpi_process.h"

using namespace tlaunch;
namespace fs = std::filesystem;

TEST_CASE("mpi process: Open MPI's and MPICH's libraries count, look-alikes do not") {
  CHECK(mapsHoldMpiLibrary("7f0e r-xp 00000000 fe:01 123 /usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so.40.30.4"));
  CHECK(mapsHoldMpiLibrary("7f0e r-xp 00000000 fe:01 123 /usr/lib/x86_64-linux-gnu/libmpich.so.12.1.10"));
  CHECK(mapsHoldMpiLibrary("7f0e r-xp 00000000 fe:01 123 /opt/intel/mpi/lib/release/libmpi.so"));
  CHECK_FALSE(mapsHoldMpiLibrary("7f0e r-xp 0 fe:01 1 /usr/lib/python3/dist-packages/mpi4py/MPI.cpython-311.so"));
  CHECK_FALSE(mapsHoldMpiLibrary("7f0e r-xp 0 fe:01 1 /usr/lib/x86_64-linux-gnu/libpmix.so.2.5.2"));
  CHECK_FALSE(mapsHoldMpiLibrary("7f0e r-xp 0 fe:01 1 /opt/libmpi.somewhere/libfoo.so"));
}

TEST_CASE("mpi process: the rank's own process or one below it (a wrapper's child)") {
  const fs::path root = fs::temp_directory_path() / ("tlaunch-mpi-proc-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto process = [&](int pid, int ppid, const char* comm, const std::string& maps) {
    fs::create_directories(root / std::to_string(pid));
    std::ofstream(root / std::to_string(pid) / "stat")
        << pid << " (" << comm << ") S " << ppid << " " << pid << " " << pid << " 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100\n";
    std::ofstream(root / std::to_string(pid) / "maps") << maps;
  };
  const std::string libc = "7f00 r-xp 0 fe:01 2 /usr/lib/x86_64-linux-gnu/libc.so.6\n";
  process(100, 1, "bash", libc);                                      // a rank: bash train.sh
  process(101, 100, "python3", libc + "7f01 r-xp 0 fe:01 3 /usr/lib/x86_64-linux-gnu/libmpi.so.40\n");
  process(200, 1, "pmix_client", libc + "7f02 r-xp 0 fe:01 4 /usr/lib/x86_64-linux-gnu/libpmix.so.2\n");
  process(300, 1, "mpi_app", "7f03 r-xp 0 fe:01 5 /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4\n");
  CHECK(runsMpiLibrary(100, root.string()));
  CHECK(runsMpiLibrary(300, root.string()));
  CHECK_FALSE(runsMpiLibrary(200, root.string()));
  CHECK_FALSE(runsMpiLibrary(999, root.string()));  // gone
  CHECK_FALSE(runsMpiLibrary(::getpid()));          // this test links no MPI
  fs::remove_all(root);
}
