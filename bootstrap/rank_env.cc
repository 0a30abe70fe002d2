#include "bootstrap/rank_env.h"

#include <unordered_map>

namespace tlaunch {

namespace {
std::string keyOf(const std::string& kv) { return kv.substr(0, kv.find('=')); }
}  // namespace

std::optional<std::string> envLookup(const std::vector<std::string>& env, const std::string& key) {
  std::optional<std::string> value;
  for (const auto& kv : env)
    if (kv.size() > key.size() && kv[key.size()] == '=' && kv.compare(0, key.size(), key) == 0) value = kv.substr(key.size() + 1);
  return value;
}

std::string envValue(const std::vector<std::string>& env, const std::string& key) {
  return envLookup(env, key).value_or("");
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
  EnvList out;
  out.reserve(32);
  visitRankIdentityEnv(r, j, [&](std::string_view k, std::string_view v) { out.emplace_back(k, v); });
  return out;
}

EnvList rankDefaultEnv(size_t own_cpus, int local_world_size) {
  // torchrun's: a failed NCCL collective aborts the communicator and raises in the rank instead
  // of hanging until NCCL's timeout. PyTorch before 2.2 (Debian 12's 1.13) defaulted to 0 and
  // reads only the name without TORCH_, which its torchrun set; later ones read TORCH_'s (and
  // warn once per rank that the old name is deprecated: a line, not a hang).
  EnvList out = {{"PYTHONUNBUFFERED", "1"},
                 {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
                 {"NCCL_ASYNC_ERROR_HANDLING", "1"}};
  if (own_cpus > 0) out.emplace_back("OMP_NUM_THREADS", std::to_string(own_cpus));
  else if (local_world_size > 1) out.emplace_back("OMP_NUM_THREADS", "1");
  return out;
}

const std::vector<std::string>& rankIdentityNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& [k, v] : rankIdentityEnv({}, {})) n.push_back(k);
    return n;
  }();
  return names;
}

}  // namespace tlaunch
