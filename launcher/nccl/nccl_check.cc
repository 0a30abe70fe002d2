#include "launcher/nccl/nccl_check.h"
#include "tlaunch/strings.h"

#include <algorithm>
#include <set>

namespace tlaunch::nccl {

namespace {

bool userSet(const std::vector<std::string>& user_set, const std::string& name) {
  return std::find(user_set.begin(), user_set.end(), name) != user_set.end();
}

// The tlaunch rank a report's lines came from: its source is "rank N" (daemon summaries).
int tlaunchRank(const RankReport& r) {
  if (r.source.rfind("rank ", 0) != 0) return -1;
  const std::string digits = r.source.substr(5);
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(digits);
}

// The interface planned for this rank's node, when the plan says (else nullptr).
const std::string* ownInterface(const Expectation& e, const RankReport& r) {
  const int rank = tlaunchRank(r);
  if (rank < 0 || static_cast<size_t>(rank) >= e.rank_ifnames.size()) return nullptr;
  const std::string& own = e.rank_ifnames[static_cast<size_t>(rank)];
  return own.empty() ? nullptr : &own;
}

bool plannedAnywhere(const Expectation& e, const std::string& ifname) {
  return std::find(e.ifnames.begin(), e.ifnames.end(), ifname) != e.ifnames.end();
}

}  // namespace

std::optional<CheckMode> parseCheckMode(const std::string& text) {
  if (text == "off") return CheckMode::off;
  if (text == "warn") return CheckMode::warn;
  if (text == "strict") return CheckMode::strict;
  return std::nullopt;
}

const char* checkModeName(CheckMode m) {
  switch (m) {
    case CheckMode::off: return "off";
    case CheckMode::warn: return "warn";
    case CheckMode::strict: return "strict";
  }
  return "?";
}

DebugEnv debugEnv(CheckMode mode, const std::vector<std::string>& user_set, const std::string& rank_log_path) {
  DebugEnv d;
  if (mode == CheckMode::off) return d;
  if (userSet(user_set, "NCCL_DEBUG")) {
    d.source = LogSource::stderr_lines;  // theirs goes where they expect it; we only read it
    return d;
  }
  // Their own log file without a level: NCCL's default level stands (INFO would fill their file,
  // and the check could not read it).
  if (userSet(user_set, "NCCL_DEBUG_FILE")) {
    d.source = LogSource::none;
    return d;
  }
  d.source = LogSource::file;
  d.env.emplace_back("NCCL_DEBUG", "INFO");
  if (!userSet(user_set, "NCCL_DEBUG_SUBSYS")) d.env.emplace_back("NCCL_DEBUG_SUBSYS", kDebugSubsys);
  d.env.emplace_back("NCCL_DEBUG_FILE", rank_log_path);
  return d;
}

std::string rankLogPath(const std::string& job_dir, int rank) {
  return job_dir + "/nccl.rank" + std::to_string(rank) + ".%h.%p.log";
}

Decision decide(const NcclReport& report, const Expectation& expected, CheckMode mode) {
  Decision d;
  if (mode == CheckMode::off || !expected.rdma) return d;
  std::vector<int> socket_ranks;
  std::set<std::string> socket_ifs, wrong_ifs, wrong_ranks;
  for (const auto& r : report.ranks) {
    if (r.transport == Transport::socket) {
      socket_ranks.push_back(r.rank);
      for (const auto& h : r.hcas) socket_ifs.insert(h);
    }
    // Unknown interfaces (a log cut short) say nothing; a named one must be its node's planned
    // one (names may differ between nodes), or, where the rank's node is not known, a planned one.
    for (const auto* ifname : {&r.bootstrap_if, &r.oob_if}) {
      if (ifname->empty() || expected.ifnames.empty()) continue;
      if (const std::string* own = ownInterface(expected, r)) {
        if (*ifname != *own) wrong_ranks.insert(r.source + " on " + *ifname + " (its node's is " + *own + ")");
      } else if (!plannedAnywhere(expected, *ifname)) {
        wrong_ifs.insert(*ifname);
      }
    }
  }
  std::string problem;
  if (!socket_ranks.empty() || report.transport == Transport::socket) {
    problem = "the job expects RDMA but NCCL uses NET/Socket between nodes";
    if (!socket_ranks.empty()) problem += " on ranks " + rankRanges(socket_ranks);
    if (!socket_ifs.empty()) problem += " over " + joinStrings(socket_ifs, ",");
  }
  if (!wrong_ifs.empty()) {
    std::set<std::string> want(expected.ifnames.begin(), expected.ifnames.end());
    problem += std::string(problem.empty() ? "" : "; ") + "NCCL bootstraps on " + joinStrings(wrong_ifs, ",") +
               ", not the planned " + joinStrings(want, ",");
  }
  if (!wrong_ranks.empty())
    problem += std::string(problem.empty() ? "" : "; ") + "NCCL bootstraps off the planned interface: " +
               joinStrings(wrong_ranks, ", ");
  if (problem.empty()) return d;
  d.action = mode == CheckMode::strict ? Action::fail : Action::warn;
  d.reason = problem + " (" + report.verdict + ")";
  return d;
}

}  // namespace tlaunch::nccl
