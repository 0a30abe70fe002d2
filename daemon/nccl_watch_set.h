#pragma once
// --nccl-check on a node: sets each rank's NCCL debug variables (unless the user set
// NCCL_DEBUG: then their stderr is read), tails the per-rank files in this job's directory on
// a timer on the io thread, and sends each rank's summary once it shows Init COMPLETE.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <asio.hpp>

#include "daemon/nccl_log_watch.h"
#include "daemon/rank_spawner.h"
#include "tlaunch/result.h"

namespace tlaunch {

// The node's NCCL log directory for the job: its job directory's name (random part, node name
// cut: stale_job_files.h) and ".nccl", under TMPDIR. The job id is in ps: another user who
// could predict the name would create it first and turn the check off.
std::string ncclLogDir(const std::string& job_id, const std::string& node);

class NcclWatchSet {
 public:
  using Send = std::function<void(const Json&)>;
  // Creates DIR (0700) and adds NCCL_DEBUG/NCCL_DEBUG_SUBSYS/NCCL_DEBUG_FILE to `launches`.
  static Result<std::unique_ptr<NcclWatchSet>> start(asio::io_context& io, std::string dir,
                                                     std::vector<RankLaunch>& launches, Send send);
  ~NcclWatchSet();  // removes DIR
  NcclWatchSet(const NcclWatchSet&) = delete;
  NcclWatchSet& operator=(const NcclWatchSet&) = delete;

  // A rank's stderr bytes: parsed when its NCCL debug output goes there.
  void onStderr(int rank, std::string_view bytes);
  // The directory's regular files, by the rank their name says ("nccl.rank<N>.<host>.<pid>.log"),
  // listed once for all: each rank listing it (a node of 1,000 ranks) cost seconds.
  static std::map<int, std::vector<std::string>> filesByRank(const std::string& dir);
  // Reads `rank`'s files now: a rank that exited may have written its last lines since the last tick.
  void pollNow(int rank);

 private:
  NcclWatchSet(asio::io_context& io, std::string dir, Send send);
  void arm();
  void poll();
  void sendReady(NcclLogWatch& w);

  static constexpr auto kInterval = std::chrono::milliseconds(200);
  asio::steady_timer timer_;
  std::string dir_;
  Send send_;
  std::map<int, NcclLogWatch> files_;   // ranks whose log goes to the directory
  std::map<int, NcclLogWatch> stderr_;  // ranks whose log goes to stderr (the user's NCCL_DEBUG)
};

}  // namespace tlaunch
