#include "launcher/warm_starter.h"

#include <algorithm>

#include "launcher/cli_values.h"  // formatDuration, kMaxKeepDaemonsSeconds
#include "launcher/starter_support.h"
#include "tlaunch/version.h"

namespace tlaunch {

namespace {

constexpr size_t kStderrTailBytes = 8192;

std::string destinationOf(const NodeTarget& node) { return node.host.empty() ? node.name : node.host; }

std::vector<std::string> perNodeArgs(const DaemonCommand& command, const NodeTarget& node) {
  std::vector<std::string> args = command.args;
  args.insert(args.end(), {"--node-index", std::to_string(node.index), "--node-name", node.name});
  return args;
}

}  // namespace

WarmEntry WarmStarter::entryOf(const Kept& k, long long expires, int keep_s) {
  WarmEntry e;
  e.node = k.node;
  e.destination = k.destination;
  e.host = k.keeper.host;
  e.port = k.keeper.port;
  e.pid = k.keeper.pid;
  e.since = k.keeper.since;
  e.expires = expires;
  e.keep_s = keep_s;
  return e;
}

WarmStarter::WarmStarter(WarmOptions options, WarmRegistry registry, std::unique_ptr<DaemonStarter> cold)
    : options_(std::move(options)), registry_(std::move(registry)), cold_(std::move(cold)) {}

// A keeper serving this job lives until its end plus its keep: written down as alive until the
// longest a job may run plus that keep (the job's end writes the real time).
long long WarmStarter::untilAfterThisJob(const WarmEntry& e, long long now) const {
  return now + std::max(options_.keep_s, e.keep_s) + kMaxKeepDaemonsSeconds;
}

Result<void> WarmStarter::start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                                const std::string& secret) {
  const long long now = epochSeconds();
  std::vector<NodeTarget> cold;
  std::vector<WarmNode> tries;
  const auto request = [&](const NodeTarget& n, const WarmEntry& entry, bool fresh) {
    Json req = {{"t", "start"},
                {"args", perNodeArgs(command, n)},
                {"secret", secret},
                {"daemon", command.daemon_path},
                {"version", kVersion},
                {"keeper_pid", entry.pid},
                {"keeper_since", entry.since}};
    if (options_.keep_s >= 0) req["keep_s"] = options_.keep_s;
    WarmNode w;
    w.node = n;
    w.entry = entry;
    w.fresh = fresh;
    w.call = std::make_unique<KeeperCall>(entry.host, entry.port, registry_.secretFor(entry), std::move(req));
    tries.push_back(std::move(w));
  };
  const std::vector<WarmEntry> kept = registry_.secret().empty() ? std::vector<WarmEntry>{} : registry_.all(now);
  for (const auto& n : nodes) {
    // Nor one of a name that now means another host (a changed hostfile, or a home shared
    // between clusters): it stays written down and expires by itself.
    auto entry = WarmRegistry::newest(kept, n.name, [&](const WarmEntry& e) {
      return e.mayServe(options_.slurm_job, options_.slurm_step) && e.destination == destinationOf(n);
    });
    if (entry) request(n, *entry, false);
    else cold.push_back(n);
  }
  if (options_.start_keepers && options_.keep_s > 0 && !cold.empty()) {
    SlurmKeepers made = options_.start_keepers(cold, command.daemon_path, registry_.keeperSecret(options_.slurm_job));
    if (!made.problem.empty()) notes_.push_back({false, "some nodes will not stay warm after the job: " + made.problem});
    for (auto& e : made.entries) {
      // Written down now, so that `tlaunch stop-daemons` finds it even if this tlaunch is killed;
      // until the job's end says when it expires, it may live that long after any job.
      e.expires = now + options_.keep_s + kMaxKeepDaemonsSeconds;
      (void)registry_.save(e);
      auto it = std::find_if(cold.begin(), cold.end(), [&](const NodeTarget& n) { return n.name == e.node; });
      if (it == cold.end()) continue;
      request(*it, e, true);
      cold.erase(it);
    }
    if (!made.entries.empty())
      notes_.push_back({true, "started warm-daemon keepers on " + std::to_string(made.entries.size()) +
                                  " node(s) in Slurm step tlaunch-keepers (job " + options_.slurm_job + ")"});
  }
  std::vector<KeeperCall*> calls;
  for (auto& w : tries) calls.push_back(w.call.get());
  KeeperCall::runAll(calls, std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.keeper_timeout_ms));
  long long oldest = now;
  size_t reused = 0;
  for (auto& w : tries) {
    const bool started = w.call->replied() && getString(w.call->reply(), "t") == "started";
    if (started) {
      if (!w.fresh) {
        oldest = std::min(oldest, getInt(w.call->reply(), "since", now));
        ++reused;
        // Its entry said "gone by the end of the last job + keep": a job longer than the keep
        // would outlive that, and the entry would be taken for an expired one and dropped while
        // the keeper lives (stop-daemons would not find it). Until this job's end, as for a new one.
        WarmEntry busy = w.entry;
        busy.expires = untilAfterThisJob(busy, now);
        (void)registry_.save(busy);
      }
      warm_.push_back(std::move(w));
      continue;
    }
    const std::string why = w.call->replied() ? getString(w.call->reply(), "why", "it refused") : w.call->error();
    // A keeper that refuses the secret may be the user's own from before the secret was replaced:
    // forgotten below, so this is the last time its pid is named.
    const std::string end_it = w.call->wrongSecret() ? "; if it is yours from before the secret was replaced, end it on " +
                                                           w.node.name + " with kill " + std::to_string(w.entry.pid)
                                                     : "";
    notes_.push_back({true, "node " + w.node.name + ": its warm daemon (" + w.entry.host + ":" +
                                std::to_string(w.entry.port) + ", pid " + std::to_string(w.entry.pid) +
                                ") cannot be used: " + why + "; starting it " +
                                (options_.slurm_job.empty() ? "over ssh" : "with srun") + end_it});
    // Forgotten only when it is known to be gone or not ours; one that did not answer in time
    // may be alive (a busy node) and stays written down, so that stop-daemons can still end it.
    if (w.call->keeperGone()) {
      registry_.remove(w.entry);
    } else {
      WarmEntry unanswered = w.entry;
      unanswered.unanswered = now;
      // Its request may have arrived all the same: the keeper then keeps for this job's keep
      // from this job's end, and its entry must not expire before it (as for a busy one).
      unanswered.expires = std::max(unanswered.expires, untilAfterThisJob(unanswered, now));
      (void)registry_.save(unanswered);
    }
    cold.push_back(w.node);
  }
  if (reused > 0)
    notes_.push_back({false, "reused daemons on " + std::to_string(reused) + " node" + (reused == 1 ? "" : "s") +
                                 " (started " + formatDuration(static_cast<int>(std::max(1LL, now - oldest))) + " ago)",
                      true});
  if (cold.empty()) return {};
  std::sort(cold.begin(), cold.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  for (const auto& n : cold) cold_nodes_[n.index] = n;
  // Under Slurm a daemon's own keeper would die with its step: those nodes are not kept.
  if (options_.keep_s <= 0 || options_.start_keepers) return cold_->start(cold, command, secret);
  // The daemon reads the user's secret for its keeper from the line after the job secret.
  DaemonCommand keeping = command;
  keeping.args.insert(keeping.args.end(), {"--keep-for", std::to_string(options_.keep_s)});
  return cold_->start(cold, keeping, secretLine(secret) + registry_.secret());
}

