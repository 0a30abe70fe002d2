// --nccl-check on the frontend: the daemons' per-rank "nccl" summaries into one report line,
// a warning or the end of the job (launcher/nccl/nccl_job_check.h decides).
#include "launcher/job_session.h"
#include "launcher/nccl/nccl_job_check.h"
#include "tlaunch/result.h"

namespace tlaunch {

void JobSession::startNcclCheck() {
  const auto mode = nccl::parseCheckMode(cfg_.spec.nccl_check);
  if (!mode || *mode == nccl::CheckMode::off || !plan_) return;
  nccl::Expectation expected = nccl::expectationFromNetwork(plan_->network ? &*plan_->network : nullptr);
  // Each rank is held to its own node's interface (names may differ between nodes).
  if (expected.ifnames.size() == plan_->nodes.size()) {
    expected.rank_ifnames.assign(static_cast<size_t>(plan_->world_size), "");
    for (size_t i = 0; i < plan_->nodes.size(); ++i)
      for (const auto& r : plan_->nodes[i].ranks)
        if (r.rank >= 0 && r.rank < plan_->world_size) expected.rank_ifnames[static_cast<size_t>(r.rank)] = expected.ifnames[i];
  }
  nccl_check_ = std::make_unique<nccl::JobCheck>(*mode, std::move(expected), plan_->world_size);
}

void JobSession::onNcclSummary(const Json& msg) {
  if (!nccl_check_ || !nccl_check_->onSummary(msg)) return;
  outcome_.nccl = nccl_check_->toJson();
  const auto& report = nccl_check_->report();
  out_.note("nccl-check: " + report.verdict);
  const auto& d = nccl_check_->decision();
  if (d.action == nccl::Action::warn) out_.note("warning: --nccl-check: " + d.reason);
  if (d.action == nccl::Action::fail && !failed_)
    fail(nccl::kStrictExit, "--nccl-check strict: " + d.reason);
}

}  // namespace tlaunch
