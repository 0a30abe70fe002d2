#pragma once
// `tlaunch stacks` on one node: every rank's stacks from gdb in batch mode, run as child
// processes that the io thread reads like rank output, so relaying output and heartbeats go on
// meanwhile. A gdb that takes longer than the timeout is killed and its rank continued.
#include <sys/types.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <asio.hpp>

#include "bootstrap/message.h"

namespace tlaunch {

class StackCollector {
 public:
  struct Target {
    int rank = 0;
    pid_t pid = -1;  // the rank's process; a program it only wraps is found when probed
  };
  // [{"r": rank, "gdb": output, "error": why none, "note": e.g. no Python frames}]
  using Done = std::function<void(Json ranks)>;

  StackCollector(asio::io_context& io, std::string node_name,
                 std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~StackCollector();  // gdbs still running are killed
  void collect(std::vector<Target> targets, Done done);
  // The job is ending: gdbs under way are killed and their ranks continued at once (a rank held
  // stopped would miss its SIGTERM's checkpoint); every rank not yet probed gets `why`, and so
  // does every later collection.
  void cancel(const std::string& why);

 private:
  struct Run;
  struct Probe;
  void begin(std::vector<Target> targets, Done done);
  void startNext(const std::shared_ptr<Run>& run);
  // Why a rank's own stacks are taken although it wraps a program (daemon/stack_target.h).
  enum class WrapperOnly { no, refused, program_ended };
  void startProbe(const std::shared_ptr<Run>& run, size_t slot, WrapperOnly wrapper_only);
  void readOutput(const std::shared_ptr<Probe>& p);
  void reapGdb(const std::shared_ptr<Probe>& p, int attempt);
  void finishProbe(const std::shared_ptr<Probe>& p, const std::string& error);
  Json resultOf(const Probe& p, const std::string& error) const;
  void stopGdbs();
  static void release(const Probe& p);

  asio::io_context& io_;
  std::string node_name_;
  std::chrono::milliseconds timeout_;
  std::vector<std::shared_ptr<Probe>> running_;
  std::string cancelled_;  // why no more gdb runs (cancel)
  std::shared_ptr<Run> active_;  // the collection under way; others wait in queued_
  std::deque<std::pair<std::vector<Target>, Done>> queued_;
  static constexpr size_t kParallel = 4;  // gdbs at once per collection: each loads symbols
};

}  // namespace tlaunch
