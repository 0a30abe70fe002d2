// PMIx traffic at the frontend: fences of the whole job, direct modex, MPI_Abort, and the
// messages sent to one node or to all.
#include "launcher/job_session.h"
#include "launcher/job_session_link.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/close_fds.h"
#include "binding/preflight/preflight_report.h"
#include "bootstrap/node_launch_json.h"
#include "launcher/cli_values.h"
#include "launcher/cross_node_preflight.h"
#include "launcher/job_inspector.h"
#include "launcher/nccl/nccl_job_check.h"
#include "launcher/phase_timing.h"
#include "launcher/pmix_collectives.h"
#include "launcher/pmix_directory.h"
#include "launcher/pmix_job_control.h"
#include "launcher/pmix_spawns.h"
#include "launcher/plan/plan_preflight.h"
#include "launcher/rank_failure_policy.h"
#include "launcher/stdin_credit.h"
#include "tlaunch/version.h"
#include "bootstrap/error_text.h"

namespace tlaunch {

void JobSession::onPmixMessage(Link& link, const std::string& type, Json&& msg) {
  if (type == "abort") {
    const int rank = static_cast<int>(getInt(msg, "r"));
    const int status = static_cast<int>(getInt(msg, "status", 1));
    std::string text = getString(msg, "message");
    if (text == "N/A") text.clear();  // Open MPI's placeholder
    RankFailure f;
    f.rank = rank;
    f.node = link.name;
    // The status a process exits with is its low 8 bits (MPI_Abort(256) would read as success,
    // MPI_Abort(-1) as 255); one that reads 0 is a failure all the same.
    const int as_exit = status & 0xff;
    f.exit_status = as_exit == 0 ? 1 : as_exit;
    f.called_abort = true;
    aborted_.insert(rank);
    f.ended_us = getInt(msg, "at_us", 0);  // when its node got the call; absent (older daemons): on arrival
    f.summary = rankName(rank) + " on node " + link.name + " called MPI_Abort with status " +
                std::to_string(status) + (text.empty() ? "" : ": " + text);
    onRankFailed(std::move(f));
    return;
  }
  if (type == "fence") {
    // Every node contributes once per fence; the concatenation goes back to all of them. An
    // interior daemon of the tree sends its subtree's parts in one message (daemon/subtree_fence.h).
    const auto seq = static_cast<uint64_t>(getInt(msg, "seq"));
    // The result would not fit in a control-plane frame (every daemon would refuse it and
    // look lost): the fence fails, and the job ends saying why.
    const auto too_big = [&](size_t result) {
      fences_.abandon(seq);
      broadcast({{"t", "fence_done"}, {"seq", seq}, {"ok", false}});
      fail(exitStatusFor(Errc::resources),
           "the ranks' PMIx fence collects more data than tlaunch's control plane carries (over " +
               std::to_string(result >> 20) + " MiB; at most " + std::to_string(kMaxCollectedBytes >> 20) +
               " MiB): for Open MPI, export OMPI_MCA_pmix_base_collect_data=0 so that ranks fetch their peers' "
               "data when they need it instead of every rank's at MPI_Init");
    };
    // A daemon's share that alone would not fit in a frame comes as its size (daemon/subtree_fence.h).
    if (auto it = msg.find("too_big"); it != msg.end())
      return too_big(it->is_number_unsigned() ? it->get<size_t>() : kMaxCollectedBytes + 1);
    std::vector<std::pair<int, std::string>> parts;
    if (auto it = msg.find("parts"); it != msg.end() && it->is_array()) {
      for (const auto& p : *it) {
        if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer()) continue;
        const int node = p[0].get<int>();
        if (carriedBy(node, link.index)) parts.emplace_back(node, bytesOf(p[1]));
      }
    } else {
      parts.emplace_back(link.index, bytesOf(msg["d"]));
    }
    for (auto& [node, data] : parts) {
      if (rank_failures_ && rank_failures_->anyJobRankFailed()) {  // a fence of the whole job: it has a failed rank
        sendToNode(node, {{"t", "fence_done"}, {"seq", seq}, {"ok", false}, {"lost", true}});
        continue;
      }
      if (!fences_.open(seq) && fences_.inProgress() >= kMaxFencesInProgress) {
        // Fences of one job complete in order; thousands open at once is a daemon gone wrong,
        // and each would hold memory here until the job ends.
        fail(exitStatusFor(Errc::protocol),
             "tlaunchd on node " + nodeLabel(node) + " opened more than " + std::to_string(kMaxFencesInProgress) +
                 " PMIx fences at once, which no job does: the daemon is not following the protocol",
             -1, {}, nodeLabel(node));
        return;
      }
      if (const size_t result = fences_.bytesSoFar(seq) + data.size(); result > kMaxCollectedBytes)
        return too_big(result);
      auto all = fences_.contribute(seq, static_cast<size_t>(node), links_.size(), data);
      if (all) broadcast({{"t", "fence_done"}, {"seq", seq}, {"ok", true}, {"d", binary(*all)}});
    }
    return;
  }
  if (type == "dmodex_req") {
    const int rank = static_cast<int>(getInt(msg, "rank"));
    const int owner = nodeOfRank(rank);
    const bool failed = rank_failures_ && rank_failures_->hasFailed(rank);  // it may never commit its data
    if (owner < 0 || failed || owner >= static_cast<int>(links_.size()) || !reachable(owner)) {
      sendToNode(link.index, {{"t", "dmodex_done"}, {"id", msg["id"]}, {"ok", false}, {"d", binary("")}});
      return;
    }
    if (dmodex_waiting_.size() >= cfg_.dmodex_max_waiting) {  // "out of resource", not "not found", and said
      if (!dmodex_full_said_)
        out_.note("more than " + std::to_string(cfg_.dmodex_max_waiting) +
                  " PMIx direct-modex requests wait at once: the ranks asking past that are told \"out of resource\"");
      dmodex_full_said_ = true;
      sendToNode(link.index, {{"t", "dmodex_done"}, {"id", msg["id"]}, {"ok", false}, {"no_room", true}, {"d", binary("")}});
      return;
    }
    const DirectModexKey key{link.index, getInt(msg, "id")};
    const auto deadline = Clock::now() + cfg_.dmodex_timeout;
    if (!dmodex_waiting_.emplace(key, DirectModexWait{rank, deadline}).second) return;  // asked already: one answer
    dmodex_deadlines_.emplace_back(key, deadline);
    // Answered requests leave their deadline behind: keep the queue near the number waiting (a
    // big job's start asks for thousands a second).
    if (dmodex_deadlines_.size() > 2 * dmodex_waiting_.size() + 1024) {
      dmodex_deadlines_.clear();
      for (const auto& [k, w] : dmodex_waiting_) dmodex_deadlines_.emplace_back(k, w.deadline);
      std::sort(dmodex_deadlines_.begin(), dmodex_deadlines_.end(),
                [](const auto& a, const auto& b) { return a.second < b.second; });
    }
    sendToNode(owner, {{"t", "dmodex_serve"}, {"from", link.index}, {"id", msg["id"]}, {"rank", rank}});
    return;
  }
  if (type == "dmodex_resp") {
    const auto to = getInt(msg, "to", -1);
    if (to < 0 || to >= static_cast<long long>(links_.size())) return;
    // Answered already (failed with its rank): the node's request is gone. Only the node that
    // runs the rank asked for answers for it.
    const auto waiting = dmodex_waiting_.find({static_cast<int>(to), getInt(msg, "id")});
    if (waiting == dmodex_waiting_.end() || nodeOfRank(waiting->second.rank) != link.index) return;
    if (auto big = msg.find("too_big"); big != msg.end() && big->is_number_unsigned() &&
        dmodex_big_said_.insert(waiting->second.rank).second)
      out_.note("rank " + std::to_string(waiting->second.rank) + "'s PMIx data (" +
                std::to_string(big->get<size_t>() >> 20) + " MiB) is more than tlaunch's control plane carries (" +
                std::to_string(kMaxCollectedBytes >> 20) + " MiB): the rank that asked for it was told it is not found");
    dmodex_waiting_.erase(waiting);
    sendToNode(static_cast<int>(to), {{"t", "dmodex_done"}, {"id", msg["id"]}, {"ok", getBool(msg, "ok")}, {"d", msg["d"]}});
  }
}

