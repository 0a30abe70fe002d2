// Applying a planned binding in a forked child, on this machine.
#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "binding/topology/apply_binding.h"
#include "binding/topology/placement.h"
#include "binding/topology/cpu_list.h"
#include "binding/topology/hwloc_topology.h"

using namespace tlaunch;

namespace {

struct ChildReport {
  int apply_rc = -1;
  long mempolicy_rc = -1;
  int mempolicy_mode = -1;
  std::string cpus_allowed;  // Cpus_allowed_list of the child, read by the parent
};

std::string cpusAllowedOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 18));
  return {};
}

// The child applies the binding (and nothing else that allocates), reports, then waits to be read.
ChildReport runChild(const PreparedBinding& prepared) {
  int report[2], go[2];
  REQUIRE(pipe(report) == 0);
  REQUIRE(pipe(go) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(report[0]);
    close(go[1]);
    struct {
      int rc;
      long mp_rc;
      int mode;
    } msg{};
    msg.rc = applyPreparedBinding(prepared);
    unsigned long mask[16] = {};
    msg.mp_rc = syscall(SYS_get_mempolicy, &msg.mode, mask, 16 * 64ul, nullptr, 0ul);
    if (write(report[1], &msg, sizeof msg) != sizeof msg) _exit(2);
    char c;
    (void)!read(go[0], &c, 1);
    _exit(0);
  }
  close(report[1]);
  close(go[0]);
  struct {
    int rc;
    long mp_rc;
    int mode;
  } msg{};
  ChildReport out;
  if (read(report[0], &msg, sizeof msg) == sizeof msg) {
    out.apply_rc = msg.rc;
    out.mempolicy_rc = msg.mp_rc;
    out.mempolicy_mode = msg.mode;
    out.cpus_allowed = cpusAllowedOf(pid);
  }
  close(go[1]);
  close(report[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  return out;
}

}  // namespace

TEST_CASE("with -p 2 this machine pins two children to two different single cores, memory to their node",
          "[topology][apply]") {
  auto topo = loadTopology("");
  REQUIRE(topo.has_value());
  size_t cores = 0;
  for (const auto& n : topo->numa_nodes) cores += n.cores.size();
  if (cores < 2) {
    WARN("this machine has fewer than 2 allowed cores; skipped");
    return;
  }
  auto plan = planNodeBinding(*topo, {2, false, BindMode::core, 1, {}}, "localhost");
  REQUIRE(plan.has_value());
  REQUIRE(plan->size() == 2);
  CHECK((*plan)[0].cpus != (*plan)[1].cpus);
  for (const auto& b : *plan) {
    INFO("local rank " << b.local_rank << " cpus " << formatCpuList(b.cpus));
    auto prepared = prepareBinding(b);
    REQUIRE(prepared.has_value());
    ChildReport child = runChild(*prepared);
    CHECK(child.apply_rc == 0);
    CHECK(child.cpus_allowed == formatCpuList(b.cpus));
    if (child.mempolicy_rc == 0)
      CHECK(child.mempolicy_mode == MPOL_BIND);
    else
      WARN("get_mempolicy is not available here; memory binding not checked");
  }
}

TEST_CASE("an empty binding changes nothing", "[topology][apply]") {
  auto prepared = prepareBinding(RankBinding{});
  REQUIRE(prepared.has_value());
  CHECK_FALSE(prepared->bind_cpus);
  CHECK_FALSE(prepared->bind_memory);
  ChildReport child = runChild(*prepared);
  CHECK(child.apply_rc == 0);
  CHECK(child.cpus_allowed == cpusAllowedOf(getpid()));
  if (child.mempolicy_rc == 0) CHECK(child.mempolicy_mode == MPOL_DEFAULT);
}

TEST_CASE("a CPU the machine cannot have is an error returned to the child, not a crash", "[topology][apply]") {
  RankBinding b;
  b.cpus = {CPU_SETSIZE - 1};  // representable, but not a CPU of this machine
  auto prepared = prepareBinding(b);
  REQUIRE(prepared.has_value());
  CHECK(runChild(*prepared).apply_rc == EINVAL);
}

TEST_CASE("ids beyond what the masks hold are refused before fork", "[topology][apply]") {
  RankBinding b;
  b.local_rank = 5;
  b.cpus = {CPU_SETSIZE + 7};
  auto r = prepareBinding(b);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code == Errc::topology);
  CHECK_THAT(r.error().message, Catch::Contains("local rank 5"));
  b.cpus = {0};
  b.mem_nodes = {5000};
  CHECK_FALSE(prepareBinding(b).has_value());
}
