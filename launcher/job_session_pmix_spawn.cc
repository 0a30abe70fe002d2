// PMIx_Spawn at the frontend. A daemon sends a rank's request ("pmix_spawn"); the frontend
// places the processes (launcher/pmix_spawns.h) and sends the placement to every node that still
// runs ranks ("pmix_spawn_job"): each registers the new namespace (so that connect, fences and
// direct modex across namespaces work everywhere) and prepares its share ("pmix_spawn_ready").
// Only once every node is ready do the hosts start their processes ("pmix_spawn_start" /
// "pmix_spawn_started"): a missing program or working directory on one node fails the spawn
// with nothing started anywhere. Then the caller gets the namespace ("pmix_spawn_done").
// Spawned processes are the job's like its ranks: output tagged ("spawn1:0"), exits counted,
// a failure ends the job, teardown ends them.
#include <algorithm>

#include "bootstrap/pmix_spawn_wire.h"
#include "launcher/job_session.h"
#include "launcher/job_session_link.h"
#include "launcher/pmix_spawns.h"

namespace tlaunch {

void JobSession::answerSpawn(int requester_node, uint64_t request_id, PmixReply status, const std::string& nspace) {
  sendToNode(requester_node,
             {{"t", "pmix_spawn_done"}, {"id", request_id}, {"status", static_cast<int>(status)}, {"nspace", nspace}});
}

void JobSession::onPmixSpawn(Link& link, const Json& msg) {
  auto request = spawnRequestFromJson(msg);
  const auto id = static_cast<uint64_t>(std::max(0LL, getInt(msg, "id", 0)));
  auto refuse = [&](const std::string& why, PmixReply status) {
    out_.note("PMIx_Spawn from " + (request ? rankName(request->requester) : std::string("a rank")) + " on node " +
              link.name + " refused: " + why);
    answerSpawn(link.index, id, status, {});
  };
  if (!request) return refuse(request.error().message, PmixReply::bad_param);
  if (!pmix_spawns_) return refuse("the job runs without PMIx", PmixReply::not_supported);
  if (phase_ == Phase::starting) return refuse("not every node has started its ranks yet", PmixReply::not_supported);
  if (phase_ != Phase::running || failed_) return refuse("the job is ending", PmixReply::not_supported);
  if (nodeOfRank(request->requester) != link.index)  // a daemon speaks for its own processes only
    return refuse("the caller does not run on that node", PmixReply::bad_param);
  if (spawns_in_flight_.size() >= kMaxSpawnsInFlight) {
    if (spawns_waiting_.size() >= kMaxSpawnsWaiting)
      return refuse(std::to_string(kMaxSpawnsWaiting) + " spawns wait already", PmixReply::no_room);
    if (cfg_.spec.verbose && spawns_waiting_.empty())
      out_.note("PMIx_Spawn: " + std::to_string(kMaxSpawnsInFlight) + " spawns are being started; more wait their turn");
    spawns_waiting_.emplace_back(link.index, msg);
    return;
  }
  auto usable = [this](int node) { return reachable(node) && !links_[static_cast<size_t>(node)]->all_exited; };
  auto placed = pmix_spawns_->place(*request, usable);
  if (!placed) {
    const Error& e = placed.error();
    return refuse(e.message + (e.hint.empty() ? "" : " (" + e.hint + ")"), PmixReply::bad_param);
  }
  SpawnInFlight flight;
  flight.requester_node = link.index;
  flight.request_id = id;
  flight.requester = request->requester;
  const Json job = spawnedJobToJson(*placed);
  for (int n = 0; n < static_cast<int>(links_.size()); ++n) {
    if (!usable(n)) continue;  // ended its ranks: nothing there can meet the new namespace
    flight.told.insert(n);
    flight.awaiting.insert(n);
  }
  for (size_t i = 0; i < placed->nodes.size(); ++i)
    for (int r : placed->ranks_by_node[i])
      out_.setSpawnedTag(placed->base + r, pmix_spawns_->label(placed->base + r),
                         links_[static_cast<size_t>(placed->nodes[i])]->name);
  const int spawn_id = placed->id;
  const auto told = flight.told;
  spawns_in_flight_.emplace(spawn_id, std::move(flight));
  for (int n : told) sendToNode(n, job);
}

void JobSession::onPmixSpawnReady(Link& link, const Json& msg) {
  const int spawn_id = static_cast<int>(getInt(msg, "k", -1));
  auto it = spawns_in_flight_.find(spawn_id);
  if (it == spawns_in_flight_.end() || it->second.starting) return;
  spawnNodeReady(it, link, getBool(msg, "ok"), getString(msg, "message"));
}

bool JobSession::spawnsGoOnWithout(const Link& link, const std::string& reason) {
  for (const auto& [id, f] : spawns_in_flight_)
    if (f.starting && f.awaiting.contains(link.index)) return false;
  std::vector<int> waiting;
  for (const auto& [id, f] : spawns_in_flight_)
    if (f.awaiting.contains(link.index)) waiting.push_back(id);
  for (int id : waiting) {
    auto it = spawns_in_flight_.find(id);
    if (it == spawns_in_flight_.end()) continue;  // answered meanwhile (a spawn that left its flight)
    const SpawnedJob* job = pmix_spawns_->find(id);
    // Processes were placed there when it still ran ranks: the spawn cannot be kept.
    const bool placed_there = job && std::find(job->nodes.begin(), job->nodes.end(), link.index) != job->nodes.end();
    spawnNodeReady(it, link, !placed_there, "its tlaunchd went away (" + reason + ")");
  }
  return true;
}

void JobSession::spawnNodeReady(std::map<int, SpawnInFlight>::iterator it, const Link& link, bool ok,
                                std::string message) {
  const int spawn_id = it->first;
  SpawnInFlight& f = it->second;
  if (!f.awaiting.erase(link.index)) return;
  if (!ok && f.error.empty()) {
    f.error = std::move(message);
    if (f.error.find(link.name) == std::string::npos) f.error = "node " + link.name + ": " + f.error;
  }
  if (!f.awaiting.empty()) return;
  const SpawnedJob* job = pmix_spawns_->find(spawn_id);
  if (f.error.empty() && job) {  // --output-dir: spawn1.rank.0.out beside rank.0.out
    std::vector<std::pair<int, std::string>> files;
    for (int n = job->base; n < job->base + job->size(); ++n) files.emplace_back(n, pmix_spawns_->fileStem(n));
    if (auto opened = out_.openMoreFiles(files); !opened) f.error = opened.error().message;
  }
  if (!f.error.empty() || !job) {
    for (int n : f.told) sendToNode(n, {{"t", "pmix_spawn_cancel"}, {"k", spawn_id}});
    out_.note("PMIx_Spawn from " + rankName(f.requester) + " failed: " + f.error);
    pmix_spawns_->forget(spawn_id);
    answerSpawn(f.requester_node, f.request_id, PmixReply::not_found, {});
    spawnLeftFlight(it);
    return;
  }
  f.starting = true;
  for (int n : job->nodes) {
    f.awaiting.insert(n);
    sendToNode(n, {{"t", "pmix_spawn_start"}, {"k", spawn_id}});
  }
}

void JobSession::onPmixSpawnStarted(Link& link, const Json& msg) {
  const int spawn_id = static_cast<int>(getInt(msg, "k", -1));
  auto it = spawns_in_flight_.find(spawn_id);
  if (it == spawns_in_flight_.end() || !it->second.starting || !it->second.awaiting.erase(link.index)) return;
  if (failed_ || phase_ != Phase::running) return;  // the job ends anyway: the caller goes with it
  if (!getBool(msg, "ok")) {  // fork or exec failed after every check passed: like a rank that cannot start
    fail(exitStatusFor(Errc::internal),
         "node " + link.name + " could not start the processes PMIx_Spawn asked for: " + getString(msg, "message"));
    return;
  }
  link.all_exited = false;  // it runs processes again, and says so when they have ended
  SpawnInFlight& f = it->second;
  if (!f.awaiting.empty()) return;
  const SpawnedJob* job = pmix_spawns_->find(spawn_id);
  if (cfg_.spec.verbose && job) {
    std::string where;
    for (int n : job->nodes) where += (where.empty() ? "" : ", ") + links_[static_cast<size_t>(n)]->name;
    out_.note(rankName(f.requester) + " spawned " + std::to_string(job->size()) + " process" +
              (job->size() == 1 ? "" : "es") + " (namespace " + job->nspace + ") on " + where);
  }
  answerSpawn(f.requester_node, f.request_id, PmixReply::ok, job ? job->nspace : std::string());
  spawnLeftFlight(it);
}

void JobSession::spawnLeftFlight(std::map<int, SpawnInFlight>::iterator it) {
  spawns_in_flight_.erase(it);
  while (!spawns_waiting_.empty() && spawns_in_flight_.size() < kMaxSpawnsInFlight) {
    auto [node, request] = std::move(spawns_waiting_.front());
    spawns_waiting_.pop_front();
    onPmixSpawn(*links_[static_cast<size_t>(node)], request);
  }
}

std::string JobSession::rankName(int rank) const {
  return pmix_spawns_ ? pmix_spawns_->describe(rank) : "rank " + std::to_string(rank);
}

}  // namespace tlaunch
