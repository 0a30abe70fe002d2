// A stand-in tlaunchd: one PmixServer, the node's ranks forked with setupFork's environment,
// fences and direct modex relayed through the frontend, cleanup checked after each job.
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include "bootstrap/pmix_server.h"
#include "harness_options.h"
#include "harness_wire.h"

extern char** environ;

namespace harness {
namespace {

using tlaunch::PmixServer;

pid_t spawnRank(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  // Everything is built before fork: the child of a threaded process may only exec.
  std::vector<char*> av, ev;
  for (auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  for (auto& e : env) ev.push_back(const_cast<char*>(e.c_str()));
  ev.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    setpgid(0, 0);
    execve(av[0], av.data(), ev.data());
    _exit(127);
  }
  if (pid > 0) setpgid(pid, pid);
  return pid;
}

class Daemon {
 public:
  Daemon(const Options& o, int node, int fd) : o_(o), node_(node), channel_(io_, fd), sigchld_(io_, SIGCHLD) {}

  int run() {
    if (o_.localonly_fence_off) setenv("PMIX_MCA_pmix_server_fence_localonly_opt", "0", 1);
    // The node's directory, as tlaunchd's is ($TMPDIR/tlaunch.<job>.<node>...): makeRankDir
    // makes no parents.
    std::error_code ec;
    std::filesystem::create_directories(o_.nodeDir(node_), ec);
    tlaunch::PmixServerConfig config;
    config.node_name = o_.nodeName(node_);
    config.node_index = node_;
    config.tmpdir = o_.nodeDir(node_) + "/srv";
    config.uid = o_.register_uid >= 0 ? static_cast<uint32_t>(o_.register_uid) : getuid();
    config.gid = getgid();
    config.op_bound = std::chrono::seconds(2);
    auto post = [this](std::function<void()> fn) { asio::post(io_, std::move(fn)); };
    auto server = PmixServer::start(config, post, callbacks());
    if (!server) {
      log("start failed: " + server.error().message);
      return 2;
    }
    server_ = std::move(*server);
    channel_.start([this](Msg m) { onMessage(std::move(m)); }, [this] { onFrontendGone(); });
    watchChildren();
    asio::steady_timer late(io_);
    if (node_ == o_.nodes - 1 && o_.late_node_ms > 0) {
      late.expires_after(std::chrono::milliseconds(o_.late_node_ms));
      late.async_wait([this](std::error_code) { startJob(0); });
    } else {
      asio::post(io_, [this] { startJob(0); });
    }
    io_.run();
    return exit_code_;
  }

 private:
  PmixServer::Callbacks callbacks() {
    PmixServer::Callbacks cb;
    cb.fence_contribution = [this](uint64_t seq, std::string blob, bool collect) {
      ++fences_;
      fence_bytes_max_ = std::max(fence_bytes_max_, blob.size());
      channel_.send({MsgType::fence_contrib, static_cast<uint64_t>(job_), seq, collect, 0, std::move(blob)});
    };
    cb.direct_modex_request = [this](uint64_t id, int rank) {
      ++dmodex_requests_;
      channel_.send({MsgType::dmdx_request, static_cast<uint64_t>(job_), id, static_cast<uint64_t>(rank), 0, {}});
    };
    cb.abort = [this](int rank, int status, std::string message) {
      log("abort from rank " + std::to_string(rank) + " status=" + std::to_string(status) + ": " + message);
      if (abort_status_ < 0) abort_status_ = status;
      channel_.send({MsgType::abort, static_cast<uint64_t>(job_), static_cast<uint64_t>(rank),
                     static_cast<uint64_t>(status), 0, std::move(message)});
      killRanks();
    };
    cb.client_connected = [this](int) { ++connected_; };
    cb.client_finalized = [this](int) { ++finalized_; };
    return cb;
  }

  tlaunch::PmixJobLayout layout(int job) const {
    tlaunch::PmixJobLayout l;
    l.nspace = o_.nspace(job);
    for (int n = 0; n < o_.nodes; ++n) {
      l.node_names.push_back(o_.nodeName(n));
      l.ranks_by_node.push_back(o_.ranksOf(n));
    }
    l.this_node = node_;
    l.job_tmpdir = o_.nodeDir(node_) + "/job." + std::to_string(job);
    l.tcp_if_include = o_.tcp_if;
    return l;
  }

