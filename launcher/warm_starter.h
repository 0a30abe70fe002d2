#pragma once
// tlaunch --keep-daemons: nodes with a warm keeper (launcher/warm_registry.h) get their daemon
// from it, in one round trip and no ssh; the others go to the cold starter (ssh), whose daemons
// are asked to stay warm when the user said so. At the end of the job it writes down where the
// keepers are, and for how long. A keeper that cannot be used (gone, another user's, another
// tlaunchd) is forgotten and its node started over ssh, said with -v.
#include <map>
#include <memory>
#include <vector>

#include "launcher/daemon_starter.h"
#include "launcher/keeper_client.h"
#include "launcher/warm_registry.h"

namespace tlaunch {

struct WarmOptions {
  // --keep-daemons: -1 not given (reused nodes keep the time they were given; new ones are not
  // kept), 0: end the reused ones after this job, N: keep every node N seconds after it.
  int keep_s = -1;
  int keeper_timeout_ms = 3000;  // for every keeper's answer together
};

class WarmStarter final : public DaemonStarter {
 public:
  WarmStarter(WarmOptions options, WarmRegistry registry, std::unique_ptr<DaemonStarter> cold);
  const char* name() const override { return cold_->name(); }
  Result<void> start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                     const std::string& secret) override;
  std::vector<StartFailure> poll() override;
  void daemonConnected(int node_index) override;
  void daemonKeeps(int node_index, const KeeperAddress& keeper) override;
  std::vector<StarterNote> takeNotes() override;
  void stop(int grace_ms) override;

 private:
  struct WarmNode {
    NodeTarget node;
    WarmEntry entry;
    std::unique_ptr<KeeperCall> call;
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
