#include "launcher/plan/plan_render.h"

#include <algorithm>

#include "binding/fabric/fabric_json.h"
#include "binding/preflight/preflight_report.h"
#include "binding/topology/binding_manifest.h"
#include "bootstrap/rank_env.h"
#include "launcher/plan/plan_preflight.h"
#include "launcher/plan/rank_env_builder.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

std::string networkSummary(const NetworkChoice& choice) {
  return "network: " + std::string(netKindName(choice.kind)) + " on " + choice.cidr + (choice.rdma ? " (RDMA)" : "") +
         ", MASTER_ADDR " + choice.master_addr + "\n";
}

// One node: its interface, then its first rank's fabric variables and who wins.
std::string networkNode(const NodeNetChoice& nc, bool rdma, const std::vector<EnvSetting>& env) {
  std::string out = "  " + nc.node + ": " + nc.ifname + " " + nc.ipv4 + "/" + std::to_string(nc.prefix) +
                    (nc.port.empty() ? "" : " on " + nc.port) +
                    (nc.hca_ports.empty() || !rdma ? "" : ", data ports " + joinHcaPorts(nc)) + "\n";
  for (const auto& s : env) {
    out += "    " + s.name + "=" + s.value;
    if (s.overridden_by_user)
      out += "  (yours wins: " + (s.user_value.empty() ? "unset" : s.user_value) + " from " + s.user_source + ")";
    if (!s.conflict.empty()) out += "  WARNING: " + s.conflict;
    out += "\n";
  }
  return out;
}

std::string networkNotes(const NetworkChoice& choice) {
  std::string out;
  for (const auto& note : choice.notes) out += "  note: " + note + "\n";
  return out;
}

const std::vector<EnvSetting>& nodeEnv(const JobPlan& plan, size_t node) {
  static const std::vector<EnvSetting> none;
  return node < plan.network_env.size() ? plan.network_env[node] : none;
}

Json envSettingsToJson(const std::vector<EnvSetting>& env) {
  Json out = Json::array();
  for (const auto& s : env)
    out.push_back({{"name", s.name},
                   {"value", s.value},
                   {"source", s.source},
                   {"overridden_by_user", s.overridden_by_user},
                   {"user_value", s.user_value},
                   {"user_source", s.user_source},
                   {"conflict", s.conflict},  // "" when none
                   {"effective", s.effective()}});
  return out;
}

Json networkToJson(const JobPlan& plan) {
  Json j = networkChoiceToJson(*plan.network);
  Json per_node = Json::array();
  for (size_t i = 0; i < plan.network->nodes.size(); ++i)
    per_node.push_back({{"node", plan.network->nodes[i].node}, {"env", envSettingsToJson(nodeEnv(plan, i))}});
  j["env"] = per_node;
  return j;
}

// "K=V" entries as an object; a later entry for the same name wins, as in the rank's environment.
Json envObject(const std::vector<std::string>& env) {
  Json out = Json::object();
  for (const auto& kv : env) {
    const size_t eq = kv.find('=');
    out[kv.substr(0, eq)] = eq == std::string::npos ? "" : kv.substr(eq + 1);
  }
  return out;
}

// What tlaunchd adds to every rank's environment at fork time (rank_env_builder.h), and
// MASTER_PORT when no node chose it yet (--offline).
Json addedAtFork(const JobPlan& plan) {
  Json out = Json::array();
  for (const auto& v : daemonAddedVariables()) out.push_back({{"name", v.name}, {"why", v.why}});
  if (plan.master_port == 0)
    out.push_back({{"name", "MASTER_PORT"}, {"why", "to be decided: a free port on rank 0's node, chosen when it reports"}});
  return out;
}

std::string exportsText(const JobPlan& plan) {
  if (plan.exports.empty()) return "";
  std::string out = "exported to every rank (yours win over tlaunch's values):\n";
  for (const auto& e : plan.exports) out += "    " + e.name + "=" + e.value + "  (" + e.source + ")\n";
  return out;
}

