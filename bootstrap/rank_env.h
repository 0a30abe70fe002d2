#pragma once
// The environment that identifies a rank: torchrun's variables, Open MPI's OMPI_COMM_WORLD_*
// (read by DeepSpeed's MPI discovery and many scripts) and tlaunch's own. Pure.
#include <charconv>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tlaunch {

using EnvList = std::vector<std::pair<std::string, std::string>>;

struct RankIdentity {
  int rank = 0;
  int local_rank = 0;
  int world_size = 1;
  int local_world_size = 1;
  int node_rank = 0;
  int num_nodes = 1;
};

struct JobIdentity {
  std::string job_id;
  std::string master_addr;  // an IP address, never a host name
  int master_port = 0;
  std::string run_id;      // TORCHELASTIC_RUN_ID: the same in every attempt ("" : job_id)
  int restart_count = 0;   // TORCHELASTIC_RESTART_COUNT: which attempt (--max-restarts)
  int max_restarts = 0;
};

// A number's decimal text, on the stack.
class IntText {
 public:
  explicit IntText(long long v) : size_(static_cast<size_t>(std::to_chars(buf_, buf_ + sizeof buf_, v).ptr - buf_)) {}
  std::string_view view() const { return {buf_, size_}; }

 private:
  char buf_[24];
  size_t size_;
};

// Calls f(name, value) for each variable a user may not override (they define who the rank
// is), in a fixed order, without building a list: the plan does this for every rank of a job.
template <class F>
void visitRankIdentityEnv(const RankIdentity& r, const JobIdentity& j, F&& f) {
  const IntText rank(r.rank), local_rank(r.local_rank), world(r.world_size), local_world(r.local_world_size),
      node_rank(r.node_rank), nodes(r.num_nodes), port(j.master_port), restart(j.restart_count),
      max_restarts(j.max_restarts);
  f("RANK", rank.view());
  f("LOCAL_RANK", local_rank.view());
  f("WORLD_SIZE", world.view());
  f("LOCAL_WORLD_SIZE", local_world.view());
  f("GROUP_RANK", node_rank.view());
  f("GROUP_WORLD_SIZE", nodes.view());
  f("NODE_RANK", node_rank.view());
  f("ROLE_RANK", rank.view());
  f("ROLE_WORLD_SIZE", world.view());
  f("ROLE_NAME", "default");
  // DeepSpeed's launcher (deepspeed/launcher/launch.py) also sets these (Horovod's names).
  f("LOCAL_SIZE", local_world.view());
  f("CROSS_RANK", node_rank.view());
  f("CROSS_SIZE", nodes.view());
  f("MASTER_ADDR", std::string_view(j.master_addr));
  f("MASTER_PORT", port.view());
  f("TORCHELASTIC_RUN_ID", std::string_view(j.run_id.empty() ? j.job_id : j.run_id));
  f("TORCHELASTIC_RESTART_COUNT", restart.view());
  f("TORCHELASTIC_MAX_RESTARTS", max_restarts.view());
  // No agent store: rank 0 hosts torch's TCPStore on MASTER_ADDR:MASTER_PORT, as with a
  // plain init_process_group("env://").
  f("TORCHELASTIC_USE_AGENT_STORE", "False");
  f("OMPI_COMM_WORLD_RANK", rank.view());
  f("OMPI_COMM_WORLD_SIZE", world.view());
  f("OMPI_COMM_WORLD_LOCAL_RANK", local_rank.view());
  f("OMPI_COMM_WORLD_LOCAL_SIZE", local_world.view());
  // Open MPI's "node rank" is the process's rank among those on its node (across jobs; with one
  // job, its local rank), not the node's index: mpirun -np 2 gives 0 and 1.
  f("OMPI_COMM_WORLD_NODE_RANK", local_rank.view());
  f("TLAUNCH_JOB_ID", std::string_view(j.job_id));
  f("TLAUNCH_RANK", rank.view());
  f("TLAUNCH_LOCAL_RANK", local_rank.view());
  f("TLAUNCH_NODE_RANK", node_rank.view());
}

// The same variables as a list.
EnvList rankIdentityEnv(const RankIdentity& r, const JobIdentity& j);
// Defaults a user may override with -x or their environment. PYTHONUNBUFFERED=1: a rank's
// stdout is a pipe, where Python holds output back in blocks of 8 KiB; what a rank printed
// would arrive late (a false --hang-timeout) or be lost when it is ended. OMP_NUM_THREADS:
// the CPUs the rank is bound to and no other rank of the node is (`own_cpus`), else 1 when
// several ranks share the node (as torchrun), else unset. TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and
// NCCL_ASYNC_ERROR_HANDLING=1, as torchrun sets them (the latter before PyTorch 2.2).
EnvList rankDefaultEnv(size_t own_cpus, int local_world_size);
// The value of `key` in a "K=V" list, if it is set at all ("" included; the last one wins).
std::optional<std::string> envLookup(const std::vector<std::string>& env, const std::string& key);
// The same, "" if absent.
std::string envValue(const std::vector<std::string>& env, const std::string& key);
// base overlaid with overrides (same key: the override wins, keeping base's order).
std::vector<std::string> mergeEnv(const std::vector<std::string>& base, const std::vector<std::string>& overrides);

// A rank's own GPU and HCA (the plan's rank_env_builder sets them; processes a rank spawns do not
// inherit them).
inline constexpr const char* kRankGpuBusIdVar = "TLAUNCH_GPU_BUSID";
inline constexpr const char* kRankGpuUuidVar = "TLAUNCH_GPU_UUID";
inline constexpr const char* kRankHcaVar = "TLAUNCH_HCA";

// Names of the identity variables, for documentation and for stripping inherited values.
const std::vector<std::string>& rankIdentityNames();

}  // namespace tlaunch
