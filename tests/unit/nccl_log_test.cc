// The NCCL log classifier and the incremental state on written-by-hand and hostile input.
#include <random>

#include <nlohmann/json.hpp>

#include "launcher/nccl/nccl_log.h"
#include "launcher/nccl/nccl_report_output.h"
#include "nccl_test_support.h"

using namespace tlaunch::nccl;
using namespace tlaunch::nccl::testing;
using Strings = std::vector<std::string>;

TEST_CASE("nccl log: prefixes of NCCL and of other launchers are stripped") {
  for (const char* line : {"node1:12:34 [3] NCCL INFO Using network IB",
                           "[1,0]<stdout>:node1:12:34 [3] NCCL INFO Using network IB",
                           "[7] node1:12:34 [3] NCCL INFO Using network IB",
                           "[node1:7] node1:12:34 [3] NCCL INFO Using network IB",
                           "(RayWorkerWrapper pid=12, ip=10.0.0.1) node1:12:34 [3] NCCL INFO Using network IB",
                           "\x1b[36m(RayWorkerWrapper pid=12)\x1b[0m node1:12:34 [3] NCCL INFO Using network IB\x1b[32m "
                           "[repeated 3x across cluster]\x1b[0m"}) {
    auto lines = parseLine(line);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].origin.host == "node1");
    CHECK(lines[0].origin.pid == 12);
    CHECK(lines[0].origin.tid == 34);
    CHECK(lines[0].origin.cuda_dev == 3);
    CHECK(lines[0].event.kind == EventKind::usingNetwork);
    CHECK(lines[0].event.name == "IB");
  }
  CHECK(parseLine("[1,3]<stdout>:h:1:1 [0] NCCL INFO x")[0].origin.tag_rank == 3);
  CHECK(parseLine("[node1:5] h:1:1 [0] NCCL INFO x")[0].origin.tag_rank == 5);
}

TEST_CASE("nccl log: srun -l, timestamps, kubectl --prefix and docker compose prefixes are stripped") {
  for (const char* line : {"3: node1:12:34 [3] NCCL INFO Using network IB",
                           "  3: node1:12:34 [3] NCCL INFO Using network IB",
                           "2025-05-22T14:26:33.407512345Z node1:12:34 [3] NCCL INFO Using network IB",
                           "2025-05-22 14:26:33,407 node1:12:34 [3] NCCL INFO Using network IB",
                           "2025-05-22T14:26:33+02:00 node1:12:34 [3] NCCL INFO Using network IB",
                           "[pod/job-worker-0/main] node1:12:34 [3] NCCL INFO Using network IB",
                           "[2025-05-22 14:26:33,407] node1:12:34 [3] NCCL INFO Using network IB",
                           "worker-1  | node1:12:34 [3] NCCL INFO Using network IB",
                           "[pod/w/main] 2025-05-22T14:26:33Z 3: node1:12:34 [3] NCCL INFO Using network IB"}) {
    INFO(line);
    auto lines = parseLine(line);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].origin.host == "node1");
    CHECK(lines[0].at_line_start);
    CHECK(lines[0].event.name == "IB");
  }
  CHECK(parseLine("3: h:1:1 [0] NCCL INFO x")[0].origin.tag_rank == 3);
  CHECK(parseLine("[2025-05-22 14:26:33,407] h:1:1 [0] NCCL INFO x")[0].origin.tag_rank == -1);
  CHECK(parseLine("[pod/job-worker-0/main] h:1:1 [0] NCCL INFO x")[0].origin.tag_rank == -1);
  // Not tags: text before the host means it may be another message's tail.
  CHECK_FALSE(parseLine("loss 0.5 node1:12:34 [3] NCCL INFO x")[0].at_line_start);
  CHECK_FALSE(parseLine("2025-05-22 node1:12:34 [3] NCCL INFO x")[0].at_line_start);
}

