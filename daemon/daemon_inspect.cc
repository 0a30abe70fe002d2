// tlaunchd's answers to `tlaunch stacks` and `tlaunch status`, and whether a rank is an MPI
// program (part of DaemonSession).
#include "daemon/daemon_session.h"
#include "daemon/descendants.h"
#include "daemon/mpi_process.h"
#include "daemon/stack_collector.h"

namespace tlaunch {

void DaemonSession::handleStacks(const Json& msg) {
  const Json id = msg.contains("id") ? msg["id"] : Json(0);
  std::vector<StackCollector::Target> targets;
  if (ranks_)
    for (const auto& v : ranks_->view())
      if (!v.exited) targets.push_back({v.rank, v.pid});
  if (!stacks_) stacks_ = std::make_unique<StackCollector>(io_, opts_.node_name);
  stacks_->collect(std::move(targets), [this, id](Json ranks) {
    if (conn_ && conn_->isOpen()) conn_->send({{"t", "stacks_report"}, {"id", id}, {"ranks", std::move(ranks)}});
  });
}

void DaemonSession::stopStacks() {
  // A gdb attached now (tlaunch stacks, Ctrl-\) would hold its rank stopped through the SIGTERM;
  // later requests too (a Ctrl-\ during the SIGTERM grace): no gdb may hold a rank any more.
  if (!stacks_) stacks_ = std::make_unique<StackCollector>(io_, opts_.node_name);
  stacks_->cancel("the job is ending (its ranks had their SIGTERM): gdb would hold them stopped through it");
}

// A rank and what it started, as one: `bash train.sh` is mostly its python, and a data loader's
// workers are the rank's CPU and memory too. The state is the rank's own, or "running" when
// it waits while one of its processes runs.
RankStatusSampler::Sample DaemonSession::sampleWithDescendants(pid_t rank, const std::vector<ProcEntry>& procs) {
  RankStatusSampler::Sample total = status_sampler_.sample(rank);
  if (total.state == "exited") return total;
  bool child_runs = false;
  const auto descendants = descendantsOf(rank, procs);
  // With processes of its own (forked data-loader workers share the rank's pages copy-on-write),
  // memory is the sum of proportional sizes: RSS summed counted each shared page once per process.
  long long pss = descendants.empty() ? -1 : pssBytes(rank);
  for (const auto& d : descendants) {
    const auto s = status_sampler_.sample(d.pid);
    if (s.state == "exited") continue;
    total.cpu_percent += s.cpu_percent;
    total.rss_bytes += s.rss_bytes;
    if (pss >= 0) {
      const long long own = pssBytes(d.pid);
      pss = own >= 0 ? pss + own : -1;
    }
    child_runs = child_runs || s.state == "running";
  }
  if (pss >= 0) total.rss_bytes = pss;
  if (total.state == "sleeping" && child_runs) total.state = "running";
  return total;
}

void DaemonSession::handleStatus(const Json& msg) {
  Json ranks = Json::array();
  const auto now = std::chrono::steady_clock::now();
  const std::vector<ProcEntry> procs = ranks_ ? listProcesses() : std::vector<ProcEntry>{};
  if (ranks_) {
    for (const auto& v : ranks_->view()) {
      auto s = v.exited ? RankStatusSampler::Sample{"exited", 0, 0} : sampleWithDescendants(v.pid, procs);
      ranks.push_back({{"r", v.rank},
                       {"pid", v.pid},
                       {"state", s.state},
                       {"cpu", s.cpu_percent},
                       {"rss", s.rss_bytes},
                       {"quiet_s", std::chrono::duration<double>(now - v.last_output).count()},
                       {"printed", v.printed}});
    }
  }
  conn_->send({{"t", "status_report"},
               {"id", msg.contains("id") ? msg["id"] : Json(0)},
               {"ranks", std::move(ranks)},
               {"held_back", ranks_ && ranks_->outputPaused()}});
}

bool DaemonSession::rankRunsMpi(int rank) const {
  if (!ranks_) return false;
  for (const auto& v : ranks_->view())
    if (v.rank == rank) return runsMpiLibrary(v.pid);
  return false;
}

}  // namespace tlaunch
