// The NCCL transport report on real NCCL 2.4.8 – 2.28.9 logs: for every fixture, what
// tests/fixtures/nccl-logs/PROVENANCE.md says a correct parser answers (10, 13 and 14 have no
// row there: their assertions follow the file's name and the lines quoted in the comments).
#include <set>
#include <vector>

#include "nccl_test_support.h"

using namespace tlaunch::nccl;
using namespace tlaunch::nccl::testing;
using Strings = std::vector<std::string>;

TEST_CASE("nccl report: every NCCL log fixture has its test below") {
  const std::set<std::string> tested{"01", "02", "03", "04", "05", "06", "07", "08", "09",
                                     "10", "11", "12", "13", "14", "15", "16", "17", "18", "19"};
  std::set<std::string> present;
  for (const auto& entry : std::filesystem::directory_iterator(ncclLogDir()))
    if (entry.path().extension() == ".log") present.insert(entry.path().filename().string().substr(0, 2));
  CHECK(present == tested);
}

TEST_CASE("nccl report: 01: NET/IB on mlx4_0:1 without GDR, bootstrap ib0 (NCCL 2.4.8)") {
  auto report = reportOf("01");
  REQUIRE(report.ranks.size() == 2);
  const auto& r0 = rankIn(report, 0);
  const auto& r1 = rankIn(report, 1);
  CHECK(r0.host == "node01");
  CHECK(r1.host == "node02");
  for (const auto* r : {&r0, &r1}) {
    CHECK(r->transport == Transport::ib);
    CHECK(r->hcas == Strings{"mlx4_0:1"});
    CHECK(r->links == Strings{"IB"});
    CHECK(r->gdr == Gdr::no);
    CHECK(r->bootstrap_if == "ib0");
    CHECK(r->plugin.empty());
    CHECK(r->status == Status::ok);
  }
  CHECK(r0.bootstrap_address == "192.168.33.11");
  CHECK(r1.bootstrap_address == "192.168.33.12");
  CHECK(report.level == "ok");
  CHECK(report.verdict == "NCCL: 2 ranks on 2 hosts; between nodes NET/IB on mlx4_0 without GPUDirect RDMA; bootstrap on ib0");
}

TEST_CASE("nccl report: 02: NET/Socket over eno1 and ens9f0 after libibverbs failed to open (NCCL 2.4.8)") {
  auto report = reportOf("02");
  const auto& r0 = rankIn(report, 0);
  const auto& r1 = rankIn(report, 1);
  CHECK(r0.transport == Transport::socket);
  CHECK(r0.hcas == Strings{"eno1"});
  CHECK(r0.bootstrap_if == "eno1");
  CHECK(r0.bootstrap_address == "192.168.50.11");
  CHECK(r1.transport == Transport::socket);
  CHECK(r1.hcas == Strings{"ens9f0"});
  CHECK(r1.bootstrap_if == "ens9f0");
  CHECK(r1.bootstrap_address == "192.168.50.12");
  CHECK(warningCount(r0, "Failed to open libibverbs") == 1);
  CHECK(r0.no_ib_reason == "libibverbs not found");
  CHECK(report.level == "warning");
  CHECK(report.verdict ==
        "WARNING: ranks 0-1 use NET/Socket over eno1, ens9f0 (libibverbs not found) — NCCL fell back to TCP");
}

TEST_CASE("nccl report: 03: Socket over enp2s0, init failed on 'No route to host' twice, no transport") {
  auto report = reportOf("03");
  REQUIRE(report.ranks.size() == 1);
  const auto& p = processIn(report, "localhost", 3401);
  CHECK(p.selected_network == "Socket");
  CHECK(p.listed == Strings{"enp2s0"});
  CHECK(p.bootstrap_address == "192.168.80.156");
  CHECK(p.transport == Transport::none);
  CHECK(p.status == Status::error);
  CHECK(warningCount(p, "Connect to 192.168.80.157") == 2);
  CHECK(warningCount(p, "No route to host") == 2);
  CHECK(report.level == "error");
  CHECK(report.verdict.starts_with("ERROR: NCCL failed on localhost:3401: Connect to 192.168.80.157"));
  CHECK(contains(report.verdict, "No route to host (x2)"));
  CHECK(contains(report.verdict, "no transport was established (network Socket over enp2s0"));
}

