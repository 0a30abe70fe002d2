#pragma once
// Starts every daemon on this host by fork/exec: simulated nodes for tests and one-node jobs,
// and the frontend's own node in ssh jobs (no ssh to ourselves).
#include <vector>

#include "launcher/child_process.h"
#include "launcher/daemon_starter.h"

namespace tlaunch {

class LocalStarter : public DaemonStarter {
 public:
  const char* name() const override { return "local"; }
  Result<void> start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                     const std::string& secret) override;
  std::vector<StartFailure> poll() override;
  void daemonConnected(int node_index) override;
  void daemonLost(int node_index) override;
  void stop(int grace_ms) override;

 private:
  struct Started {
    int node_index;
    ChildProcess process;
    bool reported = false;
    bool connected = false;  // its clean exit is then no failure, and any other end is said as such
    bool lost = false;  // silent past the heartbeat timeout: killed at stop(), not waited for
  };
  std::vector<Started> started_;
};

}  // namespace tlaunch
