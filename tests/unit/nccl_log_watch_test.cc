// The daemon's NCCL log watch: a rank's NCCL_DEBUG_FILE read as it grows (bounded), or its
// stderr, until the first Init COMPLETE; then the lines the report needs, once.
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "daemon/nccl_log_watch.h"
#include "daemon/nccl_watch_set.h"
#include "launcher/nccl/nccl_report.h"
#include "nccl_test_support.h"
#include "temp_dir.h"

using namespace tlaunch;
using namespace tlaunch::nccl::testing;

using tlaunch::testing::TempDir;

namespace {

nccl::NcclReport reportOfSummary(const Json& summary) {
  nccl::NcclLogState state;
  for (const auto& l : summary["lines"]) state.feed(l.get<std::string>(), "rank");
  return nccl::buildReport(state);
}

// The lines of one process of a fixture (its first host in the log).
std::string firstHostLines(const std::string& text) {
  std::string out, host;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    const auto colon = l.find(':');
    if (colon == std::string::npos || l.find("NCCL") == std::string::npos) continue;
    if (host.empty()) host = l.substr(0, colon);
    if (l.starts_with(host + ":")) out += l + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("nccl log watch: a file growing in pieces is summarised once, at Init COMPLETE") {
  TempDir dir{"nccl-watch"};
  const std::string text = firstHostLines(readFixture("01"));
  REQUIRE(text.find("Init COMPLETE") != std::string::npos);
  NcclLogWatch::Limits limits;
  limits.read_chunk = 100;  // several polls per piece
  NcclLogWatch watch(dir.path().string(), 1, limits);
  watch.poll();  // no file yet
  CHECK_FALSE(watch.ready());
  std::ofstream out(dir.path() / "nccl.rank1.node01.4242.log", std::ios::binary);
  std::ofstream other(dir.path() / "nccl.rank11.node01.4243.log", std::ios::binary);  // another rank
  other << "garbage\n" << std::flush;
  for (std::size_t at = 0; at < text.size() && !watch.ready(); at += 333) {
    out << text.substr(at, 333) << std::flush;
    for (int i = 0; i < 5; ++i) watch.poll();
  }
  REQUIRE(watch.ready());
  Json summary = watch.takeSummary();
  CHECK(summary["t"] == "nccl");
  CHECK(summary["r"] == 1);
  CHECK(summary["truncated"] == false);
  CHECK(watch.finished());
  CHECK_FALSE(watch.ready());
  auto report = reportOfSummary(summary);
  REQUIRE(report.ranks.size() == 1);
  CHECK(report.ranks[0].transport == nccl::Transport::ib);
  CHECK(report.ranks[0].bootstrap_if == "ib0");
  CHECK(report.ranks[0].status == nccl::Status::ok);
}

TEST_CASE("nccl log watch: the user's NCCL_DEBUG on stderr is parsed the same way") {
  NcclLogWatch watch("", 0);
  const std::string text = firstHostLines(readFixture("02"));
  watch.feed("a line of the program's own\n");
  watch.feed(text);
  REQUIRE(watch.ready());
  auto report = reportOfSummary(watch.takeSummary());
  REQUIRE(report.ranks.size() == 1);
  CHECK(report.ranks[0].transport == nccl::Transport::socket);
}

TEST_CASE("nccl log watch: a log without Init COMPLETE stops being parsed at the cap") {
  NcclLogWatch::Limits limits;
  limits.max_bytes = 1000;
  NcclLogWatch watch("", 0, limits);
  for (int i = 0; i < 100 && !watch.finished(); ++i) watch.feed("host:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n");
  CHECK(watch.finished());
  CHECK_FALSE(watch.ready());
}

// The directory was TMPDIR/tlaunch.<job>.<node>.nccl: predictable from ps (another user could
// create it first and turn the check off), and too long a name for a 250-byte host name.
TEST_CASE("nccl check: the log directory's name has a random part and fits any host name") {
  const std::string a = ncclLogDir("tl-0123", "node7"), b = ncclLogDir("tl-0123", "node7");
  CHECK(a != b);
  CHECK_THAT(a, Catch::EndsWith(".nccl"));
  CHECK(a.find("/tlaunch.tl-0123.node7.") != std::string::npos);
  const std::string dir = ncclLogDir("tl-0123", std::string(250, 'n'));
  CHECK(std::filesystem::path(dir).filename().string().size() <= 255);
}

// The node's NCCL log directory is listed once a poll for every rank (1,000 ranks ending
// together on a node each listed it: 8-9 s before their ends were reported).
TEST_CASE("nccl watch set: the log directory's files by the rank their name says") {
  TempDir tmp;
  const auto dir = tmp.path();
  for (const char* name : {"nccl.rank3.gpu01.4711.log", "nccl.rank3.gpu01.4712.log", "nccl.rank10.gpu01.99.log",
                           "nccl.rankx.gpu01.1.log", "nccl.rank.log", "nccl.rank7", "other.txt"})
    std::ofstream(dir / name) << "x\n";
  std::filesystem::create_directory(dir / "nccl.rank4.gpu01.5.log");
  auto by_rank = NcclWatchSet::filesByRank(dir.string());
  for (auto& [rank, names] : by_rank) std::sort(names.begin(), names.end());
  CHECK(by_rank == std::map<int, std::vector<std::string>>{
                       {3, {"nccl.rank3.gpu01.4711.log", "nccl.rank3.gpu01.4712.log"}}, {10, {"nccl.rank10.gpu01.99.log"}}});
  CHECK(NcclWatchSet::filesByRank((dir / "missing").string()).empty());
}