TEST_CASE("nccl report: 04: NET/AWS Libfabric (aws-ofi-nccl 1.5.0aws, efa, 1 NIC) without GDR behind [1,N]<stdout>:") {
  auto report = reportOf("04");
  REQUIRE(report.ranks.size() == 2);
  for (int rank : {0, 1}) {
    const auto& r = rankIn(report, rank);
    CHECK(r.transport == Transport::plugin);
    CHECK(r.net == "AWS Libfabric");
    CHECK(r.plugin_version == "aws-ofi-nccl 1.5.0aws");
    CHECK(r.provider == "efa");
    CHECK(r.provider_nics == 1);
    CHECK(r.plugin_used);
    CHECK(r.gdr == Gdr::no);
    CHECK(r.bootstrap_if == "eth0");
  }
  CHECK(rankIn(report, 0).bootstrap_address == "10.11.13.106");
  CHECK(rankIn(report, 1).bootstrap_address == "10.11.5.31");
  CHECK(report.verdict == "NCCL: 2 ranks on 2 hosts; between nodes NET/AWS Libfabric (aws-ofi-nccl 1.5.0aws, efa, 1 NIC) "
                          "without GPUDirect RDMA; bootstrap on eth0");
}

// aws-ofi-nccl also runs on libfabric's tcp provider (no EFA device): the plugin was used, but the
// traffic is TCP. It read as "ok", and --nccl-check strict passed.
TEST_CASE("nccl report: 04 on libfabric's tcp provider: a warning, not ok") {
  std::string text = readFixture("04");
  for (size_t at = 0; (at = text.find("Selected Provider is efa", at)) != std::string::npos;)
    text.replace(at, 24, "Selected Provider is tcp;ofi_rxm");
  auto report = reportOfText(text);
  REQUIRE(report.ranks.size() == 2);
  CHECK(rankIn(report, 0).provider == "tcp;ofi_rxm");
  CHECK(report.level == "warning");
  CHECK(report.verdict.starts_with("WARNING: ranks 0-1 use AWS Libfabric over libfabric's tcp;ofi_rxm provider"));
}

TEST_CASE("nccl report: 05: NET/IB/1 is mlx4_0 port 2, no GDR, bootstrap ib0 (Horovod prefixes, NCCL 2.16.2)") {
  auto report = reportOf("05");
  const auto& r0 = rankIn(report, 0);
  const auto& r1 = rankIn(report, 1);
  CHECK(r0.host == "node01");
  CHECK(r1.host == "node03");
  for (const auto* r : {&r0, &r1}) {
    CHECK(r->transport == Transport::ib);
    CHECK(r->hcas == Strings{"mlx4_0:2"});
    CHECK(r->gdr == Gdr::no);
    CHECK(r->bootstrap_if == "ib0");
  }
  CHECK(r0.bootstrap_address == "10.149.0.1");
  CHECK(r1.bootstrap_address == "10.149.0.3");
  CHECK(contains(report.verdict, "between nodes NET/IB on mlx4_0:2 without GPUDirect RDMA; bootstrap on ib0"));
}

TEST_CASE("nccl report: 06: RoCE mlx5_0 with GDR, rank 9 via PXN through rank 8, P2P/IPC, plugin loaded but unused") {
  auto report = reportOf("06");
  REQUIRE(report.ranks.size() == 8);
  CHECK(report.world == 16);
  const auto& r8 = rankIn(report, 8);
  CHECK(r8.transport == Transport::roce);
  CHECK(r8.hcas == Strings{"mlx5_0:1"});
  CHECK(r8.gdr == Gdr::yes);
  CHECK(r8.pxn_proxy == -1);
  const auto& r9 = rankIn(report, 9);
  CHECK(r9.pxn_proxy == 8);
  CHECK(r9.gdr == Gdr::yes);
  for (int rank = 8; rank <= 15; ++rank) {
    const auto& r = rankIn(report, rank);
    CHECK(r.host == "tpgds-aihub0008");
    CHECK(r.intra == Strings{"P2P/IPC"});
    CHECK(r.bootstrap_if == "enp25s0np0");
    CHECK(r.bootstrap_address == "10.99.91.63");
    CHECK(r.plugin == "AWS Libfabric");
    CHECK_FALSE(r.plugin_used);
  }
  CHECK(report.transport == Transport::roce);
  CHECK(report.verdict ==
        "NCCL: ranks 8-15 of 16 in this log; between nodes NET/IB over RoCE on mlx5_0 with GPUDirect RDMA (PXN: rank 9 "
        "through rank 8's NIC); bootstrap on enp25s0np0; within nodes P2P/IPC; net plugin AWS Libfabric loaded but not used");
}

