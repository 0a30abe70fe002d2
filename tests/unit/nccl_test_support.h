#pragma once
// Reading the NCCL log fixtures (tests/fixtures/nccl-logs) for the report tests. A missing
// fixture fails the test: it is never skipped.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "launcher/nccl/nccl_report.h"
#include "launcher/nccl/nccl_state.h"

namespace tlaunch::nccl::testing {

inline std::filesystem::path ncclLogDir() { return std::filesystem::path(TLAUNCH_FIXTURES_DIR) / "nccl-logs"; }

// The fixture whose name starts with `number` ("06-"); fails the test when there is none.
inline std::filesystem::path fixturePath(const std::string& number) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(ncclLogDir(), ec))
    if (entry.path().filename().string().starts_with(number + "-") && entry.path().extension() == ".log")
      return entry.path();
  FAIL("missing NCCL log fixture " << number << "-*.log in " << ncclLogDir().string());
  return {};
}

inline std::string readFixture(const std::string& number) {
  std::ifstream in(fixturePath(number), std::ios::binary);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline NcclReport reportOfText(const std::string& text) {
  NcclLogState state;
  state.feedText(text, "test");
  state.finish();
  return buildReport(state);
}

inline NcclReport reportOf(const std::string& number) { return reportOfText(readFixture(number)); }

// A two-process fixture as two daemons send it: each process's NCCL lines, the first host first.
inline std::array<std::vector<std::string>, 2> linesOfTwoProcesses(const std::string& number) {
  std::array<std::vector<std::string>, 2> lines;
  std::istringstream in(readFixture(number));
  std::string first;
  for (std::string l; std::getline(in, l);) {
    const auto colon = l.find(':');
    if (colon == std::string::npos || l.find("NCCL") == std::string::npos) continue;
    if (first.empty()) first = l.substr(0, colon);
    lines[l.starts_with(first + ":") ? 0 : 1].push_back(l);
  }
  return lines;
}

inline const RankReport& rankIn(const NcclReport& report, int rank) {
  auto it = std::find_if(report.ranks.begin(), report.ranks.end(), [&](const RankReport& r) { return r.rank == rank; });
  if (it == report.ranks.end()) FAIL("no rank " << rank << " in the report; verdict: " << report.verdict);
  return *it;
}

inline const RankReport& processIn(const NcclReport& report, const std::string& host, long pid) {
  auto it = std::find_if(report.ranks.begin(), report.ranks.end(),
                         [&](const RankReport& r) { return r.host == host && r.pid == pid; });
  if (it == report.ranks.end()) FAIL("no process " << host << ":" << pid << "; verdict: " << report.verdict);
  return *it;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline int warningCount(const RankReport& r, const std::string& part) {
  int n = 0;
  for (const auto& w : r.warnings)
    if (contains(w.text, part)) n += w.count;
  return n;
}

}  // namespace tlaunch::nccl::testing
