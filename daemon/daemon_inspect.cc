// tlaunchd's answers to `tlaunch stacks` and `tlaunch status` (part of DaemonSession).
#include "daemon/daemon_session.h"
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

void DaemonSession::handleStatus(const Json& msg) {
  Json ranks = Json::array();
  const auto now = std::chrono::steady_clock::now();
  if (ranks_) {
    for (const auto& v : ranks_->view()) {
      auto s = v.exited ? RankStatusSampler::Sample{"exited", 0, 0} : status_sampler_.sample(v.pid);
      ranks.push_back({{"r", v.rank},
                       {"pid", v.pid},
                       {"state", s.state},
                       {"cpu", s.cpu_percent},
                       {"rss", s.rss_bytes},
                       {"quiet_s", std::chrono::duration<double>(now - v.last_output).count()}});
    }
  }
  conn_->send({{"t", "status_report"},
               {"id", msg.contains("id") ? msg["id"] : Json(0)},
               {"ranks", std::move(ranks)},
               {"held_back", ranks_ && ranks_->outputPaused()}});
}

}  // namespace tlaunch
