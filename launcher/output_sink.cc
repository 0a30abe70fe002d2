#include "launcher/output_sink.h"
#include "launcher/held_signals.h"
#include "tlaunch/replace_file.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace tlaunch {

namespace {
constexpr size_t kDrainReportBytes = 64u << 10;  // report written bytes in batches of this much
// ... and every source's smaller rest at least this often, also while the sink never goes idle:
// a node whose next record needs those bytes back (a long line, a window of 256 KiB on a big
// job) would otherwise wait for every other node to go quiet.
constexpr auto kDrainReportInterval = std::chrono::milliseconds(50);

// The terminal's columns, or 0 when neither stream is a terminal.
int terminalWidth(int out_fd, int err_fd) {
  struct winsize ws {};
  for (int fd : {out_fd, err_fd})
    if (::isatty(fd) == 1 && ::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 0;
}

OutputTerminals terminalsOf(int out_fd, int err_fd) {
  OutputTerminals t;
  // TERM=dumb (Emacs' shell, some CI consoles): no cursor control, so no line drawn in place
  // (its \e[K would show as garbage); lines as into a pipe.
  const char* term = std::getenv("TERM");
  const bool dumb = term != nullptr && std::string_view(term) == "dumb";
  t.stdout_is_tty = !dumb && ::isatty(out_fd) == 1;
  t.stderr_is_tty = !dumb && ::isatty(err_fd) == 1;
  if (const int width = terminalWidth(out_fd, err_fd); width > 0) t.width = width;
  return t;
}
}  // namespace

OutputSink::OutputSink(TagMode mode, std::string output_dir, int stdout_fd, int stderr_fd)
    : mode_(mode),
      dir_(std::move(output_dir)),
      out_fd_(stdout_fd),
      err_fd_(stderr_fd),
      formatter_(terminalsOf(stdout_fd, stderr_fd)),
      writer_([this] { run(); }) {}

OutputSink::~OutputSink() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  writer_.join();
  for (auto& [k, fd] : files_) ::close(fd);
}

std::string OutputSink::tagFor(TagMode mode, int rank, const std::string& node) {
  return tagFor(mode, std::to_string(rank), node);
}

std::string OutputSink::tagFor(TagMode mode, const std::string& label, const std::string& node) {
  switch (mode) {
    case TagMode::none: return {};
    case TagMode::rank: return "[" + label + "] ";
    case TagMode::full: return "[" + node + ":" + label + "] ";
  }
  return {};
}

void OutputSink::setSpawnedTag(int number, const std::string& label, const std::string& node) {
  tags_[number] = tagFor(mode_, label, node);
}

void OutputSink::setRankNode(int rank, const std::string& node) { tags_[rank] = tagFor(mode_, rank, node); }

