// Choosing one subnet common to every node, by address, and refusing loudly when there is none.
#include <catch2/catch.hpp>

#include "binding/fabric/fabric_discovery.h"
#include "binding/fabric/ipv4_net.h"
#include "binding/fabric/network_choice.h"
#include "fabric_test_builder.h"
#include "fabric_test_support.h"

using namespace tlaunch;
using namespace tlaunch::testing;

namespace {

NodeFabricInput node(const std::string& name, const FabricBuilder& b, std::vector<std::string> netIf = {}) {
  return NodeFabricInput{name, b.build(), std::move(netIf)};
}


}  // namespace

TEST_CASE("interface names differ between nodes: the choice is by subnet") {
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").eth("eth0", "192.168.1.1")),
      node("node2", FabricBuilder().ib("mlx5_2", 1, "ibp94s0", "10.1.0.2").eth("eno1", "192.168.1.2")),
      node("node3", FabricBuilder().ib("mlx5_0", 1, "hsi0", "10.1.0.3").eth("eth0", "192.168.1.3")),
  };
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  CHECK(choice->kind == NetKind::ib);
  CHECK(choice->cidr == "10.1.0.0/16");
  CHECK(choice->master_addr == "10.1.0.1");
  CHECK(choice->rdma);
  REQUIRE(choice->nodes.size() == 3);
  CHECK(choice->nodes[0].ifname == "ib0");
  CHECK(choice->nodes[1].ifname == "ibp94s0");
  CHECK(choice->nodes[2].ifname == "hsi0");
  CHECK(choice->nodes[1].ipv4 == "10.1.0.2");
  CHECK(choice->nodes[1].prefix == 16);
  CHECK(choice->nodes[1].port == "mlx5_2:1");
  CHECK(joinHcaPorts(choice->nodes[1]) == "mlx5_2:1");
  CHECK(choice->nodes[1].roce_gid_index == -1);
}

TEST_CASE("the real captures as two nodes: mlx4_0 FDR and qib0 QDR, both on ib0") {
  TempDir tmp{"tlaunch-capture", manyFilesBase()};
  fs::create_directories(tmp.path() / "a");
  fs::create_directories(tmp.path() / "b");
  auto a = extractCapture(kMlx4Tarball, tmp.path() / "a");
  auto b = extractCapture(kQibTarball, tmp.path() / "b");
  if (!a || !b) {
    FAIL("sysfs fixtures missing under " << fixturesDir() << " (tests/fixtures is part of the repository)");
  }
  // Each simulated node's live ib0 is a veth (Ethernet) in its own namespace.
  auto fa = discoverFabric(a->string(), {liveIf("ib0", "10.1.0.1", 16), liveIf("eth0", "192.168.0.1", 24)});
  auto fb = discoverFabric(b->string(), {liveIf("ib0", "10.1.0.2", 16), liveIf("eth0", "192.168.0.2", 24)});
  REQUIRE(fa);
  REQUIRE(fb);
  std::vector<NodeFabricInput> nodes{{"node1", *fa, {}}, {"node2", *fb, {}}};
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  CHECK(choice->kind == NetKind::ib);
  CHECK(choice->cidr == "10.1.0.0/16");
  CHECK(choice->master_addr == "10.1.0.1");
  CHECK(joinHcaPorts(choice->nodes[0]) == "mlx4_0:1");
  CHECK(joinHcaPorts(choice->nodes[1]) == "qib0:1");

  SECTION("ib0 down on one node: the job refuses, naming that node and ib0") {
    auto down = discoverFabric(b->string(), {liveIf("ib0", "10.1.0.2", 16, false, false)});
    REQUIRE(down);
    nodes[1].fabric = *down;
    auto refused = chooseNetwork(nodes, {});
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Errc::fabric);
    CHECK(contains(refused.error().message, "node2: ib0 is down (HCA port qib0:1 is ACTIVE)"));
    CHECK_FALSE(contains(refused.error().message, "node1"));
    CHECK(contains(refused.error().hint, "--net tcp"));
  }
  SECTION("ib0 absent on the live system") {
    auto gone = discoverFabric(b->string(), {liveIf("eth0", "192.168.0.2", 24)});
    nodes[1].fabric = *gone;
    auto refused = chooseNetwork(nodes, {});
    REQUIRE_FALSE(refused);
    CHECK(contains(refused.error().message, "node2"));
    CHECK(contains(refused.error().message, "ib0 is in sysfs but absent on the live system"));
  }
  SECTION("port not ACTIVE in a copy of the capture") {
    writeFile(*b / "sys/class/infiniband/qib0/ports/1/state", "1: DOWN\n");
    writeFile(*b / "sys/class/infiniband/qib0/ports/1/phys_state", "3: Disabled\n");
    auto downPort = discoverFabric(b->string(), {liveIf("ib0", "10.1.0.2", 16)});
    nodes[1].fabric = *downPort;
    auto refused = chooseNetwork(nodes, {});
    REQUIRE_FALSE(refused);
    CHECK(contains(refused.error().message, "node2: qib0:1 (ib0): port is DOWN (Disabled)"));
  }
}

