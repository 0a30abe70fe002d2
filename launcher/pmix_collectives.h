#pragma once
// Collectives among some ranks of the job, at the frontend: PMIx_Connect / PMIx_Disconnect
// (Open MPI's MPI_Comm_accept/connect and MPI_Comm_disconnect), fences over a subset of the
// ranks, and PMIx_Group_construct / destruct (each completed one numbered: the group's context
// id). Each node that hosts one of the ranks enters once ("coll"); when all of them have,
// each gets "coll_done" with its own request id and every node's blob, concatenated. A result
// for at least half of the job's nodes is broadcast once ("ids": node -> request id; the other
// nodes ignore it), as N copies of it, one per node, would be N times its size in the queues.
// Collectives over the same ranks and kind complete in the order the nodes entered them. A
// round whose earliest timeout (PMIX_TIMEOUT, from any node) passes fails with a timeout on the
// nodes that entered it; a node entering later starts a new round. Once a rank has failed,
// every collective that includes it fails at once (PmixReply::proc_lost), pending or new; the
// whole job's wildcard includes the job's ranks, not PMIx_Spawn's processes.
// Bounded, as the ranks are the user's code: past kMaxOpenRounds rounds open at once a new one
// is refused, and a round whose data would not fit in one frame fails (both "out of resource"),
// also for the nodes that enter it later: they would otherwise wait for nodes already answered.
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/message.h"
#include "bootstrap/pmix_server.h"

namespace tlaunch {

class PmixCollectives {
 public:
  using Send = std::function<void(int node, const Json& msg)>;
  using Broadcast = std::function<void(Json msg)>;  // to every node
  using NodeOf = std::function<int(int rank)>;  // -1: unknown rank
  PmixCollectives(Send send, Broadcast broadcast, NodeOf node_of, std::function<int()> node_count)
      : send_(std::move(send)),
        broadcast_(std::move(broadcast)),
        node_of_(std::move(node_of)),
        node_count_(std::move(node_count)) {}

  void onMessage(int node, const Json& msg);
  void tick(std::chrono::steady_clock::time_point now);
  // A rank failed (job_rank: one of the job's, not a PMIx_Spawn process): answer the rounds it
  // belongs to now, and refuse later ones.
  void onRankFailed(int rank, bool job_rank);
  size_t pending() const { return rounds_.size(); }
  static constexpr size_t kMaxOpenRounds = 4096;

 private:
  struct Round {
    std::map<int, Json> ids;          // node -> its request id
    std::map<int, std::string> blobs;  // node -> its blob
    size_t bytes = 0;                  // of the blobs
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    bool too_big = false;  // failed "no room": answered so to each node as it enters
  };
  bool includesFailed(const std::vector<int>& ranks) const;
  void answer(const Round& round, PmixReply status);
  void closeRound(const std::string& key, const std::deque<Round>::iterator& round);
  void complete(const Round& round, const std::string& result, uint64_t context_id);
  Send send_;
  Broadcast broadcast_;
  NodeOf node_of_;
  std::function<int()> node_count_;
  std::map<std::string, std::deque<Round>> rounds_;  // by kind and ranks
  std::map<std::string, std::vector<int>> ranks_of_;  // the ranks of each key in rounds_ ({-1}: all)
  std::set<int> failed_;
  bool job_rank_failed_ = false;  // one of failed_ is a rank of the job: the wildcard includes it
  size_t open_rounds_ = 0;        // in every queue of rounds_
  uint64_t next_context_id_ = 1;  // PMIX_GROUP_CONTEXT_ID of the next completed collective
};

}  // namespace tlaunch