  void startJob(int job) {
    job_ = job;
    connected_ = finalized_ = 0;
    if (auto ok = server_->registerJob(layout(job)); !ok) return fatal("registerJob: " + ok.error().message);
    std::vector<std::string> base_env;
    for (char** e = environ; *e; ++e) base_env.emplace_back(*e);
    // What tlaunch's planner gives every rank of a direct launch (launcher/plan/rank_env_builder):
    // Open MPI 4.1 must not look for mpirun's ORTE daemon.
    base_env.emplace_back("OMPI_MCA_schizo=^orte");
    // ... and, every node being this host, Open MPI's TCP traffic on the interface the PMIx
    // server uses (lo): a cluster test beside this one adds and removes the host's bridges, and
    // a rank that picked one of those failed to bind to its address (MPI_ERR_OTHER).
    if (!o_.tcp_if.empty()) base_env.emplace_back("OMPI_MCA_btl_tcp_if_include=" + o_.tcp_if);
    for (auto& e : o_.rank_env) base_env.push_back(e);
    for (int rank : o_.ranksOf(node_)) {
      std::vector<std::string> env = base_env;
      if (auto ok = server_->setupFork(rank, env); !ok) return fatal("setupFork: " + ok.error().message);
      if (rank == o_.ranksOf(node_).front()) dumpEnv(env);
      pid_t pid = spawnRank(o_.program, env);
      if (pid < 0) return fatal("fork failed");
      ranks_[pid] = rank;
    }
    std::vector<Msg> held;
    std::swap(held, early_serves_);
    for (auto& m : held) {
      if (static_cast<int>(m.job) > job_)
        early_serves_.push_back(std::move(m));
      else
        serve(m);
    }
  }

  void dumpEnv(const std::vector<std::string>& env) {
    std::ostringstream s;
    for (auto& e : env)
      if (e.starts_with("PMIX_") || e.starts_with("OMPI_MCA_")) s << "  " << e << "\n";
    log("first rank's PMIx/OMPI environment:\n" + s.str());
  }

  void watchChildren() {
    sigchld_.async_wait([this](std::error_code ec, int) {
      if (ec) return;
      int status;
      pid_t pid;
      while ((pid = waitpid(-1, &status, WNOHANG)) > 0) onRankExit(pid, status);
      watchChildren();
    });
  }

  void onRankExit(pid_t pid, int status) {
    auto it = ranks_.find(pid);
    if (it == ranks_.end()) return;
    int rank = it->second;
    ranks_.erase(it);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0) log("rank " + std::to_string(rank) + " ended with " + std::to_string(code));
    if (code != 0 && rank_failure_ == 0) rank_failure_ = code;
    if (code != 0 && abort_status_ < 0 && !killing_) {  // as tlaunchd would: one failed rank ends the job
      channel_.send({MsgType::rank_failed, static_cast<uint64_t>(job_), static_cast<uint64_t>(rank),
                     static_cast<uint64_t>(code), 0, {}});
      killRanks();
    }
    if (ranks_.empty()) finishJob();
  }

  void killRanks() {
    killing_ = true;
    for (auto& [pid, rank] : ranks_) kill(-pid, SIGTERM);
    auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::seconds(3));
    timer->async_wait([this, timer](std::error_code) {
      for (auto& [pid, rank] : ranks_) kill(-pid, SIGKILL);
    });
  }

  void finishJob() {
    auto dereg = server_->deregisterJob(std::chrono::seconds(2));
    if (!dereg && !o_.expect_stuck_teardown) problem("deregisterJob: " + dereg.error().message);
    if (dereg && o_.expect_stuck_teardown) problem("deregisterJob returned although libpmix was expected to be stuck");
    if (!dereg) log("deregisterJob: " + dereg.error().message);
    tlaunch::PmixJobLayout l = layout(job_);
    if (std::filesystem::exists(l.job_tmpdir)) problem("job_tmpdir left behind: " + l.job_tmpdir);
    std::string shm = "/dev/shm/" + l.nspace + "." + l.node_names[node_];
    if (std::filesystem::exists(shm)) problem("shm dir left behind: " + shm);
    report_ << "job" << job_ << ".connected=" << connected_ << "\n";
    report_ << "job" << job_ << ".finalized=" << finalized_ << "\n";
    if (job_ + 1 < o_.jobs && !killing_ && rank_failure_ == 0) return startJob(job_ + 1);
    finish();
  }

