// The Slurm allocation as a node source: SLURM_JOB_NODELIST and SLURM_TASKS_PER_NODE.
#include <map>

#include "launcher/cli_values.h"
#include "launcher/hostlist.h"
#include "launcher/node_source.h"
#include "launcher/node_source_detail.h"
#include "tlaunch/strings.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

using namespace node_source_detail;

Result<std::vector<int>> parseSlurmTasksPerNode(std::string_view text) {
  std::vector<int> counts;
  const std::string where = "SLURM_TASKS_PER_NODE='" + std::string(text) + "': ";
  const std::string hint = "expected a form like 2(x3),1; unset SLURM_TASKS_PER_NODE if it was set by hand";
  for (std::string_view item : splitOutsideBrackets(text, ',')) {
    item = trimBlanks(item);
    int repeat = 1;
    if (const size_t paren = item.find('('); paren != std::string_view::npos) {
      std::string_view rep = item.substr(paren);
      if (rep.size() < 4 || rep.substr(0, 2) != "(x" || rep.back() != ')') {
        return fail(Errc::usage, where + "bad repeat '" + std::string(rep) + "'", hint);
      }
      auto r = parseCount(rep.substr(2, rep.size() - 3), 1);
      if (!r) return fail(Errc::usage, where + "bad repeat '" + std::string(rep) + "'", hint);
      repeat = *r;
      item = item.substr(0, paren);
    }
    auto n = parseCount(item, 0);
    if (!n) return fail(Errc::usage, where + "'" + std::string(item) + "' is not a task count", hint);
    if (counts.size() + static_cast<size_t>(repeat) > static_cast<size_t>(kMaxSlots)) {
      return fail(Errc::usage, where + "too many nodes", hint);
    }
    counts.insert(counts.end(), static_cast<size_t>(repeat), *n);
  }
  return counts;
}

namespace {
const std::string* envValue(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() || trimBlanks(it->second).empty() ? nullptr : &it->second;
}
const char* nodelistVariable(const std::map<std::string, std::string>& env) {
  if (envValue(env, "SLURM_JOB_NODELIST")) return "SLURM_JOB_NODELIST";
  if (envValue(env, "SLURM_NODELIST")) return "SLURM_NODELIST";
  return nullptr;
}
}  // namespace

bool insideSlurmAllocation(const std::map<std::string, std::string>& env) {
  return (envValue(env, "SLURM_JOB_ID") || envValue(env, "SLURM_JOBID")) && nodelistVariable(env);
}

std::optional<std::string> slurmHetComponents(const std::map<std::string, std::string>& env) {
  if (!(envValue(env, "SLURM_JOB_ID") || envValue(env, "SLURM_JOBID"))) return std::nullopt;
  std::string components;
  int count = 0;
  for (;; ++count) {
    const std::string name = "SLURM_JOB_NODELIST_HET_GROUP_" + std::to_string(count);
    const std::string* nodes = envValue(env, name.c_str());
    if (!nodes) break;
    components += count ? " + " : "";
    components += trimBlanks(*nodes);
  }
  if (count < 2) return std::nullopt;
  return components;
}

std::optional<std::string> heterogeneousSlurmNodes(const std::map<std::string, std::string>& env) {
  if (nodelistVariable(env)) return std::nullopt;
  return slurmHetComponents(env);
}

Result<std::vector<HostEntry>> hostsFromSlurmEnv(const std::map<std::string, std::string>& env, bool tasks_as_slots) {
  const char* variable = nodelistVariable(env);
  if (!variable) {
    return diagnostic(Errc::usage, "slurm-not-in-allocation");
  }
  const std::string& nodelist = *envValue(env, variable);
  auto names = expandHostlist(nodelist);
  if (!names) {
    return fail(Errc::usage, std::string(variable) + ": " + names.error().message,
                "this variable is set by Slurm; do not set it by hand");
  }
  std::vector<HostEntry> hosts;
  for (auto& n : *names) {
    if (auto bad = badHostName(n, false)) return fail(Errc::usage, std::string(variable) + ": " + *bad);
    hosts.push_back(HostEntry{std::move(n), -1, {}, {}, {}, false});
  }
  if (const std::string* tasks = tasks_as_slots ? envValue(env, "SLURM_TASKS_PER_NODE") : nullptr) {
    auto counts = parseSlurmTasksPerNode(*tasks);
    if (!counts) return tl::unexpected(counts.error());
    if (counts->size() != hosts.size()) {
      return diagnostic(Errc::usage, "slurm-tasks-mismatch",
                        {{"tasks", *tasks},
                         {"covered", std::to_string(counts->size())},
                         {"variable", std::string(variable)},
                         {"named", std::to_string(hosts.size())}});
    }
    for (size_t i = 0; i < hosts.size(); ++i) {
      if ((*counts)[i] > 0) hosts[i].slots = (*counts)[i];
    }
  }
  return hosts;
}

std::map<std::string, int> slurmTasksGiven(const std::map<std::string, std::string>& env) {
  const auto ntasks = env.find("SLURM_NTASKS");
  if (ntasks == env.end() || ntasks->second.empty()) return {};
  auto nodes = hostsFromSlurmEnv(env, true);
  if (!nodes) return {};
  std::map<std::string, int> tasks;
  bool more_than_one = false;
  for (const auto& h : *nodes) {
    if (h.slots < 1 || h.slots > kMaxRanksPerNode) return {};
    tasks[h.name] = h.slots;
    more_than_one = more_than_one || h.slots > 1;
  }
  return more_than_one ? tasks : std::map<std::string, int>{};
}

}  // namespace tlaunch
