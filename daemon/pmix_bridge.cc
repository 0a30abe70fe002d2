#include "daemon/pmix_bridge.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "bootstrap/frame_codec.h"
#include "bootstrap/pmix_dirs.h"
#include "daemon/pmix_pubsub_wire.h"
#include "daemon/stale_job_files.h"
#include "tlaunch/wall_clock.h"

namespace tlaunch {

namespace {
// The node directory's shared-memory twin (shmTwinName: the stale-job sweeper removes both),
// plus `suffix`; "" where /dev/shm is not writable (libpmix's store then lives under job_tmpdir).
std::string shmDirFor(const std::string& twin_name, const std::string& suffix) {
  if (::access("/dev/shm", W_OK) != 0) return "";
  return "/dev/shm/" + twin_name + suffix;
}
}  // namespace

namespace {
// libpmix writes its job data into files (/dev/shm, the job's directory): a file size limit
// (ulimit -f, inherited through ssh or srun) makes that fail with no word of why. Said, where
// one is in force.
Error withFileSizeLimit(Error e) {
  rlimit fsize{};
  if (::getrlimit(RLIMIT_FSIZE, &fsize) != 0 || fsize.rlim_cur == RLIM_INFINITY) return e;
  e.code = Errc::resources;
  e.message += " (the file size limit here is " + std::to_string(fsize.rlim_cur) +
               " bytes, ulimit -f: libpmix cannot write its job data; raise it, e.g. ulimit -f unlimited, where "
               "tlaunch starts)";
  return e;
}
}  // namespace

Result<std::unique_ptr<PmixBridge>> PmixBridge::start(asio::io_context& io, const NodeLaunch& launch, const Send& send,
                                                     std::string topology_xml) {
  // Leftovers of jobs whose daemon was killed before it could clean up (see stale_job_files.h).
  for (const auto& dir : removeStaleJobDirs(nodeTmpBase(), "/dev/shm"))
    spdlog::debug("removed {}: its job's tlaunchd is gone", dir);  // not this job's news (nor its last words)
  std::unique_ptr<PmixBridge> b(new PmixBridge());
  b->send_ = send;
  b->io_ = &io;
  b->this_node_ = launch.pmix.this_node;
  // Per node and job, so that simulated nodes sharing /tmp and two jobs at once never collide.
  b->node_dir_ = nodeTmpBase() + "/" + jobDirName(launch.job_id, launch.node_name);
  b->shm_twin_ = shmTwinName(std::filesystem::path(b->node_dir_).filename().string());
  // Created on its own first: it lives in a shared directory (makeRankDir refuses a planted one).
  if (auto r = makeRankDir(b->node_dir_, static_cast<uint32_t>(::getuid()), static_cast<uint32_t>(::getgid()), launch.node_name); !r)
    return tl::unexpected(r.error());
  // Marked at once: a daemon killed while its PMIx server starts (the OOM killer, kill -9) left
  // an unmarked directory, which no later daemon may remove.
  if (!writeOwnerMark(b->node_dir_)) spdlog::warn("could not mark {} as this daemon's", b->node_dir_);
  if (auto r = makeRankDir(b->node_dir_ + "/errors", static_cast<uint32_t>(::getuid()), static_cast<uint32_t>(::getgid()),
                          launch.node_name);
      !r)
    return tl::unexpected(r.error());
  PmixServerConfig cfg;
  cfg.node_name = launch.node_name;
  cfg.node_index = launch.pmix.this_node;
  cfg.tmpdir = b->node_dir_ + "/server";
  cfg.uid = static_cast<uint32_t>(::getuid());
  cfg.gid = static_cast<uint32_t>(::getgid());
  cfg.topology_xml = topology_xml;
  PmixServer::Callbacks cb;
  cb.fence_contribution = [send](uint64_t seq, const std::string& blob, bool collect) {
    send({{"t", "fence"}, {"seq", seq}, {"collect", collect}, {"d", binary(blob)}});
  };
  cb.direct_modex_request = [send](uint64_t id, int rank) { send({{"t", "dmodex_req"}, {"id", id}, {"rank", rank}}); };
  cb.abort = [send](int rank, int status, std::string message) {
    // When the rank called it, on this node's wall clock, as its exit would be stamped: the
    // frontend names the earliest failure (launcher/failure_blame.h), and an abort that waited
    // behind output must not lose to the peers that failed of it.
    send({{"t", "abort"}, {"r", rank}, {"status", status}, {"message", message}, {"at_us", wallClockMicros()}});
  };
  // The frontend waits --event-grace for the ranks' event handlers only when a rank uses PMIx.
  cb.client_connected = [send, unfinalized = b->unfinalized_, probe = b->mpi_probe_](int rank) {
    unfinalized->insert(rank);
    Json m = {{"t", "pmix_client"}, {"r", rank}};
    if (*probe && (*probe)(rank)) m["mpi"] = true;
    send(std::move(m));
  };
  cb.client_finalized = [unfinalized = b->unfinalized_](int rank) { unfinalized->erase(rank); };
  addPubsubCallbacks(cb, send);
  cb.answer_at = [bridge = b.get()](std::chrono::steady_clock::time_point at, std::function<void()> answer) {
    bridge->answerAt(at, std::move(answer));
  };
  cb.spawn = [send](uint64_t id, const PmixSpawnRequest& request) { send(spawnRequestToJson(id, request)); };
  auto server = PmixServer::start(cfg, [&io](std::function<void()> f) { asio::post(io, std::move(f)); }, std::move(cb));
  if (!server) return tl::unexpected(withFileSizeLimit(server.error()));
  b->server_ = std::move(*server);
  PmixJobLayout layout;
  layout.nspace = launch.pmix.nspace;
  layout.node_names = launch.pmix.node_names;
  layout.ranks_by_node = launch.pmix.ranks_by_node;
  layout.this_node = launch.pmix.this_node;
  layout.job_tmpdir = b->node_dir_ + "/job";
  layout.shm_dir = shmDirFor(b->shm_twin_, "");
  layout.tcp_if_include = launch.pmix.tcp_if_include;
  layout.oversubscribed = launch.pmix.oversubscribed;
  b->topology_xml_ = std::move(topology_xml);
  layout.topology_xml = b->topology_xml_;
  if (auto r = b->server_->registerJob(layout); !r) return tl::unexpected(withFileSizeLimit(r.error()));
  return b;
}

PmixBridge::~PmixBridge() {
  finish();
  // The job's files go first: PMIx_server_finalize can take seconds on a loaded node, and a
  // daemon killed meanwhile (srun ends the step once tlaunch is gone) must not leave them.
  std::error_code ec;
  std::filesystem::remove_all(node_dir_, ec);
  server_.reset();
}

Result<void> PmixBridge::registerSpawned(const SpawnedJob& job, const NodeLaunch& launch) {
  PmixJobLayout layout;
  layout.nspace = job.nspace;
  layout.parent_nspace = job.parent_nspace;
  layout.parent_rank = static_cast<uint32_t>(job.parent_rank);
  layout.this_node = -1;
  for (size_t i = 0; i < job.nodes.size(); ++i) {
    const auto n = static_cast<size_t>(job.nodes[i]);
    if (n >= launch.pmix.node_names.size()) return fail(Errc::protocol, "a spawn placed on an unknown node");
    layout.node_names.push_back(launch.pmix.node_names[n]);
    layout.node_ids.push_back(static_cast<uint32_t>(n));
    if (job.nodes[i] == launch.pmix.this_node) layout.this_node = static_cast<int>(i);
  }
  layout.ranks_by_node = job.ranks_by_node;
  for (int a : job.app_of_rank) layout.appnum_of_rank.push_back(static_cast<uint32_t>(a));
  // Beside the job's directory, not in it: deregistering a failed Open MPI rank runs the cleanup
  // it registered, which removes the job's whole directory (and a spawn's inside it after that).
  layout.job_tmpdir = node_dir_ + "/spawn" + std::to_string(job.id);
  layout.shm_dir = shmDirFor(shm_twin_, ".spawn" + std::to_string(job.id));
  layout.tcp_if_include = launch.pmix.tcp_if_include;
  layout.topology_xml = topology_xml_;
  // Remembered even if the registration failed half way: the cancel that follows forgets it.
  spawned_nspaces_[job.id] = job.nspace;
  return server_->registerSpawned(layout, job.base);
}

void PmixBridge::endSpawned(int spawn_id) {
  auto it = spawned_nspaces_.find(spawn_id);
  if (it == spawned_nspaces_.end()) return;
  std::string nspace = std::move(it->second);
  spawned_nspaces_.erase(it);
  // A moment later: libpmix's thread may not have read yet that the procs' sockets closed (as
  // in onLocalRankFailed), and their failure events are held here for 200 ms.
  later(end_timers_, spawn_id, kForgetSpawnedAfter, [this, nspace = std::move(nspace)] {
    if (auto r = server_->deregisterSpawned(nspace); !r) spdlog::warn("{}", r.error().message);
  });
}

void PmixBridge::later(std::map<int, std::unique_ptr<asio::steady_timer>>& timers, int key,
                       std::chrono::milliseconds delay, std::function<void()> f) {
  auto& timer = timers[key];  // owned here: the bridge's end cancels it
  timer = std::make_unique<asio::steady_timer>(*io_, delay);
  timer->async_wait([this, alive = std::weak_ptr<bool>(alive_), &timers, key, f = std::move(f)](const asio::error_code& ec) {
    if (ec || !alive.lock() || finished_) return;
    f();
    timers.erase(key);  // one per spawn or failed rank would pile up over a long job
  });
}

void PmixBridge::answerAt(std::chrono::steady_clock::time_point at, std::function<void()> answer) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at - std::chrono::steady_clock::now());
  later(answer_timers_, next_answer_timer_++ % 1'000'000'000, std::max(left, std::chrono::milliseconds(0)),
        std::move(answer));
}

