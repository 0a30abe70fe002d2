#pragma once
// The environment that identifies a rank: torchrun's variables, Open MPI's OMPI_COMM_WORLD_*
// (read by DeepSpeed's MPI discovery and many scripts) and tlaunch's own. Pure.
#include <string>
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

// Variables a user may not override (they define who the rank is).
EnvList rankIdentityEnv(const RankIdentity& r, const JobIdentity& j);
// Defaults a user may override with -x or their environment (OMP_NUM_THREADS=1, ...).
EnvList rankDefaultEnv();
// The value of `key` in a "K=V" list ("" if absent; the last one wins).
std::string envValue(const std::vector<std::string>& env, const std::string& key);
// base overlaid with overrides (same key: the override wins, keeping base's order).
std::vector<std::string> mergeEnv(const std::vector<std::string>& base, const std::vector<std::string>& overrides);

// Names of the identity variables, for documentation and for stripping inherited values.
const std::vector<std::string>& rankIdentityNames();

}  // namespace tlaunch
