// The network choice rendered as environment: exact strings per variable, user values win.
#include <catch2/catch.hpp>

#include <map>

#include "binding/fabric/fabric_env.h"
#include "fabric_env_lookup.h"
#include "fabric_test_builder.h"

using namespace tlaunch;
using namespace tlaunch::testing;

namespace {

NetworkChoice ibChoice() {
  std::vector<NodeFabricInput> nodes{
      {"node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").ib("mlx5_1", 1, "ib1", "10.2.0.1").build(), {}},
      {"node2", FabricBuilder().ib("mlx5_2", 1, "ibp94s0", "10.1.0.2").ib("mlx5_3", 1, "ibp218s0", "10.2.0.2").build(),
       {}},
  };
  return chooseNetwork(nodes, {}).value();
}

NetworkChoice roceChoice(bool sameIndex) {
  FabricBuilder n1 = FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.1").roce("mlx5_1", 1, "ens1f1", "10.3.0.11");
  if (!sameIndex) {
    auto& gids = n1.port("mlx5_1", 1).gids;
    gids.insert(gids.begin() + 2, makeGidEntry(2, ipv4Gid(10, 5, 0, 1), GidType::ib_roce_v1, "ens1f1"));
    for (std::size_t i = 3; i < gids.size(); ++i) gids[i].index = static_cast<int>(i);
  }
  std::vector<NodeFabricInput> nodes{
      {"node1", n1.build(), {}},
      {"node2", FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.2").build(), {}},
  };
  return chooseNetwork(nodes, {}).value();
}

}  // namespace

TEST_CASE("InfiniBand: every layer on the fabric, with NCCL's exact-match forms") {
  NetworkChoice choice = ibChoice();
  auto node2 = values(fabricEnv(choice, 1, {}));
  CHECK(node2 == std::map<std::string, std::string>{
                     {"MASTER_ADDR", "10.1.0.1"},
                     {"NCCL_SOCKET_IFNAME", "=ibp94s0"},
                     {"NCCL_SOCKET_FAMILY", "AF_INET"},
                     {"NCCL_IB_DISABLE", "0"},
                     {"NCCL_NET", "IB"},
                     {"NCCL_IB_HCA", "=mlx5_2:1,mlx5_3:1"},
                     {"GLOO_SOCKET_IFNAME", "ibp94s0"},
                     {"TP_SOCKET_IFNAME", "ibp94s0"},
                     {"UCX_NET_DEVICES", "mlx5_2:1,mlx5_3:1"},
                     {"OMPI_MCA_btl_tcp_if_include", "10.1.0.0/16"},
                     {"OMPI_MCA_oob_tcp_if_include", "10.1.0.0/16"},
                     {"PRTE_MCA_prte_if_include", "10.1.0.0/16"},
                     {"PMIX_MCA_ptl_tcp_if_include", "10.1.0.0/16"},
                 });
  auto node1 = values(fabricEnv(choice, 0, {}));
  CHECK(node1["NCCL_SOCKET_IFNAME"] == "=ib0");
  CHECK(node1["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1");
  CHECK(node1["MASTER_ADDR"] == "10.1.0.1");
  CHECK(node1.count("NCCL_IB_GID_INDEX") == 0);  // IB link layer: NCCL ignores it
}

TEST_CASE("NCCL_NET=IB only on InfiniBand/RoCE with no net plugin in play (EFA, NCCL_NET_PLUGIN, aws-ofi-nccl)") {
  // A node with an EFA device (PCI vendor 0x1d0f, as on AWS p4d/p5) beside the IB fabric: NCCL
  // reaches EFA through aws-ofi-nccl, which NCCL_NET=IB would bypass.
  NodeFabric withEfa = FabricBuilder().ib("mlx5_2", 1, "ib0", "10.1.0.2").build();
  RdmaDevice efa;
  efa.name = "rdmap16s27";
  efa.vendor_id = kPciVendorAmazon;
  efa.ports.push_back(RdmaPort{});
  efa.ports.back().number = 1;
  efa.ports.back().state = kPortStateActive;
  withEfa.devices.push_back(efa);
  std::vector<NodeFabricInput> nodes{
      {"node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").build(), {}},
      {"node2", withEfa, {}},
  };
  NetworkChoice choice = chooseNetwork(nodes, {}).value();
  REQUIRE(choice.rdma);
  CHECK(values(fabricEnv(choice, 0, {})).count("NCCL_NET") == 1);
  auto efaNode = values(fabricEnv(choice, 1, {}));
  CHECK(efaNode.count("NCCL_NET") == 0);
  CHECK(efaNode["NCCL_IB_HCA"] == "=mlx5_2:1");  // the IB ports are still steered

  NetworkChoice ib = ibChoice();
  CHECK(values(fabricEnv(ib, 0, {{"NCCL_NET_PLUGIN", {"libnccl-net-ofi.so", "environment"}}})).count("NCCL_NET") == 0);
  CHECK(values(fabricEnv(ib, 0, {{"NCCL_NET_PLUGIN", {"none", "-x"}}})).count("NCCL_NET") == 1);
  UserEnv ofi{{"LD_LIBRARY_PATH", {"/usr/local/cuda/lib64:/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib", "environment"}}};
  CHECK(values(fabricEnv(ib, 0, ofi)).count("NCCL_NET") == 0);
  UserEnv plain{{"LD_LIBRARY_PATH", {"/usr/local/cuda/lib64:/opt/hpcx/ucx/lib", "environment"}}};
  CHECK(values(fabricEnv(ib, 0, plain))["NCCL_NET"] == "IB");
}

