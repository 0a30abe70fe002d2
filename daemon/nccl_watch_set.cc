#include "daemon/nccl_watch_set.h"

#include <unistd.h>

#include <charconv>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "bootstrap/pmix_dirs.h"
#include "daemon/daemon_session.h"
#include "daemon/stale_job_files.h"
#include "launcher/nccl/nccl_check.h"

namespace tlaunch {

namespace {

std::vector<std::string> namesIn(const std::vector<std::string>& env) {
  std::vector<std::string> names;
  for (const auto& kv : env) names.push_back(kv.substr(0, kv.find('=')));
  return names;
}

}  // namespace

std::string ncclLogDir(const std::string& job_id, const std::string& node) {
  return nodeTmpBase() + "/" + jobDirName(job_id, node) + ".nccl";
}

NcclWatchSet::NcclWatchSet(asio::io_context& io, std::string dir, Send send)
    : timer_(io), dir_(std::move(dir)), send_(std::move(send)) {}

NcclWatchSet::~NcclWatchSet() {
  try {  // asio's cancel() throws on a failing epoll_ctl: the directory goes regardless
    timer_.cancel();
  } catch (const std::exception&) {
  }
  removeTree(dir_);
}

Result<std::unique_ptr<NcclWatchSet>> NcclWatchSet::start(asio::io_context& io, std::string dir,
                                                          std::vector<RankLaunch>& launches, Send send) {
  if (auto r = makeRankDir(dir, static_cast<uint32_t>(::getuid()), static_cast<uint32_t>(::getgid()), "this node"); !r)
    return tl::unexpected(r.error());
  // Marked like the PMIx job directory: should this daemon be killed, a later one removes it.
  if (!writeOwnerMark(dir)) spdlog::warn("could not mark {} as this daemon's", dir);
  std::unique_ptr<NcclWatchSet> set(new NcclWatchSet(io, std::move(dir), std::move(send)));
  for (auto& l : launches) {
    // The rank's environment already holds what the user set (forwarded or -x): theirs wins.
    auto d = nccl::debugEnv(nccl::CheckMode::warn, namesIn(l.env), nccl::rankLogPath(set->dir_, l.rank));
    for (const auto& [k, v] : d.env) l.env.push_back(k + "=" + v);
    if (d.source == nccl::LogSource::file) set->files_.emplace(l.rank, NcclLogWatch(set->dir_, l.rank));
    if (d.source == nccl::LogSource::stderr_lines) set->stderr_.emplace(l.rank, NcclLogWatch("", l.rank));
  }
  if (!set->files_.empty()) set->arm();
  return set;
}

void NcclWatchSet::arm() {
  timer_.expires_after(kInterval);
  timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;  // cancelled: `this` may be gone
    poll();
  });
}

std::map<int, std::vector<std::string>> NcclWatchSet::filesByRank(const std::string& dir) {
  std::map<int, std::vector<std::string>> by_rank;
  constexpr std::string_view prefix = "nccl.rank";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix) || !entry.is_regular_file(ec)) continue;
    int rank = -1;
    const char* digits = name.data() + prefix.size();
    const auto [end, err] = std::from_chars(digits, name.data() + name.size(), rank);
    if (err != std::errc() || end == digits || *end != '.' || rank < 0) continue;
    by_rank[rank].push_back(std::move(name));
  }
  return by_rank;
}

void NcclWatchSet::poll() {
  bool pending = false;
  auto by_rank = filesByRank(dir_);
  for (auto& [rank, w] : files_) {
    if (w.finished()) continue;
    if (const auto it = by_rank.find(rank); it != by_rank.end()) w.poll(it->second);
    sendReady(w);
    pending = pending || !w.finished();
  }
  if (pending) arm();
}

void NcclWatchSet::pollNow(int rank) {
  const auto w = files_.find(rank);
  if (w == files_.end() || w->second.finished()) return;
  w->second.poll();  // lists the directory for this rank's files only
  sendReady(w->second);
}

void NcclWatchSet::onStderr(int rank, std::string_view bytes) {
  auto it = stderr_.find(rank);
  if (it == stderr_.end() || it->second.finished()) return;
  it->second.feed(bytes);
  sendReady(it->second);
}

void NcclWatchSet::sendReady(NcclLogWatch& w) {
  if (w.ready()) send_(w.takeSummary());
}

}  // namespace tlaunch

namespace tlaunch {

// DaemonSession's part, here to keep daemon_session.cc about the session.

void DaemonSession::startNcclWatch(std::vector<RankLaunch>& launches) {
  auto set = NcclWatchSet::start(io_, ncclLogDir(launch_->job_id, launch_->node_name), launches, [this](const Json& m) {
    if (conn_ && conn_->isOpen()) conn_->send(m);
  });
  // Without its directory the job runs unchecked: the check must never stop a job by itself.
  if (!set) spdlog::warn("--nccl-check: {}", set.error().message);
  else nccl_ = std::move(*set);
}

}  // namespace tlaunch
