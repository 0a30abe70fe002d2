#pragma once
// Where is it stuck: turns every rank's gdb output into STAT-like classes of ranks with the
// same stacks ("ranks 0-4, 6-7: main > MPI_Barrier"; "rank 5: main > stuck_here > sleep").
// Pure functions: no I/O.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tlaunch {

// One rank's stacks as a daemon collected them.
struct RankStacks {
  int rank = 0;
  std::string node;
  std::string gdb_output;  // `thread apply all bt` (and `py-bt`) as gdb printed it
  std::string error;       // why there are no stacks (gdb missing, ptrace refused, timed out...)
  std::string note;        // e.g. why Python frames are missing
};

// A thread's stack, outermost frame first, with addresses, arguments and line numbers dropped.
using Stack = std::vector<std::string>;

// The threads of one gdb output, each outermost first; Python frames (`py-bt`) as "py:name".
std::vector<Stack> parseGdbStacks(std::string_view text);

struct ThreadGroup {
  Stack stack;
  int min_threads = 1, max_threads = 1;  // how many threads of a rank have it, over the class
};

struct StackClass {
  std::vector<int> ranks;
  std::vector<ThreadGroup> threads;  // the main thread's stack first, then the other distinct stacks
  std::string error;  // a class of ranks whose stacks could not be collected, for one reason
};

// Ranks with the same main-thread stack and the same set of other threads' stacks form one
// class (how many threads share a stack may differ: pools grow at their own pace); largest first.
std::vector<StackClass> mergeStacks(const std::vector<RankStacks>& ranks);

// The report that the frontend prints. `spawned_label`: the name of a process a PMIx_Spawn
// started ("spawn1:0"), "" for the job's own ranks (shown as rank ranges); may be empty.
std::string formatStackReport(const std::vector<RankStacks>& ranks,
                              const std::function<std::string(int)>& spawned_label = {});

}  // namespace tlaunch
