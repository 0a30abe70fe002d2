#pragma once
// A helper process of the frontend (ssh, srun, a local tlaunchd): forked with a pipe on its
// stdin and its stdout and stderr captured together, reaped without blocking. What it writes
// there (ssh's warnings, a node's .bashrc that echoes, srun's messages) never reaches tlaunch's
// own stdout, where the ranks' lines go; it is kept for the explanation of a failure.
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

// Ends a process group led by `pid` (a child of ours): SIGTERM to the group, up to `grace_ms`
// for it to exit, then SIGKILL; reaps it and returns its wait status (-1 if it was not ours).
int terminateProcessGroup(pid_t pid, int grace_ms);

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // closes fds; does not kill (call terminate() first)

  // argv[0] is looked up in PATH. `stdin_data` is written to the child's stdin, which stays
  // open until the ChildProcess is destroyed. The child gets PR_SET_PDEATHSIG(SIGKILL) so it
  // never outlives the frontend, and its own process group.
  static Result<ChildProcess> spawn(const std::vector<std::string>& argv, const std::string& stdin_data,
                                    const std::vector<std::string>& extra_env = {});

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !exited_; }
  // Non-blocking reap. Returns true once the child has exited (then status() is valid).
  // Also reads what the child wrote (at most every 200 ms): a helper that writes more than a
  // pipe holds during a days-long job must not block in write().
  bool poll();
  // Waits up to `timeout` for the child to exit by itself (polling); true once it has.
  bool waitExit(std::chrono::milliseconds timeout);
  int status() const { return status_; }  // raw wait status
  std::string describeStatus() const;     // "exited with status 255" / "killed by signal 9"
  // Reads whatever the child wrote to stdout and stderr so far (non-blocking); keeps the
  // last 16 KiB.
  const std::string& outputText();
  // Bytes read from the child so far, also those no longer kept: what is new since a count.
  size_t capturedBytes() const { return captured_; }
  void signal(int sig) const;  // to the child's process group
  // SIGTERM, wait up to grace_ms, then SIGKILL and reap.
  void terminate(int grace_ms);
  void closeStdin();

 private:
  void drainOutput();
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int output_fd_ = -1;
  bool exited_ = false;
  int status_ = 0;
  std::string output_;
  size_t captured_ = 0;
  std::chrono::steady_clock::time_point drained_at_{};
};

}  // namespace tlaunch