TEST_CASE("no common subnet: the error lists each node's subnets and names the node that lacks one") {
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1")),
      node("node2", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.2")),
      node("node3", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.2.0.3")),
  };
  auto choice = chooseNetwork(nodes, {});
  REQUIRE_FALSE(choice);
  CHECK(choice.error().code == Errc::fabric);
  const std::string& m = choice.error().message;
  CHECK(contains(m, "no subnet is common to all 3 nodes"));
  CHECK(contains(m, "node3: 10.2.0.0/16 (ib0)"));
  CHECK(contains(m, "10.1.0.0/16 is missing on node3"));
  CHECK_FALSE(contains(m, "missing on node1"));
}

TEST_CASE("no silent fallback to the management network") {
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").eth("eth0", "192.168.1.1")),
      node("node2", FabricBuilder().eth("eth0", "192.168.1.2")),
  };
  auto choice = chooseNetwork(nodes, {});
  REQUIRE_FALSE(choice);
  CHECK(contains(choice.error().message, "node2: no RDMA device"));

  SECTION("--net tcp allows the common Ethernet subnet, never loopback") {
    nodes[0].fabric.interfaces.push_back(FabricBuilder().eth("lo", "127.0.0.1", 8).build().interfaces[0]);
    nodes[1].fabric.interfaces.push_back(FabricBuilder().eth("lo", "127.0.0.1", 8).build().interfaces[0]);
    NetOptions tcp;
    tcp.mode = NetMode::tcp;
    auto allowed = chooseNetwork(nodes, tcp);
    REQUIRE(allowed);
    CHECK(allowed->kind == NetKind::tcp);
    CHECK(allowed->cidr == "192.168.1.0/24");
    CHECK(allowed->nodes[1].ifname == "eth0");
    CHECK_FALSE(allowed->rdma);  // node2 has no HCA
    CHECK(allowed->nodes[1].hca_ports.empty());
    CHECK(allowed->nodes[0].hca_ports.size() == 1);
  }
}

TEST_CASE("an Ethernet interface named with --net-if needs --net tcp") {
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").eth("eth0", "192.168.1.1")),
      node("node2", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.2").eth("eth0", "192.168.1.2")),
  };
  NetOptions options;
  options.net_if = {"eth0"};
  auto choice = chooseNetwork(nodes, options);
  REQUIRE_FALSE(choice);
  CHECK(contains(choice.error().message, "node1: eth0 is not an IPoIB or RoCE interface (type 1); add --net tcp"));
  options.mode = NetMode::tcp;
  auto allowed = chooseNetwork(nodes, options);
  REQUIRE(allowed);
  CHECK(allowed->cidr == "192.168.1.0/24");
  CHECK(allowed->rdma);  // both nodes still have an ACTIVE IB port for NCCL's data
}

TEST_CASE("two rails: the first HCA's subnet by default, others by --net-if, --net-cidr or per node") {
  auto twoRails = [](const std::string& last) {
    return FabricBuilder()
        .ib("mlx5_0", 1, "ib0", "10.1.0." + last)
        .ib("mlx5_1", 1, "ib1", "10.2.0." + last);
  };
  std::vector<NodeFabricInput> nodes{node("node1", twoRails("1")), node("node2", twoRails("2"))};
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  CHECK(choice->cidr == "10.1.0.0/16");
  CHECK(joinHcaPorts(choice->nodes[0]) == "mlx5_0:1,mlx5_1:1");  // both rails carry NCCL data
  bool noted = false;
  for (const auto& n : choice->notes) noted = noted || contains(n, "also common to all nodes: 10.2.0.0/16");
  CHECK(noted);

  NetOptions byName;
  byName.net_if = {"ib1"};
  auto viaName = chooseNetwork(nodes, byName);
  REQUIRE(viaName);
  CHECK(viaName->cidr == "10.2.0.0/16");
  CHECK(viaName->master_addr == "10.2.0.1");

  NetOptions byCidr;
  byCidr.net_cidr = "10.2.0.0/16";
  auto viaCidr = chooseNetwork(nodes, byCidr);
  REQUIRE(viaCidr);
  CHECK(viaCidr->nodes[1].ifname == "ib1");

  NetOptions wide;
  wide.net_cidr = "10.0.0.0/8";  // wider than either: the HCA order decides, the cidr is the interface's
  auto viaWide = chooseNetwork(nodes, wide);
  REQUIRE(viaWide);
  CHECK(viaWide->cidr == "10.1.0.0/16");

  NetOptions none;
  none.net_cidr = "172.16.0.0/12";
  auto outside = chooseNetwork(nodes, none);
  REQUIRE_FALSE(outside);
  CHECK(contains(outside.error().message, "node1: no fabric interface has an address in 172.16.0.0/12 (found ib0 10.1.0.1/16, ib1 10.2.0.1/16)"));

  NetOptions bad;
  bad.net_cidr = "10.1.0.0";
  auto malformed = chooseNetwork(nodes, bad);
  REQUIRE_FALSE(malformed);
  CHECK(malformed.error().code == Errc::usage);
  CHECK(contains(malformed.error().message, "--net-cidr 10.1.0.0"));
}

