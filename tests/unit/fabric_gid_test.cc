// NCCL's RoCE GID auto-selection and NCCL's interface-list grammar, reproduced in tlaunch.
#include <catch2/catch.hpp>

#include "binding/fabric/nccl_if_list.h"
#include "binding/fabric/roce_gid.h"
#include "fabric_test_support.h"

using namespace tlaunch;
using namespace tlaunch::testing;

namespace {

RdmaPort roce(std::initializer_list<GidEntry> gids) {
  RdmaPort port;
  port.number = 1;
  port.state = kPortStateActive;
  port.link_layer = LinkLayer::ethernet;
  port.gids = gids;
  return port;
}

GidEntry gid(int index, const std::string& text, GidType type) { return makeGidEntry(index, text, type, "ens1f0"); }

const std::string kLinkLocal = "fe80:0000:0000:0000:0ac0:ebff:fe12:3456";

}  // namespace

TEST_CASE("GID text: IPv4-mapped, link-local and empty entries are told apart") {
  auto mapped = parseGid(ipv4Gid(10, 1, 0, 5));
  REQUIRE(mapped);
  CHECK(gidIpv4Mapped(*mapped));
  CHECK(formatIpv4(gidIpv4(*mapped)) == "10.1.0.5");
  CHECK(gidConfigured(*mapped));
  auto linkLocal = parseGid(kLinkLocal);
  REQUIRE(linkLocal);
  CHECK(gidLinkLocal(*linkLocal));
  CHECK_FALSE(gidIpv4Mapped(*linkLocal));
  CHECK_FALSE(gidConfigured(*parseGid("0000:0000:0000:0000:0000:0000:0000:0000")));
  CHECK_FALSE(gidConfigured(*parseGid("fe80:0000:0000:0000:0000:0000:0000:0000")));
  CHECK_FALSE(parseGid("not a gid"));
  GidEntry e = makeGidEntry(3, ipv4Gid(192, 168, 7, 9), GidType::roce_v2, "eth2");
  CHECK(e.ipv4_mapped);
  CHECK(e.ipv4 == "192.168.7.9");
  CHECK(isRoceV2Ipv4(e));
  CHECK_FALSE(isRoceV2Ipv4(makeGidEntry(2, ipv4Gid(192, 168, 7, 9), GidType::ib_roce_v1, "eth2")));
  CHECK_FALSE(isRoceV2Ipv4(makeGidEntry(1, kLinkLocal, GidType::roce_v2, "eth2")));
}

TEST_CASE("NCCL picks the RoCE v2 IPv4 GID, not the link-local v2 one (NVIDIA/nccl #769 table)") {
  RdmaPort port = roce({gid(0, kLinkLocal, GidType::ib_roce_v1), gid(1, kLinkLocal, GidType::roce_v2),
                        gid(2, ipv4Gid(200, 0, 209, 6), GidType::ib_roce_v1),
                        gid(3, ipv4Gid(200, 0, 209, 6), GidType::roce_v2)});
  CHECK(ncclRoceGidIndex(port) == 3);
  CHECK(ncclRoceGidIndex(port, std::nullopt, 1) == 2);  // NCCL_IB_ROCE_VERSION_NUM=1
}

TEST_CASE("NCCL_IB_ADDR_RANGE picks the GID on the data subnet, not the management one") {
  RdmaPort port = roce({gid(0, kLinkLocal, GidType::ib_roce_v1), gid(1, kLinkLocal, GidType::roce_v2),
                        gid(2, ipv4Gid(192, 168, 1, 5), GidType::ib_roce_v1),
                        gid(3, ipv4Gid(192, 168, 1, 5), GidType::roce_v2),
                        gid(4, ipv4Gid(10, 3, 0, 5), GidType::ib_roce_v1),
                        gid(5, ipv4Gid(10, 3, 0, 5), GidType::roce_v2)});
  CHECK(ncclRoceGidIndex(port) == 3);  // without a range: the lowest v2 IPv4 entry
  CHECK(ncclRoceGidIndex(port, parseCidr("10.3.0.0/16")) == 5);
  CHECK(ncclRoceGidIndex(port, parseCidr("172.16.0.0/12")) == 0);  // nothing in range: index 0
}