void JobSession::expireDirectModex(Clock::time_point now) {
  while (!dmodex_deadlines_.empty() && dmodex_deadlines_.front().second <= now) {
    const auto [key, deadline] = dmodex_deadlines_.front();
    dmodex_deadlines_.pop_front();
    const auto waiting = dmodex_waiting_.find(key);
    // Answered meanwhile, or answered and the same request id asked again (a deadline of its own).
    if (waiting == dmodex_waiting_.end() || waiting->second.deadline != deadline) continue;
    const int rank = waiting->second.rank;
    dmodex_waiting_.erase(waiting);
    out_.note("rank " + std::to_string(rank) + " had not committed its PMIx data " +
              std::to_string(std::chrono::duration_cast<std::chrono::seconds>(cfg_.dmodex_timeout).count()) +
              " s after a rank on " + nodeLabel(key.first) + " asked for it: that request fails with a timeout");
    sendToNode(key.first, {{"t", "dmodex_done"}, {"id", key.second}, {"ok", false}, {"timeout", true}, {"d", binary("")}});
  }
}

// Ranks are node-major (nodes may run different numbers): the owner of rank r is the last node
// whose first rank is at most r. Spawned processes are numbered after the job's ranks.
int JobSession::nodeOfRank(int rank) const {
  if (!plan_ || rank < 0) return -1;
  if (rank >= plan_->world_size) return pmix_spawns_ ? pmix_spawns_->nodeOf(rank) : -1;
  const auto& nodes = plan_->nodes;
  const auto after = std::upper_bound(nodes.begin(), nodes.end(), rank, [](int r, const NodeLaunch& n) {
    return !n.ranks.empty() && r < n.ranks.front().rank;
  });
  if (after == nodes.begin()) return -1;
  const auto node = static_cast<int>(after - nodes.begin()) - 1;
  return node < static_cast<int>(links_.size()) ? node : -1;
}

}  // namespace tlaunch