// What tlaunch itself sets in every rank besides the network's variables (shown per node): the
// identity variables by family, and the defaults with rank 0's values (the user's own win).
std::string rankEnvironmentText(const JobPlan& plan) {
  if (plan.nodes.empty() || plan.nodes.front().ranks.empty()) return "";
  const NodeLaunch& node = plan.nodes.front();
  const RankSpec& rank0 = node.ranks.front();
  std::string defaults;
  for (const char* name : {"OMP_NUM_THREADS", "PYTHONUNBUFFERED", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING"}) {
    auto value = envLookup(rank0.env, name);
    if (!value) value = envLookup(node.base_env, name);
    defaults += std::string(" ") + name + (value ? "=" + *value : " unset");
  }
  return "each rank also gets torchrun's RANK, LOCAL_RANK, WORLD_SIZE, ... and TORCHELASTIC_*, Open MPI's "
         "OMPI_COMM_WORLD_*, TLAUNCH_*\n    and defaults (rank 0's values; yours win):" +
         defaults + "  (--json has every rank's environment)\n";
}

// Variables from DeepSpeed's environment files, named: a forgotten ~/.deepspeed_env surprises.
std::string environmentFilesLine(const JobPlan& plan) {
  std::string files;
  int count = 0;
  for (const auto& e : plan.exports) {
    const auto colon = e.source.rfind(':');
    if (e.source == "-x" || colon == std::string::npos) continue;
    ++count;
    const std::string file = e.source.substr(0, colon);
    if (files.find(file) == std::string::npos) files += (files.empty() ? "" : ", ") + file;
  }
  if (count == 0) return "";
  return "\nenvironment files: " + files + " (" + std::to_string(count) + " variable(s); --dry-run lists them)";
}

// Each node's count of ranks, in order.
std::vector<int> ranksByNode(const JobPlan& plan) {
  std::vector<int> counts;
  for (const auto& n : plan.nodes) counts.push_back(static_cast<int>(n.ranks.size()));
  return counts;
}

// "2", or each node's "3, 1" where they differ (at most 8, then "and N more").
std::string ranksPerNodeText(const JobPlan& plan) {
  const std::vector<int> counts = ranksByNode(plan);
  if (std::all_of(counts.begin(), counts.end(), [&](int c) { return c == plan.ranks_per_node; }))
    return std::to_string(plan.ranks_per_node);
  return joinSome(counts, 8);
}

// "4 node(s) x 2 rank(s)", "2 node(s) x 4 rank(s) (2 on the last)", "3 node(s), 7 ranks (3, 2, 2)".
std::string nodesAndRanks(const JobPlan& plan) {
  const std::vector<int> counts = ranksByNode(plan);
  const std::string nodes = std::to_string(counts.size()) + " node(s)";
  const bool same_but_last = counts.empty() || std::all_of(counts.begin(), counts.end() - 1, [&](int c) {
                               return c == plan.ranks_per_node;
                             });
  if (same_but_last)
    return nodes + " x " + std::to_string(plan.ranks_per_node) + " rank(s)" +
           (counts.empty() || counts.back() == plan.ranks_per_node ? "" : " (" + std::to_string(counts.back()) + " on the last)");
  return nodes + ", " + std::to_string(plan.world_size) + " ranks (" + ranksPerNodeText(plan) + ")";
}

}  // namespace

std::string renderNetwork(const JobPlan& plan) {
  if (!plan.network && plan.network_unasked)
    return "network: not chosen offline: it is chosen from every node's interfaces when the job runs (--dry-run "
           "without --offline asks the nodes)\n";
  if (!plan.network) return "network: loopback (every node is this host): NCCL, Gloo, TensorPipe and Open MPI on lo\n";
  std::string out = networkSummary(*plan.network);
  for (size_t i = 0; i < plan.network->nodes.size(); ++i)
    out += networkNode(plan.network->nodes[i], plan.network->rdma, nodeEnv(plan, i));
  return out + networkNotes(*plan.network);
}

namespace {

// The table of the checks worth reading (`notable`), or the one-line summary when there are none.
std::string preflightText(const JobPlan& plan, const std::vector<PreflightItem>& notable) {
  return notable.empty() ? "preflight: " + preflightSummary(plan.preflight_items) + "\n" : renderPreflightTable(notable);
}

}  // namespace

std::string renderPreflight(const JobPlan& plan) {
  if (plan.preflight_items.empty()) return "";
  return preflightText(plan, notablePreflight(plan.preflight_items));
}

