#include "bootstrap/pmix_spawn_wire.h"

#include <set>

namespace tlaunch {
namespace {

Json appToJson(const PmixSpawnApp& a) {
  return {{"argv", a.argv}, {"env", a.env}, {"cwd", a.cwd}, {"n", a.maxprocs}, {"hosts", a.hosts}};
}

PmixSpawnApp appFromJson(const Json& j) {
  PmixSpawnApp a;
  a.argv = j.at("argv").get<std::vector<std::string>>();
  a.env = j.value("env", std::vector<std::string>{});
  a.cwd = j.value("cwd", std::string());
  a.maxprocs = j.value("n", 1);
  a.hosts = j.value("hosts", std::vector<std::string>{});
  if (!a.argv.empty()) a.cmd = a.argv.front();
  return a;
}

Result<std::vector<PmixSpawnApp>> appsFromJson(const Json& j) {
  if (!j.is_array() || j.empty() || j.size() > static_cast<size_t>(kMaxSpawnApps))
    return fail(Errc::protocol, "a PMIx spawn needs 1 to " + std::to_string(kMaxSpawnApps) + " apps");
  std::vector<PmixSpawnApp> apps;
  for (const auto& a : j) {
    apps.push_back(appFromJson(a));
    if (apps.back().argv.empty()) return fail(Errc::protocol, "a PMIx spawn app without a command");
  }
  return apps;
}

}  // namespace

Json spawnRequestToJson(uint64_t request_id, const PmixSpawnRequest& request) {
  Json apps = Json::array();
  for (const auto& a : request.apps) apps.push_back(appToJson(a));
  return {{"t", "pmix_spawn"}, {"id", request_id}, {"r", request.requester}, {"apps", apps}, {"hosts", request.hosts}};
}

Result<PmixSpawnRequest> spawnRequestFromJson(const Json& j) {
  try {
    PmixSpawnRequest r;
    r.requester = j.at("r").get<int>();
    auto apps = appsFromJson(j.at("apps"));
    if (!apps) return tl::unexpected(apps.error());
    r.apps = std::move(*apps);
    r.hosts = j.value("hosts", std::vector<std::string>{});
    long long total = 0;
    for (const auto& a : r.apps) {
      if (a.maxprocs < 1) return fail(Errc::usage, "an app asks for " + std::to_string(a.maxprocs) + " processes");
      total += a.maxprocs;
    }
    if (total > kMaxSpawnProcs)
      return fail(Errc::usage, "it asks for " + std::to_string(total) + " processes, more than tlaunch's bound of " +
                                   std::to_string(kMaxSpawnProcs) + " per spawn");
    return r;
  } catch (const std::exception& e) {
    return fail(Errc::protocol, std::string("malformed PMIx spawn request: ") + e.what());
  }
}

Json spawnedJobToJson(const SpawnedJob& job) {
  Json apps = Json::array();
  for (const auto& a : job.apps) apps.push_back({{"argv", a.argv}, {"env", a.env}, {"cwd", a.cwd}});
  return {{"t", "pmix_spawn_job"}, {"k", job.id},       {"nspace", job.nspace},       {"base", job.base},
          {"pns", job.parent_nspace}, {"pr", job.parent_rank}, {"nodes", job.nodes}, {"ranks", job.ranks_by_node},
          {"apps", apps},          {"app_of", job.app_of_rank}};
}

Result<SpawnedJob> spawnedJobFromJson(const Json& j, int job_nodes) {
  try {
    SpawnedJob s;
    s.id = j.at("k").get<int>();
    s.nspace = j.at("nspace").get<std::string>();
    s.base = j.at("base").get<int>();
    s.parent_nspace = j.at("pns").get<std::string>();
    s.parent_rank = j.at("pr").get<int>();
    s.nodes = j.at("nodes").get<std::vector<int>>();
    s.ranks_by_node = j.at("ranks").get<std::vector<std::vector<int>>>();
    auto apps = appsFromJson(j.at("apps"));
    if (!apps) return tl::unexpected(apps.error());
    s.apps = std::move(*apps);
    s.app_of_rank = j.at("app_of").get<std::vector<int>>();
    auto bad = [](const std::string& why) { return fail(Errc::protocol, "malformed PMIx spawn placement: " + why); };
    if (s.id < 1 || s.base < 1 || s.nspace.empty() || s.parent_nspace.empty() || s.parent_rank < 0)
      return bad("its name, number or parent");
    if (s.size() < 1 || s.size() > kMaxSpawnProcs) return bad(std::to_string(s.size()) + " ranks");
    if (s.nodes.empty() || s.nodes.size() != s.ranks_by_node.size()) return bad("nodes and their ranks differ");
    std::set<int> nodes, ranks;
    for (size_t i = 0; i < s.nodes.size(); ++i) {
      if (s.nodes[i] < 0 || s.nodes[i] >= job_nodes || !nodes.insert(s.nodes[i]).second)
        return bad("node " + std::to_string(s.nodes[i]));
      if (s.ranks_by_node[i].empty()) return bad("a node without ranks");
      for (int r : s.ranks_by_node[i])
        if (r < 0 || r >= s.size() || !ranks.insert(r).second) return bad("rank " + std::to_string(r));
    }
    if (static_cast<int>(ranks.size()) != s.size()) return bad("a rank placed nowhere");
    for (int a : s.app_of_rank)
      if (a < 0 || a >= static_cast<int>(s.apps.size())) return bad("app " + std::to_string(a));
    return s;
  } catch (const std::exception& e) {
    return fail(Errc::protocol, std::string("malformed PMIx spawn placement: ") + e.what());
  }
}

}  // namespace tlaunch
