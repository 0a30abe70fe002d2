#include "binding/rank_env.h"

namespace tlaunch {

EnvList rankIdentityEnv(const RankIdentity& r, const JobIdentity& j) {
  auto s = [](int v) { return std::to_string(v); };
  return {
      {"RANK", s(r.rank)},
      {"LOCAL_RANK", s(r.local_rank)},
      {"WORLD_SIZE", s(r.world_size)},
      {"LOCAL_WORLD_SIZE", s(r.local_world_size)},
      {"GROUP_RANK", s(r.node_rank)},
      {"GROUP_WORLD_SIZE", s(r.num_nodes)},
      {"NODE_RANK", s(r.node_rank)},
      {"ROLE_RANK", s(r.rank)},
      {"ROLE_WORLD_SIZE", s(r.world_size)},
      {"ROLE_NAME", "default"},
      {"MASTER_ADDR", j.master_addr},
      {"MASTER_PORT", s(j.master_port)},
      {"TORCHELASTIC_RUN_ID", j.job_id},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"TORCHELASTIC_MAX_RESTARTS", "0"},
      // No agent store: rank 0 hosts torch's TCPStore on MASTER_ADDR:MASTER_PORT, as with a
      // plain init_process_group("env://").
      {"TORCHELASTIC_USE_AGENT_STORE", "False"},
      {"OMPI_COMM_WORLD_RANK", s(r.rank)},
      {"OMPI_COMM_WORLD_SIZE", s(r.world_size)},
      {"OMPI_COMM_WORLD_LOCAL_RANK", s(r.local_rank)},
      {"OMPI_COMM_WORLD_LOCAL_SIZE", s(r.local_world_size)},
      {"OMPI_COMM_WORLD_NODE_RANK", s(r.node_rank)},
      {"TLAUNCH_JOB_ID", j.job_id},
      {"TLAUNCH_RANK", s(r.rank)},
      {"TLAUNCH_LOCAL_RANK", s(r.local_rank)},
      {"TLAUNCH_NODE_RANK", s(r.node_rank)},
  };
}

EnvList rankDefaultEnv() { return {{"OMP_NUM_THREADS", "1"}}; }

const std::vector<std::string>& rankIdentityNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& [k, v] : rankIdentityEnv({}, {})) n.push_back(k);
    return n;
  }();
  return names;
}

}  // namespace tlaunch
