#include "daemon/warm_keeper.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <memory>

#include <asio.hpp>

#include "bootstrap/auth.h"
#include "bootstrap/connection.h"
#include "bootstrap/keeper_protocol.h"
#include "bootstrap/spawn.h"
#include "bootstrap/stranger_eviction.h"
#include "daemon/line_io.h"
#include "launcher/starter_support.h"
#include "tlaunch/version.h"

namespace tlaunch {

namespace {

using Clock = std::chrono::steady_clock;

constexpr long long kMaxKeepSeconds = 7LL * 86'400;  // as tlaunch --keep-daemons

// The daemon path as the node's login shell would find it: a bare name in PATH, a relative path
// from the home directory (where ssh starts), then every symlink resolved.
std::string resolveDaemonPath(const std::string& path) {
  std::string p = path;
  if (p.find('/') == std::string::npos) {
    const char* search = std::getenv("PATH");
    std::string dirs = search ? search : "";
    for (size_t start = 0; start <= dirs.size();) {
      const size_t end = std::min(dirs.find(':', start), dirs.size());
      const std::string candidate = dirs.substr(start, end - start) + "/" + path;
      if (::access(candidate.c_str(), X_OK) == 0) {
        p = candidate;
        break;
      }
      start = end + 1;
    }
  } else if (p.front() != '/') {
    const char* home = std::getenv("HOME");
    p = std::string(home ? home : "") + "/" + p;
  }
  char resolved[PATH_MAX];
  return ::realpath(p.c_str(), resolved) ? std::string(resolved) : p;
}

class Keeper {
 public:
  Keeper(asio::io_context& io, int listen_fd, std::string secret, int keep_s, long long since, std::string inventory_cache,
         bool has_lifeline)
      : inventory_cache_(std::move(inventory_cache)),
        io_(io), acceptor_(io), lifeline_(io, ::dup(0)), signals_(io, SIGCHLD, SIGTERM, SIGINT), expiry_(io),
        sweep_(io), accept_backoff_(io), secret_(std::move(secret)), keep_s_(keep_s), own_exe_(thisExecutable()), since_(since),
        parent_alive_(has_lifeline) {
    acceptor_.assign(asio::ip::tcp::v4(), listen_fd);
  }

  void start() {
    accept();
    if (parent_alive_) watchLifeline();
    else checkIdle();  // in a Slurm step: its time runs from now until a job starts
    watchSignals();
    sweep();
  }

 private:
  struct Client {
    std::shared_ptr<Connection> conn;
    std::string nonce;
    bool authenticated = false;
    Clock::time_point since;
  };
  struct Job {
    std::shared_ptr<Connection> conn;  // the client that asked for it, while it listens
    int stdin_fd = -1;                 // the daemon's stdin: held open while it runs
    std::unique_ptr<asio::posix::stream_descriptor> err;
    std::array<char, 4096> buf{};
    bool exited = false, err_closed = false;
    int status = 0;
  };

