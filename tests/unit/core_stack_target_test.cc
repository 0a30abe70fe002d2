// Which process `tlaunch stacks` probes for a rank (daemon/stack_target.h): a wrapper's program.
#include <catch2/catch.hpp>

#include <map>

#include "daemon/stack_target.h"

using namespace tlaunch;

namespace {

struct Tree {
  std::vector<ProcEntry> procs;
  std::map<pid_t, std::string> name;
  void add(pid_t pid, pid_t ppid, const std::string& n, char state = 'S') {
    procs.push_back({pid, ppid, pid, state});
    this->name[pid] = n;
  }
  StackTarget of(pid_t rank) const {
    return stackTargetOf(rank, procs, [this](pid_t p) {
      auto it = name.find(p);
      return it == name.end() ? std::string() : it->second;
    });
  }
};

}  // namespace

TEST_CASE("stack target: a rank that is its program is probed itself") {
  Tree t;
  t.add(100, 1, "python3");
  t.add(101, 100, "pt_data_worker");  // its data loader: not followed, python3 is no wrapper
  const auto s = t.of(100);
  CHECK(s.pid == 100);
  CHECK(s.wrapper.empty());
}

TEST_CASE("stack target: `bash train.sh` and chains of wrappers lead to the program") {
  Tree t;
  t.add(100, 1, "bash");
  t.add(101, 100, "timeout");
  t.add(102, 101, "numactl");
  t.add(103, 102, "python3");
  t.add(104, 103, "python3");  // a worker of the program: the program stands
  const auto s = t.of(100);
  CHECK(s.pid == 103);
  CHECK(s.wrapper == "bash");
  CHECK(s.program == "python3");
}

TEST_CASE("stack target: a wrapper with no child or several children stands for itself") {
  Tree t;
  t.add(100, 1, "bash");  // its builtin loop, or `wait` for nothing
  CHECK(t.of(100).pid == 100);
  t.add(200, 1, "sh");
  t.add(201, 200, "python3");
  t.add(202, 200, "python3");  // two programs in the background: which one is the job's is not known
  CHECK(t.of(200).pid == 200);
  t.add(300, 1, "bash");
  t.add(301, 300, "python3");
  t.add(302, 300, "sleep", 'Z');  // a zombie is no live child
  const auto s = t.of(300);
  CHECK(s.pid == 301);
  CHECK(s.program == "python3");
}

TEST_CASE("stack target: wrapper names are whole commands") {
  CHECK(isWrapperCommand("bash"));
  CHECK(isWrapperCommand("env"));
  CHECK_FALSE(isWrapperCommand("bashful"));
  CHECK_FALSE(isWrapperCommand("python3"));
  CHECK_FALSE(isWrapperCommand(""));
}
