#pragma once
// Where ranks' output ends up on the frontend: tagged on our stdout/stderr (output_format.h says
// how), and optionally the raw bytes in one file per rank and stream (--output-dir).
// The I/O thread never blocks here: records are queued and a writer thread of this sink does
// every write(2). A slow or paused reader (a pager, Ctrl-S, a slow disk) makes the queue wait;
// the sink reports each source's bytes as they are written (setDrained), and the session
// re-grants the daemons' output credit from that, so the queue stays bounded by the credit
// windows and the ranks, not the job, wait.
#include <sys/uio.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bootstrap/output_record.h"
#include "launcher/output_format.h"
#include "tlaunch/result.h"

namespace tlaunch {

enum class TagMode { none, rank, full };

class OutputSink {
 public:
  OutputSink(TagMode mode, std::string output_dir, int stdout_fd = 1, int stderr_fd = 2);
  // Writes out everything queued (waiting for a paused reader if need be), then stops.
  ~OutputSink();
  OutputSink(const OutputSink&) = delete;
  OutputSink& operator=(const OutputSink&) = delete;
  // Must be called before lines of that rank arrive (the tag names its node).
  void setRankNode(int rank, const std::string& node);
  // A process the job spawned (PMIx_Spawn): tagged with its label ("spawn1:0") in place of a rank.
  void setSpawnedTag(int number, const std::string& label, const std::string& node);
  // --pty: the window size (columns, rows) the terminals of `ranks` report, so that what they
  // draw fits beside their tags: tlaunch's terminal less the widest tag; 80x24 into a pipe or file.
  std::pair<int, int> rankTerminalSize(const std::vector<int>& ranks) const;
  // Creates --output-dir (0700) and its files (0600, never through a symlink).
  Result<void> openFiles(int world_size);
  // --output-dir can be used (made if missing, a directory of ours): checked before any node
  // starts, so that a mistyped path costs nothing.
  Result<void> checkDirectory();
  // The files of processes the job spawned (PMIx_Spawn), named "<name>.out" / "<name>.err"
  // (e.g. "spawn1.rank.0"), beside the ranks'. Nothing without --output-dir.
  Result<void> openMoreFiles(const std::vector<std::pair<int, std::string>>& numbered_names);
  // Those processes have ended: their files are closed once what came before is written (a job
  // that spawns in a loop would otherwise hold two descriptors per process it ever spawned).
  void closeFiles(std::vector<int> numbers);
  // Queues one record of `source` (a daemon link); never blocks. stream 1 = stdout, 2 = stderr.
  void write(int source, int rank, int stream, OutputKind kind, std::string_view bytes);
  // The same without a copy: the record's bytes are owned.view().
  void write(int source, int rank, int stream, OutputKind kind, OwnedBytes&& owned);
  // Typed input with its Enter went to `rank` from tlaunch's terminal, which echoed it
  // (OutputFormatter::inputEchoed), in order with the output.
  void inputEchoed(int rank);
  // A message of tlaunch itself, always to stderr, prefixed "tlaunch: ", in order with the output.
  void note(std::string_view text);
  // Called on the writer thread with (source, bytes written) as records leave; may be empty.
  void setDrained(std::function<void(int source, size_t bytes)> drained);
  size_t backlog() const;  // bytes of output queued and not yet written
  void flush();            // returns once everything queued before it is written
  // The same in two steps, for a caller that must not wait for ever (a stdout nobody reads):
  // a ticket, then whether what was queued before it is written, waiting at most `wait`.
  uint64_t requestFlush();
  bool flushed(uint64_t ticket, std::chrono::milliseconds wait);
  // The job's attempt is over: the ranks' held-back progress states are printed and the
  // in-place line is ended, before the notes that follow (the failure summary) and not after.
  void endProgressLines();
  static std::string tagFor(TagMode mode, int rank, const std::string& node);
  static std::string tagFor(TagMode mode, const std::string& label, const std::string& node);

 private:
  struct Item {
    enum class Type { record, note, files, more_files, close_files, flush, end_progress, input_echoed } type = Type::record;
    int source = -1, rank = 0, stream = 1;
    OutputKind kind = OutputKind::lines;
    std::string tag;
    OwnedBytes data;  // a record's bytes or a note's text: data.view()
    std::map<std::pair<int, int>, int> files;
    std::map<int, std::string> file_names;  // a number's file name without .out/.err (default "rank.N")
    std::vector<int> numbers;               // close_files: whose files
  };
  Result<int> openDir();  // --output-dir, checked; the caller closes it
  // rank.N files beyond this job's ranks (a reused --output-dir of a larger run): said once.
  void noteEarlierRanksFiles(int world_size);
  Result<void> openInto(int dfd, int number, const std::string& name, int mode, Item& item);
  // Opens each number's .out/.err under --output-dir and hands them to the writer thread at once.
  Result<void> openNumbered(Item::Type type, const std::vector<std::pair<int, std::string>>& numbered_names, int mode);
  void enqueue(Item item);
  void run();
  void handle(Item& item, std::vector<OutputFormatter::Write>& writes);
  void writeFile(int rank, int stream, std::string_view bytes);
  void writeTerminalText(const std::vector<OutputFormatter::Write>& writes);
  bool writeAll(int fd, std::string_view data);
  static bool writevAll(int fd, std::vector<iovec>& iov);

  TagMode mode_;
  std::string dir_;
  int out_fd_, err_fd_;
  std::map<int, std::string> tags_;  // I/O thread only
  // Writer thread only:
  OutputFormatter formatter_;
  std::chrono::steady_clock::time_point width_read_{};  // the terminal's width last read
  // Before a bar is drawn in place: the terminal's width again, if it may have changed.
  void rereadWidth(std::chrono::steady_clock::time_point now);
  std::map<std::pair<int, int>, int> files_;
  std::map<std::pair<int, int>, bool> file_failed_;
  std::map<int, std::string> file_names_;
  bool out_broken_ = false;
  std::map<int, size_t> drained_;
  // Shared, under mu_:
  mutable std::mutex mu_;
  std::condition_variable cv_, flushed_cv_;
  std::deque<Item> queue_;
  size_t backlog_ = 0;
  uint64_t flushes_requested_ = 0, flushes_done_ = 0;
  bool stop_ = false;
  std::function<void(int, size_t)> drained_cb_;
  int attempts_ = 0;  // openFiles calls: the job's attempts so far; from the second on (a restart) files are appended to
  std::thread writer_;  // last: started once everything above exists
};

}  // namespace tlaunch