  void accept() {
    acceptor_.async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket s) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        challenge(std::move(s));
        return accept();
      }
      // Out of descriptors (EMFILE) and the like: wait a little instead of spinning.
      accept_backoff_.expires_after(std::chrono::milliseconds(100));
      accept_backoff_.async_wait([this](const asio::error_code& e) {
        if (!e) accept();
      });
    });
  }

  void challenge(asio::ip::tcp::socket socket) {
    // Strangers wait at most kKeeperHandshakeTimeoutMs; beyond 64 at once, one goes: the oldest
    // of the host with the most waiting, so that a flood cannot push out a tlaunch's call.
    size_t waiting = 0;
    for (const auto& c : clients_) waiting += c->authenticated ? 0 : 1;
    if (waiting >= 64) dropOneStranger();
    auto client = std::make_shared<Client>();
    client->conn = Connection::create(std::move(socket));
    client->nonce = randomBytes(kNonceBytes);
    client->since = Clock::now();
    clients_.push_back(client);
    // The handlers hold the client weakly: a connection flushing its last words outlives it.
    std::weak_ptr<Client> weak = client;
    client->conn->start(
        [this, weak](Json&& m) {
          if (auto c = weak.lock()) onMessage(*c, std::move(m));
        },
        [this, weak](const std::string&) {
          if (auto c = weak.lock()) forget(c.get());
        });
    client->conn->send({{"t", "challenge"}, {"proto", kProtocolVersion}, {"nonce", binary(client->nonce)}});
  }

  void dropOneStranger() {  // bootstrap/stranger_eviction.h; a closed one is on its way out already
    const auto victim = strangerToDrop(
        clients_.begin(), clients_.end(), [](const auto& c) { return !c->authenticated && c->conn->isOpen(); },
        [](const auto& c) { return std::string_view(c->conn->peer()); }, [](const auto& c) { return c->since; },
        Clock::now());
    if (victim == clients_.end()) return;
    (*victim)->conn->close();
    clients_.erase(victim);
  }

  // Later, not from inside the client's own handler. By weak pointer: a client dropped in the
  // meantime must not take a newer one that was given its address.
  void forget(Client* c) {
    auto it = std::find_if(clients_.begin(), clients_.end(), [c](const auto& p) { return p.get() == c; });
    if (it == clients_.end()) return;
    asio::post(io_, [this, weak = std::weak_ptr<Client>(*it)] {
      if (auto gone = weak.lock()) clients_.remove(gone);
    });
  }
  void forgetConnection(const std::shared_ptr<Connection>& conn) {
    for (const auto& c : clients_)
      if (c->conn == conn) forget(c.get());
  }

  void onMessage(Client& c, Json&& msg) {
    const std::string t = getString(msg, "t");
    if (!c.authenticated) {
      const std::string client_nonce = bytesOf(msg["nonce"]);
      if (t != "hello" ||
          !constantTimeEquals(bytesOf(msg["mac"]), helloProof(secret_, c.nonce, client_nonce, kKeeperPeerName))) {
        // Another user's secret, or not tlaunch at all: told so (a tlaunch then knows this keeper
        // is not its own, while a connection merely lost says nothing), and nothing else.
        c.conn->send({{"t", "refused"}, {"why", "wrong secret"}});
        c.conn->closeAfterFlush();
        forget(&c);
        return;
      }
      c.authenticated = true;
      c.conn->setMaxFrameBytes(1u << 20);
      c.conn->openFromNow(std::make_unique<FrameCipher>(secret_, c.nonce, client_nonce, FrameCipher::Direction::to_frontend));
      c.conn->send({{"t", "welcome"}, {"mac", binary(welcomeProof(secret_, c.nonce, client_nonce))}});
      c.conn->sealFromNow(std::make_unique<FrameCipher>(secret_, c.nonce, client_nonce, FrameCipher::Direction::to_daemon));
      return;
    }
    if (t == "start") return startJob(c, msg);
    if (t == "stop") {
      if (getInt(msg, "keeper_pid") != ::getpid() || getInt(msg, "keeper_since") != since_)
        return refuse(c, "this is another warm daemon than the one tlaunch noted", Refusal::not_the_noted);
      keep_s_ = 0;
      retiring_ = true;
      c.conn->send({{"t", "stopping"}, {"jobs", jobs_.size()}});
      c.conn->closeAfterFlush();
      forget(&c);
      checkIdle();
      return;
    }
    c.conn->send({{"t", "refused"}, {"why", "unknown request '" + t + "'"}});
  }

  // What a refused tlaunch may conclude: `gone` in the reply tells it that the keeper it wrote
  // down is not (or soon not) here, so its entry can go; otherwise this keeper lives on and the
  // entry stays, for stop-daemons.
  enum class Refusal { keeps_running, not_the_noted, retires };
  void refuse(Client& c, const std::string& why, Refusal kind) {
    const bool retire = kind == Refusal::retires;
    c.conn->send({{"t", "refused"}, {"why", why}, {"gone", kind != Refusal::keeps_running || retiring_}});
    c.conn->closeAfterFlush();
    forget(&c);
    // Another tlaunch, or another tlaunchd, took over this node: this keeper has had its day.
    if (retire) {
      keep_s_ = 0;
      retiring_ = true;
      checkIdle();
    }
  }

  void startJob(Client& c, const Json& msg) {
    // The keeper the frontend wrote down, not another of this user's that took over its port.
    if (getInt(msg, "keeper_pid") != ::getpid() || getInt(msg, "keeper_since") != since_)
      return refuse(c, "this is another warm daemon than the one tlaunch noted (pid " + std::to_string(::getpid()) + ")",
                    Refusal::not_the_noted);
    // Told to stop (stop-daemons, or it retired): a tlaunch that read the registry before must
    // not bring it back for another --keep-daemons period; it starts fresh daemons instead.
    if (retiring_) return refuse(c, "this warm daemon is stopping", Refusal::retires);
    if (getString(msg, "version") != kVersion)
      return refuse(c, std::string("this warm daemon runs tlaunchd ") + kVersion + ", this tlaunch is " +
                           getString(msg, "version", "?"), Refusal::retires);
    if (own_exe_.empty() || own_exe_ != resolveDaemonPath(getString(msg, "daemon")))
      return refuse(c, "this warm daemon runs " + (own_exe_.empty() ? std::string("an unknown tlaunchd") : own_exe_) +
                           ", not " + getString(msg, "daemon") + " (replaced since, or another --daemon-path)",
                    Refusal::retires);
    const Json& args = msg.contains("args") ? msg["args"] : Json();
    const std::string job_secret = getString(msg, "secret");
    if (!args.is_array() || args.size() > 64 || job_secret.empty() || job_secret.find('\n') != std::string::npos)
      return refuse(c, "malformed start request", Refusal::keeps_running);
    SpawnSpec spec;
    spec.exe = own_exe_;
    spec.argv = {"tlaunchd"};
    for (const auto& a : args) {
      if (!a.is_string()) return refuse(c, "malformed start request", Refusal::keeps_running);
      spec.argv.push_back(a.get<std::string>());
    }
    spec.argv.emplace_back("--via-keeper");
    if (!inventory_cache_.empty()) spec.argv.insert(spec.argv.end(), {"--inventory-cache", inventory_cache_});
    spec.env = environmentWith({});
    spec.stdin_mode = SpawnSpec::Stdin::pipe;
    spec.stdout_pipe = false;  // /dev/null, like ours
    auto spawned = spawnProcess(spec);
    if (!spawned) return refuse(c, "could not start tlaunchd: " + spawned.error().message, Refusal::keeps_running);
    if (spawned->pidfd >= 0) ::close(spawned->pidfd);
    if (msg.contains("keep_s") && msg["keep_s"].is_number_integer())
      keep_s_ = static_cast<int>(std::clamp<long long>(getInt(msg, "keep_s"), 0, kMaxKeepSeconds));
    auto job = std::make_unique<Job>();
    job->conn = c.conn;
    job->stdin_fd = spawned->stdin_fd;
    writeAll(job->stdin_fd, job_secret + "\n");
    job->err = std::make_unique<asio::posix::stream_descriptor>(io_, spawned->stderr_fd);
    Job* raw = job.get();
    jobs_[spawned->pid] = std::move(job);
    expiry_.cancel();
    c.conn->send({{"t", "started"}, {"pid", spawned->pid}, {"since", since_}});
    readStderr(spawned->pid, *raw);
  }

  void readStderr(pid_t pid, Job& job) {
    job.err->async_read_some(asio::buffer(job.buf), [this, pid, &job](const asio::error_code& ec, size_t n) {
      if (ec == asio::error::operation_aborted) return;
      if (ec) {
        job.err_closed = true;
        return maybeFinish(pid);
      }
      if (job.conn && job.conn->isOpen())
        job.conn->send({{"t", "stderr"}, {"data", binary(std::string_view(job.buf.data(), n))}});
      readStderr(pid, job);
    });
  }

  // A job is over for us once its daemon exited and its stderr is read to the end.
  void maybeFinish(pid_t pid) {
    auto it = jobs_.find(pid);
    if (it == jobs_.end() || !it->second->exited || !it->second->err_closed) return;
    Job& job = *it->second;
    if (job.conn && job.conn->isOpen()) {
      job.conn->send({{"t", "exited"}, {"status", job.status}});
      job.conn->closeAfterFlush();
    }
    if (job.conn) forgetConnection(job.conn);
    ::close(job.stdin_fd);
    jobs_.erase(it);
    checkIdle();
  }

  void watchSignals() {
    signals_.async_wait([this](const asio::error_code& ec, int sig) {
      if (ec) return;
      // Stopped by hand: the daemons it started have proved themselves to their frontend and
      // cleared their death signal by now, so they live on, as with `stop`.
      if (sig != SIGCHLD) return io_.stop();
      int status = 0;
      for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
        auto it = jobs_.find(pid);
        if (it == jobs_.end()) continue;
        it->second->exited = true;
        it->second->status = exitCodeOf(status);
        maybeFinish(pid);
      }
      watchSignals();
    });
  }

  // Our stdin is the starting daemon's pipe: it closes when that daemon ends. The daemon writes
  // a byte once the frontend has accepted it, and so written this keeper down; a keeper whose
  // daemon ends before that (refused, never connected) is known to nobody and ends too.
  void watchLifeline() {
    lifeline_.async_read_some(asio::buffer(lifeline_buf_), [this](const asio::error_code& ec, size_t n) {
      if (ec == asio::error::operation_aborted) return;
      if (!ec) {
        if (n > 0) known_ = true;
        return watchLifeline();
      }
      parent_alive_ = false;
      if (!known_) keep_s_ = 0;
      checkIdle();
    });
  }

  void checkIdle() {
    if (parent_alive_ || !jobs_.empty()) return;
    // Ending now still lets a last reply ("stopping", "refused") leave first.
    expiry_.expires_after(keep_s_ <= 0 ? std::chrono::milliseconds(200) : std::chrono::milliseconds(keep_s_ * 1000LL));
    expiry_.async_wait([this](const asio::error_code& ec) {
      if (!ec && !parent_alive_ && jobs_.empty()) io_.stop();
    });
  }

  void sweep() {
    const auto now = Clock::now();
    for (auto it = clients_.begin(); it != clients_.end();) {
      if (!(*it)->authenticated && now - (*it)->since > std::chrono::milliseconds(kKeeperHandshakeTimeoutMs)) {
        (*it)->conn->close();
        it = clients_.erase(it);
      } else {
        ++it;
      }
    }
    sweep_.expires_after(std::chrono::seconds(1));
    sweep_.async_wait([this](const asio::error_code& ec) {
      if (!ec) sweep();
    });
  }

  std::string inventory_cache_;
  bool known_ = false;  // the starting daemon said tlaunch has written this keeper down
  asio::io_context& io_;
  asio::ip::tcp::acceptor acceptor_;
  asio::posix::stream_descriptor lifeline_;
  std::array<char, 64> lifeline_buf_{};
  asio::signal_set signals_;
  asio::steady_timer expiry_;
  asio::steady_timer sweep_;
  asio::steady_timer accept_backoff_;
  std::string secret_;
  int keep_s_;
  bool retiring_ = false;  // stopped or retired: ends when its jobs have, starts no new one
  std::string own_exe_;
  long long since_;
  bool parent_alive_;
  std::list<std::shared_ptr<Client>> clients_;
  std::map<pid_t, std::unique_ptr<Job>> jobs_;
};

}  // namespace