std::pair<int, int> OutputSink::rankTerminalSize(const std::vector<int>& ranks) const {
  struct winsize ws {};
  if (::isatty(out_fd_) != 1 || ::ioctl(out_fd_, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0)
    return {80, 24};  // a file or a pipe: a terminal's usual size
  size_t tag = 0;
  for (int rank : ranks)
    if (const auto it = tags_.find(rank); it != tags_.end()) tag = std::max(tag, it->second.size());
  return {std::max(20, static_cast<int>(ws.ws_col) - static_cast<int>(tag)), static_cast<int>(ws.ws_row)};
}

void OutputSink::setDrained(std::function<void(int, size_t)> drained) {
  std::lock_guard lk(mu_);
  drained_cb_ = std::move(drained);
}

void OutputSink::enqueue(Item item) {
  {
    std::lock_guard lk(mu_);
    if (item.type == Item::Type::record) backlog_ += item.data.view().size();
    queue_.push_back(std::move(item));
  }
  cv_.notify_one();
}

void OutputSink::write(int source, int rank, int stream, OutputKind kind, std::string_view bytes) {
  write(source, rank, stream, kind, OwnedBytes{ByteBuffer::copyOf(bytes), 0});
}

void OutputSink::write(int source, int rank, int stream, OutputKind kind, OwnedBytes&& owned) {
  auto t = tags_.find(rank);
  const std::string& tag = t != tags_.end() ? t->second : tags_[rank] = tagFor(mode_, rank, "?");
  Item item;
  item.source = source;
  item.rank = rank;
  item.stream = stream;
  item.kind = kind;
  item.tag = tag;
  item.data = std::move(owned);
  enqueue(std::move(item));
}

void OutputSink::endProgressLines() {
  Item item;
  item.type = Item::Type::end_progress;
  enqueue(std::move(item));
}

void OutputSink::inputEchoed(int rank) {
  Item item;
  item.type = Item::Type::input_echoed;
  item.rank = rank;
  enqueue(std::move(item));
}

void OutputSink::note(std::string_view text) {
  Item item;
  item.type = Item::Type::note;
  item.data.storage = ByteBuffer::copyOf(text);
  enqueue(std::move(item));
}

size_t OutputSink::backlog() const {
  std::lock_guard lk(mu_);
  return backlog_;
}

void OutputSink::flush() {
  const uint64_t mine = requestFlush();
  std::unique_lock lk(mu_);
  flushed_cv_.wait(lk, [&] { return flushes_done_ >= mine; });
}

uint64_t OutputSink::requestFlush() {
  std::lock_guard lk(mu_);
  const uint64_t mine = ++flushes_requested_;
  Item item;
  item.type = Item::Type::flush;
  queue_.push_back(std::move(item));
  cv_.notify_one();
  return mine;
}

bool OutputSink::flushed(uint64_t ticket, std::chrono::milliseconds wait) {
  std::unique_lock lk(mu_);
  return flushed_cv_.wait_for(lk, wait, [&] { return flushes_done_ >= ticket; });
}

bool OutputSink::writeAll(int fd, std::string_view data) {
  const int e = writeWhole(fd, data);  // errno says why, for the caller's message
  if (e != 0) errno = e;
  return e == 0;
}

bool OutputSink::writevAll(int fd, std::vector<iovec>& iov) {
  size_t first = 0;
  while (first < iov.size()) {
    const int count = static_cast<int>(std::min<size_t>(iov.size() - first, IOV_MAX));
    ssize_t n = ::writev(fd, iov.data() + first, count);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      waitWritable(fd);
      continue;
    }
    if (n <= 0) return false;
    // Skip what went out; a partly written piece continues where it stopped.
    auto left = static_cast<size_t>(n);
    while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (left > 0) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  return true;
}

void OutputSink::writeTerminalText(const std::vector<OutputFormatter::Write>& writes) {
  // Consecutive pieces for the same stream go out in one writev(2): a line is never split
  // between two writes, so other writers to the terminal cannot cut into it, and nothing is
  // copied to join them.
  std::vector<iovec> batch;
  int batch_stream = 0;
  bool stdout_broke = false;
  int stdout_errno = 0;
  auto flushBatch = [&] {
    if (batch.empty()) return;
    const int fd = batch_stream == 2 ? err_fd_ : out_fd_;
    if (!(fd == out_fd_ && out_broken_) && !writevAll(fd, batch) && fd == out_fd_) {
      out_broken_ = stdout_broke = true;  // `| head` (EPIPE), a full disk, /dev/full
      stdout_errno = errno;
    }
    batch.clear();
  };
  for (const auto& w : writes) {
    if (w.stream != batch_stream) flushBatch();
    batch_stream = w.stream;
    if (!w.text.empty()) batch.push_back({const_cast<char*>(w.text.data()), w.text.size()});
  }
  flushBatch();
  if (stdout_broke) {
    // Once, on stderr: the ranks go on (a reader that left must not end a run of days), but
    // nobody should find out from a short file that their output went nowhere.
    std::vector<OutputFormatter::Write> w;
    formatter_.note(std::string("warning: cannot write to stdout (") + std::strerror(stdout_errno) +
                        "); the ranks' stdout is dropped from here on, and the job goes on",
                    w);
    writeTerminalText(w);
  }
}

void OutputSink::rereadWidth(std::chrono::steady_clock::time_point now) {
  // A resized terminal: no SIGWINCH handler, the width is read again at most twice a second.
  if (!formatter_.anyTty() || now - width_read_ < std::chrono::milliseconds(500)) return;
  width_read_ = now;
  if (const int width = terminalWidth(out_fd_, err_fd_); width > 0) formatter_.setWidth(width);
}

void OutputSink::handle(Item& item, std::vector<OutputFormatter::Write>& writes) {
  switch (item.type) {
    case Item::Type::record: {
      if (item.kind != OutputKind::unfinished) writeFile(item.rank, item.stream, item.data.view());  // shown, not written
      const auto now = OutputFormatter::Clock::now();
      if (item.kind == OutputKind::update || item.kind == OutputKind::unfinished) rereadWidth(now);
      formatter_.record(item.tag, item.rank, item.stream, item.kind, item.data.view(), now, writes);
      break;
    }
    case Item::Type::note: formatter_.note(item.data.view(), writes); break;
    case Item::Type::files:
      for (auto& [key, fd] : files_) ::close(fd);  // the previous attempt's, all written
      files_ = std::move(item.files);
      file_names_.clear();
      file_failed_.clear();  // new files: the last attempt's write errors are not theirs
      break;
    case Item::Type::more_files:
      for (auto& [key, fd] : item.files) {
        if (auto old = files_.find(key); old != files_.end()) ::close(old->second);
        files_[key] = fd;
      }
      file_names_.merge(item.file_names);
      break;
    case Item::Type::close_files:
      for (int n : item.numbers) {
        for (int stream : {1, 2}) {
          if (auto f = files_.find({n, stream}); f != files_.end()) {
            ::close(f->second);
            files_.erase(f);
          }
          file_failed_.erase({n, stream});
        }
        file_names_.erase(n);
      }
      break;
    case Item::Type::flush: break;
    case Item::Type::end_progress: formatter_.finish(writes); break;
    case Item::Type::input_echoed: formatter_.inputEchoed(item.rank); break;
  }
}

void OutputSink::run() {
  blockSessionSignals();  // Ctrl-C is the main thread's (held_signals.h)
  std::deque<Item> batch;
  std::vector<OutputFormatter::Write> writes;
  size_t pending_bytes = 0;  // in `writes`, not yet written
  std::function<void(int, size_t)> drained_cb;
  auto last_full_report = std::chrono::steady_clock::now();
  // Writes what is formatted, then gives the sources' bytes back (all of them when idle, or
  // when kDrainReportInterval has passed).
  auto writeOut = [&](bool idle) {
    writeTerminalText(writes);
    writes.clear();
    {
      std::lock_guard lk(mu_);
      backlog_ -= pending_bytes;
    }
    pending_bytes = 0;
    const auto now = std::chrono::steady_clock::now();
    const bool all = idle || now - last_full_report >= kDrainReportInterval;
    if (all) last_full_report = now;
    for (auto& [source, bytes] : drained_) {
      if (bytes == 0 || (!all && bytes < kDrainReportBytes)) continue;
      if (drained_cb) drained_cb(source, bytes);
      bytes = 0;
    }
  };
  for (;;) {
    {
      std::unique_lock lk(mu_);
      auto ready = [&] { return stop_ || !queue_.empty(); };
      if (auto due = formatter_.nextDue()) cv_.wait_until(lk, *due, ready);
      else cv_.wait(lk, ready);
      batch.swap(queue_);
      drained_cb = drained_cb_;
      if (batch.empty() && stop_) break;
    }
    uint64_t flushes = 0;
    for (auto& item : batch) {
      handle(item, writes);
      if (item.type == Item::Type::flush) {
        writeOut(false);
        ++flushes;
      }
      if (item.type != Item::Type::record) continue;
      const size_t n = item.data.view().size();
      pending_bytes += n;
      if (item.source >= 0) drained_[item.source] += outputCreditCost(n);
      if (pending_bytes >= kDrainReportBytes || writes.size() > 64) writeOut(false);
    }
    batch.clear();
    formatter_.due(OutputFormatter::Clock::now(), writes);
    bool idle = false;
    {
      std::lock_guard lk(mu_);
      idle = queue_.empty();
    }
    writeOut(idle);
    if (flushes) {
      {
        std::lock_guard lk(mu_);
        flushes_done_ += flushes;
      }
      flushed_cv_.notify_all();
    }
  }
  formatter_.finish(writes);
  writeOut(true);
}

}  // namespace tlaunch