TEST_CASE("a per-node net_if from the hostfile picks that node's interface") {
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").ib("mlx5_1", 1, "ib1", "10.9.0.1")),
      node("node2", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.9.0.2").ib("mlx5_1", 1, "ib1", "10.1.0.2"), {"ib1"}),
  };
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  CHECK(choice->cidr == "10.1.0.0/16");
  CHECK(choice->nodes[1].ifname == "ib1");

  nodes[1].net_if = {"ib3"};
  auto missing = chooseNetwork(nodes, {});
  REQUIRE_FALSE(missing);
  CHECK(contains(missing.error().message, "node2: has no interface named ib3"));
}

TEST_CASE("several interfaces of one node on the chosen subnet: the first HCA's, with a note") {
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").ib("mlx5_1", 1, "ib1", "10.1.1.1")),
      node("node2", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.2")),
  };
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  CHECK(choice->nodes[0].ifname == "ib0");
  bool noted = false;
  for (const auto& n : choice->notes) noted = noted || n == "node1: ib1 is also on 10.1.0.0/16; using ib0";
  CHECK(noted);

  // The same on many nodes: one note, not one per node.
  std::vector<NodeFabricInput> many;
  for (int n = 1; n <= 6; ++n) {
    const std::string last = std::to_string(n);
    many.push_back(node("node" + last, FabricBuilder()
                                           .ib("mlx5_0", 1, "ib0", "10.1.0." + last)
                                           .ib("mlx5_1", 1, "ib1", "10.1.1." + last)));
  }
  auto six = chooseNetwork(many, {});
  REQUIRE(six);
  CHECK(std::count_if(six->notes.begin(), six->notes.end(), [](const std::string& n) {
          return n.find("is also on") != std::string::npos;
        }) == 1);
  CHECK(std::find(six->notes.begin(), six->notes.end(),
                  "node1, node2, node3 and 3 more: ib1 is also on 10.1.0.0/16; using ib0") != six->notes.end());
}

