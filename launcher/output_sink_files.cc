// OutputSink's --output-dir files: the directory and each number's .out/.err, opened so that
// nothing another user planted is written into (launcher/output_sink.h), handed to the writer
// thread, written there, and closed once their processes have ended.
#include "launcher/output_sink.h"
#include "tlaunch/diagnostics.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

namespace tlaunch {

Result<int> OutputSink::openDir() {
  // "lnk/" names what the link points to: O_NOFOLLOW looks at the last component, so the
  // slashes go first.
  std::string path = dir_;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return diagnostic(Errc::usage, "output-dir-create", {{"dir", dir_}, {"reason", std::strerror(errno)}});
  // The directory itself, not a symlink in its place, and ours: files of another user's
  // directory could be read or replaced by them.
  const int dfd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0)
    return diagnostic(Errc::usage, "output-dir-unusable",
                      {{"dir", dir_},
                       {"reason", std::strerror(errno)},
                       {"detail", errno == ELOOP || errno == ENOTDIR ? " (a symbolic link or not a directory)" : ""}});
  struct stat st {};
  if (::fstat(dfd, &st) != 0 || st.st_uid != ::geteuid()) {
    ::close(dfd);
    return diagnostic(Errc::usage, "output-dir-foreign", {{"dir", dir_}, {"uid", std::to_string(st.st_uid)}});
  }
  return dfd;
}

namespace {

// `file` in the directory `dfd` (`path` for messages), for writing: 0600, or refused when
// it is something someone else put there first (in a group-writable directory they could read
// what lands in it). O_NONBLOCK: a FIFO planted under the name must not hold the open (ENXIO
// without a reader). O_TRUNC only once the file is known to be ours: another user's would be
// emptied first.
Result<int> openOwnFile(int dfd, const std::string& file, const std::string& path, int mode) {
  const int fd = ::openat(dfd, file.c_str(), O_WRONLY | O_CREAT | mode | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == ENXIO) return diagnostic(Errc::usage, "output-file-foreign", {{"path", path}, {"what", "a FIFO or socket"}});
    if (errno == ELOOP) return diagnostic(Errc::usage, "output-file-foreign", {{"path", path}, {"what", "a symbolic link"}});
    if (errno == EMFILE) {  // tlaunch raised its soft limit to the hard one at start
      struct rlimit nofile {};
      ::getrlimit(RLIMIT_NOFILE, &nofile);
      return diagnostic(Errc::resources, "output-files-past-limit",
                        {{"path", path}, {"limit", std::to_string(static_cast<unsigned long long>(nofile.rlim_cur))}});
    }
    return diagnostic(Errc::usage, "output-file-unwritable", {{"path", path}, {"reason", std::strerror(errno)}});
  }
  struct stat st {};
  std::string what;
  if (::fstat(fd, &st) != 0) what = std::string("unreadable (") + std::strerror(errno) + ")";
  else if (!S_ISREG(st.st_mode)) what = "not a regular file";
  else if (st.st_uid != ::geteuid()) what = "another user's (uid " + std::to_string(st.st_uid) + ")";
  if (!what.empty()) {
    ::close(fd);
    return diagnostic(Errc::usage, "output-file-foreign", {{"path", path}, {"what", what}});
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  // One left by an earlier run (or made by hand) keeps no wider mode than a new one: the ranks'
  // output can hold tokens.
  if ((st.st_mode & 077) != 0) ::fchmod(fd, 0600);
  return fd;  // emptied by the caller (O_TRUNC) once every file of the job is open
}

}  // namespace

Result<void> OutputSink::openInto(int dfd, int number, const std::string& name, int mode, Item& item) {
  for (int s : {1, 2}) {
    const std::string file = name + (s == 1 ? ".out" : ".err");
    auto fd = openOwnFile(dfd, file, dir_ + "/" + file, mode);
    if (!fd) {
      for (auto& [k, f] : item.files) ::close(f);
      return tl::unexpected(fd.error());
    }
    item.files[{number, s}] = *fd;
  }
  return {};
}

Result<void> OutputSink::checkDirectory() {
  if (dir_.empty()) return {};
  auto dfd = openDir();
  if (!dfd) return tl::unexpected(dfd.error());
  ::close(*dfd);
  return {};
}

