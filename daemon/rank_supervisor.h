#pragma once
// Owns the ranks of one node: spawns them, relays their output as whole lines, reaps them
// (pidfd, no SIGCHLD races), and tears them down: SIGTERM to each process group and to every
// other process of the job (Containment), SIGKILL after the grace period. Everything runs on
// the daemon's single io_context thread.
#include <chrono>
#include <cstdint>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <asio.hpp>

#include "daemon/containment.h"
#include "daemon/line_splitter.h"
#include "daemon/rank_spawner.h"

namespace tlaunch {

struct RankExit {
  int rank = 0;
  bool signaled = false;
  int code = 0;    // exit status, or the signal number when signaled
  bool killed_by_us = false;  // ended by our teardown (not a failure of its own)
  std::vector<std::string> stderr_tail;
  // When its end was seen, in wall-clock microseconds (CLOCK_REALTIME, comparable across
  // nodes): the frontend blames the earliest failure, not the first report to arrive, which
  // may have waited behind the rank's last output.
  int64_t ended_us = 0;
  // Killed by SIGKILL, not by us, while the kernel's OOM killer ran on the node (daemon/oom_kills.h):
  // most likely out of memory.
  bool oom_killer_ran = false;
};

class RankSupervisor {
 public:
  struct Events {
    // stream 1 or 2; one segment of the line splitter (whole lines, a continued piece, an update)
    std::function<void(int rank, int stream, OutputKind kind, std::string_view bytes)> output;
    // Forwarded stdin reached the rank, or was dropped; `closed`: the rank takes no more (it
    // closed its stdin, or is gone), so the frontend can stop reading its own.
    std::function<void(int rank, size_t bytes, bool closed)> stdin_written;
    std::function<void(const RankExit&)> exited;  // after its output was relayed
    std::function<void()> all_exited;
  };
  static constexpr size_t kTailLines = 20;
  static constexpr size_t kTailLineBytes = 512;  // of each line kept for the summary
  // How long destruction waits for ranks it SIGKILLed before leaving them (see the destructor).
  static constexpr std::chrono::milliseconds kReapBound{2000};
  // At most this much of a stream is read at once when its rank has ended (a full pipe is 64 KiB
  // by default, 1 MiB at most unless root raised fs.pipe-max-size).
  static constexpr size_t kExitDrainLimit = 1 << 20;
  // How long what is left of an ended rank's process group may hold its output open before it is
  // killed (onExited): after a success, and after a failure (well inside the frontend's blame window).
  static constexpr std::chrono::milliseconds kGroupGraceAfterSuccess{1000};
  static constexpr std::chrono::milliseconds kGroupGraceAfterFailure{100};
  // A line left unfinished this long is shown as it is (a prompt, a bar between states): longer
  // than a progress bar's usual pace (tqdm: 10 states a second), short enough to feel at once.
  static constexpr std::chrono::milliseconds kQuietBeforeShowing{200};

  // `job_name`: unique on the node (job id and node name); names the per-job cgroup. `job_marks`:
  // what this node's ranks carry in their environment, for Containment's watcher (none: none).
  RankSupervisor(asio::io_context& io, Events events, const std::string& job_name = "job",
                 const std::vector<std::string>& job_marks = {});
  ~RankSupervisor();
  // `done` of start()/add(): every rank of the batch started, or why not.
  using Started = std::function<void(Result<void>)>;
  // Spawns in order, kSpawnSlice at a time with the event loop running between slices (heartbeats
  // and the frontend's messages do not wait for a node of 1,000 ranks to start); `done` runs from
  // the event loop, never inside the call. If one fails, the ones already started are killed and
  // `done` gets the error. A terminate() meanwhile ends the start early: the ranks started so far
  // are supervised (their ends are ours), the rest never start, and `done` gets success.
  void start(std::vector<RankLaunch> launches, Started done);
  // More ranks while the job runs (PMIx_Spawn's children), after any batch still starting: if one
  // fails to start, those of this batch already started are killed, the others go on, and `done`
  // gets the error. all_exited then waits for these too.
  void add(std::vector<RankLaunch> launches, Started done);
  static constexpr std::chrono::milliseconds kSpawnSlice{50};
  // To each rank's process group (teardown), or to one process of each: for SIGUSR1/SIGUSR2
  // passed on, the topmost that catch it, else the rank's own (signal_catchers.h: a training
  // script behind a wrapper shell gets it, the shell and data-loader workers do not); any
  // other signal (PMIx_Job_control), the rank's own.
  void signalAll(int sig, bool whole_group = true);
  // One rank (PMIx_Job_control): SIGKILL to its process group, other signals to it alone.
  // False if the rank is not here or has exited.
  bool signalRank(int rank, int sig);
  // SIGTERM now, SIGKILL to whatever is left after `grace`.
  void terminate(std::chrono::milliseconds grace);
  void killAll();  // SIGKILL now, to everything of the job
  // At the daemon's exit: what the ranks left behind gets SIGTERM, SIGKILL after `grace`;
  // `done` runs (from the io_context) once nothing is left.
  void sweepLeftovers(std::chrono::milliseconds grace, std::function<void()> done);
  const std::string& containmentNote() const { return containment_->describe(); }
  // Children of the daemon that are not the job's (Containment::leaveAlone).
  void leaveAlone(std::function<bool(pid_t)> outsider) { containment_->leaveAlone(std::move(outsider)); }
  void pauseOutput();
  void resumeOutput();
  void writeStdin(int rank, const std::string& data);
  void closeStdin(int rank);
  size_t alive() const;
  // For `tlaunch stacks` and `tlaunch status`.
  struct View {
    int rank = 0;
    pid_t pid = -1;
    bool exited = false;
    std::chrono::steady_clock::time_point last_output;  // its start, if it printed nothing yet
    bool printed = false;
  };
  std::vector<View> view() const;
  bool outputPaused() const { return paused_; }  // held back: the frontend's reader is slow
  bool allExited() const { return reported_ == ranks_.size() && batches_.empty(); }