TEST_CASE("a rank's nearest HCA port narrows UCX_NET_DEVICES only") {
  NetworkChoice choice = ibChoice();
  auto rank = values(fabricEnv(choice, 0, {}, "mlx5_1:1"));
  CHECK(rank["UCX_NET_DEVICES"] == "mlx5_1:1");
  CHECK(rank["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1");
}

TEST_CASE("RoCE: the GID index NCCL would pick, family, version and the data subnet") {
  auto same = values(fabricEnv(roceChoice(true), 0, {}));
  CHECK(same["NCCL_IB_HCA"] == "=mlx5_0:1,mlx5_1:1");
  CHECK(same["NCCL_IB_GID_INDEX"] == "3");
  CHECK(same["NCCL_IB_ADDR_FAMILY"] == "AF_INET");
  CHECK(same["NCCL_IB_ROCE_VERSION_NUM"] == "2");
  CHECK(same["NCCL_IB_ADDR_RANGE"] == "10.3.0.0/24");
  CHECK(same["NCCL_SOCKET_IFNAME"] == "=ens1f0");
  CHECK(same["OMPI_MCA_btl_tcp_if_include"] == "10.3.0.0/24");

  auto differing = values(fabricEnv(roceChoice(false), 0, {}));
  CHECK(differing["NCCL_IB_GID_INDEX"] == "-1");  // per-port indexes differ: NCCL chooses, in the range
  CHECK(differing["NCCL_IB_ADDR_RANGE"] == "10.3.0.0/24");
}

TEST_CASE("plain TCP without RDMA: no NCCL IB settings, UCX on the netdev") {
  std::vector<NodeFabricInput> nodes{
      {"node1", FabricBuilder().eth("eth0", "192.168.1.1").build(), {}},
      {"node2", FabricBuilder().eth("eth0", "192.168.1.2").build(), {}},
  };
  NetOptions tcp;
  tcp.mode = NetMode::tcp;
  auto env = values(fabricEnv(chooseNetwork(nodes, tcp).value(), 1, {}));
  CHECK(env.count("NCCL_NET") == 0);
  CHECK(env.count("NCCL_IB_HCA") == 0);
  CHECK(env.count("NCCL_IB_DISABLE") == 0);
  CHECK(env["NCCL_SOCKET_IFNAME"] == "=eth0");
  CHECK(env["UCX_NET_DEVICES"] == "eth0");
  CHECK(env["MASTER_ADDR"] == "192.168.1.1");
}

TEST_CASE("a value the user set wins, and both are reported") {
  NetworkChoice choice = ibChoice();
  UserEnv user{{"NCCL_SOCKET_IFNAME", {"^docker,lo", "environment"}},
               {"NCCL_IB_HCA", {"^=mlx5_1", "-x"}},
               {"GLOO_SOCKET_IFNAME", {"eth0", "-x"}},
               {"MASTER_ADDR", {"10.1.0.1", "-x"}},
               {"NCCL_IB_DISABLE", {"1", "environment"}}};
  auto settings = fabricEnv(choice, 0, user);

  const EnvSetting& ifname = find(settings, "NCCL_SOCKET_IFNAME");
  CHECK(ifname.overridden_by_user);
  CHECK(ifname.value == "=ib0");
  CHECK(ifname.user_value == "^docker,lo");
  CHECK(ifname.user_source == "environment");
  CHECK(ifname.effective() == "^docker,lo");
  CHECK(ifname.conflict.empty());  // it still selects ib0

  const EnvSetting& hca = find(settings, "NCCL_IB_HCA");
  CHECK(hca.effective() == "^=mlx5_1");
  CHECK(hca.conflict == "leaves out data port(s) mlx5_1:1");

  const EnvSetting& gloo = find(settings, "GLOO_SOCKET_IFNAME");
  CHECK(gloo.conflict == "does not name ib0 (the fabric interface on node1)");
  CHECK(find(settings, "MASTER_ADDR").conflict.empty());
  CHECK(find(settings, "NCCL_IB_DISABLE").conflict == "disables InfiniBand/RoCE: NCCL falls back to TCP sockets");

  auto exported = envAssignments(settings);
  CHECK(std::find(exported.begin(), exported.end(), "NCCL_NET=IB") != exported.end());
  CHECK(std::find(exported.begin(), exported.end(), "TP_SOCKET_IFNAME=ib0") != exported.end());
  for (const auto& e : exported) {
    CHECK(e.rfind("NCCL_SOCKET_IFNAME=", 0) != 0);
    CHECK(e.rfind("NCCL_IB_HCA=", 0) != 0);
    CHECK(e.rfind("GLOO_SOCKET_IFNAME=", 0) != 0);
  }
}

TEST_CASE("user values that defeat the fabric are flagged") {
  NetworkChoice choice = ibChoice();
  UserEnv user{{"NCCL_SOCKET_IFNAME", {"^ib", "-x"}},
               {"NCCL_NET", {"socket", "environment"}},
               {"MASTER_ADDR", {"192.168.1.1", "-x"}},
               {"TP_SOCKET_IFNAME", {"eth0", "-x"}},
               {"UCX_NET_DEVICES", {"eth0", "-x"}},
               {"OMPI_MCA_oob_tcp_if_include", {"10.0.0.0/8", "-x"}},
               {"PMIX_MCA_ptl_tcp_if_include", {"eth0", "-x"}}};
  auto settings = fabricEnv(choice, 0, user);
  CHECK(find(settings, "NCCL_SOCKET_IFNAME").conflict ==
        "does not select ib0 (the fabric interface on node1); NCCL bootstrap and IB OOB go elsewhere");
  CHECK(find(settings, "NCCL_NET").conflict == "forces NCCL onto TCP sockets");
  CHECK(find(settings, "MASTER_ADDR").conflict ==
        "is not rank 0's address on 10.1.0.0/16 (10.1.0.1); TCPStore traffic follows the route to it");
  CHECK(find(settings, "TP_SOCKET_IFNAME").conflict == "does not name ib0 (the fabric interface on node1)");
  CHECK(find(settings, "UCX_NET_DEVICES").conflict == "names none of mlx5_0:1,mlx5_1:1");
  CHECK(find(settings, "OMPI_MCA_oob_tcp_if_include").conflict.empty());  // 10/8 contains 10.1.0.1
  CHECK(find(settings, "PMIX_MCA_ptl_tcp_if_include").conflict == "leaves out ib0 / 10.1.0.0/16");
}

TEST_CASE("Open MPI's include is not set when the user set the matching exclude") {
  NetworkChoice choice = ibChoice();
  UserEnv user{{"OMPI_MCA_btl_tcp_if_exclude", {"lo,docker0", "-x"}}};
  auto settings = fabricEnv(choice, 0, user);
  const EnvSetting& include = find(settings, "OMPI_MCA_btl_tcp_if_include");
  CHECK(include.overridden_by_user);
  CHECK(include.user_source ==
        "OMPI_MCA_btl_tcp_if_exclude=lo,docker0 (-x); the two are mutually exclusive");
  CHECK(include.conflict.empty());
  auto exported = envAssignments(settings);
  for (const auto& e : exported) CHECK(e.rfind("OMPI_MCA_btl_tcp_if_include=", 0) != 0);
  CHECK(std::find(exported.begin(), exported.end(), "OMPI_MCA_oob_tcp_if_include=10.1.0.0/16") != exported.end());

  UserEnv excludingUs{{"OMPI_MCA_btl_tcp_if_exclude", {"ib0", "-x"}}};
  CHECK(find(fabricEnv(choice, 0, excludingUs), "OMPI_MCA_btl_tcp_if_include").conflict ==
        "excludes ib0 / 10.1.0.0/16");
}

namespace {

// node1 of ibChoice() as discovery sees it: the two rails, a RoCE management port (eth1), the
// management Ethernet, docker0 and lo.
NodeFabric node1Fabric() {
  return FabricBuilder()
      .ib("mlx5_0", 1, "ib0", "10.1.0.1")
      .ib("mlx5_1", 1, "ib1", "10.2.0.1")
      .roce("mlx5_2", 1, "eth1", "192.168.2.1")
      .eth("eth0", "192.168.1.1")
      .eth("docker0", "172.17.0.1", 16)
      .eth("lo", "127.0.0.1", 8)
      .build();
}

std::string conflictOf(const std::string& name, const std::string& value, const std::string& setting = "") {
  NetworkChoice choice = ibChoice();
  const NodeFabric fabric = node1Fabric();
  UserEnv user{{name, {value, "-x"}}};
  return find(fabricEnv(choice, 0, user, {}, &fabric), setting.empty() ? name : setting).conflict;
}

}  // namespace

TEST_CASE("a user's list that selects the chosen interface and others off the job's network is a conflict") {
  const std::string off = " (not on the job's network 10.1.0.0/16): ";
  SECTION("NCCL_SOCKET_IFNAME") {
    const std::string bootstrap = "NCCL's bootstrap takes the first match in the kernel's interface order";
    CHECK(conflictOf("NCCL_SOCKET_IFNAME", "^docker,lo") == "also selects eth1, eth0" + off + bootstrap);
    CHECK(conflictOf("NCCL_SOCKET_IFNAME", "^docker") == "also selects eth1, eth0, lo" + off + bootstrap);
    CHECK(conflictOf("NCCL_SOCKET_IFNAME", "ib").empty());  // ib1 is the netdev of a data port (a rail)
    CHECK(conflictOf("NCCL_SOCKET_IFNAME", "=ib0").empty());
  }
  SECTION("GLOO_SOCKET_IFNAME") {
    CHECK(conflictOf("GLOO_SOCKET_IFNAME", "ib0,eth0") == "also names eth0" + off + "every interface listed is used");
    CHECK(conflictOf("GLOO_SOCKET_IFNAME", "ib0,ib9") ==
          "also names ib9 (no such interface)" + off + "every interface listed is used");
    CHECK(conflictOf("GLOO_SOCKET_IFNAME", "ib0").empty());
  }
  SECTION("UCX_NET_DEVICES") {
    CHECK(conflictOf("UCX_NET_DEVICES", "mlx5_0:1,eth0") == "also selects eth0" + off + "UCX uses every device listed");
    CHECK(conflictOf("UCX_NET_DEVICES", "mlx5_0:1,mlx5_2:1") ==
          "also selects mlx5_2:1" + off + "UCX uses every device listed");
    CHECK(conflictOf("UCX_NET_DEVICES", "^mlx5_2:1") ==
          "also selects eth1, eth0, docker0" + off + "UCX uses every device listed");
    CHECK(conflictOf("UCX_NET_DEVICES", "mlx5_0:1,mlx5_1:1,ib0").empty());
    CHECK(conflictOf("UCX_NET_DEVICES", "all").empty());  // UCX's own choice, asked for by name
  }
  SECTION("NCCL_IB_HCA") {
    CHECK(conflictOf("NCCL_IB_HCA", "mlx5") ==
          "also selects mlx5_2:1 (not a data port of the job's network 10.1.0.0/16): NCCL sends data over every "
          "port listed");
    CHECK(conflictOf("NCCL_IB_HCA", "^=mlx5_2").empty());
    CHECK(conflictOf("NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1").empty());
  }
  SECTION("Open MPI and PMIx includes and excludes") {
    CHECK(conflictOf("OMPI_MCA_btl_tcp_if_include", "ib0,eth0") ==
          "also includes eth0" + off + "Open MPI and PMIx use every interface included");
    CHECK(conflictOf("PMIX_MCA_ptl_tcp_if_include", "10.0.0.0/8").empty());  // ib0 and the rail ib1
    CHECK(conflictOf("OMPI_MCA_btl_tcp_if_exclude", "lo,docker0", "OMPI_MCA_btl_tcp_if_include") ==
          "also uses eth1, eth0" + off + "Open MPI and PMIx use every interface not excluded");
    CHECK(conflictOf("OMPI_MCA_btl_tcp_if_exclude", "lo,docker0,eth0,eth1", "OMPI_MCA_btl_tcp_if_include").empty());
  }
  SECTION("a value that does not select ours says that first") {
    CHECK(conflictOf("GLOO_SOCKET_IFNAME", "eth0") == "does not name ib0 (the fabric interface on node1)");
  }
}

TEST_CASE("--net tcp: the user's NCCL_IB_DISABLE=1 agrees with the choice") {
  NetworkChoice choice = ibChoice();
  choice.rdma = false;
  choice.sockets_only = true;
  UserEnv user{{"NCCL_IB_DISABLE", {"1", "-x"}}};
  CHECK(find(fabricEnv(choice, 0, user), "NCCL_IB_DISABLE").conflict.empty());
}

TEST_CASE("UCX_NET_DEVICES as a deny list: a conflict only when it denies every one of ours") {
  NetworkChoice choice = ibChoice();
  CHECK(find(fabricEnv(choice, 0, {{"UCX_NET_DEVICES", {"^mlx5_1:1", "-x"}}}), "UCX_NET_DEVICES").conflict.empty());
  CHECK(find(fabricEnv(choice, 0, {{"UCX_NET_DEVICES", {"^mlx5_0:1,mlx5_1:1,ib0", "-x"}}}), "UCX_NET_DEVICES")
            .conflict == "leaves out all of mlx5_0:1,mlx5_1:1");
}