Result<void> OutputSink::openFiles(int world_size) {
  if (dir_.empty()) return {};
  std::vector<std::pair<int, std::string>> ranks;
  ranks.reserve(static_cast<size_t>(std::max(0, world_size)));
  for (int r = 0; r < world_size; ++r) ranks.emplace_back(r, "rank." + std::to_string(r));
  // A restarted job (--max-restarts) appends: the failed attempt's output stays readable.
  auto opened = openNumbered(Item::Type::files, ranks, attempts_ > 0 ? O_APPEND : O_TRUNC);
  if (opened && attempts_ == 0) noteEarlierRanksFiles(world_size);
  if (opened) ++attempts_;
  return opened;
}

void OutputSink::noteEarlierRanksFiles(int world_size) {
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return;
  int lowest = -1, highest = -1;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (!name.starts_with("rank.") || !(name.ends_with(".out") || name.ends_with(".err"))) continue;
    const std::string_view digits = name.substr(5, name.size() - 9);
    int number = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
    if (ec != std::errc() || end != digits.data() + digits.size() || number < world_size) continue;
    lowest = lowest < 0 ? number : std::min(lowest, number);
    highest = std::max(highest, number);
  }
  ::closedir(d);
  if (lowest < 0) return;
  // Left as they are (they are the user's), but not taken for this job's ranks' output.
  note("--output-dir " + dir_ + " also holds rank." + std::to_string(lowest) +
       (highest > lowest ? ".." + std::to_string(highest) : "") + " files of an earlier, larger run (this job has " +
       std::to_string(world_size) + " rank" + (world_size == 1 ? "" : "s") + "): they are not this job's");
}

Result<void> OutputSink::openMoreFiles(const std::vector<std::pair<int, std::string>>& numbered_names) {
  if (dir_.empty() || numbered_names.empty()) return {};
  // A restarted job's spawns are numbered again from 1: append, as for the ranks' files.
  return openNumbered(Item::Type::more_files, numbered_names, attempts_ > 1 ? O_APPEND : O_TRUNC);
}

void OutputSink::closeFiles(std::vector<int> numbers) {
  if (dir_.empty() || numbers.empty()) return;
  Item item;
  item.type = Item::Type::close_files;
  item.numbers = std::move(numbers);
  enqueue(std::move(item));  // after their last records
}

Result<void> OutputSink::openNumbered(Item::Type type, const std::vector<std::pair<int, std::string>>& numbered_names,
                                      int mode) {
  auto dfd = openDir();
  if (!dfd) return tl::unexpected(dfd.error());
  Item item;
  item.type = type;
  // Every file opened before any is emptied: a refusal halfway (the open-files limit, a planted
  // link) leaves the last run's files as they were.
  for (const auto& [number, name] : numbered_names) {
    if (auto ok = openInto(*dfd, number, name, mode & ~O_TRUNC, item); !ok) {
      ::close(*dfd);
      return ok;
    }
    if (type == Item::Type::more_files) item.file_names[number] = name;
  }
  ::close(*dfd);
  if ((mode & O_TRUNC) != 0)
    for (const auto& [key, fd] : item.files)
      if (::ftruncate(fd, 0) != 0) {
        const int e = errno;
        for (auto& [k, f] : item.files) ::close(f);
        return diagnostic(Errc::usage, "output-file-unwritable", {{"path", dir_}, {"reason", std::strerror(e)}});
      }
  enqueue(std::move(item));
  return {};
}

void OutputSink::writeFile(int rank, int stream, std::string_view bytes) {
  auto f = files_.find({rank, stream});
  if (f == files_.end() || file_failed_[{rank, stream}]) return;
  if (writeAll(f->second, bytes)) return;
  // A full disk must not end the job: say it once for this file, keep printing.
  file_failed_[{rank, stream}] = true;
  std::vector<OutputFormatter::Write> w;
  auto named = file_names_.find(rank);
  const std::string name = named != file_names_.end() ? named->second : "rank." + std::to_string(rank);
  formatter_.note("warning: cannot write " + dir_ + "/" + name + (stream == 1 ? ".out" : ".err") +
                      ": " + std::strerror(errno) + "; its output still goes to tlaunch's own output",
                  w);
  writeTerminalText(w);
}

}  // namespace tlaunch
