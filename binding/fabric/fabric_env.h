#pragma once
// The network choice as environment, one consistent set per node / rank (pure):
// MASTER_ADDR, NCCL_*, GLOO_/TP_SOCKET_IFNAME, UCX_NET_DEVICES, Open MPI / PRRTE / PMIx
// TCP includes. Exact forms from shared/research/FABRIC.md §1 and §7. A value the user set
// (-x or inherited) wins; both are reported so --dry-run can show them.
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "binding/fabric/network_choice.h"
#include "binding/fabric/user_env.h"

namespace tlaunch {

struct EnvSetting {
  std::string name;
  std::string value;   // what the network choice asks for
  std::string source;  // why, in words
  bool overridden_by_user = false;  // the user's value (or absence, see user_value) applies
  std::string user_value;
  std::string user_source;  // "-x", "environment", or the variable that rules this one out
  std::string conflict;     // when the user's value defeats the choice: what it breaks
  const std::string& effective() const { return overridden_by_user ? user_value : value; }
};

// Settings for a rank of choice.nodes[node]. `ucxNetDevices` is the rank's nearest HCA port
// ("mlx5_0:1") when the placement knows it; empty = all of the node's data ports. `fabric`, the
// node's interfaces and ports when known: a user's value that also selects others off the job's
// network is a conflict too (env_selection.h).
std::vector<EnvSetting> fabricEnv(const NetworkChoice& choice, std::size_t node, const UserEnv& user,
                                  const std::string& ucxNetDevices = {}, const NodeFabric* fabric = nullptr);

// Every node is this host (the local launcher) and no network was asked for: the socket layers
// stay on the loopback interface, as Open MPI's TCP does there, instead of each picking its own
// (NCCL's own pick may be a docker bridge, a VPN or a management port that is down).
const std::vector<std::pair<std::string_view, std::string_view>>& loopbackEnv();

// The variables to export: the settings the user did not override, as NAME=VALUE.
std::vector<std::string> envAssignments(const std::vector<EnvSetting>& settings);

}  // namespace tlaunch
