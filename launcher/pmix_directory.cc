#include "launcher/pmix_directory.h"

#include <algorithm>

#include "bootstrap/pmix_server.h"

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

void PmixDirectory::publish(int node, const Json& msg) {
  const int rank = static_cast<int>(getInt(msg, "r"));
  std::vector<Entry> fresh;
  if (msg.contains("kv") && msg["kv"].is_array())
    for (const auto& kv : msg["kv"]) {
      if (!kv.is_array() || kv.size() != 2 || !kv[0].is_string()) continue;
      Entry e;
      e.key = kv[0].get<std::string>();
      e.value = bytesOf(kv[1]);
      e.publisher = rank;
      e.node = node;
      e.range = static_cast<int>(getInt(msg, "range", 4));
      e.persistence = static_cast<int>(getInt(msg, "persist", 4));
      fresh.push_back(std::move(e));
    }
  if (fresh.empty()) return send_(node, reply("pub_done", idOf(msg), PmixReply::bad_param));
  if (entries_.size() + fresh.size() > kMaxEntries) return send_(node, reply("pub_done", idOf(msg), PmixReply::no_room));
  // All or nothing, as one PMIx_Publish.
  for (const auto& e : fresh)
    for (const auto& old : entries_)
      if (old.key == e.key && visible(old, rank, node, 0))
        return send_(node, reply("pub_done", idOf(msg), PmixReply::duplicate));
  for (auto& e : fresh) entries_.push_back(std::move(e));
  send_(node, reply("pub_done", idOf(msg), PmixReply::ok));
  retryWaiters();
}

bool PmixDirectory::tryAnswer(const Waiter& w, bool final) {
  std::vector<std::list<Entry>::iterator> hits;
  for (const auto& key : w.keys)
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->key == key && visible(*it, w.rank, w.node, w.range)) {
        if (std::find(hits.begin(), hits.end(), it) == hits.end()) hits.push_back(it);
        break;
      }
  const size_t want = w.wait < 0 ? 1 : w.wait == 0 ? w.keys.size() : std::min<size_t>(w.wait, w.keys.size());
  if (hits.size() < want) {
    if (!final) return false;
    send_(w.node, reply("lookup_done", w.id, w.wait < 0 ? PmixReply::not_found : PmixReply::timeout));
    return true;
  }
  Json found = Json::array();
  for (auto it : hits) found.push_back(Json::array({it->key, it->publisher, binary(it->value)}));
  Json msg = reply("lookup_done", w.id, PmixReply::ok);
  msg["found"] = std::move(found);
  send_(w.node, msg);
  for (auto it : hits)
    if (it->persistence == kPersistFirstRead) entries_.erase(it);
  return true;
}

void PmixDirectory::lookup(int node, const Json& msg) {
  Waiter w;
  w.node = node;
  w.id = idOf(msg);
  w.rank = static_cast<int>(getInt(msg, "r"));
  w.range = static_cast<int>(getInt(msg, "range", 4));
  w.wait = static_cast<int>(getInt(msg, "wait", -1));
  for (auto& key : strings(msg, "keys"))  // a key asked for twice is one key (else `wait` all could never be met)
    if (std::find(w.keys.begin(), w.keys.end(), key) == w.keys.end()) w.keys.push_back(std::move(key));
  const auto timeout_s = getInt(msg, "timeout", 0);
  w.deadline = timeout_s > 0 ? Clock::now() + std::chrono::seconds(timeout_s) : Clock::time_point::max();
  if (w.keys.empty()) return send_(node, reply("lookup_done", w.id, PmixReply::bad_param));
  if (tryAnswer(w, w.wait < 0)) return;
  if (waiters_.size() >= kMaxWaiters) return send_(node, reply("lookup_done", w.id, PmixReply::no_room));
  waiters_.push_back(std::move(w));
}

void PmixDirectory::unpublish(int node, const Json& msg) {
  const int rank = static_cast<int>(getInt(msg, "r"));
  const int range = static_cast<int>(getInt(msg, "range", 0));
  const auto keys = strings(msg, "keys");
  size_t removed = std::erase_if(entries_, [&](const Entry& e) {
    if (e.publisher != rank || (range != 0 && e.range != range)) return false;
    return keys.empty() || std::find(keys.begin(), keys.end(), e.key) != keys.end();
  });
  send_(node, reply("unpub_done", idOf(msg), removed || keys.empty() ? PmixReply::ok : PmixReply::not_found));
}

void PmixDirectory::retryWaiters() {
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (tryAnswer(*it, false)) it = waiters_.erase(it);
    else ++it;
  }
}

void PmixDirectory::onRankExit(int rank) {
  std::erase_if(entries_, [rank](const Entry& e) { return e.persistence == kPersistProc && e.publisher == rank; });
  std::erase_if(waiters_, [rank](const Waiter& w) { return w.rank == rank; });
}

void PmixDirectory::tick(Clock::time_point now) {
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (now >= it->deadline) {
      tryAnswer(*it, true);
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace tlaunch
