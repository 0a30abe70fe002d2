#include "launcher/control_socket.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tlaunch {

namespace {

constexpr size_t kMaxSocketPath = 100;  // sun_path holds 108 bytes
constexpr std::chrono::seconds kAnswerTimeout{120};  // the frontend gives daemons 45 s for stacks
constexpr std::chrono::seconds kRequestTimeout{5};   // a client says its one line at once

Result<std::string> ensurePrivateDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return fail(Errc::io, "cannot create " + dir + ": " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fail(Errc::io, dir + " is not a directory");
  if (st.st_uid != ::getuid()) return fail(Errc::io, dir + " belongs to another user");
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0)
    return fail(Errc::io, dir + " is open to others and cannot be made 0700");
  return dir;
}

}  // namespace

Result<std::string> controlDirectory() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  const char* home = std::getenv("HOME");
  std::vector<std::string> candidates;
  if (runtime && *runtime == '/') candidates.push_back(std::string(runtime) + "/tlaunch");
  if (home && *home == '/' && std::string(home) != "/") {
    ::mkdir((std::string(home) + "/.cache").c_str(), 0700);
    candidates.push_back(std::string(home) + "/.cache/tlaunch");
  }
  candidates.push_back("/tmp/tlaunch-" + std::to_string(::getuid()));
  Error last{Errc::io, "no directory for the control socket", ""};
  for (const auto& c : candidates) {
    if (c.size() + 20 > kMaxSocketPath) continue;  // "/tl-XXXXXXXXXX.sock" must fit
    auto d = ensurePrivateDir(c);
    if (d) return d;
    last = d.error();
  }
  return tl::unexpected(last);
}

namespace {
// A directory other hosts share (an NFS home's ~/.cache/tlaunch): a socket bound there by a
// tlaunch on another host refuses connections from this one, though its job is alive.
bool sharedBetweenHosts(const std::string& dir) {
  struct statfs fs{};
  if (::statfs(dir.c_str(), &fs) != 0) return true;  // unknown: left alone
  static constexpr unsigned long kNetworkFilesystems[] = {
      0x6969,      // NFS
      0x517B,      // SMB
      0xFF534D42,  // CIFS
      0xFE534D42,  // SMB2
      0x0BD00BD0,  // Lustre
      0x47504653,  // GPFS
      0x00C36400,  // Ceph
      0x65735546,  // FUSE (sshfs, ...)
      0x19830326,  // BeeGFS
      0xAAD7AAEA,  // PanFS
      0x01021997,  // 9p
      0x5346414F,  // AFS
  };
  const auto type = static_cast<unsigned long>(fs.f_type);
  return std::find(std::begin(kNetworkFilesystems), std::end(kNetworkFilesystems), type) !=
         std::end(kNetworkFilesystems);
}

// Sockets of tlaunches that were killed (nothing listens on them), removed as a job opens its
// own: the directory kept one per killed job. One bound a moment ago may not listen yet: only
// those older than a minute go; none in a directory other hosts share.
void removeDeadSockets(const std::string& dir) {
  if (sharedBetweenHosts(dir)) return;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const auto now = std::chrono::system_clock::now();
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (!name.ends_with(".sock")) continue;
    const std::string path = dir + "/" + name;
    struct stat st{};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode) ||
        now - std::chrono::system_clock::from_time_t(st.st_mtime) < std::chrono::minutes(1))
      continue;
    int fd = -1;
    if (connectControlSocket(path, &fd) == ControlReach::gone) ::unlink(path.c_str());
    if (fd >= 0) ::close(fd);
  }
  ::closedir(d);
}
}  // namespace

ControlSocket::ControlSocket(asio::io_context& io) : io_(io), acceptor_(io) {}

ControlSocket::~ControlSocket() { close(); }

Result<void> ControlSocket::open(const std::string& job_id, Handler handler) {
  auto dir = controlDirectory();
  if (!dir) return tl::unexpected(dir.error());
  removeDeadSockets(*dir);
  path_ = *dir + "/" + job_id + ".sock";
  ::unlink(path_.c_str());
  asio::error_code ec;
  acceptor_.open(asio::local::stream_protocol(), ec);
  if (!ec) acceptor_.bind(asio::local::stream_protocol::endpoint(path_), ec);
  if (!ec) acceptor_.listen(16, ec);
  if (ec) {
    path_.clear();
    return fail(Errc::io, "cannot listen on " + *dir + "/" + job_id + ".sock: " + ec.message());
  }
  ::chmod(path_.c_str(), 0600);
  handler_ = std::move(handler);
  accept();
  return {};
}

