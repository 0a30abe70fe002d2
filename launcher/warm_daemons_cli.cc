#include "launcher/warm_daemons_cli.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/error_text.h"
#include "launcher/cli_values.h"  // formatDuration
#include "launcher/job_environment.h"  // currentEnvironment
#include "launcher/keeper_client.h"
#include "launcher/warm_registry.h"

namespace tlaunch {

int runStopDaemons() {
  auto registry = WarmRegistry::open(currentEnvironment(), false);
  if (!registry) {
    printError(registry.error());
    return exitStatusFor(registry.error().code);
  }
  const auto entries = registry->all(epochSeconds());
  if (entries.empty()) {
    std::cout << "tlaunch: no warm daemons\n";
    return 0;
  }
  // Keepers written down, but the secret they answer to is gone (removed, as the hint for a
  // broken one says): nothing can stop them from here, and they are not forgotten.
  if (registry->secret().empty()) {
    for (const auto& e : entries)
      std::cerr << "tlaunch: node " << e.node << ": its warm daemon (" << e.host << ":" << e.port << ", pid " << e.pid
                << ") cannot be stopped: the secret it was started with (" << registry->dir()
                << "/secret) is gone; end it on " << e.node << " with kill " << e.pid << ", or let it end by itself within "
                << formatDuration(static_cast<int>(std::max(1LL, e.expires - epochSeconds()))) << "\n";
    return exitStatusFor(Errc::protocol);
  }
  std::vector<std::unique_ptr<KeeperCall>> calls;
  std::vector<KeeperCall*> raw;
  for (const auto& e : entries) {
    calls.push_back(std::make_unique<KeeperCall>(
        e.host, e.port, registry->secretFor(e), Json{{"t", "stop"}, {"keeper_pid", e.pid}, {"keeper_since", e.since}}));
    raw.push_back(calls.back().get());
  }
  KeeperCall::runAll(raw, std::chrono::steady_clock::now() + std::chrono::seconds(5));
  std::set<std::string> stopped;  // nodes: one may have had two keepers
  bool refused = false, unsure = false;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto& e = entries[i];
    const KeeperCall& c = *calls[i];
    if (c.replied() && getString(c.reply(), "t") == "stopping") {
      stopped.insert(e.node);
      const long long jobs = getInt(c.reply(), "jobs");
      if (jobs > 0)
        std::cout << "tlaunch: node " << e.node << ": its warm daemon ends once its " << jobs
                  << (jobs == 1 ? " running job ends\n" : " running jobs end\n");
      registry->remove(e);
      continue;
    }
    // No answer in time, the connection lost midway, or a refusal that does not say the keeper
    // is gone: it may well be alive (a slow node, a network blip). Its entry stays, so that a
    // second stop-daemons still finds it: forgetting it would leave it accepting this user's
    // secret until it expires.
    if (!c.keeperGone()) {
      unsure = true;
      std::cerr << "tlaunch: node " << e.node << ": its warm daemon (" << e.host << ":" << e.port << ", pid " << e.pid
                << ") " << (c.replied() ? "refused to stop (" + getString(c.reply(), "why") + ")"
                                        : "did not answer (" + c.error() + ")")
                << "; it is still written down: run `tlaunch stop-daemons` again, or end it on " << e.node
                << " with kill " << e.pid << "\n";
      continue;
    }
    // A keeper that refuses our secret is not ours, or was started with a secret since replaced:
    // its entry goes out of the way all the same, and the user learns where it ran.
    const bool refused_this = c.wrongSecret();
    refused = refused || refused_this;
    std::cerr << "tlaunch: node " << e.node << ": no warm daemon of yours answered at " << e.host << ":" << e.port
              << " (" << (c.replied() ? getString(c.reply(), "why") : c.error()) << ")";
    if (refused_this)
      std::cerr << "; if it is a keeper started before the secret was replaced, end it on " << e.node << " with kill "
                << e.pid;
    std::cerr << "\n";
    registry->remove(e);
  }
  std::cout << "tlaunch: stopped warm daemons on " << stopped.size() << " node" << (stopped.size() == 1 ? "" : "s") << "\n";
  if (refused) return exitStatusFor(Errc::protocol);
  return unsure ? exitStatusFor(Errc::node_unreachable) : 0;
}

}  // namespace tlaunch
