#include "binding/fabric/fabric_env.h"

#include <strings.h>

#include <cstdlib>
#include <string_view>

#include "binding/fabric/env_selection.h"
#include "binding/fabric/ipv4_net.h"
#include "binding/fabric/list_tokens.h"
#include "binding/fabric/nccl_if_list.h"
#include "binding/fabric/network_ports.h"
#include "tlaunch/strings.h"

namespace tlaunch {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& item) {
  for (const auto& x : list)
    if (x == item) return true;
  return false;
}

// Open MPI's "devices and/or CIDR" include lists: does the value keep our interface/subnet?
bool includesOurs(const std::string& value, const NodeNetChoice& node) {
  auto address = parseIpv4(node.ipv4);
  for (const auto& token : splitNonEmpty(value, ',')) {
    if (token == node.ifname || token == node.cidr) return true;
    if (auto net = parseCidr(token); net && address && tlaunch::contains(*net, *address)) return true;
  }
  return false;
}

std::string conflictFor(const std::string& name, const std::string& userValue, const NetworkChoice& choice,
                        const NodeNetChoice& node) {
  const std::string where = " (the fabric interface on " + node.node + ")";
  if (name == "MASTER_ADDR")
    return userValue == choice.master_addr ? ""
                                           : "is not rank 0's address on " + choice.cidr + " (" + choice.master_addr +
                                                 "); TCPStore traffic follows the route to it";
  if (name == "NCCL_SOCKET_IFNAME") {
    if (userValue.size() <= 1) return "NCCL ignores a value this short and picks an interface itself";
    return ncclIfListSelects(parseNcclIfList(userValue), node.ifname)
               ? ""
               : "does not select " + node.ifname + where + "; NCCL bootstrap and IB OOB go elsewhere";
  }
  if (name == "NCCL_IB_HCA") {
    NcclIfList list = parseNcclIfList(userValue);
    std::string missing;
    for (const auto& port : node.hca_ports) {
      auto colon = port.name.rfind(':');
      if (!ncclIfListSelects(list, port.name.substr(0, colon), std::atoi(port.name.c_str() + colon + 1)))
        missing += (missing.empty() ? "" : ",") + port.name;
    }
    return missing.empty() ? "" : "leaves out data port(s) " + missing;
  }
  if (name == "NCCL_IB_DISABLE")  // --net tcp (sockets_only) asks for 1 itself
    return std::strtoll(userValue.c_str(), nullptr, 0) != 0 && !choice.sockets_only
               ? "disables InfiniBand/RoCE: NCCL falls back to TCP sockets"
               : "";
  if (name == "NCCL_IB_PKEY" || name == "UCX_IB_PKEY") {
    const std::string partition = node.ifname + "'s partition " + pkeyText(node.pkey);
    if (name == "NCCL_IB_PKEY")  // an index into the port's P_Key table
      return std::strtol(userValue.c_str(), nullptr, 0) == node.pkey_index
                 ? ""
                 : "is not the index of " + partition + " (entry " + std::to_string(node.pkey_index) + " on " +
                       node.node + "): NCCL's queue pairs join another partition";
    char* end = nullptr;  // UCX: the partition's value in hex, or "auto" (the first full-member entry)
    const long value = std::strtol(userValue.c_str(), &end, 16);
    return end != userValue.c_str() && (value & kPkeyPartitionMask) == (node.pkey & kPkeyPartitionMask)
               ? ""
               : "does not select " + partition + ": UCX's queue pairs join another partition";
  }
  if (name == "NCCL_NET")
    return strcasecmp(userValue.c_str(), "Socket") == 0 ? "forces NCCL onto TCP sockets" : "";
  if (name == "GLOO_SOCKET_IFNAME")
    return contains(splitNonEmpty(userValue, ','), node.ifname) ? "" : "does not name " + node.ifname + where;
  if (name == "TP_SOCKET_IFNAME")
    return userValue == node.ifname ? "" : "does not name " + node.ifname + where;
  if (name == "UCX_NET_DEVICES") {
    if (userValue == "all") return "";
    const bool deny = userValue.starts_with('^');  // "^mlx5_2:1": every device but those
    const auto tokens = splitNonEmpty(deny ? userValue.substr(1) : userValue, ',');
    for (const auto& port : node.hca_ports)
      if (contains(tokens, port.name) != deny) return "";
    if (contains(tokens, node.ifname) != deny) return "";
    return (deny ? "leaves out all of " : "names none of ") +
           (node.hca_ports.empty() ? node.ifname : joinHcaPorts(node));
  }
  if (name.ends_with("_if_include"))
    return includesOurs(userValue, node) ? "" : "leaves out " + node.ifname + " / " + node.cidr;
  return "";
}