int runWarmKeeper(int keep_s, KeeperHome home) {
  ::signal(SIGHUP, SIG_IGN);
  ::signal(SIGPIPE, SIG_IGN);
  const std::string secret = readLine(0);
  if (secret.empty()) return 64;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::fprintf(stdout, "error %s\n", std::strerror(errno));
    return 71;
  }
  // The node's last inventory, for the daemons it starts (daemon/inventory_cache.h).
  const char* tmpdir = std::getenv("TMPDIR");
  std::string cache_dir = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/tlaunch-keeper-XXXXXX";
  if (!::mkdtemp(cache_dir.data())) cache_dir.clear();
  const std::string cache = cache_dir.empty() ? "" : cache_dir + "/inventory";
  const long long since = epochSeconds();
  if (home == KeeperHome::slurm_step) {
    // Slurm's name for the node: the one tlaunch's node list holds (SLURM_JOB_NODELIST).
    const char* node = std::getenv("SLURMD_NODENAME");
    std::fprintf(stdout, "%s %d %d %lld\n", node && *node ? node : "?", ntohs(addr.sin_port), ::getpid(), since);
    std::fflush(stdout);
  } else {
    const pid_t child = ::fork();
    if (child < 0) return 71;
    if (child > 0) {  // the starting daemon reaps us and reads where the keeper listens
      std::fprintf(stdout, "%d %d %lld %s\n", ntohs(addr.sin_port), child, since, cache.c_str());
      std::fflush(stdout);
      ::_exit(0);
    }
    ::setsid();
  }
  if (::chdir("/") != 0) return 71;
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    ::close(null_fd);
  }
  {
    asio::io_context io(1);
    Keeper keeper(io, fd, secret, keep_s, since, cache, home == KeeperHome::detached);
    keeper.start();
    io.run();
  }
  if (!cache_dir.empty()) {
    ::unlink(cache.c_str());
    ::rmdir(cache_dir.c_str());
  }
  return 0;
}

}  // namespace tlaunch
