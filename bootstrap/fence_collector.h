#pragma once
// Fences of a whole job across nodes (pure): every node contributes once per fence; when the
// last contribution arrives, all of them in node order are the fence's result, which goes back
// to every node. The frontend routes PMIx fences through it (launcher/job_session_pmix.cc), and
// so does the PMIx test harness (tests/pmix/harness_frontend.cc), so the harness tests the same
// gathering; a tree's interior daemons would combine their subtree's share the same way.
// Key: the fence's sequence number, or (job, sequence) where one frontend serves several jobs.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tlaunch {

template <class Key>
class FenceCollector {
 public:
  // `node`'s contribution to fence `key` of a job on `nodes` nodes. Returns the concatenation,
  // in node order, when this was the last one missing, and forgets the fence; nullopt before,
  // and for a node out of range or contributing twice (a confused or hostile peer: ignored).
  std::optional<std::string> contribute(const Key& key, std::size_t node, std::size_t nodes, const std::string& data) {
    if (node >= nodes) return std::nullopt;
    Fence& f = fences_[key];
    if (f.parts.empty()) f.parts.resize(nodes);
    if (node >= f.parts.size() || f.parts[node]) return std::nullopt;
    f.parts[node] = data;
    f.bytes += data.size();
    if (++f.arrived < f.parts.size()) return std::nullopt;
    std::string all;
    std::size_t size = 0;
    for (const auto& p : f.parts) size += p->size();
    all.reserve(size);
    for (const auto& p : f.parts) all += *p;
    fences_.erase(key);
    return all;
  }

  // The fences in progress (to fail them when a node or rank is lost), then none.
  std::vector<Key> abandonAll() {
    std::vector<Key> keys;
    for (const auto& [k, f] : fences_) keys.push_back(k);
    fences_.clear();
    return keys;
  }

  std::size_t inProgress() const { return fences_.size(); }
  bool open(const Key& key) const { return fences_.count(key) > 0; }
  // What fence `key` holds so far (0 for one not open): its result will be at least this.
  std::size_t bytesSoFar(const Key& key) const {
    auto it = fences_.find(key);
    return it == fences_.end() ? 0 : it->second.bytes;
  }
  void abandon(const Key& key) { fences_.erase(key); }

 private:
  struct Fence {
    std::vector<std::optional<std::string>> parts;
    std::size_t arrived = 0;
    std::size_t bytes = 0;
  };
  std::map<Key, Fence> fences_;
};

}  // namespace tlaunch
