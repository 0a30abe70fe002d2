#pragma once
// The job's PMIx publish / lookup store, at the frontend: PMIx_Publish, PMIx_Lookup and
// PMIx_Unpublish of every rank (MPI_Publish_name, MPI_Lookup_name, Open MPI's
// MPI_Comm_accept/connect rendezvous) arrive here from the daemons' PMIx servers.
//
// Semantics (one job is one PMIx namespace and one session):
// - range: what the publisher allows. proc-local: only itself; local: ranks on its node;
//   anything else (namespace, session, global, RM, and custom, whose list of procs PMIx 4.2
//   has no attribute for): the whole job.
//   The lookup's own range narrows where it looks the same way (local, proc-local).
// - persistence: first-read entries go with the first lookup that returns them; proc entries
//   with their publisher's exit; all others last as long as the job.
// - a key already visible to the publisher cannot be published again (duplicate).
// - wait: a lookup may wait for all (0) or some (n) of its keys, with a timeout in seconds
//   (0: until the job ends). Without wait it answers at once: not-found if none is there.
// - bounded: the ranks are the user's code, and this store lives on the frontend's one
//   thread, with every fence and all output: past kMaxEntries keys or kMaxBytes of keys and
//   values, a publish is answered "out of resource"; so is a lookup that would wait past
//   kMaxWaiters lookups or kMaxWaitingKeys keys waited for. Entries and waiters are indexed by
//   key, so no operation scans the whole store for each of its keys.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/message.h"

namespace tlaunch {

class PmixDirectory {
 public:
  using Clock = std::chrono::steady_clock;
  using Send = std::function<void(int node, const Json& msg)>;
  explicit PmixDirectory(Send send) : send_(std::move(send)) {}

  // "pub", "lookup", "unpub" from node `node`; answers "pub_done", "lookup_done", "unpub_done".
  void onMessage(int node, const std::string& type, const Json& msg);
  // The rank's process ended: its proc-persistent entries go, and so do its waiting lookups.
  void onRankExit(int rank);
  // Answers waiting lookups whose timeout has passed. Returns a note for the lookups that have
  // now waited kLongWait for keys nobody published (one line per set of keys): a name published
  // by another job is not seen here, and the wait looks like a hang to the user.
  std::vector<std::string> tick(Clock::time_point now);

  size_t entries() const { return entries_.size(); }
  static constexpr size_t kMaxEntries = 100'000;
  static constexpr size_t kMaxBytes = 64u << 20;
  static constexpr size_t kMaxWaiters = 10'000;
  static constexpr size_t kMaxWaitingKeys = 100'000;
  static constexpr std::chrono::seconds kLongWait{30};

 private:
  struct Entry {
    std::string value;  // packed by the publisher's server; opaque here
    int publisher = 0, node = 0, range = 0, persistence = 0;
  };
  using Entries = std::multimap<std::string, Entry>;  // by key; equal keys in publishing order
  struct Waiter {
    int node = 0;
    Json id;
    int rank = 0, range = 0, wait = 0;
    std::vector<std::string> keys;  // each once
    Clock::time_point deadline;     // max(): none
    Clock::time_point since;
    bool noted = false;  // its long wait was told
  };

  bool visible(const Entry& e, int rank, int node, int lookup_range) const;
  void publish(int node, const Json& msg);
  void lookup(int node, const Json& msg);
  void unpublish(int node, const Json& msg);
  // Answers the waiter if enough of its keys are there; false if it must keep waiting.
  bool tryAnswer(const Waiter& w, bool final);
  // Retries the waiters waiting on any of `keys`, oldest first.
  void retryWaiters(const std::set<std::string>& keys);
  void erase(Entries::iterator it);
  void dropWaiter(std::map<uint64_t, Waiter>::iterator it);

  Send send_;
  Entries entries_;
  size_t bytes_ = 0;  // keys and values of entries_
  std::map<uint64_t, Waiter> waiters_;                // by arrival
  std::set<std::pair<std::string, uint64_t>> waiting_on_;  // (key, waiter) for every waiter's keys
  uint64_t next_waiter_ = 0;
};

}  // namespace tlaunch
