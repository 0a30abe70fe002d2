#pragma once
// Simulated tlaunchd's for the scale harness (tests/scale/scale_bench.py): many daemons in one
// event-driven process, each on its own TCP connection to the real frontend, speaking the real
// protocol with the real code (bootstrap/connection, auth, frame sealing, the inventory codec).
// They report the inventory of a recorded topology, prepare and start instantly, put `fence_bytes`
// per rank into one fence of the whole job (as Open MPI's modex does), and exit 0 once it
// completes. No PMIx server and no rank process: libpmix can be initialised once per process.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <asio.hpp>

#include "tlaunch/inventory.h"

namespace tlaunch::scale {

struct SimOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string secret;
  int first_node = 0;  // this process simulates nodes first_node .. first_node + nodes - 1
  int nodes = 0;
  int total_nodes = 0;   // in the whole job: the fence returns every node's contribution
  int fence_bytes = 64;  // per rank
  int fences = 1;        // one after another, as a program's MPI_Init and barriers do
  // Tree spawn: the frontend starts only its direct children; a daemon told to start its
  // children connects them (simulated ssh) to its own listener. This process then simulates
  // whole subtrees: the nodes whose top-level ancestor is `process` modulo `processes`.
  bool spawn = false;
  int radix = 0;
  int process = 0, processes = 1;
};

// When the last of this process's daemons reached each point (steady_clock, shared by the
// processes of one machine), for the harness's per-phase table.
struct SimMilestones {
  std::chrono::steady_clock::time_point authenticated, prepare, start, first_fence_done, fence_done, shutdown;
};

class SimDaemons {
 public:
  SimDaemons(asio::io_context& io, SimOptions options, NodeInventory inventory);
  ~SimDaemons();
  void start();  // connects every daemon (the direct ones with spawn); they run on `io`
  void spawnChild(int node, int parent_port);  // a parent daemon "starts" node over ssh
  int failures() const { return failures_; }  // daemons that could not finish the job
  const SimMilestones& milestones() const { return milestones_; }

 private:
  class Daemon;
  friend class Daemon;
  asio::io_context& io_;
  SimOptions opts_;
  NodeInventory inventory_;
  std::vector<std::unique_ptr<Daemon>> daemons_;
  SimMilestones milestones_;
  int failures_ = 0;
};

}  // namespace tlaunch::scale
