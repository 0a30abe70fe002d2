#include "binding/fabric/env_selection.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "binding/fabric/ipv4_net.h"
#include "binding/fabric/list_tokens.h"
#include "binding/fabric/nccl_if_list.h"
#include "tlaunch/strings.h"

namespace tlaunch {
namespace {

bool isDataPortOf(const NodeNetChoice& node, const std::string& port) {
  return std::any_of(node.hca_ports.begin(), node.hca_ports.end(),
                     [&](const HcaPortChoice& p) { return p.name == port; });
}

// What NCCL, Gloo, UCX and Open MPI can pick: up, running, with an IPv4 address.
bool carriesTraffic(const NetInterface& iface) {
  return iface.live && iface.up && iface.running && !iface.ipv4.empty();
}

bool hasAddressIn(const NetInterface& iface, const Ipv4Net& net) {
  return std::any_of(iface.ipv4.begin(), iface.ipv4.end(), [&](const Ipv4Address& a) {
    auto ip = parseIpv4(a.address);
    return ip && contains(net, *ip);
  });
}

bool onJobNetwork(const NetInterface& iface, const NodeNetChoice& node) {
  if (iface.name == node.ifname) return true;
  if (auto net = parseCidr(node.cidr); net && hasAddressIn(iface, *net)) return true;
  return !iface.rdma_device.empty() && isDataPortOf(node, portName(iface.rdma_device, iface.rdma_port));
}

// The node's interfaces that `selects` picks and that are off the job's network.
std::vector<std::string> offNetworkInterfaces(const NodeFabric& fabric, const NodeNetChoice& node,
                                              const std::function<bool(const NetInterface&)>& selects) {
  std::vector<std::string> out;
  for (const auto& iface : fabric.interfaces)
    if (carriesTraffic(iface) && selects(iface) && !onJobNetwork(iface, node)) out.push_back(iface.name);
  return out;
}

// Open MPI's include/exclude tokens: interface names or CIDR subnets.
bool listedByOpenMpi(const std::vector<std::string>& tokens, const NetInterface& iface) {
  return std::any_of(tokens.begin(), tokens.end(), [&](const std::string& token) {
    auto net = parseCidr(token);
    return token == iface.name || (net && hasAddressIn(iface, *net));
  });
}

// A name the user listed that is not on the job's network ("eth0"; "eth9 (no such interface)"),
// or "".
std::string offNetworkName(const std::string& name, const NodeNetChoice& node, const NodeFabric& fabric) {
  if (name == node.ifname) return "";
  const NetInterface* iface = fabric.findInterface(name);
  if (!iface) return name + " (no such interface)";
  return onJobNetwork(*iface, node) ? "" : name;
}

// NCCL_IB_HCA: NCCL takes every ACTIVE InfiniBand or Ethernet port the list selects.
std::vector<std::string> offNetworkPorts(const NcclIfList& list, const NodeNetChoice& node, const NodeFabric& fabric) {
  std::vector<std::string> out;
  for (const auto& device : fabric.devices)
    for (const auto& port : device.ports) {
      const bool usable = port.state == kPortStateActive &&
                          (port.link_layer == LinkLayer::infiniband || port.link_layer == LinkLayer::ethernet);
      const std::string name = portName(device.name, port.number);
      if (usable && ncclIfListSelects(list, device.name, port.number) && !isDataPortOf(node, name))
        out.push_back(name);
    }
  return out;
}

// UCX_NET_DEVICES: "all", a list of devices ("mlx5_0:1", "eth0"), or "^" and the devices not to use.
std::vector<std::string> ucxOffNetwork(const std::string& value, const NodeNetChoice& node, const NodeFabric& fabric) {
  if (value == "all") return {};
  const bool deny = value.starts_with('^');
  const std::vector<std::string> tokens = splitNonEmpty(deny ? value.substr(1) : value, ',');
  std::vector<std::string> out;
  if (!deny) {
    for (const auto& token : tokens) {
      const bool port = token.find(':') != std::string::npos;  // "mlx5_0:1"; else a netdev
      if (port ? !isDataPortOf(node, token) : !offNetworkName(token, node, fabric).empty()) out.push_back(token);
    }
    return out;
  }
  auto denied = [&](const std::string& name) { return std::find(tokens.begin(), tokens.end(), name) != tokens.end(); };
  for (const auto& device : fabric.devices)
    for (const auto& port : device.ports)
      if (const std::string name = portName(device.name, port.number);
          port.state == kPortStateActive && !denied(name) && !isDataPortOf(node, name))
        out.push_back(name);
  auto kept = [&](const NetInterface& i) { return !i.loopback && !denied(i.name); };
  for (const auto& name : offNetworkInterfaces(fabric, node, kept)) out.push_back(name);
  return out;
}

std::string said(const std::string& verb, const std::vector<std::string>& names, const NodeNetChoice& node,
                 const std::string& consequence) {
  if (names.empty()) return "";
  return verb + " " + joinStrings(names, ", ") + " (not on the job's network " + node.cidr + "): " + consequence;
}

}  // namespace

std::string offNetworkSelection(const std::string& name, const std::string& value, const NodeNetChoice& node,
                                const NodeFabric& fabric) {
  if (name == "NCCL_SOCKET_IFNAME") {
    const NcclIfList list = parseNcclIfList(value);
    auto selects = [&](const NetInterface& i) { return ncclIfListSelects(list, i.name); };
    return said("also selects", offNetworkInterfaces(fabric, node, selects), node,
                "NCCL's bootstrap takes the first match in the kernel's interface order");
  }
  if (name == "NCCL_IB_HCA") {
    const auto ports = offNetworkPorts(parseNcclIfList(value), node, fabric);
    return ports.empty() ? "" : "also selects " + joinStrings(ports, ", ") + " (not a data port of the job's network " +
                                    node.cidr + "): NCCL sends data over every port listed";
  }
  if (name == "GLOO_SOCKET_IFNAME") {
    std::vector<std::string> extra;
    for (const auto& token : splitNonEmpty(value, ','))
      if (auto off = offNetworkName(token, node, fabric); !off.empty()) extra.push_back(off);
    return said("also names", extra, node, "every interface listed is used");
  }
  if (name == "UCX_NET_DEVICES")
    return said("also selects", ucxOffNetwork(value, node, fabric), node, "UCX uses every device listed");
  const std::vector<std::string> tokens = splitNonEmpty(value, ',');
  if (name.ends_with("_if_include"))
    return said("also includes",
                offNetworkInterfaces(fabric, node, [&](const NetInterface& i) { return listedByOpenMpi(tokens, i); }),
                node, "Open MPI and PMIx use every interface included");
  if (name.ends_with("_if_exclude"))
    return said("also uses", offNetworkInterfaces(fabric, node, [&](const NetInterface& i) {
                  return !i.loopback && !listedByOpenMpi(tokens, i);
                }),
                node, "Open MPI and PMIx use every interface not excluded");
  return "";
}

}  // namespace tlaunch