TEST_CASE("RoCE: ACTIVE Ethernet ports with a RoCE v2 IPv4 GID, and NCCL's GID index") {
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.1").roce("mlx5_1", 1, "ens1f1", "10.4.0.1")),
      node("node2", FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.2").roce("mlx5_1", 1, "ens1f1", "10.4.0.2")),
  };
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  CHECK(choice->kind == NetKind::roce);
  CHECK(choice->cidr == "10.3.0.0/24");
  CHECK(choice->rdma);
  const NodeNetChoice& n1 = choice->nodes[0];
  CHECK(n1.ifname == "ens1f0");
  CHECK(n1.port == "mlx5_0:1");
  REQUIRE(n1.hca_ports.size() == 2);
  CHECK(n1.hca_ports[0] == HcaPortChoice{"mlx5_0:1", 3, true});
  CHECK(n1.hca_ports[1] == HcaPortChoice{"mlx5_1:1", 3, false});  // its v2 GID is on 10.4.0.0/24
  CHECK(n1.roce_gid_index == 3);

  SECTION("a port whose GID table has no RoCE v2 entry is no fabric port") {
    std::vector<NodeFabricInput> v1only{
        node("node1", FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.1", 24, kPortStateActive, false)),
        node("node2", FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.2")),
    };
    auto refused = chooseNetwork(v1only, {});
    REQUIRE_FALSE(refused);
    CHECK(contains(refused.error().message, "node1: mlx5_0:1: RoCE port has no RoCE v2 IPv4 GID"));
  }
  SECTION("ports whose indexes differ leave the index to NCCL (-1)") {
    FabricBuilder b = FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.1").roce("mlx5_1", 1, "ens1f1", "10.4.0.1");
    auto& gids = b.port("mlx5_1", 1).gids;
    gids.insert(gids.begin() + 2, makeGidEntry(2, ipv4Gid(10, 5, 0, 1), GidType::ib_roce_v1, "ens1f1"));
    for (std::size_t i = 3; i < gids.size(); ++i) gids[i].index = static_cast<int>(i);
    nodes[0] = node("node1", b);
    auto differing = chooseNetwork(nodes, {});
    REQUIRE(differing);
    CHECK(differing->nodes[0].hca_ports[1].gid_index == 4);
    CHECK(differing->nodes[0].roce_gid_index == -1);
  }
}

TEST_CASE("IB and RoCE subnets both common: IB is preferred") {
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.1").ib("mlx5_1", 1, "ib0", "10.1.0.1")),
      node("node2", FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.3.0.2").ib("mlx5_1", 1, "ib0", "10.1.0.2")),
  };
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  CHECK(choice->kind == NetKind::ib);
  CHECK(choice->cidr == "10.1.0.0/16");
  CHECK(joinHcaPorts(choice->nodes[0]) == "mlx5_1:1");  // the RoCE port is another fabric
}

TEST_CASE("an IB port on another IB subnet prefix is not a data port of the chosen fabric") {
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder()
                        .ib("mlx5_0", 1, "ib0", "10.1.0.1")
                        .ib("mlx5_1", 1, "ib1", "", 16, kPortStateActive, true, true, "fec0:0000:0000:0001")),
      node("node2", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.2")),
  };
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  CHECK(joinHcaPorts(choice->nodes[0]) == "mlx5_0:1");
}

TEST_CASE("the choice is deterministic") {
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").ib("mlx5_1", 1, "ib1", "10.2.0.1")),
      node("node2", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.2").ib("mlx5_1", 1, "ib1", "10.2.0.2")),
  };
  auto first = chooseNetwork(nodes, {});
  auto second = chooseNetwork(nodes, {});
  REQUIRE(first);
  REQUIRE(second);
  CHECK(*first == *second);
}

TEST_CASE("an interface named with --net-if that cannot serve says why") {
  FabricBuilder node2 = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.2").ib("mlx5_1", 1, "ib1", "10.2.0.2", 16, 1);
  node2.eth("ib7", "10.7.0.2", 16);
  node2.iface("ib7").type = kArphrdInfiniband;  // an IPoIB netdev no HCA port claims
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").ib("mlx5_1", 1, "ib1", "10.2.0.1")),
      node("node2", node2),
  };
  NetOptions options;
  options.net_if = {"ib1"};
  auto down = chooseNetwork(nodes, options);
  REQUIRE_FALSE(down);
  CHECK(contains(down.error().message, "node2: mlx5_1:1 (ib1): port is DOWN (Disabled)"));
  options.net_if = {"ib7"};
  auto unmatched = chooseNetwork(nodes, options);
  REQUIRE_FALSE(unmatched);
  CHECK(contains(unmatched.error().message, "node1: has no interface named ib7"));
  CHECK(contains(unmatched.error().message, "node2: ib7: IPoIB interface matched to no HCA port"));
}

TEST_CASE("--net-cidr where a node's interface in it is down: that is said, not 'no address in'") {
  FabricBuilder node2 = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.2").ib("mlx5_1", 1, "ib1", "10.2.0.2");
  node2.iface("ib0").up = false;
  node2.iface("ib0").running = false;
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0.1").ib("mlx5_1", 1, "ib1", "10.2.0.1")),
      node("node2", node2),
  };
  NetOptions options;
  options.net_cidr = "10.1.0.0/16";
  auto down = chooseNetwork(nodes, options);
  REQUIRE_FALSE(down);
  INFO(down.error().message);
  CHECK(contains(down.error().message, "node2: ib0 is down (it has 10.1.0.2)"));
}

// Every Docker host has docker0 172.17.0.1/16: a subnet common to all nodes, on which every
// node has the same address. MASTER_ADDR there would make each node talk to itself.
TEST_CASE("docker0: the same address on every node never joins them; real interfaces rank first") {
  auto host = [](const std::string& name, const std::string& enp) {
    // Interfaces in discovery's (name) order: docker0 sorts before enp65s0.
    return node(name, FabricBuilder().eth("docker0", "172.17.0.1", 16).eth("enp65s0", enp));
  };
  std::vector<NodeFabricInput> nodes{host("node1", "192.168.1.11"), host("node2", "192.168.1.12")};
  NetOptions tcp;
  tcp.mode = NetMode::tcp;

  auto choice = chooseNetwork(nodes, tcp);
  REQUIRE(choice);
  CHECK(choice->cidr == "192.168.1.0/24");
  CHECK(choice->master_addr == "192.168.1.11");
  CHECK(choice->nodes[1].ifname == "enp65s0");
  CHECK(std::find(choice->notes.begin(), choice->notes.end(),
                  "172.17.0.0/16: node1 and node2 both have 172.17.0.1 (docker0): not used, an address found on "
                  "two nodes is local to each") != choice->notes.end());

  SECTION("forced with --net-cidr or --net-if: refused, naming the nodes and the address") {
    NetOptions forced = tcp;
    SECTION("--net-cidr") { forced.net_cidr = "172.17.0.0/16"; }
    SECTION("--net-if") { forced.net_if = {"docker0"}; }
    auto refused = chooseNetwork(nodes, forced);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == Errc::usage);
    CHECK(contains(refused.error().message, "172.17.0.0/16: node1 and node2 both have 172.17.0.1 (docker0)"));
    CHECK(contains(refused.error().hint, "--net-cidr"));
  }
  SECTION("--launcher local: every node is this host, the same address is expected") {
    NetOptions local = tcp;
    local.net_cidr = "172.17.0.0/16";
    local.same_host = true;
    auto same = chooseNetwork(nodes, local);
    REQUIRE(same);
    CHECK(same->master_addr == "172.17.0.1");
  }
  SECTION("the shared subnet is the only common one: refused, and not named as missing anywhere") {
    nodes[1].fabric.interfaces[1].ipv4[0].address = "192.168.2.12";
    auto none = chooseNetwork(nodes, tcp);
    REQUIRE_FALSE(none);
    CHECK(contains(none.error().message, "172.17.0.0/16: node1 and node2 both have 172.17.0.1 (docker0)"));
    CHECK(contains(none.error().message, "192.168.1.0/24 is missing on node2"));
  }
}