TEST_CASE("nccl report: 06: rank 8's NET/IB hops go both ways") {
  NcclLogState state;
  state.feedText(readFixture("06"));
  state.finish();
  bool send = false, receive = false;
  for (const auto& p : state.processes())
    for (const auto& [key, hop] : p.hops)
      if (hop.isNet() && hop.self() == 8) (hop.direction == Direction::send ? send : receive) = true;
  CHECK(send);
  CHECK(receive);
}

TEST_CASE("nccl report: 07: SHM/direct/direct on one host, Socket on bond0 selected but unused, interleaved lines") {
  auto report = reportOf("07");
  REQUIRE(report.ranks.size() == 2);
  for (int rank : {0, 1}) {
    const auto& r = rankIn(report, rank);
    CHECK(r.host == "ljm");
    CHECK(r.intra == Strings{"SHM/direct/direct"});
    CHECK(r.transport == Transport::none);
    CHECK(r.status == Status::ok);
  }
  CHECK(processIn(report, "ljm", 803563).rank == 0);  // only in a line cut into another process's line
  const auto& r1 = rankIn(report, 1);
  CHECK(r1.selected_network == "Socket");
  CHECK(r1.listed == Strings{"bond0"});
  CHECK(r1.no_ib_reason == "NET/IB: No device found");
  CHECK(report.bootstrap_ifs == Strings{"bond0"});
  CHECK_FALSE(report.multi_node);
  CHECK(report.level == "ok");
  CHECK(report.verdict == "NCCL: 2 ranks; single node (network Socket selected, not used: NET/IB: No device found); "
                          "bootstrap on bond0; within nodes SHM/direct/direct");
}

TEST_CASE("nccl report: 07 behind srun -l or kubectl's timestamps reads as 07 alone") {
  // The interleaved line is repaired only with the host names learnt from clean lines: a prefix
  // that hid them would invent hosts ("80356ljm") out of the cut.
  const auto bare = reportOf("07");
  std::istringstream in(readFixture("07"));
  std::string srun, stamped;
  for (std::string l; std::getline(in, l);) {
    srun += "0: " + l + "\n";
    stamped += "2025-05-22T14:26:33.407Z " + l + "\n";
  }
  for (const auto& text : {srun, stamped}) {
    auto report = reportOfText(text);
    CHECK(report.hosts == 1);
    CHECK(report.processes == 2);
    CHECK(report.verdict == bare.verdict);
  }
}

TEST_CASE("nccl report: 08: rank 8+i on NET/IB/i (RoCE) with GDR, rail-aligned HCAs, OFI plugin failed") {
  auto report = reportOf("08");
  const Strings hcas{"mlx5_0:1", "mlx5_1:1", "mlx5_2:1", "mlx5_5:1", "mlx5_6:1", "mlx5_7:1", "mlx5_8:1", "mlx5_11:1"};
  for (int i = 0; i < 8; ++i) {
    const auto& r = rankIn(report, 8 + i);
    CHECK(r.transport == Transport::roce);
    CHECK(r.hcas == Strings{hcas[static_cast<std::size_t>(i)]});
    CHECK(r.gdr == Gdr::yes);
    CHECK(r.intra == Strings{"P2P/IPC"});
    CHECK(r.bootstrap_if == "enp25s0np0");
    CHECK_FALSE(r.plugin_used);
  }
  CHECK(contains(report.verdict, "between nodes NET/IB over RoCE on mlx5_0-2,5-8,11 with GPUDirect RDMA"));
  CHECK(contains(report.verdict, "net plugin AWS Libfabric loaded but not used"));
}

TEST_CASE("nccl report: 09: NET/Libfabric/0/GDRDMA (aws-ofi-nccl 1.16.2, efa, 1 NIC), no NVLink, rank 0 of 4") {
  auto report = reportOf("09");
  REQUIRE(report.ranks.size() == 1);
  const auto& r = rankIn(report, 0);
  CHECK(r.transport == Transport::plugin);
  CHECK(r.net == "Libfabric");
  CHECK(r.gdr == Gdr::yes);
  CHECK(r.plugin_version == "aws-ofi-nccl 1.16.2");
  CHECK(r.provider == "efa");
  CHECK(r.provider_nics == 1);
  CHECK(r.intra.empty());
  CHECK(r.bootstrap_if == "eth0");
  CHECK(r.bootstrap_address == "10.0.5.112");
  CHECK(report.world == 4);
  CHECK(report.verdict.starts_with("NCCL: rank 0 of 4 in this log; between nodes NET/Libfabric (aws-ofi-nccl 1.16.2, "
                                   "efa, 1 NIC) with GPUDirect RDMA; bootstrap on eth0"));
}

