#include "launcher/pmix_collectives.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "bootstrap/frame_codec.h"

namespace tlaunch {

void PmixCollectives::onMessage(int node, const Json& msg) {
  const Json id = msg.contains("id") ? msg["id"] : Json();
  const auto refuse = [&](PmixReply status) {
    send_(node, {{"t", "coll_done"}, {"id", id}, {"status", static_cast<int>(status)}, {"d", binary("")}});
  };
  std::set<int> nodes;
  std::vector<int> ranks;
  std::string key = getString(msg, "kind") + ":";
  bool every_node = false;  // a wildcard rank (the whole job): filled in once, however often it is named
  if (msg.contains("ranks") && msg["ranks"].is_array())
    for (const auto& r : msg["ranks"]) {
      if (!r.is_number_integer()) continue;
      const int rank = r.get<int>();
      ranks.push_back(rank);
      key += std::to_string(rank) + ",";
      if (rank < 0) {
        every_node = true;
      } else if (int owner = node_of_(rank); owner >= 0) {
        nodes.insert(owner);
      } else {
        every_node = false;
        nodes.clear();
        break;
      }
    }
  if (every_node)
    for (int n = 0; n < node_count_(); ++n) nodes.insert(n);
  if (!nodes.count(node)) return refuse(PmixReply::bad_param);  // an unknown rank, or a node that hosts none of them
  if (includesFailed(ranks)) return refuse(PmixReply::proc_lost);  // it could never complete
  // The first round of this collective that the node has not entered yet.
  auto& queue = rounds_[key];
  auto round = std::find_if(queue.begin(), queue.end(), [node](const Round& r) { return !r.ids.count(node); });
  if (round == queue.end()) {
    // A job has a few collectives open at a time; thousands are ranks (or a daemon) gone wrong,
    // each held here until the job ends.
    if (open_rounds_ >= kMaxOpenRounds) {
      if (queue.empty()) rounds_.erase(key);
      return refuse(PmixReply::no_room);
    }
    round = queue.insert(queue.end(), Round{});
    ++open_rounds_;
  }
  ranks_of_[key] = ranks;
  const std::string blob = bytesAt(msg, "d");
  // A broadcast answer also carries each node's request id (up to ~16 bytes a node).
  const size_t cap = kMaxCollectedBytes - std::min(kMaxCollectedBytes / 2, nodes.size() * 16);
  if (round->too_big || round->bytes + blob.size() > cap) {
    // The result would not fit in one control-plane frame: the round fails on every node in it,
    // and on each that enters it later; it closes once all have.
    round->ids[node] = id;
    if (round->too_big) refuse(PmixReply::no_room);
    else answer(*round, PmixReply::no_room);
    round->too_big = true;
    round->blobs.clear();
    round->bytes = 0;
    if (round->ids.size() >= nodes.size()) closeRound(key, round);
    return;
  }
  round->ids[node] = id;
  round->bytes += blob.size();
  round->blobs[node] = blob;
  if (const auto timeout_s = getInt(msg, "timeout", 0); timeout_s > 0)
    round->deadline = std::min(round->deadline, std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s));
  if (round->ids.size() < nodes.size()) return;
  std::string all;
  all.reserve(round->bytes);
  for (const auto& [n, part] : round->blobs) all += part;
  // Every completed collective gets the next number: a group's context id, the same on each node.
  complete(*round, all, next_context_id_++);
  closeRound(key, round);
}

void PmixCollectives::complete(const Round& round, const std::string& result, uint64_t context_id) {
  const auto n = round.ids.size();
  if (n < 2 || n * 2 < static_cast<size_t>(std::max(1, node_count_()))) {
    for (const auto& [node, rid] : round.ids)
      send_(node, {{"t", "coll_done"}, {"id", rid}, {"status", static_cast<int>(PmixReply::ok)}, {"d", binary(result)},
                   {"cid", context_id}});
    return;
  }
  Json ids = Json::object();
  for (const auto& [node, rid] : round.ids) ids[std::to_string(node)] = rid;
  broadcast_({{"t", "coll_done"}, {"ids", std::move(ids)}, {"status", static_cast<int>(PmixReply::ok)},
              {"d", binary(result)}, {"cid", context_id}});
}

void PmixCollectives::closeRound(const std::string& key, const std::deque<Round>::iterator& round) {
  auto& queue = rounds_[key];
  queue.erase(round);
  --open_rounds_;
  if (queue.empty()) {
    rounds_.erase(key);
    ranks_of_.erase(key);
  }
}

bool PmixCollectives::includesFailed(const std::vector<int>& ranks) const {
  if (failed_.empty()) return false;
  return std::any_of(ranks.begin(), ranks.end(), [this](int r) { return r < 0 ? job_rank_failed_ : failed_.count(r) > 0; });
}

void PmixCollectives::answer(const Round& round, PmixReply status) {
  for (const auto& [n, rid] : round.ids)
    send_(n, {{"t", "coll_done"}, {"id", rid}, {"status", static_cast<int>(status)}, {"d", binary("")}});
}

void PmixCollectives::onRankFailed(int rank, bool job_rank) {
  if (rank < 0 || !failed_.insert(rank).second) return;
  job_rank_failed_ = job_rank_failed_ || job_rank;
  for (auto it = rounds_.begin(); it != rounds_.end();) {
    if (!includesFailed(ranks_of_[it->first])) {
      ++it;
      continue;
    }
    for (const auto& round : it->second) answer(round, PmixReply::proc_lost);
    open_rounds_ -= it->second.size();
    ranks_of_.erase(it->first);
    it = rounds_.erase(it);
  }
}

}  // namespace tlaunch

namespace tlaunch {

void PmixCollectives::tick(std::chrono::steady_clock::time_point now) {
  for (auto it = rounds_.begin(); it != rounds_.end();) {
    auto& queue = it->second;
    for (auto round = queue.begin(); round != queue.end();) {
      if (now < round->deadline) {
        ++round;
        continue;
      }
      answer(*round, PmixReply::timeout);
      round = queue.erase(round);
      --open_rounds_;
    }
    if (queue.empty()) ranks_of_.erase(it->first);
    it = queue.empty() ? rounds_.erase(it) : std::next(it);
  }
}

}  // namespace tlaunch
