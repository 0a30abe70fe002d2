#pragma once
// The chosen network's data ports on one node (NCCL_IB_HCA, UCX_NET_DEVICES), pure.
// InfiniBand: the ACTIVE ports on the chosen port's IB subnet not slower than it (a storage HCA
// on the same subnet prefix, fe80:: by default, often is); over a pkey child (ib0.8001), those
// whose P_Key tables hold its partition at the chosen port's index. RoCE: the ACTIVE ports whose
// RoCE v2 IPv4 GID lies in the chosen subnet, or in a rail (another subnet common to all nodes
// that carries no control connection: one subnet per NIC) with a port not slower than the
// chosen one. A management ConnectX (its own subnet, the daemons' connections, a slower link) is
// left out.
#include <cstdint>
#include <string>
#include <vector>

#include "binding/fabric/ipv4_net.h"
#include "binding/fabric/network_choice.h"

namespace tlaunch {

struct DataPortRules {
  Ipv4Net net;                 // the chosen subnet
  std::vector<Ipv4Net> rails;  // other subnets common to all nodes that carry no control connection
  double chosen_rate = 0;      // the chosen port's rate in Gb/s (0: unknown)
};

// Fills node.hca_ports, node.roce_gid_index and (InfiniBand) node.pkey/pkey_index; node.kind,
// node.ifname and node.port (the chosen port) are set. Returns the ports of the job's fabric
// left out, each with why: "mlx5_8:1 (200 Gb/s, slower than the job's mlx5_0:1 at 400 Gb/s)"
// (a storage HCA, say), or an IB port whose P_Key table holds the job's partition at another
// index than node.pkey_index.
std::vector<std::string> fillDataPorts(NodeNetChoice& node, const NodeFabric& fabric, const DataPortRules& rules);

// "0x8001": a P_Key as the kernel and the IB tools print it.
std::string pkeyText(int pkey);

// What the subnets common to all nodes are, and which carry the daemons' control connections.
struct SubnetFacts {
  std::vector<Ipv4Net> common;
  std::vector<std::uint32_t> control;  // the daemons' (non-loopback) control addresses
};

// The addresses the daemons reached the frontend from (NetOptions::control_ips), less loopback
// ones (every node is this host), which say nothing.
std::vector<std::uint32_t> controlAddresses(const std::vector<std::string>& control_ips);
bool carriesControl(const Ipv4Net& net, const std::vector<std::uint32_t>& control);

// When the node's chosen RoCE port (node.port, at chosen_rate) is slower than another ACTIVE
// RoCE port of the node: "mlx5_0:1 (25 Gb/s) is slower than mlx5_1:1 (400 Gb/s, eth2 on
// 10.10.0.0/16, which is not on every node)"; "" otherwise.
std::string slowerPortReason(const NodeNetChoice& node, const NodeFabric& fabric, double chosen_rate,
                             const SubnetFacts& facts);

// The notes for the nodes of `reasons` ("node1: the job's RoCE port " + slowerPortReason): the
// first few, then how many more, each saying how to choose another network.
void addSlowPortNotes(std::vector<std::string>& notes, const std::vector<std::string>& reasons,
                      const std::string& cidr);

// "node1, node2, node3 and 997 more": a note's nodes, the first few named.
std::string someNodes(const std::vector<std::string>& nodes);

}  // namespace tlaunch