TEST_CASE("nccl report: 10: NET/Libfabric/0 without GDR ('GDR not supported'), rank 0 of 4") {
  auto report = reportOf("10");
  const auto& r = rankIn(report, 0);
  CHECK(r.transport == Transport::plugin);
  CHECK(r.net == "Libfabric");
  CHECK(r.gdr == Gdr::no);
  CHECK(r.provider_nics == 4);  // "Selected provider is efa, fabric is efa (found 4 nics)"
  CHECK(r.bootstrap_if == "eth0");
  CHECK(contains(report.verdict, "without GPUDirect RDMA"));
}

TEST_CASE("nccl report: 11: single node on SHM/direct/direct, network Libfabric selected but unused") {
  auto report = reportOf("11");
  REQUIRE(report.ranks.size() == 4);
  for (int rank = 0; rank < 4; ++rank) {
    const auto& r = rankIn(report, rank);
    CHECK(r.intra == Strings{"SHM/direct/direct"});
    CHECK(r.transport == Transport::none);
    CHECK(r.selected_network == "Libfabric");
  }
  CHECK_FALSE(report.multi_node);
  CHECK(report.bootstrap_ifs.empty());
  CHECK(report.verdict == "NCCL: 4 ranks; single node (network Libfabric selected, not used); within nodes SHM/direct/direct");
}

TEST_CASE("nccl report: 12: single node on P2P/CUMEM, log starts mid-init: bootstrap unknown") {
  auto report = reportOf("12");
  REQUIRE(report.ranks.size() == 4);
  for (int rank = 0; rank < 4; ++rank) {
    CHECK(rankIn(report, rank).intra == Strings{"P2P/CUMEM"});
    CHECK(rankIn(report, rank).transport == Transport::none);
    CHECK(rankIn(report, rank).bootstrap_if.empty());
  }
  CHECK(report.verdict == "NCCL: 4 ranks; single node (network Libfabric selected, not used); within nodes P2P/CUMEM");
}

TEST_CASE("nccl report: 13: vLLM on Ray, 2 pods: NET/IB with GDR between them, P2P/IPC within, bootstrap eth0") {
  auto report = reportOf("13");
  CHECK(report.hosts == 2);  // "pseek-v2-5-0-1:627" (start cut by Ray) is deepseek-v2-5-0-1's pid 627
  CHECK_FALSE(report.ranks_unique);  // tensor- and pipeline-parallel communicators number ranks apart
  CHECK(report.transport == Transport::ib);
  CHECK(report.gdr == Gdr::yes);
  CHECK(report.intra == Strings{"P2P/IPC"});
  CHECK(report.bootstrap_ifs == Strings{"eth0"});
  const auto& head = processIn(report, "deepseek-v2-5-0", 5969);
  CHECK(head.listed == Strings{"mlx5_0:1/IB", "mlx5_1:1/IB", "mlx5_2:1/IB", "mlx5_3:1/IB", "mlx5_4:1/IB", "mlx5_5:1/IB",
                               "mlx5_6:1/IB", "mlx5_7:1/IB"});
  for (const auto& hca : report.hcas) CHECK(hca.starts_with("mlx5_"));
  CHECK(report.level == "ok");
  CHECK(contains(report.verdict, "on 2 hosts; between nodes NET/IB on mlx5_"));
}

TEST_CASE("nccl report: 14: vLLM on Ray with ANSI colours: NET/Socket over eth0 between pods (NET/IB: No device found)") {
  auto report = reportOf("14");
  CHECK(report.hosts == 2);
  CHECK(report.transport == Transport::socket);
  CHECK(report.hcas == Strings{"eth0"});
  CHECK(report.intra == Strings{"P2P/IPC"});
  CHECK(processIn(report, "deepseek-v2-5-0", 8845).no_ib_reason == "NET/IB: No device found");
  CHECK(report.level == "warning");
  CHECK(report.verdict.starts_with("WARNING: "));
  CHECK(contains(report.verdict, "use NET/Socket over eth0 (NET/IB: No device found) — NCCL fell back to TCP"));
}

