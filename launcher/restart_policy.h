#pragma once
// --max-restarts (torchrun's, better): after an attempt of the job fails, decide whether to run
// it again and on which nodes. Pure: the caller runs the attempts (launcher/run_job.cc).
//   - Only a failed rank (non-zero exit, a signal, MPI_Abort) or a lost node restarts the job;
//     an interrupt, --time-limit, a preflight refusal, a program not found or --nccl-check
//     strict end it, as they would end it again.
//   - A node whose daemon was lost (or never started), or whose rank failed in two attempts in
//     a row, is dropped: the next attempt takes a spare node in its place (the given nodes beyond -N / --nnodes
//     MAX), or runs on fewer nodes when --nnodes MIN:MAX allows it (ranks renumbered). A node
//     dropped for its ranks' failures where neither is possible is kept.
#include <string>
#include <vector>

namespace tlaunch {

// What one attempt's outcome says about restarting (from launcher/job_session.h's JobOutcome).
struct AttemptEnd {
  bool success = false;
  bool restartable = false;  // a rank failed, or a node was lost mid-job
  bool node_lost = false;
  bool interrupted = false;  // tlaunch got SIGINT/SIGTERM/SIGHUP, also while a failure was ending the job
  std::string failed_node;   // the failed rank's node, or the lost node ("" if unknown)
  std::vector<std::string> lost_nodes;  // with node_lost: every node lost or never started
  bool not_started = false;            // they could not be started (not lost mid-job)
  std::string summary;       // "rank 3 on node n2 exited with status 1"
};

class RestartPolicy {
 public:
  explicit RestartPolicy(int max_restarts) : max_restarts_(max_restarts) {}

  struct Decision {
    bool restart = false;
    std::vector<std::string> drop;  // nodes to leave out from now on
    std::string reason;             // why they are dropped, or why there is no restart
    // Dropped for its ranks' failures, not lost: where nothing can take its place and the job
    // cannot run on fewer nodes, the caller keeps it (keep()), since the failures may be the
    // program's and a restart on the same nodes may still get past them.
    bool drop_optional = false;
  };
  Decision afterAttempt(const AttemptEnd& end);
  // Nodes dropped by the last decision are used again after all; their failures count anew.
  void keep(const std::vector<std::string>& nodes);

  int restarts() const { return restarts_; }
  int maxRestarts() const { return max_restarts_; }
  const std::vector<std::string>& dropped() const { return dropped_; }

 private:
  int max_restarts_;
  int restarts_ = 0;
  std::string last_failed_node_;  // a rank failed there in the previous attempt
  std::vector<std::string> dropped_;
};

// "restart 1 of 3 after rank 3 on node n2 exited with status 1; n2 dropped (...), n5 added"
std::string describeRestart(int restart, int max_restarts, const std::string& cause, const std::vector<std::string>& dropped,
                            const std::string& drop_reason, const std::vector<std::string>& before,
                            const std::vector<std::string>& after);

}  // namespace tlaunch