Result<void> PmixBridge::setupFork(int rank, std::vector<std::string>& env) { return server_->setupFork(rank, env); }

void PmixBridge::onMessage(const std::string& type, const Json& msg) {
  if (type == "fence_done") {
    // "lost": a rank of the job has failed, so the fence cannot complete (and does not hang).
    const auto seq = static_cast<uint64_t>(getInt(msg, "seq"));
    if (getBool(msg, "lost")) server_->completeFence(seq, PmixReply::proc_lost, {});
    else server_->completeFence(seq, getBool(msg, "ok"), bytesAt(msg, "d"));
  } else if (type == "rank_failed") {
    auto held = held_events_.find(static_cast<int>(getInt(msg, "r", -1)));
    if (held != held_events_.end()) held->second.push_back(msg);
    else notify(msg);
  } else if (type == "dmodex_serve") {
    // Another node's rank asks for one of ours: libpmix answers once our rank has committed.
    const auto from = getInt(msg, "from");
    const auto id = getInt(msg, "id");
    Send send = send_;
    server_->serveDirectModex(static_cast<int>(getInt(msg, "rank")), [send, from, id](bool ok, const std::string& data) {
      // More than one frame carries: sent, it would be refused above and this node taken for lost.
      if (data.size() > kMaxCollectedBytes)
        return send({{"t", "dmodex_resp"}, {"to", from}, {"id", id}, {"ok", false}, {"too_big", data.size()}, {"d", binary("")}});
      send({{"t", "dmodex_resp"}, {"to", from}, {"id", id}, {"ok", ok}, {"d", binary(data)}});
    });
  } else if (type == "pmix_spawn_done") {
    const auto status = static_cast<PmixReply>(getInt(msg, "status", static_cast<int>(PmixReply::not_supported)));
    server_->completeSpawn(static_cast<uint64_t>(getInt(msg, "id")), status, getString(msg, "nspace"));
  } else if (type == "dmodex_done") {
    const auto status = getBool(msg, "ok")        ? PmixReply::ok
                        : getBool(msg, "timeout") ? PmixReply::timeout
                        : getBool(msg, "no_room") ? PmixReply::no_room
                                                  : PmixReply::not_found;
    server_->completeDirectModex(static_cast<uint64_t>(getInt(msg, "id")), status, bytesAt(msg, "d"));
  } else {
    onPubsubMessage(*server_, type, msg, this_node_);
  }
}

void PmixBridge::notify(const Json& msg) {
  server_->notifyRankFailed(static_cast<int>(getInt(msg, "r", -1)), getBool(msg, "aborted"),
                            static_cast<int>(getInt(msg, "status", 1)));
}

void PmixBridge::onLocalRankFailed(int rank) {
  if (finished_ || !server_ || held_events_.count(rank)) return;
  held_events_[rank];
  // The rank's socket closed as it died, but libpmix's thread may not have read that yet; if
  // it is forgotten first, libpmix never learns that the client is gone.
  later(forget_timers_, rank, std::chrono::milliseconds(200), [this, rank] {
    server_->forgetFailedRank(rank);
    auto held = held_events_.extract(rank);
    for (const auto& msg : held.mapped()) notify(msg);
  });
}

void PmixBridge::finish() {
  if (finished_ || !server_) return;
  finished_ = true;
  if (auto r = server_->deregisterJob(std::chrono::seconds(3)); !r)
    spdlog::warn("PMIx teardown: {}", r.error().message);
}

}  // namespace tlaunch
