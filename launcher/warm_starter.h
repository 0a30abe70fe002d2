#pragma once
// tlaunch --keep-daemons: nodes with a warm keeper (launcher/warm_registry.h) get their daemon
// from it, in one round trip and no ssh or srun; the others go to the cold starter. Over ssh the
// cold daemons are asked to start a keeper when the user said so; inside a Slurm allocation the
// cold nodes first get keepers of their own step (launcher/slurm_keeper_step.h), which then
// start their daemons like warm ones. At the end of the job it writes down where the keepers
// are, and for how long. A keeper that cannot be used (gone, another user's, another tlaunchd,
// another allocation's) is left out and its node started cold, said with -v.
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "launcher/daemon_starter.h"
#include "launcher/keeper_client.h"
#include "launcher/slurm_keeper_step.h"
#include "launcher/warm_registry.h"

namespace tlaunch {

struct WarmOptions {
  // --keep-daemons: -1 not given (reused nodes keep the time they were given; new ones are not
  // kept), 0: end the reused ones after this job, N: keep every node N seconds after it.
  int keep_s = -1;
  int keeper_timeout_ms = 3000;  // for every keeper's answer together
  // Inside a Slurm allocation: its id (SLURM_JOB_ID). Only keepers of this allocation's keeper
  // step are used (a keeper elsewhere would run the job outside the allocation), and with
  // keep_s > 0 the nodes without one get one first. Unset over ssh.
  std::string slurm_job;
  std::string slurm_step;  // this job's keeper-step settings (keeperStepSettings): only such keepers
  std::function<SlurmKeepers(const std::vector<NodeTarget>& nodes, const std::string& daemon_path,
                             const std::string& user_secret)>
      start_keepers;
};

class WarmStarter final : public DaemonStarter {
 public:
  WarmStarter(WarmOptions options, WarmRegistry registry, std::unique_ptr<DaemonStarter> cold);
  const char* name() const override { return cold_->name(); }
  Result<void> start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                     const std::string& secret) override;
  std::vector<StartFailure> poll() override;
  void daemonConnected(int node_index) override;
  void daemonLost(int node_index) override { cold_->daemonLost(node_index); }
  void daemonKeeps(int node_index, const KeeperAddress& keeper) override;
  std::vector<StarterNote> takeNotes() override;
  bool waitingForResources() const override { return cold_->waitingForResources(); }
  // Started over ssh or srun: its keeper was not asked, refused, or did not answer in time.
  bool keeperGivenUp(int node_index) const override { return cold_nodes_.contains(node_index); }
  void stop(int grace_ms) override;

 private:
  long long untilAfterThisJob(const WarmEntry& e, long long now) const;
  struct WarmNode {
    NodeTarget node;
    WarmEntry entry;
    std::unique_ptr<KeeperCall> call;
    bool fresh = false;  // its keeper was started for this job (under Slurm)
    bool connected = false;
    bool reported = false;
    std::string stderr_tail;
  };
  struct Kept {
    std::string node, destination;
    KeeperAddress keeper;
  };
  void saveRegistry();
  static WarmEntry entryOf(const Kept& k, long long expires, int keep_s);

  WarmOptions options_;
  WarmRegistry registry_;
  std::unique_ptr<DaemonStarter> cold_;
  std::vector<WarmNode> warm_;
  std::map<int, NodeTarget> cold_nodes_;  // by index: the nodes started cold
  std::map<int, Kept> kept_;               // cold nodes whose daemon started a keeper
  std::vector<StarterNote> notes_;
  bool stopped_ = false;
};

}  // namespace tlaunch