TEST_CASE("nccl report: 15: rank 56 receives over NET/IB/2 = mlx5_2 RoCE (not IB), P2P/IPC to 58, then ibv_modify_qp fails") {
  auto report = reportOf("15");
  const auto& r = rankIn(report, 56);
  CHECK(r.transport == Transport::roce);
  CHECK(r.hcas == Strings{"mlx5_2:1"});
  CHECK(r.gdr == Gdr::no);
  CHECK(r.intra == Strings{"P2P/IPC"});
  CHECK(r.bootstrap_if == "eth0");
  CHECK(r.bootstrap_address == "10.100.72.18");
  CHECK(warningCount(r, "Call to ibv_modify_qp failed with error Invalid argument") == 1);
  CHECK(r.status == Status::error);
  CHECK(report.verdict == "ERROR: NCCL failed on rank 56: Call to ibv_modify_qp failed with error Invalid argument; "
                          "between nodes NET/IB over RoCE on mlx5_2 without GPUDirect RDMA");
}

TEST_CASE("nccl report: 16: rank 0 on NET/IB/0 = mlx5_1 RoCE without GDR, bootstrap ens192f1, then ibv_create_cq fails") {
  auto report = reportOf("16");
  const auto& r = rankIn(report, 0);
  CHECK(r.host == "spark01");
  CHECK(r.transport == Transport::roce);
  CHECK(r.hcas == Strings{"mlx5_1:1"});
  CHECK(r.gdr == Gdr::no);
  CHECK(r.bootstrap_if == "ens192f1");
  CHECK(r.bootstrap_address == "10.150.178.134");
  CHECK(warningCount(r, "Call to ibv_create_cq failed") == 1);
  CHECK(report.level == "error");
  CHECK(report.verdict.starts_with("ERROR: NCCL failed on rank 0: Call to ibv_create_cq failed"));
}

TEST_CASE("nccl report: 17: Socket over eth0, bootstrap eth0, init failed on the topology: no channels") {
  auto report = reportOf("17");
  REQUIRE(report.ranks.size() == 1);
  const auto& p = report.ranks.front();
  CHECK(p.selected_network == "Socket");
  CHECK(p.listed == Strings{"eth0"});
  CHECK(p.bootstrap_if == "eth0");
  CHECK(p.bootstrap_address == "172.17.0.5");
  CHECK(p.transport == Transport::none);
  CHECK(p.intra.empty());
  CHECK(warningCount(p, "Could not find real path of /sys/class/pci_bus/") == 1);
  CHECK(p.status == Status::error);
  CHECK(contains(report.verdict, "Could not find real path"));
  CHECK(contains(report.verdict, "no transport was established (network Socket over eth0, libibverbs not found)"));
}

TEST_CASE("nccl report: 18: three completion errors status=12 vendor err 129 on kp-ddp-worker-0 GPU 4: retry exceeded") {
  auto report = reportOf("18");
  REQUIRE(report.ranks.size() == 1);
  const auto& p = processIn(report, "kp-ddp-worker-0", 3468);
  CHECK(p.cuda_dev == 4);
  CHECK(warningCount(p, "status=12") == 3);
  CHECK(warningCount(p, "vendor err 129") == 3);
  CHECK(p.status == Status::error);
  CHECK(p.transport == Transport::none);
  CHECK(contains(report.verdict, "(x3) — IB retry count exceeded"));
  CHECK(contains(report.verdict, "no transport line in this log"));
}

TEST_CASE("nccl report: 19: one rank on an H100 VM: Socket selected and not used, bootstrap eth0 (NCCL 2.28.9)") {
  auto report = reportOf("19");
  REQUIRE(report.ranks.size() == 1);
  const auto& p = processIn(report, "vm", 800);
  CHECK(p.rank == 0);
  CHECK(p.cuda_dev == 0);
  CHECK(p.selected_network == "Socket");
  CHECK(p.listed == Strings{"eth0"});
  CHECK(p.bootstrap_if == "eth0");
  CHECK(p.bootstrap_address == "192.0.2.2");
  CHECK(p.no_ib_reason == "NET/IB: No device found");
  CHECK(p.transport == Transport::none);
  CHECK(p.status == Status::ok);
  CHECK(report.level == "ok");
  CHECK(report.verdict == "NCCL: 1 rank; single node (network Socket selected, not used: NET/IB: No device found); bootstrap on eth0");
}