Json planToJson(const JobPlan& plan) {
  Json nodes = Json::array();
  for (const auto& n : plan.nodes) {
    Json ranks = Json::array();
    for (const auto& r : n.ranks)
      ranks.push_back({{"rank", r.rank}, {"local_rank", r.local_rank}, {"env", envObject(r.env)}});
    // A rank's environment: base_env (inherited and -x), its env over it, then env_added_at_fork.
    nodes.push_back({{"node", n.node_name}, {"base_env", envObject(n.base_env)}, {"ranks", ranks}});
  }
  Json j = {{"job_id", plan.job_id},
            {"world_size", plan.world_size},
            {"ranks_per_node", plan.ranks_per_node},
            {"ranks_by_node", ranksByNode(plan)},
            {"ranks_per_node_from", plan.ranks_source},
            {"master_addr", plan.master_addr},
            {"master_port", plan.master_port},
            {"nodes", nodes},
            {"env_added_at_fork", addedAtFork(plan)},
            {"warnings", plan.warnings}};
  if (!plan.exports.empty()) {
    Json exports = Json::array();
    for (const auto& e : plan.exports) exports.push_back({{"name", e.name}, {"value", e.value}, {"source", e.source}});
    j["exports"] = exports;
  }
  if (plan.network) j["network"] = networkToJson(plan);
  else if (plan.network_unasked) j["network"] = {{"chosen", false}, {"why", "offline: chosen when the job runs"}};
  else j["network"] = {{"loopback", true}, {"interface", "lo"}};  // every node is this host
  if (!plan.manifest.empty()) {
    j["ranks"] = manifestToJson(plan.manifest);
    j["fingerprint"] = plan.fingerprint;
  }
  if (!plan.preflight_items.empty()) j["preflight"] = preflightToJson(plan.preflight_items);
  return j;
}

std::string renderPlanText(const JobPlan& plan) {
  std::string out = "job " + plan.job_id + ": " + nodesAndRanks(plan) + ", world size " + std::to_string(plan.world_size) +
                    "\nranks per node: " + ranksPerNodeText(plan) + " (" + plan.ranks_source + ")" +
                    "\nMASTER_ADDR=" + plan.master_addr + " MASTER_PORT=" + std::to_string(plan.master_port) + "\n";
  out += exportsText(plan) + rankEnvironmentText(plan);
  for (const auto& n : plan.nodes) {
    if (n.ranks.empty()) continue;
    out += "node " + n.node_name + ": ranks " + std::to_string(n.ranks.front().rank) + "-" +
           std::to_string(n.ranks.back().rank) + "\n";
  }
  out += renderNetwork(plan) + renderPreflight(plan);
  if (!plan.manifest.empty())
    out += "binding (fingerprint " + plan.fingerprint + "):\n" + renderManifestTable(plan.manifest);
  for (const auto& w : plan.warnings) out += "warning: " + w + "\n";
  return out;
}

std::string renderBanner(const JobPlan& plan, const JobSpec& spec) {
  std::string text = "job " + plan.job_id + ": " + nodesAndRanks(plan) +
                     (plan.ranks_source.empty() ? "" : " (" + plan.ranks_source + ")") + ", MASTER_ADDR " +
                     plan.master_addr + ":" + std::to_string(plan.master_port);
  if (!plan.manifest.empty()) text += ", binding " + plan.fingerprint;
  text += environmentFilesLine(plan);
  if (plan.network) {
    const auto& nodes = plan.network->nodes;
    text += "\n" + networkSummary(*plan.network);
    constexpr size_t kShown = 4;
    for (size_t i = 0; i < nodes.size() && i < kShown; ++i)
      text += networkNode(nodes[i], plan.network->rdma, nodeEnv(plan, i));
    if (nodes.size() > kShown)
      text += "  ... (" + std::to_string(nodes.size() - kShown) + " more nodes: tlaunch --dry-run shows all)\n";
    text += networkNotes(*plan.network);  // of the whole job: said however many nodes are listed
  }
  const auto notable = notablePreflight(plan.preflight_items);  // once: it decides and it is shown
  if (spec.preflight != PreflightMode::off && !plan.preflight_items.empty() && (plan.network || !notable.empty())) {
    if (text.back() != '\n') text += "\n";
    text += preflightText(plan, notable);
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace tlaunch
