#pragma once
// --nccl-check on the frontend (pure): collects the daemons' per-rank "nccl" summaries (the
// lines daemon/nccl_log_watch kept), and once every rank has reported builds the transport
// report and the decision (launcher/nccl/nccl_check.h).
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "binding/fabric/network_choice.h"
#include "launcher/nccl/nccl_check.h"
#include "launcher/nccl/nccl_state.h"

namespace tlaunch::nccl {

// From the plan's network choice: RDMA expected, each node's interface. nullptr (loopback, no
// network chosen): nothing expected.
Expectation expectationFromNetwork(const NetworkChoice* network);

class JobCheck {
 public:
  JobCheck(CheckMode mode, Expectation expected, int world_size);

  // One daemon's {"t": "nccl", "r": rank, "lines": [...]} message. True when it completes the
  // set (every rank has reported), exactly once.
  bool onSummary(const nlohmann::json& msg);
  bool complete() const { return reported_.size() == static_cast<std::size_t>(world_size_); }

  const NcclReport& report() const { return report_; }
  const Decision& decision() const { return decision_; }
  // For --summary-json: mode, ranks reported, level, verdict, transport, action and reason.
  nlohmann::json toJson() const;

 private:
  CheckMode mode_;
  Expectation expected_;
  int world_size_;
  std::set<int> reported_;
  NcclLogState state_;
  NcclReport report_;
  Decision decision_;
};

}  // namespace tlaunch::nccl
