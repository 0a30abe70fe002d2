#pragma once
// Choosing the job's network (pure): one IPv4 subnet present on every node, and each node's
// interface on it, by address (interface names may differ between nodes). By default only
// fabric interfaces count: IPoIB netdevs of ACTIVE HCA ports, and netdevs of ACTIVE RoCE ports
// with a RoCE v2 IPv4 GID. `--net tcp` also allows plain (non-loopback) interfaces, well-known
// virtual and container bridges (docker0, virbr0, ...) after the real ones. A subnet on which two
// nodes have the same address (172.17.0.1 on every Docker host) cannot join them: never chosen.
#include <cstddef>
#include <string>
#include <vector>

#include "tlaunch/fabric.h"
#include "tlaunch/result.h"

namespace tlaunch {

enum class NetMode { fabric, tcp };   // --net (default: fabric)
enum class NetKind { ib, roce, tcp };

const char* netKindName(NetKind kind);  // "ib", "roce", "tcp"

struct NetOptions {
  NetMode mode = NetMode::fabric;
  std::vector<std::string> net_if;  // --net-if NAME[,NAME]: allowed names on every node
  std::string net_cidr;             // --net-cidr 10.1.0.0/16: choose by subnet, names free
  bool same_host = false;           // every node is this host (--launcher local): shared addresses are expected
  // Per node (input order): the address its daemon reached the frontend from ("" or loopback:
  // unknown). A fabric subnet holding one is a management network: it ranks after the others.
  std::vector<std::string> control_ips;
};

struct NodeFabricInput {
  std::string node;                 // node name as the user knows it
  NodeFabric fabric;
  std::vector<std::string> net_if;  // per-node override from the hostfile (net_if=ib1)
};

struct HcaPortChoice {
  std::string name;     // "mlx5_0:1"
  int gid_index = -1;   // RoCE: the GID index NCCL would pick for AF_INET; -1 on IB
  bool gid_in_subnet = false;  // RoCE: that GID's address lies in the chosen subnet
  bool operator==(const HcaPortChoice&) const = default;
};

struct NodeNetChoice {
  std::string node;
  std::string ifname;  // "ib0"
  std::string ipv4;    // "10.1.0.5"
  int prefix = 0;      // 16
  std::string cidr;    // "10.1.0.0/16" (the interface's own network)
  NetKind kind = NetKind::tcp;
  std::string port;    // HCA port of ifname, "mlx4_0:1"; "" for plain TCP
  std::vector<HcaPortChoice> hca_ports;  // ACTIVE data ports of the chosen fabric on this node
  int roce_gid_index = -1;  // the index shared by all of this node's RoCE data ports, else -1
  bool efa = false;         // the node has an EFA device (vendor 0x1d0f): NCCL needs its net plugin
  // InfiniBand on an IPoIB interface of another partition than P_Key table entry 0 (a pkey
  // child such as ib0.8001): its P_Key, and that entry's index in every data port's table, which
  // verbs need (NCCL_IB_PKEY, UCX_IB_PKEY). -1 when entry 0, the verbs default, is the job's.
  int pkey = -1;
  int pkey_index = -1;
  bool operator==(const NodeNetChoice&) const = default;
};

struct NetworkChoice {
  NetKind kind = NetKind::tcp;
  std::string cidr;         // the chosen subnet
  std::string master_addr;  // rank 0 node's (nodes[0]'s) address on it
  bool rdma = false;        // every node has ACTIVE data ports: keep NCCL on verbs
  bool sockets_only = false;  // --net tcp where RDMA devices exist: NCCL, UCX and Open MPI kept off them too
  std::vector<NodeNetChoice> nodes;  // same order as the input
  std::vector<std::string> notes;    // other common subnets, several interfaces on one subnet...
  bool operator==(const NetworkChoice&) const = default;
};

// nodes[0] is the node of rank 0. Errors (Errc::fabric or Errc::usage) name each node that
// lacks what is needed and why (interface down, port not ACTIVE, no RDMA device, ...).
Result<NetworkChoice> chooseNetwork(const std::vector<NodeFabricInput>& nodes, const NetOptions& options);

// "mlx5_0:1,mlx5_1:1" (the HCA ports of one node, in order).
std::string joinHcaPorts(const NodeNetChoice& node);

}  // namespace tlaunch
