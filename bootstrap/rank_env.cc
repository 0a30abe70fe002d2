#include "bootstrap/rank_env.h"

#include <unordered_map>

namespace tlaunch {

namespace {
std::string keyOf(const std::string& kv) { return kv.substr(0, kv.find('=')); }
}  // namespace

std::string envValue(const std::vector<std::string>& env, const std::string& key) {
  std::string value;
  for (const auto& kv : env) {
    auto eq = kv.find('=');
    if (eq != std::string::npos && kv.compare(0, eq, key) == 0 && eq == key.size()) value = kv.substr(eq + 1);
  }
  return value;
}

std::vector<std::string> mergeEnv(const std::vector<std::string>& base, const std::vector<std::string>& overrides) {
  std::unordered_map<std::string, size_t> index;
  std::vector<std::string> out;
  out.reserve(base.size() + overrides.size());
  for (const auto* list : {&base, &overrides}) {
    for (const auto& kv : *list) {
      auto k = keyOf(kv);
      auto it = index.find(k);
      if (it != index.end()) {
        out[it->second] = kv;
      } else {
        index.emplace(k, out.size());
        out.push_back(kv);
      }
    }
  }
  return out;
}


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
      // DeepSpeed's launcher (deepspeed/launcher/launch.py) also sets these (Horovod's names).
      {"LOCAL_SIZE", s(r.local_world_size)},
      {"CROSS_RANK", s(r.node_rank)},
      {"CROSS_SIZE", s(r.num_nodes)},
      {"MASTER_ADDR", j.master_addr},
      {"MASTER_PORT", s(j.master_port)},
      {"TORCHELASTIC_RUN_ID", j.run_id.empty() ? j.job_id : j.run_id},
      {"TORCHELASTIC_RESTART_COUNT", s(j.restart_count)},
      {"TORCHELASTIC_MAX_RESTARTS", s(j.max_restarts)},
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
