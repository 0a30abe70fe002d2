#pragma once
// Starts every node's tlaunchd with one Slurm step:
//   srun --overlap --ntasks-per-node=1 -N n -n n --nodelist=a,b,... --kill-on-bad-exit=1
//        --input=all --cpu-bind=none --mpi=none <--slurm-args> tlaunchd <args>
// The secret goes to srun's stdin, which --input=all broadcasts to every task. The daemons
// learn their node from SLURMD_NODENAME (no per-node arguments are possible); the step's
// task order is Slurm's, not ours, so the frontend maps names to node indices.
// Outside an allocation srun makes one (no --overlap), with --slurm-args such as "-p gpu -t 10".
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/child_process.h"
#include "launcher/daemon_starter.h"
#include "tlaunch/result.h"

namespace tlaunch {

struct SlurmStarterOptions {
  std::string srun_program = "srun";
  std::string slurm_args;          // passed to srun after ours, split like a shell would
  bool inside_allocation = true;   // insideSlurmAllocation(env): reuse the allocation (--overlap)
  int job_gpus_per_node = 0;       // > 0: the step asks for them (--gres=gpu:N); see slurmPerTaskGpus
};

// The job's GPUs per node when it asked for them per task (sbatch --gpus-per-task): a step of one
// task per node, like the daemons', would get one task's share, and the ranks the daemon starts
// in it no more. SLURM_GPUS_ON_NODE, when SLURM_GPUS_PER_TASK is set; else 0 (Slurm's default,
// every GPU of the job on the node, is right).
int slurmPerTaskGpus(const std::map<std::string, std::string>& env);

// --slurm-args that would undo what tlaunch's own srun options set up (the nodes and tasks of
// the daemons' step, their stdin, output and CPU binding, Slurm's MPI plugin): a usage error
// naming the option and tlaunch's flag for it. Other words are srun's business.
Result<void> checkSlurmArgs(std::string_view slurm_args);

// The srun argv. Node names go to --nodelist when all are known; outside an allocation they
// may be empty (Slurm picks nodes.size() nodes).
Result<std::vector<std::string>> buildSrunArgv(const SlurmStarterOptions& options, const std::vector<NodeTarget>& nodes,
                                               const DaemonCommand& command);

// A user-facing explanation of a failed srun step, with srun's last words. `exit_status`:
// srun's exit code, or -signal. `after_connect`: every daemon had connected (the step ended
// during the job, not before it started).
std::string explainSrunFailure(int exit_status, const std::string& stderr_text, const std::string& daemon_path,
                               bool after_connect = false);

// What one line of srun's says about the batch system holding the daemons back.
enum class SrunWait {
  none,     // nothing about it
  waiting,  // "job 4 queued and waiting for resources", "step creation temporarily disabled"
  granted,  // "job 4 has been allocated resources", "Step created for ..."
};
SrunWait srunWaitOf(std::string_view line);

// The nodes srun's words blame, in order, once each: where a task could not start
// ("slurmstepd-<node>: error: execve(): ...") or ended by itself ("srun: error: <node>: task <n>:
// Exited with exit code 2", "Killed"). The tasks "Terminated" are --kill-on-bad-exit's victims:
// they are named only when no node is to blame (the step was cancelled).
std::vector<std::string> nodesInSrunErrors(const std::string& stderr_text);
// The first "srun: error: <node>: task <n>: Exited with exit code <code>" whose code is not 143
// (a daemon that ended on the step's SIGTERM): a daemon that ended by itself.
struct SrunTaskExit {
  std::string node;
  int code = 0;
};
std::optional<SrunTaskExit> firstOwnTaskExit(const std::string& stderr_text);
// The node of a "slurmstepd-<node>: error: execve(): ..." line: its daemon could not start; "" if
// the line is another.
std::string nodeOfExecFailure(std::string_view line);

class SlurmStarter final : public DaemonStarter {
 public:
  explicit SlurmStarter(SlurmStarterOptions options);
  ~SlurmStarter() override;  // stops the step, without grace
  SlurmStarter(const SlurmStarter&) = delete;
  SlurmStarter& operator=(const SlurmStarter&) = delete;

  const char* name() const override { return "slurm"; }
  Result<void> start(const std::vector<NodeTarget>& nodes, const DaemonCommand& command,
                     const std::string& secret) override;
  // One failure when the step ends before every daemon connected (or fails at all);
  // node_index is the node srun's messages name when they name exactly one, else -1.
  std::vector<StartFailure> poll() override;
  void stop(int grace_ms) override;

  // The daemon of node `node_index` said hello; once all have, srun exiting 0 is no failure.
  void daemonConnected(int node_index) override;
  // srun said its job or step is pending, and not yet that it was granted.
  bool waitingForResources() const override { return waiting_; }
  bool endsTogether() const override { return started_ && !finished_; }
  // srun's pending and granted lines, as it said them.
  std::vector<StarterNote> takeNotes() override;

 private:
  void readSrunLines();
  SlurmStarterOptions options_;
  std::vector<NodeTarget> nodes_;
  std::vector<bool> connected_;
  std::string daemon_path_;
  ChildProcess process_;
  bool started_ = false;
  bool finished_ = false;
  size_t scanned_ = 0;   // of srun's output (ChildProcess::capturedBytes)
  std::string partial_;  // a line srun has not finished yet
  std::string last_said_;  // srun's last line that was not about waiting
  bool waiting_ = false;
  bool wait_said_ = false;  // the waiting line was said, its end not yet
  std::chrono::steady_clock::time_point waiting_since_{};
  std::vector<StarterNote> notes_;
  std::vector<StartFailure> early_;  // daemons that could not start, said before srun ends
  std::vector<int> exec_failed_;     // their nodes
};

}  // namespace tlaunch
