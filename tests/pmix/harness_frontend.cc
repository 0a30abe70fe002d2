// A stand-in tlaunch frontend: forks one daemon per simulated node, gathers fence contributions
// (allgather in node order), routes direct-modex requests to the owning node, turns an abort
// into a kill of every node, and judges the run.
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "bootstrap/fence_collector.h"
#include "harness_options.h"
#include "harness_wire.h"

namespace harness {
namespace {

std::set<std::string> vaderSegments() {
  std::set<std::string> names;
  std::error_code ec;
  for (auto& e : std::filesystem::directory_iterator("/dev/shm", ec))
    if (e.path().filename().string().starts_with("vader_segment.")) names.insert(e.path().filename().string());
  return names;
}

class Frontend {
 public:
  Frontend(const Options& o, std::vector<pid_t> pids, std::vector<int> fds)
      : o_(o), pids_(std::move(pids)), sigchld_(io_, SIGCHLD), timer_(io_) {
    for (int fd : fds) channels_.push_back(std::make_unique<Channel>(io_, fd));
    results_.resize(o_.nodes);
    closed_.assign(o_.nodes, false);
    wait_status_.assign(o_.nodes, 0);
  }

  int run(const std::set<std::string>& vader_before) {
    for (int n = 0; n < o_.nodes; ++n)
      channels_[n]->start([this, n](Msg m) { onMessage(n, std::move(m)); },
                          [this, n] {
                            closed_[n] = true;
                            if (!results_[n]) killAll();  // that daemon died
                            maybeStop();
                          });
    watchDaemons();
    timer_.expires_after(std::chrono::seconds(o_.timeout_s));
    timer_.async_wait([this](std::error_code ec) {
      if (ec) return;
      fail("timed out after " + std::to_string(o_.timeout_s) + " s");
      killAll();
      auto hard = std::make_shared<asio::steady_timer>(io_, std::chrono::seconds(10));
      hard->async_wait([this, hard](std::error_code) {
        for (pid_t p : pids_)
          if (p > 0) kill(p, SIGKILL);
      });
    });
    io_.run();
    return judge(vader_before);
  }

 private:
  void onMessage(int node, Msg m) {
    switch (m.type) {
      case MsgType::fence_contrib: {
        // The frontend's own gathering (bootstrap/fence_collector.h), keyed by job and fence.
        auto all = fences_.contribute({m.job, m.a}, static_cast<size_t>(node), static_cast<size_t>(o_.nodes),
                                      m.payload);
        if (!all) break;
        ++fences_done_[m.job];
        for (auto& ch : channels_) ch->send({MsgType::fence_done, m.job, m.a, 1, 0, *all});
        break;
      }
      case MsgType::dmdx_request: {
        ++dmodex_[m.job];
        int owner = o_.nodeOf(static_cast<int>(m.b));
        channels_[owner]->send({MsgType::dmdx_serve, m.job, m.a, static_cast<uint64_t>(node), m.b, {}});
        break;
      }
      case MsgType::dmdx_served:
        channels_[m.b]->send({MsgType::dmdx_done, m.job, m.a, m.c, 0, std::move(m.payload)});
        break;
      case MsgType::abort:
        if (!abort_status_) abort_status_ = static_cast<int>(m.b);
        fprintf(stderr, "[frontend] rank %d aborted with status %d; killing the job\n", static_cast<int>(m.a),
                static_cast<int>(m.b));
        killAll();
        break;
      case MsgType::rank_failed:
        if (!first_failure_) first_failure_ = static_cast<int>(m.b);
        fprintf(stderr, "[frontend] rank %d failed with %d; killing the job\n", static_cast<int>(m.a),
                static_cast<int>(m.b));
        killAll();
        break;
      case MsgType::result:
        results_[node] = {static_cast<int>(m.a), m.payload};
        break;
      default:
        fail("unexpected message from " + o_.nodeName(node));
    }
  }

  void killAll() {
    for (auto& ch : channels_) ch->send({MsgType::kill, 0, 0, 0, 0, {}});
  }

  // Also called once at start: a daemon may have exited before the signal_set existed.
  void watchDaemons() {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      for (int n = 0; n < o_.nodes; ++n) {
        if (pids_[n] != pid) continue;
        pids_[n] = 0;
        wait_status_[n] = status;
      }
    }
    if (maybeStop()) return;
    sigchld_.async_wait([this](std::error_code ec, int) {
      if (!ec) watchDaemons();
    });
  }

  // Stops once every daemon has exited and its channel is drained.
  bool maybeStop() {
    for (int n = 0; n < o_.nodes; ++n)
      if (pids_[n] != 0 || !closed_[n]) return false;
    io_.stop();
    return true;
  }