std::vector<StartFailure> WarmStarter::poll() {
  std::vector<StartFailure> failures = cold_->poll();
  // Read on after the daemon connected too: what it says on stderr must not pile up in its keeper.
  for (auto& w : warm_) {
    if (w.reported) continue;
    for (const Json& m : w.call->receive()) {
      const std::string t = getString(m, "t");
      if (t == "stderr") {
        w.stderr_tail += bytesOf(m["data"]);
        if (w.stderr_tail.size() > kStderrTailBytes) w.stderr_tail.erase(0, w.stderr_tail.size() - kStderrTailBytes);
      } else if (t == "exited" && !w.reported) {
        w.reported = true;
        if (!w.connected)
          failures.push_back({w.node.index, "tlaunchd, started by the warm daemon on " + w.node.name +
                                                ", exited with status " + std::to_string(getInt(m, "status")) +
                                                " before it connected" + quoteToolOutput("tlaunchd", w.stderr_tail)});
      }
    }
    if (!w.reported && w.call->closed()) {
      w.reported = true;
      if (!w.connected)
        failures.push_back({w.node.index, "the warm daemon on " + w.node.name + " went away before its tlaunchd connected" +
                                              (w.call->error().empty() ? "" : ": " + w.call->error())});
    }
  }
  return failures;
}

void WarmStarter::daemonConnected(int node_index) {
  for (auto& w : warm_)
    if (w.node.index == node_index) w.connected = true;
  cold_->daemonConnected(node_index);
}

void WarmStarter::daemonKeeps(int node_index, const KeeperAddress& keeper) {
  auto it = cold_nodes_.find(node_index);
  if (it == cold_nodes_.end() || options_.keep_s <= 0) return;
  Kept k{it->second.name, destinationOf(it->second), keeper};
  // Written down now, so that `tlaunch stop-daemons` finds it even if this tlaunch is killed;
  // until the job's end says when it expires, it may live that long after any job.
  (void)registry_.save(entryOf(k, epochSeconds() + options_.keep_s + kMaxKeepDaemonsSeconds, options_.keep_s));
  kept_[node_index] = std::move(k);
}

std::vector<StarterNote> WarmStarter::takeNotes() {
  std::vector<StarterNote> out;
  out.swap(notes_);
  for (auto& n : cold_->takeNotes()) out.push_back(std::move(n));
  return out;
}

void WarmStarter::stop(int grace_ms) {
  cold_->stop(grace_ms);
  if (stopped_) return;
  stopped_ = true;
  saveRegistry();
  warm_.clear();  // closes the keepers' connections
}

// Best effort: an entry not written only costs the next launch an ssh session. Each keeper was
// written down when the job began: one no longer there was stopped meanwhile (`tlaunch
// stop-daemons`, which ends it after this job) and stays forgotten.
void WarmStarter::saveRegistry() {
  const long long now = epochSeconds();
  for (const auto& [index, k] : kept_) {
    const WarmEntry e = entryOf(k, now + options_.keep_s, options_.keep_s);
    if (registry_.listed(e)) (void)registry_.save(e);
  }
  for (const auto& w : warm_) {
    if (!registry_.listed(w.entry)) continue;
    if (options_.keep_s == 0) {
      registry_.remove(w.entry);
      continue;
    }
    WarmEntry e = w.entry;
    if (options_.keep_s > 0) e.keep_s = options_.keep_s;
    e.expires = now + e.keep_s;
    (void)registry_.save(e);
  }
}

}  // namespace tlaunch