TEST_CASE("virtual bridges with distinct addresses rank after the real interfaces") {
  auto host = [](const std::string& name, const std::string& last) {
    return node(name, FabricBuilder()
                          .eth("br-5f3a", "172.18.0." + last, 16)
                          .eth("cni0", "10.244.0." + last)
                          .eth("eno1", "192.168.1." + last)
                          .eth("virbr0", "192.168.122." + last));
  };
  std::vector<NodeFabricInput> nodes{host("node1", "1"), host("node2", "2")};
  NetOptions tcp;
  tcp.mode = NetMode::tcp;
  auto choice = chooseNetwork(nodes, tcp);
  REQUIRE(choice);
  CHECK(choice->cidr == "192.168.1.0/24");
  CHECK(choice->nodes[0].ifname == "eno1");
}

TEST_CASE("host addresses (/32, as cloud VMs have them): --net-cidr joins the nodes, the error says so") {
  std::vector<NodeFabricInput> nodes{
      node("vm1", FabricBuilder().eth("eth0", "10.128.0.5", 32).eth("docker0", "172.17.0.1", 16)),
      node("vm2", FabricBuilder().eth("ens4", "10.128.0.9", 32).eth("docker0", "172.17.0.1", 16)),
      node("vm3", FabricBuilder().eth("eth0", "10.128.0.12", 32)),
  };
  NetOptions tcp;
  tcp.mode = NetMode::tcp;
  auto refused = chooseNetwork(nodes, tcp);
  REQUIRE_FALSE(refused);
  const std::string& m = refused.error().message;
  CHECK(contains(m, "no subnet is common to all 3 nodes"));
  CHECK(contains(m, "host addresses (eth0 10.128.0.5/32)"));
  CHECK(contains(m, "--net-cidr 10.128.0.0/28 or wider"));
  CHECK(contains(refused.error().hint, "--net-cidr"));

  tcp.net_cidr = "10.128.0.0/20";
  auto choice = chooseNetwork(nodes, tcp);
  REQUIRE(choice);
  CHECK(choice->cidr == "10.128.0.0/20");  // what Open MPI's if_include gets: it holds every node's address
  CHECK(choice->master_addr == "10.128.0.5");
  REQUIRE(choice->nodes.size() == 3);
  CHECK(choice->nodes[1].ifname == "ens4");
  CHECK(choice->nodes[1].ipv4 == "10.128.0.9");
  CHECK(choice->nodes[1].prefix == 32);  // each interface keeps its own prefix
  CHECK(choice->nodes[2].ifname == "eth0");

  SECTION("an address outside the named network still refuses, naming the node") {
    nodes[2] = node("vm3", FabricBuilder().eth("eth0", "10.140.0.3", 32));
    auto outside = chooseNetwork(nodes, tcp);
    REQUIRE_FALSE(outside);
    CHECK(contains(outside.error().message, "vm3: no interface has an address in 10.128.0.0/20 (found eth0 10.140.0.3/32)"));
  }
}