  void finish() {
    std::string srv = o_.nodeDir(node_) + "/srv";
    server_.reset();  // bounded PMIx_server_finalize
    if (std::filesystem::exists(srv)) problem("server tmpdir left behind: " + srv);
    exit_code_ = abort_status_ >= 0 ? abort_status_ : rank_failure_;
    report_ << "fences=" << fences_ << "\n"
            << "dmodex_requests=" << dmodex_requests_ << "\n"
            << "largest_fence_contribution_bytes=" << fence_bytes_max_ << "\n"
            << "abort_status=" << abort_status_ << "\n";
    channel_.send({MsgType::result, static_cast<uint64_t>(job_), static_cast<uint64_t>(exit_code_), 0, 0, report_.str()});
    channel_.whenDrained([this] { io_.stop(); });
  }

  void onMessage(Msg m) {
    switch (m.type) {
      case MsgType::fence_done:
        if (static_cast<int>(m.job) == job_) server_->completeFence(m.a, m.b != 0, std::move(m.payload));
        break;
      case MsgType::dmdx_serve:
        // With --jobs, another node may already run the next job: serve it once we do too.
        if (static_cast<int>(m.job) > job_)
          early_serves_.push_back(std::move(m));
        else
          serve(m);
        break;
      case MsgType::dmdx_done:
        if (static_cast<int>(m.job) == job_) server_->completeDirectModex(m.a, m.b != 0 ? tlaunch::PmixReply::ok : tlaunch::PmixReply::not_found, std::move(m.payload));
        break;
      case MsgType::kill:
        if (!killing_) killRanks();
        break;
      default:
        problem("unexpected message " + std::to_string(static_cast<int>(m.type)));
    }
  }

  void serve(const Msg& m) {
    uint64_t job = m.job, id = m.a, requester = m.b;
    if (static_cast<int>(job) < job_) {  // a job we are done with
      channel_.send({MsgType::dmdx_served, job, id, requester, false, {}});
      return;
    }
    server_->serveDirectModex(static_cast<int>(m.c), [this, job, id, requester](bool ok, std::string data) {
      channel_.send({MsgType::dmdx_served, job, id, requester, ok, std::move(data)});
    });
  }

  void onFrontendGone() {
    log("frontend gone; killing ranks");
    for (auto& [pid, rank] : ranks_) kill(-pid, SIGKILL);
    _exit(3);
  }

  void log(const std::string& s) { fprintf(stderr, "[%s] %s\n", o_.nodeName(node_).c_str(), s.c_str()); }
  void problem(const std::string& s) {
    log("PROBLEM: " + s);
    report_ << "problem=" << s << "\n";
  }
  void fatal(const std::string& s) {
    problem(s);
    rank_failure_ = rank_failure_ ? rank_failure_ : 2;
    if (ranks_.empty()) return finishJob();
    killRanks();
  }

  const Options& o_;
  int node_;
  asio::io_context io_;
  Channel channel_;
  asio::signal_set sigchld_;
  std::unique_ptr<PmixServer> server_;
  std::map<pid_t, int> ranks_;
  std::vector<Msg> early_serves_;
  int job_ = 0;
  int fences_ = 0, dmodex_requests_ = 0, connected_ = 0, finalized_ = 0;
  size_t fence_bytes_max_ = 0;
  int abort_status_ = -1, rank_failure_ = 0, exit_code_ = 0;
  bool killing_ = false;
  std::ostringstream report_;
};

}  // namespace

int runDaemon(const Options& options, int node, int fd) {
  Daemon d(options, node, fd);
  return d.run();
}

}  // namespace harness