void ControlSocket::close() {
  asio::error_code ignore;
  if (acceptor_.is_open()) acceptor_.close(ignore);
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

void ControlSocket::accept() {
  acceptor_.async_accept([this](const asio::error_code& ec, asio::local::stream_protocol::socket s) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      // The directory is 0700 already; the peer's uid is checked as well (root may pass it).
      ucred cred{};
      socklen_t len = sizeof cred;
      auto sock = std::make_shared<asio::local::stream_protocol::socket>(std::move(s));
      if (::getsockopt(sock->native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == ::getuid()) {
        auto buf = std::make_shared<std::string>();
        // A client that connects and says nothing would hold its descriptor for the job's life.
        auto deadline = std::make_shared<asio::steady_timer>(acceptor_.get_executor(), kRequestTimeout);
        deadline->async_wait([sock](const asio::error_code& tec) {
          asio::error_code ignore;
          if (!tec) sock->close(ignore);
        });
        asio::async_read_until(*sock, asio::dynamic_buffer(*buf, 256), '\n',
                               [this, sock, buf, deadline](const asio::error_code& rec, size_t n) {
                                 deadline->cancel();
                                 if (rec) return;
                                 std::string request = buf->substr(0, n - 1);
                                 handler_(request, [sock](std::string text) {
                                   auto t = std::make_shared<std::string>(std::move(text));
                                   asio::async_write(*sock, asio::buffer(*t), [sock, t](const asio::error_code&, size_t) {
                                     asio::error_code ignore;
                                     sock->shutdown(asio::socket_base::shutdown_both, ignore);
                                   });
                                 });
                               });
      }
    }
    accept();
  });
}

ControlReach connectControlSocket(const std::string& path, int* fd) {
  *fd = -1;
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return ControlReach::failed;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return ControlReach::failed;
  // A unix stream connect completes or fails at once; EAGAIN is a full listen queue.
  if (::connect(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    ::close(s);
    if (err == EAGAIN) return ControlReach::busy;
    if (err == ECONNREFUSED) return ControlReach::gone;
    return ControlReach::failed;
  }
  ::fcntl(s, F_SETFL, ::fcntl(s, F_GETFL) & ~O_NONBLOCK);
  *fd = s;
  return ControlReach::answering;
}

int runControlCommand(const std::string& request, const std::string& job) {
  auto dir = controlDirectory();
  if (!dir) {
    std::fprintf(stderr, "tlaunch: %s\n", dir.error().message.c_str());
    return 1;
  }
  // The live jobs: sockets with a listener, answering or stopped (a killed tlaunch leaves a
  // socket nothing listens on: removed here). The connection made to find an answering job is
  // the one its request goes on: one connection per command, not one more in a queue.
  struct LiveJob {
    std::string id;
    int fd = -1;  // -1: stopped, its queue full
  };
  std::vector<LiveJob> live;
  const bool shared = sharedBetweenHosts(*dir);  // another host's live job refuses us there
  if (DIR* d = ::opendir(dir->c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.size() < 6 || name.substr(name.size() - 5) != ".sock") continue;
      std::string id = name.substr(0, name.size() - 5);
      // The run's id names its attempts too (TORCHELASTIC_RUN_ID: "<id>-r1" after a restart).
      if (!job.empty() && id != job && !id.starts_with(job + "-r") && !id.starts_with(job + "-p")) continue;
      int fd = -1;
      const ControlReach reach = connectControlSocket(*dir + "/" + name, &fd);
      if (reach == ControlReach::answering || reach == ControlReach::busy) live.push_back({std::move(id), fd});
      else if (reach == ControlReach::gone && !shared) ::unlink((*dir + "/" + name).c_str());
    }
    ::closedir(d);
  }
  if (live.size() != 1)
    for (const auto& j : live)
      if (j.fd >= 0) ::close(j.fd);
  if (live.empty()) {
    std::fprintf(stderr, "tlaunch: %s\n",
                 (job.empty() ? "no running tlaunch job of yours (no live socket in " + *dir + ")"
                              : "no running job " + job + " of yours (no live socket in " + *dir + ")")
                     .c_str());
    return 1;
  }
  const std::string& id = live[0].id;
  if (live.size() > 1) {
    std::string ids;
    for (const auto& j : live) ids += " " + j.id;
    std::fprintf(stderr, "tlaunch: %zu jobs are running:%s\n  -> name one: tlaunch %s JOB\n", live.size(), ids.c_str(),
                 request.c_str());
    return 2;
  }
  if (live[0].fd < 0) {
    std::fprintf(stderr,
                 "tlaunch: job %s accepts no request now: its tlaunch is stopped (Ctrl-Z?); `fg` it, or `kill -CONT` "
                 "its pid\n",
                 id.c_str());
    return 1;
  }
  asio::io_context io;
  asio::local::stream_protocol::socket s(io);
  asio::error_code ec;
  if (s.assign(asio::local::stream_protocol(), live[0].fd, ec); ec) ::close(live[0].fd);
  if (!ec) asio::write(s, asio::buffer(request + "\n"), ec);
  if (ec) {
    std::fprintf(stderr, "tlaunch: job %s did not answer: %s\n", id.c_str(), ec.message().c_str());
    return 1;
  }
  // A tlaunch that is stopped (Ctrl-Z) still accepts, but never answers: wait a bounded time.
  std::string answer;
  const auto deadline = std::chrono::steady_clock::now() + kAnswerTimeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd pfd{s.native_handle(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) == 0) {
      std::fprintf(stderr, "tlaunch: job %s did not answer within %lld s (is its tlaunch stopped?)\n", id.c_str(),
                   static_cast<long long>(kAnswerTimeout.count()));
      return 1;
    }
    char buf[65536];
    const ssize_t n = ::read(s.native_handle(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  std::fwrite(answer.data(), 1, answer.size(), stdout);
  return 0;
}

}  // namespace tlaunch