// Why NCCL_NET=IB must not be set on this node, or "". NCCL_NET=IB keeps NCCL from falling back
// to sockets, but it also bypasses every net plugin — and a plugin is how NCCL reaches EFA
// (aws-ofi-nccl) and other fabrics: there it would break NCCL, not protect it.
std::string netPluginInPlay(const NodeNetChoice& node, const UserEnv& user) {
  if (node.efa) return "EFA device on " + node.node;
  if (auto it = user.find("NCCL_NET_PLUGIN"); it != user.end() && !it->second.value.empty() &&
                                               strcasecmp(it->second.value.c_str(), "none") != 0)
    return "NCCL_NET_PLUGIN=" + it->second.value;
  if (auto it = user.find("LD_LIBRARY_PATH"); it != user.end())
    for (const auto& dir : splitNonEmpty(it->second.value, ':'))
      if (dir.find("ofi-nccl") != std::string::npos || dir.find("aws-ofi") != std::string::npos)
        return "the aws-ofi-nccl plugin in LD_LIBRARY_PATH (" + dir + ")";
  return "";
}

}  // namespace

const std::vector<std::pair<std::string_view, std::string_view>>& loopbackEnv() {
  static const std::vector<std::pair<std::string_view, std::string_view>> env = {
      {"NCCL_SOCKET_IFNAME", "=lo"},  // NCCL leaves lo out unless it is named
      {"NCCL_SOCKET_FAMILY", "AF_INET"},
      {"GLOO_SOCKET_IFNAME", "lo"},
      {"TP_SOCKET_IFNAME", "lo"},
  };
  return env;
}

