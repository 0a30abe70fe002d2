#pragma once
// What a failed rank does to the job, decided at the frontend. A rank fails when it exits
// non-zero, is killed (not by tlaunch's own teardown) or calls PMIx_Abort / MPI_Abort. Every
// failed rank is announced once to every node, whose PMIx server turns it into an event for
// the ranks' handlers (PMIX_ERR_PROC_ABORTED / PMIX_PROC_TERMINATED). Then:
//   - by default the job ends, --event-grace after the announcement, so that handlers run
//     before teardown's SIGTERM;
//   - with --keep-going the other ranks run to their end, and the job's exit status is the
//     first failed rank's (by the nodes' stamps, not by the order of the reports). PMIx_Abort
//     still ends the job: the program asked for it.
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "bootstrap/message.h"
#include "tlaunch/result.h"

namespace tlaunch {

struct RankFailure {
  int rank = -1;
  std::string node;
  int exit_status = 1;         // what tlaunch exits with for it: the code, or 128+N for signal N
  int signal = 0;              // killed by this signal
  bool called_abort = false;   // PMIx_Abort / MPI_Abort: ends the job even with --keep-going
  bool unfinalized = false;    // it had called PMIx_Init (MPI_Init) and not PMIx_Finalize
  std::string summary;         // "rank 3 on node n1 exited with status 3"
  std::vector<std::string> stderr_tail;
  // When it ended, wall-clock microseconds: its node's stamp, or when the frontend heard of it
  // (an MPI_Abort, a daemon of an older tlaunch). Orders failures (launcher/failure_blame.h).
  int64_t ended_us = 0;

  // PMIX_ERR_PROC_ABORTED rather than PMIX_PROC_TERMINATED.
  bool aborted() const;
};

class RankFailurePolicy {
 public:
  enum class Action {
    end_after_grace,  // end the job once --event-grace has passed
    keep_going,       // --keep-going: the other ranks go on
  };
  struct Decision {
    bool announce = false;  // first failure of this rank: send announcement(f) to every node
    Action action = Action::end_after_grace;
  };

  RankFailurePolicy(bool keep_going, int world_size) : keep_going_(keep_going), world_size_(world_size) {}

  // f.rank is a proc number: the job's ranks are 0..world_size-1, processes of PMIx_Spawn's
  // namespaces come after them (bootstrap/pmix_spawn.h).
  Decision onFailure(const RankFailure& f);
  // A rank of the job itself failed (a fence of the whole job cannot complete); a spawned
  // process is not one of them.
  bool anyJobRankFailed() const { return !failed_.empty() && *failed_.begin() < world_size_; }
  bool hasFailed(int rank) const { return failed_.count(rank) > 0; }
  const std::optional<RankFailure>& first() const { return first_; }
  // The summary of a job that went on: the first failure, how many of the job's ranks failed,
  // and how many spawned processes.
  std::string keptGoingSummary() const;

  // The frontend-to-daemon message that announces f ("rank_failed").
  Json announcement(const RankFailure& f) const;

 private:
  bool keep_going_;
  int world_size_;
  std::set<int> failed_;
  std::optional<RankFailure> first_;
};

// --event-grace: "0", "500ms", "1s", "2" (seconds), "1m"; at most a minute. The error names the
// flag and what it accepts.
Result<std::chrono::milliseconds> parseEventGrace(std::string_view text);

}  // namespace tlaunch