  int judge(const std::set<std::string>& vader_before) {
    // The job's exit code, as tlaunch would report it: the abort status, else the first failed
    // rank's code, else a daemon's own failure.
    int job_exit = abort_status_ ? *abort_status_ : first_failure_ ? *first_failure_ : 0;
    for (int n = 0; n < o_.nodes; ++n) {
      if (!results_[n]) {
        fail(o_.nodeName(n) + " daemon died without a result (wait status " + std::to_string(wait_status_[n]) + ")");
        continue;
      }
      auto& [code, report] = *results_[n];
      fprintf(stderr, "[frontend] %s exit=%d\n%s", o_.nodeName(n).c_str(), code, report.c_str());
      if (code != 0 && !job_exit) job_exit = code;
      std::istringstream lines(report);
      for (std::string line; std::getline(lines, line);) {
        if (line.starts_with("problem=")) fail(o_.nodeName(n) + ": " + line.substr(8));
        // Every rank must have connected, and (unless the job aborts) finalized cleanly.
        for (const char* key : {".connected=", ".finalized="}) {
          auto pos = line.find(key);
          if (pos == std::string::npos) continue;
          if (std::string(key) == ".finalized=" && (o_.expect_abort >= 0 || o_.expect_exit != 0)) continue;
          if (o_.register_uid >= 0) continue;  // ranks are meant to be rejected
          int got = std::stoi(line.substr(pos + std::string(key).size()));
          int want = static_cast<int>(o_.ranksOf(n).size());
          if (got != want)
            fail(o_.nodeName(n) + " " + line.substr(0, pos) + ": " + std::to_string(got) + " ranks " +
                 std::string(key).substr(1, std::string(key).size() - 2) + ", want " + std::to_string(want));
        }
      }
    }
    for (int j = 0; j < o_.jobs; ++j) {
      fprintf(stderr, "[frontend] job %d: fences=%d dmodex=%d\n", j, fences_done_[j], dmodex_[j]);
      if (fences_done_[j] < o_.min_fences)
        fail("job " + std::to_string(j) + ": " + std::to_string(fences_done_[j]) + " fences, want >= " +
             std::to_string(o_.min_fences));
      if (o_.max_dmodex >= 0 && dmodex_[j] > o_.max_dmodex)
        fail("job " + std::to_string(j) + ": " + std::to_string(dmodex_[j]) +
             " direct modex requests: the fences did not deliver every rank's data");
      if (dmodex_[j] < o_.min_dmodex)
        fail("job " + std::to_string(j) + ": " + std::to_string(dmodex_[j]) + " direct modex requests, want >= " +
             std::to_string(o_.min_dmodex));
    }
    if (o_.expect_abort >= 0) {
      if (abort_status_ != o_.expect_abort)
        fail("expected an abort with status " + std::to_string(o_.expect_abort) + ", got " +
             (abort_status_ ? std::to_string(*abort_status_) : std::string("none")));
      if (job_exit != o_.expect_abort)
        fail("expected the job's exit code to be the abort status " + std::to_string(o_.expect_abort) + ", got " +
             std::to_string(job_exit));
    } else if (job_exit != o_.expect_exit) {
      fail("the job's exit code is " + std::to_string(job_exit) + ", want " + std::to_string(o_.expect_exit));
    }
    for (auto& name : vaderSegments())
      if (!vader_before.count(name)) fail("shared-memory segment left in /dev/shm: " + name);
    std::error_code ec;
    std::filesystem::remove_all(o_.base_dir, ec);
    fprintf(stderr, "[frontend] %s\n", failures_.empty() ? "PASS" : "FAIL");
    for (auto& f : failures_) fprintf(stderr, "[frontend]   %s\n", f.c_str());
    return failures_.empty() ? 0 : 1;
  }

  void fail(const std::string& why) { failures_.push_back(why); }

  const Options& o_;
  std::vector<pid_t> pids_;
  asio::io_context io_;
  std::vector<std::unique_ptr<Channel>> channels_;
  asio::signal_set sigchld_;
  asio::steady_timer timer_;
  tlaunch::FenceCollector<std::pair<uint64_t, uint64_t>> fences_;  // by (job, fence)
  std::map<uint64_t, int> fences_done_, dmodex_;
  std::vector<std::optional<std::pair<int, std::string>>> results_;
  std::vector<bool> closed_;
  std::vector<int> wait_status_;
  std::optional<int> abort_status_;
  std::optional<int> first_failure_;
  std::vector<std::string> failures_;
};

}  // namespace

int runFrontend(const Options& o) {
  const auto vader_before = vaderSegments();
  // Daemons are forked before any thread or io_context exists in this process.
  std::vector<pid_t> pids;
  std::vector<int> fds;
  for (int n = 0; n < o.nodes; ++n) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      perror("socketpair");
      return 2;
    }
    fflush(nullptr);
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return 2;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      for (int fd : fds) close(fd);
      close(sv[0]);
      int rc = runDaemon(o, n, sv[1]);
      fflush(nullptr);
      _exit(rc);  // no static destructors: libpmix's thread may have been abandoned
    }
    close(sv[1]);
    pids.push_back(pid);
    fds.push_back(sv[0]);
  }
  Frontend f(o, pids, fds);
  return f.run(vader_before);
}

}  // namespace harness