std::vector<EnvSetting> fabricEnv(const NetworkChoice& choice, std::size_t nodeIndex, const UserEnv& user,
                                  const std::string& ucxNetDevices, const NodeFabric* fabric) {
  const NodeNetChoice& node = choice.nodes.at(nodeIndex);
  const std::string on = node.ifname + " " + node.ipv4 + "/" + std::to_string(node.prefix) + " on " + node.node;
  std::vector<EnvSetting> out;
  auto add = [&](std::string name, std::string value, std::string source) {
    out.push_back(EnvSetting{std::move(name), std::move(value), std::move(source), false, "", "", ""});
  };

  add("MASTER_ADDR", choice.master_addr,
      "rank 0 node " + choice.nodes.front().node + "'s address on " + choice.cidr + " (" +
          choice.nodes.front().ifname + ")");
  add("NCCL_SOCKET_IFNAME", "=" + node.ifname, "exact name of " + on);
  add("NCCL_SOCKET_FAMILY", "AF_INET", "the chosen address is IPv4; keeps NCCL off IPv6 link-local");
  if (choice.sockets_only) {
    add("NCCL_IB_DISABLE", "1", "--net tcp: NCCL over sockets, not the HCAs it finds");
    add("NCCL_NET", "Socket", "--net tcp: not a net plugin either (aws-ofi-nccl on EFA)");
  }
  if (choice.rdma) {
    add("NCCL_IB_DISABLE", "0", "RDMA ports on every node; overrides any nccl.conf");
    if (netPluginInPlay(node, user).empty()) add("NCCL_NET", "IB", "fail instead of falling back to TCP sockets");
    // Built by appending: GCC 12 at -O3 reports a false -Wrestrict on `"=" + std::string&&`.
    std::string hcas = "=";
    hcas += joinHcaPorts(node);
    add("NCCL_IB_HCA", std::move(hcas), "ACTIVE data ports of the fabric on " + node.node);
    bool roce = !node.hca_ports.empty();
    bool allInSubnet = true;
    for (const auto& port : node.hca_ports) {
      roce = roce && port.gid_index >= 0;
      allInSubnet = allInSubnet && port.gid_in_subnet;
    }
    if (roce) {
      add("NCCL_IB_GID_INDEX", std::to_string(node.roce_gid_index),
          node.roce_gid_index >= 0 ? "RoCE v2 IPv4 GID of every data port on " + node.node
                                   : "data ports differ in GID index: let NCCL choose");
      add("NCCL_IB_ADDR_FAMILY", "AF_INET", "RoCE v2 over IPv4");
      add("NCCL_IB_ROCE_VERSION_NUM", "2", "RoCE v2");
      if (allInSubnet) add("NCCL_IB_ADDR_RANGE", choice.cidr, "GIDs on the chosen subnet only");
    }
  }
  if (node.pkey_index > 0 && !choice.sockets_only) {
    const std::string partition = "partition " + pkeyText(node.pkey) + " of " + node.ifname + ", entry " +
                                  std::to_string(node.pkey_index) + " of " + node.port + "'s P_Key table";
    add("NCCL_IB_PKEY", std::to_string(node.pkey_index), partition + " (verbs use entry 0 unless told)");
    add("UCX_IB_PKEY", pkeyText(node.pkey & kPkeyPartitionMask), partition);
  }
  add("GLOO_SOCKET_IFNAME", node.ifname, on);
  add("TP_SOCKET_IFNAME", node.ifname, on);
  if (choice.sockets_only)
    add("UCX_NET_DEVICES", node.ifname, "--net tcp: " + on);
  else if (!ucxNetDevices.empty())
    add("UCX_NET_DEVICES", ucxNetDevices, "the rank's nearest HCA port");
  else if (!node.hca_ports.empty())
    add("UCX_NET_DEVICES", joinHcaPorts(node), "all data ports on " + node.node);
  else
    add("UCX_NET_DEVICES", node.ifname, on);
  add("OMPI_MCA_btl_tcp_if_include", choice.cidr, "the chosen subnet (names differ between nodes)");
  add("OMPI_MCA_oob_tcp_if_include", choice.cidr, "the chosen subnet (Open MPI 4 runtime)");
  add("PRTE_MCA_prte_if_include", choice.cidr, "the chosen subnet (Open MPI 5 runtime)");
  add("PMIX_MCA_ptl_tcp_if_include", choice.cidr, "the chosen subnet (PMIx)");

  for (auto& setting : out) {
    if (auto it = user.find(setting.name); it != user.end()) {
      setting.overridden_by_user = true;
      setting.user_value = it->second.value;
      setting.user_source = it->second.source;
      setting.conflict = conflictFor(setting.name, it->second.value, choice, node);
      if (setting.conflict.empty() && fabric)  // it selects ours: does it select others too?
        setting.conflict = offNetworkSelection(setting.name, it->second.value, node, *fabric);
      continue;
    }
    if (setting.name.ends_with("_if_include")) {  // Open MPI refuses include together with exclude
      std::string exclude = setting.name.substr(0, setting.name.size() - 7) + "exclude";
      if (auto it = user.find(exclude); it != user.end()) {
        setting.overridden_by_user = true;
        setting.user_source = exclude + "=" + it->second.value + " (" + it->second.source +
                              "); the two are mutually exclusive";
        setting.conflict = includesOurs(it->second.value, node) ? "excludes " + node.ifname + " / " + node.cidr : "";
        if (setting.conflict.empty() && fabric)
          setting.conflict = offNetworkSelection(exclude, it->second.value, node, *fabric);
      }
    }
  }
  return out;
}

std::vector<std::string> envAssignments(const std::vector<EnvSetting>& settings) {
  std::vector<std::string> out;
  for (const auto& s : settings)
    if (!s.overridden_by_user) out.push_back(s.name + "=" + s.value);
  return out;
}

}  // namespace tlaunch