TEST_CASE("a routed RoCE fabric (a /31 per NIC): --net-cidr joins the nodes and keeps NCCL's GID in it") {
  std::vector<NodeFabricInput> nodes{
      node("node1", FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.200.0.1", 31)),
      node("node2", FabricBuilder().roce("mlx5_0", 1, "ens1f0", "10.200.0.3", 31)),
  };
  auto refused = chooseNetwork(nodes, {});
  REQUIRE_FALSE(refused);
  CHECK(contains(refused.error().message, "--net-cidr 10.200.0.0/30 or wider"));
  NetOptions opts;
  opts.net_cidr = "10.200.0.0/16";
  auto choice = chooseNetwork(nodes, opts);
  REQUIRE(choice);
  CHECK(choice->kind == NetKind::roce);
  CHECK(choice->rdma);
  CHECK(choice->cidr == "10.200.0.0/16");
  REQUIRE(choice->nodes[1].hca_ports.size() == 1);
  CHECK(choice->nodes[1].hca_ports[0].gid_in_subnet);
  CHECK(choice->nodes[1].hca_ports[0].gid_index == 3);
}

TEST_CASE("the smallest network holding a set of addresses") {
  auto ip = [](const char* text) { return parseIpv4(text).value(); };
  CHECK_FALSE(coveringNet({}));
  CHECK(formatCidr(*coveringNet({ip("10.1.0.5")})) == "10.1.0.5/32");
  CHECK(formatCidr(*coveringNet({ip("10.1.0.9"), ip("10.1.0.5")})) == "10.1.0.0/28");
  CHECK(formatCidr(*coveringNet({ip("10.1.1.5"), ip("10.1.2.5"), ip("10.1.0.200")})) == "10.1.0.0/22");
  CHECK(formatCidr(*coveringNet({ip("1.0.0.0"), ip("255.0.0.0")})) == "0.0.0.0/0");
}

namespace {

// Sets a port's link speed, as sysfs reports it.
FabricBuilder& rate(FabricBuilder& b, const std::string& device, double gbps) {
  b.port(device, 1).rate_gbps = gbps;
  b.port(device, 1).rate = std::to_string(static_cast<int>(gbps)) + " Gb/sec";
  return b;
}

// A management ConnectX (mlx5_0, eth0 192.168.1.x/24, 25G by default) enumerated before the data
// NIC (mlx5_1, eth2 on `dataNet`/16, 400G), as a reviewer reproduced it.
FabricBuilder managedNode(const std::string& last, double mgmtRate = 25, const std::string& dataNet = "10.10.0.") {
  FabricBuilder b =
      FabricBuilder().roce("mlx5_0", 1, "eth0", "192.168.1." + last).roce("mlx5_1", 1, "eth2", dataNet + last, 16);
  rate(b, "mlx5_0", mgmtRate);
  return rate(b, "mlx5_1", 400);
}

bool hasNote(const NetworkChoice& choice, const std::string& part) {
  return std::any_of(choice.notes.begin(), choice.notes.end(), [&](const std::string& n) { return contains(n, part); });
}

}  // namespace

TEST_CASE("RoCE: a management port enumerated first is neither the job's network nor one of its data ports") {
  NetOptions options;
  double mgmtRate = 25;
  SECTION("by rate: the faster link's subnet") {}
  SECTION("by control address: the subnet the daemons reached tlaunch over ranks after the others") {
    mgmtRate = 400;
    options.control_ips = {"192.168.1.5", "192.168.1.6"};
  }
  SECTION("one node's control address is enough") {
    mgmtRate = 400;
    options.control_ips = {"", "192.168.1.6"};
  }
  std::vector<NodeFabricInput> nodes{node("node1", managedNode("5", mgmtRate)),
                                     node("node2", managedNode("6", mgmtRate))};
  auto choice = chooseNetwork(nodes, options);
  REQUIRE(choice);
  CHECK(choice->kind == NetKind::roce);
  CHECK(choice->cidr == "10.10.0.0/16");
  CHECK(choice->master_addr == "10.10.0.5");
  CHECK(choice->nodes[1].ifname == "eth2");
  CHECK(joinHcaPorts(choice->nodes[0]) == "mlx5_1:1");  // not NCCL_IB_HCA==mlx5_0:1,mlx5_1:1
  CHECK(joinHcaPorts(choice->nodes[1]) == "mlx5_1:1");
  CHECK(choice->nodes[0].hca_ports[0] == HcaPortChoice{"mlx5_1:1", 3, true});
  CHECK(hasNote(*choice, "also common to all nodes: 192.168.1.0/24"));
  CHECK_FALSE(hasNote(*choice, "is slower than"));
}

TEST_CASE("RoCE: loopback control addresses say nothing; equal rates keep the HCA order and both rails") {
  std::vector<NodeFabricInput> nodes{node("node1", managedNode("5", 400)), node("node2", managedNode("6", 400))};
  NetOptions options;
  options.control_ips = {"127.0.0.1", "127.0.0.1"};  // --launcher local
  auto choice = chooseNetwork(nodes, options);
  REQUIRE(choice);
  CHECK(choice->cidr == "192.168.1.0/24");
  REQUIRE(choice->nodes[0].hca_ports.size() == 2);
  CHECK(choice->nodes[0].hca_ports[1] == HcaPortChoice{"mlx5_1:1", 3, false});  // a rail: common, as fast
  CHECK(*choice == chooseNetwork(nodes, options).value());                      // deterministic
}

TEST_CASE("RoCE rails (one subnet per NIC): every rail is a data port; slower, control and odd ones are not") {
  auto railNode = [](const std::string& last) {
    FabricBuilder b = FabricBuilder().roce("mlx5_0", 1, "eno1", "192.168.1." + last);  // management, 100G
    rate(b, "mlx5_0", 100);
    for (int r = 1; r <= 4; ++r)
      rate(b.roce("mlx5_" + std::to_string(r), 1, "ens" + std::to_string(r), "10.20." + std::to_string(r) + "." + last),
           "mlx5_" + std::to_string(r), 400);
    return b;
  };
  FabricBuilder n1 = railNode("1");
  FabricBuilder n2 = railNode("2");
  rate(n1, "mlx5_4", 200);                                  // a degraded rail on node1
  n2.roce("mlx5_5", 1, "ens5", "10.99.0.2");                // a subnet node1 lacks
  rate(n2, "mlx5_5", 400);
  std::vector<NodeFabricInput> nodes{node("node1", n1), node("node2", n2)};
  NetOptions options;
  options.control_ips = {"192.168.1.1", "192.168.1.2"};
  auto choice = chooseNetwork(nodes, options);
  REQUIRE(choice);
  CHECK(choice->cidr == "10.20.1.0/24");  // 10.20.4.0/24 is as common, but its slowest port is 200G
  CHECK(joinHcaPorts(choice->nodes[0]) == "mlx5_1:1,mlx5_2:1,mlx5_3:1");  // mlx5_4:1 is slower than the chosen one
  CHECK(joinHcaPorts(choice->nodes[1]) == "mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1");  // not 10.99/24, not eno1
  CHECK(choice->nodes[1].hca_ports[3] == HcaPortChoice{"mlx5_4:1", 3, false});
  CHECK(choice->nodes[1].roce_gid_index == 3);
  CHECK(hasNote(*choice, "also common to all nodes: 192.168.1.0/24 (roce, the daemons' control network)"));
  CHECK(hasNote(*choice, "node1: left out of the job's data ports (NCCL_IB_HCA, UCX_NET_DEVICES): mlx5_4:1 (200 Gb/s, "
                         "slower than the job's mlx5_1:1 at 400 Gb/s)"));
}

TEST_CASE("InfiniBand: a slower port on the same subnet prefix (a storage HCA) is no data port, said once") {
  auto computeNode = [](const std::string& last) {
    FabricBuilder b = FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0." + last);
    for (int r = 1; r <= 3; ++r) b.ib("mlx5_" + std::to_string(r), 1, "ib" + std::to_string(r), "");
    for (int r = 0; r <= 3; ++r) rate(b, "mlx5_" + std::to_string(r), 400);
    b.ib("mlx5_8", 1, "ibs8", "");  // storage: the same default prefix fe80::, 200 Gb/s
    rate(b, "mlx5_8", 200);
    return b;
  };
  std::vector<NodeFabricInput> nodes;
  for (int n = 1; n <= 5; ++n) nodes.push_back(node("node" + std::to_string(n), computeNode(std::to_string(n))));
  auto choice = chooseNetwork(nodes, {});
  REQUIRE(choice);
  for (const auto& n : choice->nodes) CHECK(joinHcaPorts(n) == "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1");
  int said = 0;
  for (const auto& note : choice->notes)
    said += note == "node1, node2, node3 and 2 more: left out of the job's data ports (NCCL_IB_HCA, UCX_NET_DEVICES): "
                    "mlx5_8:1 (200 Gb/s, slower than the job's mlx5_0:1 at 400 Gb/s); to use them all the same, set "
                    "NCCL_IB_HCA and UCX_NET_DEVICES with -x";
  CHECK(said == 1);

  // A port of the job's speed stays a data port, and so do all on a node of one speed.
  auto twoPorts = [](const std::string& address) {
    return FabricBuilder().ib("mlx5_0", 1, "ib0", address).ib("mlx5_1", 1, "ib1", "");
  };
  std::vector<NodeFabricInput> even{node("node1", twoPorts("10.1.0.1")), node("node2", twoPorts("10.1.0.2"))};
  auto same = chooseNetwork(even, {});
  REQUIRE(same);
  CHECK(joinHcaPorts(same->nodes[0]) == "mlx5_0:1,mlx5_1:1");
  CHECK_FALSE(hasNote(*same, "left out"));
}

TEST_CASE("RoCE: the data NICs share no subnet: the management one is used, and a note says why and how to choose") {
  std::vector<NodeFabricInput> nodes{node("node1", managedNode("5", 25, "10.10.0.")),
                                     node("node2", managedNode("6", 25, "10.11.0."))};
  NetOptions options;
  options.control_ips = {"192.168.1.5", "192.168.1.6"};
  auto choice = chooseNetwork(nodes, options);
  REQUIRE(choice);
  CHECK(choice->cidr == "192.168.1.0/24");
  CHECK(joinHcaPorts(choice->nodes[0]) == "mlx5_0:1");
  CHECK(std::find(choice->notes.begin(), choice->notes.end(),
                  "node1: the job's RoCE port mlx5_0:1 (25 Gb/s) is slower than mlx5_1:1 (400 Gb/s; eth2 on "
                  "10.10.0.0/16, which is not on every node); the job runs on 192.168.1.0/24: to choose another "
                  "network, --net-cidr (per node: net_if= in the hostfile)") != choice->notes.end());
  CHECK(hasNote(*choice, "node2: the job's RoCE port mlx5_0:1 (25 Gb/s) is slower than mlx5_1:1"));

  SECTION("many nodes: three named, then how many more") {
    for (int i = 7; i < 12; ++i)
      nodes.push_back(
          node("node" + std::to_string(i), managedNode(std::to_string(i), 25, "10.1" + std::to_string(i) + ".0.")));
    auto many = chooseNetwork(nodes, {});
    REQUIRE(many);
    CHECK(hasNote(*many, "node7: the job's RoCE port"));
    CHECK_FALSE(hasNote(*many, "node8: the job's RoCE port"));
    CHECK(hasNote(*many, "and 4 more nodes whose RoCE port on 192.168.1.0/24 is slower than another of theirs"));
  }
  SECTION("chosen by the user: no note") {
    options.net_cidr = "192.168.1.0/24";
    auto forced = chooseNetwork(nodes, options);
    REQUIRE(forced);
    CHECK_FALSE(hasNote(*forced, "is slower than"));
  }
}

TEST_CASE("the job's fabric subnet carries the control connections while another fabric subnet is common: a note") {
  auto host = [](const std::string& last) {
    return FabricBuilder().ib("mlx5_0", 1, "ib0", "10.1.0." + last).roce("mlx5_1", 1, "ens1f0", "10.3.0." + last);
  };
  std::vector<NodeFabricInput> nodes{node("node1", host("1")), node("node2", host("2"))};
  NetOptions options;
  options.control_ips = {"10.1.0.1", "10.1.0.2"};  // the daemons came in over IPoIB
  auto choice = chooseNetwork(nodes, options);
  REQUIRE(choice);
  CHECK(choice->cidr == "10.1.0.0/16");  // the kind ranks first
  CHECK(std::find(choice->notes.begin(), choice->notes.end(),
                  "the job's network 10.1.0.0/16 also carries the daemons' control connections (ib ranks before "
                  "roce); to use another: --net-cidr 10.3.0.0/24") != choice->notes.end());
  options.control_ips = {"192.168.0.1", "192.168.0.2"};
  auto elsewhere = chooseNetwork(nodes, options);
  REQUIRE(elsewhere);
  CHECK_FALSE(hasNote(*elsewhere, "control connections"));
}

TEST_CASE("--net-cidr joins host addresses even when a container bridge inside it is on every node") {
  // podman's cni-podman0 10.88.0.1/16 on both: common, but refused (the same address on two
  // nodes); the user's network must still join the /32s.
  std::vector<NodeFabricInput> nodes{
      node("vm1", FabricBuilder().eth("cni-podman0", "10.88.0.1", 16).eth("eth0", "10.1.0.5", 32)),
      node("vm2", FabricBuilder().eth("cni-podman0", "10.88.0.1", 16).eth("eth0", "10.2.0.9", 32)),
  };
  NetOptions opts;
  opts.mode = NetMode::tcp;
  opts.net_cidr = "10.0.0.0/8";
  auto choice = chooseNetwork(nodes, opts);
  REQUIRE(choice);
  CHECK(choice->cidr == "10.0.0.0/8");
  CHECK(choice->nodes[0].ifname == "eth0");
  CHECK(choice->nodes[1].ipv4 == "10.2.0.9");
}

// The hint of a node that lacks the chosen subnet's interface: "--net tcp allows plain Ethernet"
// only where --net tcp was not given already.
TEST_CASE("a node without the chosen subnet: the hint suggests --net tcp only to a fabric job") {
  std::vector<NodeFabricInput> nodes{node("n1", FabricBuilder().eth("eth0", "10.0.0.1").eth("ib0", "10.1.0.1")),
                                     node("n2", FabricBuilder().eth("eth0", "10.0.0.2"))};
  NetOptions tcp;
  tcp.mode = NetMode::tcp;
  tcp.net_cidr = "10.1.0.0/24";
  auto refused = chooseNetwork(nodes, tcp);
  REQUIRE_FALSE(refused);
  CHECK(contains(refused.error().message, "n2: no interface has an address in 10.1.0.0/24"));
  CHECK_FALSE(contains(refused.error().hint, "--net tcp"));
  NetOptions fabric;
  fabric.net_cidr = "10.1.0.0/24";
  auto fabric_refused = chooseNetwork(nodes, fabric);
  REQUIRE_FALSE(fabric_refused);
  CHECK(contains(fabric_refused.error().hint, "--net tcp allows plain Ethernet"));
}