TEST_CASE("an unreadable types/<i> entry is skipped, as NCCL does on EINVAL") {
  RdmaPort port = roce({gid(0, kLinkLocal, GidType::ib_roce_v1), gid(2, ipv4Gid(10, 3, 0, 5), GidType::ib_roce_v1),
                        gid(3, ipv4Gid(10, 3, 0, 5), GidType::unknown),
                        gid(5, ipv4Gid(10, 3, 0, 6), GidType::roce_v2)});
  CHECK(ncclRoceGidIndex(port) == 5);
}

TEST_CASE("a table without RoCE v2 entries leaves NCCL on an IPv4 v1 GID") {
  RdmaPort port = roce({gid(0, kLinkLocal, GidType::ib_roce_v1), gid(1, ipv4Gid(10, 3, 0, 5), GidType::ib_roce_v1)});
  int index = ncclRoceGidIndex(port);
  CHECK(index == 1);
  CHECK_FALSE(isRoceV2Ipv4(*gidAt(port, index)));
}

TEST_CASE("NCCL list grammar: prefix, exact, negation and ports") {
  CHECK(ncclIfListSelects(parseNcclIfList("ib"), "ibp94s0"));
  CHECK(ncclIfListSelects(parseNcclIfList("ib"), "ib0.8001"));
  CHECK_FALSE(ncclIfListSelects(parseNcclIfList("=ib0"), "ib0.8001"));
  CHECK(ncclIfListSelects(parseNcclIfList("=ib0"), "ib0"));
  CHECK(ncclIfListSelects(parseNcclIfList("=ib0,hsi0"), "hsi0"));
  CHECK_FALSE(ncclIfListSelects(parseNcclIfList("^docker,lo"), "docker0"));
  CHECK_FALSE(ncclIfListSelects(parseNcclIfList("^docker,lo"), "lo"));
  CHECK(ncclIfListSelects(parseNcclIfList("^docker,lo"), "ib0"));
  CHECK_FALSE(ncclIfListSelects(parseNcclIfList("^=docker0"), "docker0"));
  CHECK(ncclIfListSelects(parseNcclIfList("^=docker0"), "docker01"));
  // HCA lists: without '=', mlx5_1 also matches mlx5_10 (the NCCL doc's warning).
  CHECK(ncclIfListSelects(parseNcclIfList("mlx5_1"), "mlx5_10", 1));
  CHECK_FALSE(ncclIfListSelects(parseNcclIfList("=mlx5_1"), "mlx5_10", 1));
  CHECK(ncclIfListSelects(parseNcclIfList("=mlx5_0:1,mlx5_1:1"), "mlx5_1", 1));
  CHECK_FALSE(ncclIfListSelects(parseNcclIfList("=mlx5_0:1,mlx5_1:1"), "mlx5_1", 2));
  CHECK(ncclIfListSelects(parseNcclIfList("mlx5_0"), "mlx5_0", 2));
  CHECK_FALSE(ncclIfListSelects(parseNcclIfList("^=mlx5_1"), "mlx5_1", 1));
  CHECK(ncclIfListSelects(parseNcclIfList(""), "anything"));
  NcclIfList list = parseNcclIfList("^=a:1,,b");
  CHECK(list.negate);
  CHECK(list.exact);
  REQUIRE(list.entries.size() == 2);
  CHECK(list.entries[0].prefix == "a");
  CHECK(list.entries[0].port == 1);
  CHECK(list.entries[1].port == -1);
}

TEST_CASE("CIDR parsing normalises host bits and rejects malformed input") {
  auto net = parseCidr("10.1.2.3/16");
  REQUIRE(net);
  CHECK(formatCidr(*net) == "10.1.0.0/16");
  CHECK(contains(*net, *parseIpv4("10.1.255.1")));
  CHECK_FALSE(contains(*net, *parseIpv4("10.2.0.1")));
  CHECK_FALSE(parseCidr("10.1.0.0"));
  CHECK_FALSE(parseCidr("10.1.0.0/33"));
  CHECK_FALSE(parseCidr("10.1.0/16"));
  CHECK_FALSE(parseCidr("10.1.0.0/1x"));
  CHECK(formatCidr(*parseCidr("0.0.0.0/0")) == "0.0.0.0/0");
}
