#pragma once
// Nodes that are this host get their daemon by fork (as mpirun does for its own node); the
// others through the remote starter (ssh). Saves one ssh session set-up per launch.
#include <memory>
#include <vector>

#include "launcher/daemon_starter.h"
#include "launcher/local_starter.h"

namespace tlaunch {

class SplitStarter : public DaemonStarter {
 public:
  SplitStarter(std::vector<bool> is_local, std::unique_ptr<DaemonStarter> remote);
  const char* name() const override;  // "local" when every node is this host
  Result<void> start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                     const std::string& secret) override;
  std::vector<StartFailure> poll() override;
  void daemonConnected(int node_index) override;
  void daemonLost(int node_index) override;
  void daemonKeeps(int node_index, const KeeperAddress& keeper) override { remote_->daemonKeeps(node_index, keeper); }
  std::vector<StarterNote> takeNotes() override { return remote_->takeNotes(); }
  bool waitingForResources() const override { return remote_->waitingForResources(); }
  bool keeperGivenUp(int node_index) const override { return remote_->keeperGivenUp(node_index); }
  void stop(int grace_ms) override;

 private:
  std::vector<bool> is_local_;  // by node index
  LocalStarter local_;
  std::unique_ptr<DaemonStarter> remote_;
};

}  // namespace tlaunch