TEST_CASE("nccl log: a host that begins its line is never shortened to a known host it ends with") {
  // node1 and gpu-node1; worker-0 and job-worker-0 with the same pid (containers' pids repeat).
  NcclLogState state;
  state.feedText("node1:1000:1000 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
                 "gpu-node1:2000:2000 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
                 "3: worker-0:7:7 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>\n"
                 "4: job-worker-0:7:7 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.4<0>\n"
                 "4: job-worker-0:7:7 [0] NCCL INFO Using network Socket\n"
                 "3: worker-0:7:7 [0] NCCL INFO Using network IB\n");
  state.finish();
  std::map<std::string, std::string> networkOf;
  for (const auto& p : state.processes()) networkOf[p.host + ":" + std::to_string(p.pid)] = p.using_network;
  CHECK(networkOf == std::map<std::string, std::string>{
                         {"node1:1000", ""}, {"gpu-node1:2000", ""}, {"worker-0:7", "IB"}, {"job-worker-0:7", "Socket"}});
}

TEST_CASE("nccl log: the message forms of NCCL 2.4 and 2.27 classify alike") {
  auto boot = classifyMessage("Bootstrap : Using [0]ib0:192.168.33.11<0>", false);
  CHECK(boot.kind == EventKind::bootstrap);
  CHECK(boot.name == "ib0");
  CHECK(classifyMessage("Bootstrap: Using enp25s0np0:10.99.91.63<0>", false).name == "enp25s0np0");
  auto ib = classifyMessage("NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_3:1/IB/SHARP [RO]; OOB eth0:10.0.0.1<0>", false);
  REQUIRE(ib.kind == EventKind::netDevices);
  CHECK(ib.net == "IB");
  REQUIRE(ib.devices.size() == 2);
  CHECK(ib.devices[1] == NetDevice{1, "mlx5_3", 1, "IB", ""});
  CHECK(ib.oob_if == "eth0");
  auto hop = classifyMessage("Channel 01/0 : 9[2a000] -> 0[18000] [send] via NET/IB/3(8)/GDRDMA/Shared", false);
  REQUIRE(hop.kind == EventKind::channel);
  CHECK(hop.hop.src == 9);
  CHECK(hop.hop.dst == 0);
  CHECK(hop.hop.net == "IB");
  CHECK(hop.hop.net_dev == 3);
  CHECK(hop.hop.proxy_rank == 8);
  CHECK(hop.hop.gdr);
  auto old = classifyMessage("Ring 00 : 1 -> 0 [receive] via NET/IB/0", false);
  CHECK(old.hop.self() == 0);
  CHECK_FALSE(old.hop.gdr);
  CHECK(classifyMessage("Channel 00/0 : 0[0] -> 1[0] [send] via NET/AWS Libfabric/0", false).hop.net == "AWS Libfabric");
  CHECK(classifyMessage("NET/IB : No device found.", false).kind == EventKind::netNoDevice);
  CHECK(classifyMessage("NET/Plugin: Loaded net plugin AWS Libfabric (v6)", false).name == "AWS Libfabric");
  auto done = classifyMessage("comm 0x7f3f rank 3 nranks 8 cudaDev 3 nvmlDev 3 - Init COMPLETE", false);
  CHECK(done.kind == EventKind::initComplete);
  CHECK(done.rank == 3);
  CHECK(done.nranks == 8);
  CHECK(classifyMessage("init.cc:695 -> 2", false).kind == EventKind::errorTrace);
  CHECK(classifyMessage("Call to ibv_create_cq failed", true).kind == EventKind::warn);
}

TEST_CASE("nccl log: helpers: rank ranges and HCA lists") {
  CHECK(rankRanges({15, 8, 9, 10, 11, 3}) == "3,8-11,15");
  CHECK(rankRanges({}) == "");
  CHECK(compactHcas({"mlx5_0:1", "mlx5_1:1", "mlx5_2:1", "mlx5_3:1"}) == "mlx5_0-3");
  CHECK(compactHcas({"mlx4_0:2"}) == "mlx4_0:2");
  CHECK(compactHcas({"eno1", "ens9f0"}) == "eno1,ens9f0");
}

TEST_CASE("nccl log: empty input: no ranks, and the verdict says so") {
  NcclLogState state;
  state.feed("");
  state.feedText("\n\n\n");
  state.finish();
  auto report = buildReport(state);
  CHECK(report.ranks.empty());
  CHECK(report.level == "none");
  CHECK(report.verdict == "NCCL: no NCCL_DEBUG=INFO output found");
  CHECK(reportJson(report).at("ranks").empty());
}