 private:
  struct Stream {
    std::unique_ptr<asio::posix::stream_descriptor> fd;
    LineSplitter splitter;
    // Not zero-filled, and freed once the rank is reported: a job that spawns processes in a
    // loop keeps a Rank for each until it ends.
    std::unique_ptr<std::array<char, 65536>> buf = std::make_unique_for_overwrite<std::array<char, 65536>>();
    bool reading = false;
    bool eof = false;
    bool closing = false;  // its rank ended and lingered (onExited): no new read, the rest is drained
    // The unfinished line is shown once the rank has written nothing for a moment (a prompt
    // waiting for input, a progress bar between states): OutputKind::unfinished.
    std::unique_ptr<asio::steady_timer> quiet;
    bool quiet_armed = false;
    uint64_t reads = 0;        // reads fed to the splitter so far
    uint64_t quiet_from = 0;   // `reads` when the quiet timer was armed
    uint64_t shown_at = 0;     // `reads` when the unfinished line was last shown
  };
  struct Rank {
    int rank = 0;
    pid_t pid = -1;
    std::unique_ptr<asio::posix::stream_descriptor> pidfd;
    Stream out, err;
    std::unique_ptr<asio::posix::stream_descriptor> stdin_fd;
    std::string stdin_pending, stdin_inflight;
    bool stdin_writing = false;
    bool stdin_close_requested = false;  // the frontend's stdin ended (stdin_eof): close once written
    bool watched = false;  // its batch has started: its pipes are read, its end watched
    std::chrono::steady_clock::time_point spawned_at, watched_at;
    bool exited = false;  // seen to end (a zombie until maybeReport kills its group and reaps it)
    bool ended_by_us = false;  // it ended while the job was being torn down (decided when it ended)
    bool reaped = false;
    bool reported = false;
    int64_t ended_us = 0;  // RankExit::ended_us
    int wait_status = 0;
    std::deque<std::string> tail;
    std::chrono::steady_clock::time_point last_output;
    bool printed = false;
    std::unique_ptr<asio::steady_timer> linger;  // exited but a descendant holds the pipes open
    std::unique_ptr<asio::steady_timer> exit_poll;  // without a pidfd, or a traced zombie: polls waitid
  };
  struct Batch {
    std::vector<RankLaunch> launches;
    size_t next = 0;      // the next launch to spawn
    size_t first = 0;     // its first rank in ranks_, once it has one
    bool is_start = false;  // the job's own ranks: a failure kills everything
    Started done;
  };
  void queueBatch(std::vector<RankLaunch> launches, bool is_start, Started done);
  void spawnLater();
  void spawnSlice();
  void finishBatch(Result<void> result);  // of the front batch: supervise its ranks, or end them
  void readStream(Rank& r, int which);
  void showWhenQuiet(Rank& r, int which);
  void watchExit(Rank& r);
  void pollExit(Rank& r);  // every 50 ms until waitid sees its end
  void onExited(Rank& r);
  void maybeReport(Rank& r);
  void rememberStderr(Rank& r, std::string_view lines);
  void relay(Rank& r, int which, std::vector<OutputSegment>& segments);
  // Its group was given its grace and killed: a second more for a descendant that left the group
  // (setsid), then endLingering.
  void lingerForDetached(Rank& r);
  void endLingering(Rank& r);  // what is left in its pipes, then the report
  void drainExited(Stream& s, std::vector<OutputSegment>& segments);
  void flushStdin(Rank& r);
  void watchStdinReader(Rank& r);  // tells the frontend once nothing reads the rank's stdin pipe
  void stdinGone(Rank& r);  // closes the pipe, drops what was not written and says so (closed), once

  asio::io_context& io_;
  Events events_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  size_t reported_ = 0;
  bool paused_ = false;
  bool terminating_ = false;
  std::optional<long long> oom_kills_at_start_;  // the node's OOM kills when the ranks started
  asio::steady_timer kill_timer_;
  std::deque<Batch> batches_;   // starting, front first
  asio::steady_timer spawn_timer_;
  // ranks_.size() when all_exited was last said (SIZE_MAX: never): said again only for more ranks.
  size_t all_exited_said_for_ = SIZE_MAX;
  void sayAllExited();
  std::unique_ptr<Containment> containment_;  // last: destroyed first, while ranks_ is still there
};

}  // namespace tlaunch
