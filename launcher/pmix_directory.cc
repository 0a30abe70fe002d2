#include "launcher/pmix_directory.h"

#include <algorithm>
#include <set>

#include "bootstrap/pmix_server.h"
#include "tlaunch/strings.h"

namespace tlaunch {
namespace {

// PMIx's numbers (pmix_common.h), which the daemons pass through unchanged.
constexpr int kRangeLocal = 2, kRangeProcLocal = 7;
constexpr int kPersistFirstRead = 1, kPersistProc = 2;

std::vector<std::string> strings(const Json& msg, const char* key) {
  std::vector<std::string> out;
  if (!msg.contains(key) || !msg[key].is_array()) return out;
  for (const auto& v : msg[key])
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

Json idOf(const Json& msg) { return msg.contains("id") ? msg["id"] : Json(); }

Json reply(const char* type, const Json& id, PmixReply status) {
  return {{"t", type}, {"id", id}, {"status", static_cast<int>(status)}};
}

}  // namespace

void PmixDirectory::onMessage(int node, const std::string& type, const Json& msg) {
  if (type == "pub") publish(node, msg);
  else if (type == "lookup") lookup(node, msg);
  else if (type == "unpub") unpublish(node, msg);
}

bool PmixDirectory::visible(const Entry& e, int rank, int node, int lookup_range) const {
  if (lookup_range == kRangeProcLocal && e.publisher != rank) return false;
  if (lookup_range == kRangeLocal && e.node != node) return false;
  switch (e.range) {
    case kRangeProcLocal: return e.publisher == rank;
    case kRangeLocal: return e.node == node;
    default: return true;
  }
}

void PmixDirectory::erase(Entries::iterator it) {
  bytes_ -= it->first.size() + it->second.value.size();
  entries_.erase(it);
}

void PmixDirectory::publish(int node, const Json& msg) {
  const int rank = static_cast<int>(getInt(msg, "r"));
  std::vector<std::pair<std::string, Entry>> fresh;
  size_t fresh_bytes = 0;
  if (msg.contains("kv") && msg["kv"].is_array())
    for (const auto& kv : msg["kv"]) {
      if (!kv.is_array() || kv.size() != 2 || !kv[0].is_string()) continue;
      Entry e;
      e.value = bytesOf(kv[1]);
      e.publisher = rank;
      e.node = node;
      e.range = static_cast<int>(getInt(msg, "range", 4));
      e.persistence = static_cast<int>(getInt(msg, "persist", 4));
      fresh.emplace_back(kv[0].get<std::string>(), std::move(e));
      fresh_bytes += fresh.back().first.size() + fresh.back().second.value.size();
    }
  if (fresh.empty()) return send_(node, reply("pub_done", idOf(msg), PmixReply::bad_param));
  if (entries_.size() + fresh.size() > kMaxEntries || bytes_ + fresh_bytes > kMaxBytes)
    return send_(node, reply("pub_done", idOf(msg), PmixReply::no_room));
  // All or nothing, as one PMIx_Publish.
  for (const auto& [key, e] : fresh) {
    const auto [from, to] = entries_.equal_range(key);
    for (auto old = from; old != to; ++old)
      if (visible(old->second, rank, node, 0)) return send_(node, reply("pub_done", idOf(msg), PmixReply::duplicate));
  }
  std::set<std::string> keys;
  for (auto& [key, e] : fresh) {
    keys.insert(key);
    entries_.emplace(std::move(key), std::move(e));
  }
  bytes_ += fresh_bytes;
  send_(node, reply("pub_done", idOf(msg), PmixReply::ok));
  retryWaiters(keys);
}

bool PmixDirectory::tryAnswer(const Waiter& w, bool final) {
  std::vector<Entries::iterator> hits;  // one per key at most, and keys are distinct
  for (const auto& key : w.keys) {
    const auto [from, to] = entries_.equal_range(key);
    for (auto it = from; it != to; ++it)
      if (visible(it->second, w.rank, w.node, w.range)) {
        hits.push_back(it);
        break;
      }
  }
  const size_t want = w.wait < 0 ? 1 : w.wait == 0 ? w.keys.size() : std::min<size_t>(w.wait, w.keys.size());
  if (hits.size() < want) {
    if (!final) return false;
    send_(w.node, reply("lookup_done", w.id, w.wait < 0 ? PmixReply::not_found : PmixReply::timeout));
    return true;
  }
  Json found = Json::array();
  for (auto it : hits) found.push_back(Json::array({it->first, it->second.publisher, binary(it->second.value)}));
  Json msg = reply("lookup_done", w.id, PmixReply::ok);
  msg["found"] = std::move(found);
  send_(w.node, msg);
  for (auto it : hits)
    if (it->second.persistence == kPersistFirstRead) erase(it);
  return true;
}

void PmixDirectory::lookup(int node, const Json& msg) {
  Waiter w;
  w.node = node;
  w.id = idOf(msg);
  w.rank = static_cast<int>(getInt(msg, "r"));
  w.range = static_cast<int>(getInt(msg, "range", 4));
  w.wait = static_cast<int>(getInt(msg, "wait", -1));
  std::set<std::string> seen;  // a key asked for twice is one key (else `wait` all could never be met)
  for (auto& key : strings(msg, "keys"))
    if (seen.insert(key).second) w.keys.push_back(std::move(key));
  const auto timeout_s = getInt(msg, "timeout", 0);
  w.since = Clock::now();
  w.deadline = timeout_s > 0 ? w.since + std::chrono::seconds(timeout_s) : Clock::time_point::max();
  if (w.keys.empty()) return send_(node, reply("lookup_done", w.id, PmixReply::bad_param));
  if (tryAnswer(w, w.wait < 0)) return;
  if (waiters_.size() >= kMaxWaiters || waiting_on_.size() + w.keys.size() > kMaxWaitingKeys)
    return send_(node, reply("lookup_done", w.id, PmixReply::no_room));
  const uint64_t number = next_waiter_++;
  for (const auto& key : w.keys) waiting_on_.emplace(key, number);
  waiters_.emplace(number, std::move(w));
}

void PmixDirectory::unpublish(int node, const Json& msg) {
  const int rank = static_cast<int>(getInt(msg, "r"));
  const int range = static_cast<int>(getInt(msg, "range", 0));
  const auto keys = strings(msg, "keys");
  const auto mine = [&](const Entry& e) { return e.publisher == rank && (range == 0 || e.range == range); };
  size_t removed = 0;
  const auto eraseMine = [&](Entries::iterator from, Entries::iterator to) {
    while (from != to) {
      if (mine(from->second)) {
        erase(from++);
        ++removed;
      } else {
        ++from;
      }
    }
  };
  if (keys.empty()) eraseMine(entries_.begin(), entries_.end());
  for (const auto& key : keys) {
    const auto [from, to] = entries_.equal_range(key);
    eraseMine(from, to);
  }
  send_(node, reply("unpub_done", idOf(msg), removed || keys.empty() ? PmixReply::ok : PmixReply::not_found));
}

void PmixDirectory::dropWaiter(std::map<uint64_t, Waiter>::iterator it) {
  for (const auto& key : it->second.keys) waiting_on_.erase({key, it->first});
  waiters_.erase(it);
}

void PmixDirectory::retryWaiters(const std::set<std::string>& keys) {
  std::set<uint64_t> candidates;  // ordered: the oldest waiter is answered first
  for (const auto& key : keys)
    for (auto it = waiting_on_.lower_bound({key, 0}); it != waiting_on_.end() && it->first == key; ++it)
      candidates.insert(it->second);
  for (uint64_t number : candidates) {
    auto it = waiters_.find(number);
    if (it != waiters_.end() && tryAnswer(it->second, false)) dropWaiter(it);
  }
}

void PmixDirectory::onRankExit(int rank) {
  std::erase_if(entries_, [&](const auto& kv) {
    const bool gone = kv.second.persistence == kPersistProc && kv.second.publisher == rank;
    if (gone) bytes_ -= kv.first.size() + kv.second.value.size();
    return gone;
  });
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->second.rank == rank) dropWaiter(it++);
    else ++it;
  }
}

std::vector<std::string> PmixDirectory::tick(Clock::time_point now) {
  std::map<std::vector<std::string>, std::vector<int>> long_waits;  // keys -> the ranks waiting for them
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (now >= it->second.deadline) {
      tryAnswer(it->second, true);
      dropWaiter(it++);
      continue;
    }
    Waiter& w = it->second;
    if (!w.noted && now - w.since >= kLongWait) {
      w.noted = true;
      long_waits[w.keys].push_back(w.rank);
    }
    ++it;
  }
  std::vector<std::string> notes;
  for (auto& [keys, ranks] : long_waits) {
    std::string names;
    for (const auto& key : keys) names += (names.empty() ? "'" : ", '") + visibleText(key, 100) + "'";
    notes.push_back((ranks.size() == 1 ? "rank " : "ranks ") + formatRankRanges(ranks) + " waited " +
                    std::to_string(kLongWait.count()) + " s for PMIx name" + (keys.size() == 1 ? " " : "s ") +
                    names + " (MPI_Lookup_name, MPI_Comm_connect) that no rank of this job published: names are "
                    "per job, one published by another job or an ompi-server is not seen here");
  }
  return notes;
}

}  // namespace tlaunch