TEST_CASE("nccl log: binary garbage is survived, and a real line after it still counts") {
  std::mt19937 random(42);
  std::string garbage;
  for (int i = 0; i < 200000; ++i) garbage.push_back(static_cast<char>(random() & 0xff));
  garbage += "NCCL INFO \x1b[ :: [9] NCCL WARN ]:1:1 [x] NCCL INFO via -> [";
  NcclLogState state;
  state.feedText(garbage);
  state.feedText("\nnode1:5:5 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 - Init COMPLETE\n");
  auto report = buildReport(state);
  REQUIRE(report.ranks.size() == 1);
  CHECK(report.ranks[0].status == Status::ok);
  CHECK_NOTHROW(reportJson(report).dump());
}

TEST_CASE("nccl log: bytes that are not UTF-8 in a message still give valid JSON") {
  auto report = reportOfText("n1:1:1 [0] NCCL INFO Bootstrap : Using eth\xe9:10.0.0.1<0>\n"
                             "n1:1:1 [0] misc/x.cc:1 NCCL WARN caf\xe9 \xff\xfe failed\n");
  REQUIRE(report.ranks.size() == 1);
  REQUIRE(report.ranks[0].warnings.size() == 1);
  auto text = reportJsonText(report);
  auto back = nlohmann::json::parse(text);
  CHECK(back.at("ranks").at(0).at("warnings").at(0).at("text").get<std::string>().starts_with("caf"));
}

TEST_CASE("nccl log: a 10 MB single line neither hangs nor hides the messages in it") {
  std::string line(10u << 20, 'x');
  line += " node1:5:5 [0] NCCL INFO NET/IB : No device found.";
  line.insert(5u << 20, "node1:5:5 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0> ");
  NcclLogState state;
  for (std::size_t at = 0; at < line.size(); at += 65536) state.feedText(std::string_view(line).substr(at, 65536));
  state.finish();
  auto report = buildReport(state);
  REQUIRE(report.ranks.size() == 1);
  CHECK(report.ranks[0].bootstrap_if == "eth0");
  CHECK(report.ranks[0].no_ib_reason == "NET/IB: No device found");
}

TEST_CASE("nccl log: interleaved processes: lines alternate, and one process's message is cut into another's") {
  const std::string text =
      "hostA:100:101 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n"
      "hostA:200:201 [1] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n"
      "hostA:100:101 [0] NCCL INFO comm 0x1 rank 0 nranks hostA:200:201 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1"
      "hostA:100:101 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC/read\n"
      "hostA:200:201 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via P2P/IPC/read\n"
      "hostA:100:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 - Init COMPLETE\n";
  auto report = reportOfText(text);
  REQUIRE(report.ranks.size() == 2);
  CHECK(processIn(report, "hostA", 100).rank == 0);
  CHECK(processIn(report, "hostA", 200).rank == 1);  // from the message glued after "cudaDev 1"
  CHECK(processIn(report, "hostA", 100).status == Status::ok);
  CHECK(processIn(report, "hostA", 200).status == Status::incomplete);
  CHECK(report.intra == Strings{"P2P/IPC"});
}

TEST_CASE("nccl log: ANSI colours inside and around a message do not change it") {
  auto report = reportOfText(
      "\x1b[1;31mn1:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB \x1b[0mib0:10.0.0.1<0>\n"
      "\x1b[33mn1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\x1b[0m\r\n");
  REQUIRE(report.ranks.size() == 1);
  CHECK(report.ranks[0].transport == Transport::ib);
  CHECK(report.ranks[0].hcas == Strings{"mlx5_0:1"});
  CHECK(report.ranks[0].oob_if == "ib0");
  CHECK(report.ranks[0].gdr == Gdr::yes);
}

TEST_CASE("nccl log: truncated lines are ignored, not misread") {
  auto report = reportOfText("[56] host-7:7240:7401\nspark01:2683\nn1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via P\n"
                             "n1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/I");
  REQUIRE(report.ranks.size() == 1);
  CHECK(report.ranks[0].intra.empty());
  CHECK(report.ranks[0].transport == Transport::none);
}

TEST_CASE("nccl log: fed in arbitrary pieces, the state ends where one feed of the whole log ends") {
  const std::string text = readFixture("08");
  auto whole = reportJson(reportOfText(text));
  std::mt19937 random(7);
  NcclLogState state;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t n = 1 + random() % 300;
    state.feedText(std::string_view(text).substr(at, n), "test");
    at += n;
  }
  state.finish();
  CHECK(reportJson(buildReport(state)) == whole);
}
