#pragma once
// What a user's interface or device list selects on one node beyond the job's network (pure).
// fabric_env.cc asks whether the value selects the chosen interface; this asks whether it
// selects ONLY interfaces of the job's network, judged against the node's actual interfaces and
// HCA ports: NCCL_SOCKET_IFNAME=^docker,lo selects the management eth0 too (and NCCL's bootstrap
// takes the first match in the kernel's order), GLOO_SOCKET_IFNAME=ib0,eth0 makes Gloo use both,
// UCX_NET_DEVICES=mlx5_0:1,eth0 puts UCX on eth0, NCCL_IB_HCA=mlx5 takes a management port.
#include <string>

#include "binding/fabric/network_choice.h"

namespace tlaunch {

// "also selects eth0, lo (not on the job's network 10.1.0.0/16): ..." for the user's value of
// `name` (NCCL_SOCKET_IFNAME, NCCL_IB_HCA, GLOO_SOCKET_IFNAME, UCX_NET_DEVICES, Open MPI's and
// PMIx's *_if_include and *_if_exclude) on `node`; "" when it selects nothing else, or for any
// other variable. An interface is on the job's network when it is the chosen one, has an
// address in the chosen subnet, or is the netdev of one of the node's data ports (a rail).
std::string offNetworkSelection(const std::string& name, const std::string& value, const NodeNetChoice& node,
                                const NodeFabric& fabric);

}  // namespace tlaunch
