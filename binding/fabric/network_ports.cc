#include "binding/fabric/network_ports.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>

#include "binding/fabric/roce_gid.h"

namespace tlaunch {
namespace {

using IbPrefix = std::array<std::uint8_t, 8>;

// The IB subnet prefix of a port: the first 8 bytes of its GID 0.
std::optional<IbPrefix> ibSubnetPrefix(const RdmaPort& port) {
  const GidEntry* g0 = gidAt(port, 0);
  auto bytes = g0 ? parseGid(g0->gid) : std::nullopt;
  if (!bytes) return std::nullopt;
  IbPrefix prefix{};
  std::copy(bytes->begin(), bytes->begin() + 8, prefix.begin());
  return prefix;
}

const RdmaPort* findPort(const NodeFabric& fabric, const std::string& name) {
  for (const auto& device : fabric.devices)
    for (const auto& port : device.ports)
      if (portName(device.name, port.number) == name) return &port;
  return nullptr;
}

// The index of `pkey`'s partition in the port's P_Key table, a full-membership entry first (as
// IPoIB picks); -1 when the table lacks it.
int partitionIndex(const RdmaPort& port, std::uint16_t pkey) {
  int found = -1;
  for (const auto& entry : port.pkeys) {
    if ((entry.value & kPkeyPartitionMask) != (pkey & kPkeyPartitionMask)) continue;
    if (entry.value & kPkeyFullMember) return entry.index;
    if (found < 0) found = entry.index;
  }
  return found;
}

bool partitionAt(const RdmaPort& port, int index, std::uint16_t pkey) {
  return std::any_of(port.pkeys.begin(), port.pkeys.end(), [&](const PkeyEntry& e) {
    return e.index == index && (e.value & kPkeyPartitionMask) == (pkey & kPkeyPartitionMask);
  });
}

// The job's partition on an InfiniBand node: its interface's P_Key. Verbs send with P_Key table
// entry 0 unless told otherwise; node.pkey/pkey_index say otherwise where the interface's
// partition (a pkey child's, ib0.8001) sits at another entry of the chosen port's table.
void choosePartition(NodeNetChoice& node, const NodeFabric& fabric, const RdmaPort* chosen) {
  const NetInterface* iface = fabric.findInterface(node.ifname);
  if (!iface || iface->pkey <= 0 || !chosen) return;
  const int index = partitionIndex(*chosen, static_cast<std::uint16_t>(iface->pkey));
  if (index <= 0) return;  // entry 0, or not in the table (then the interface has no carrier either)
  node.pkey = iface->pkey;
  node.pkey_index = index;
}

// The index NCCL would pick for the port's RoCE v2 IPv4 GID in `net`; -1 when it has none there.
int gidIndexIn(const RdmaPort& port, const Ipv4Net& net) {
  const int index = ncclRoceGidIndex(port, net);
  const GidEntry* entry = gidAt(port, index);
  return entry && isRoceV2Ipv4(*entry) && contains(net, parseIpv4(entry->ipv4).value_or(0)) ? index : -1;
}

bool slowerThanChosen(const RdmaPort& port, const DataPortRules& rules) {
  return port.rate_gbps > 0 && port.rate_gbps < rules.chosen_rate;
}

// The RoCE port's GID index on a rail (a common subnet other than the chosen one), else -1.
int railGidIndex(const RdmaPort& port, const DataPortRules& rules) {
  for (const auto& rail : rules.rails)
    if (const int index = gidIndexIn(port, rail); index >= 0) return index;
  return -1;
}

// A RoCE port as a data port of the job; nullopt when it is none (see the header).
std::optional<HcaPortChoice> roceDataPort(const std::string& name, const RdmaPort& port,
                                          const DataPortRules& rules) {
  if (const int index = gidIndexIn(port, rules.net); index >= 0) return HcaPortChoice{name, index, true};
  if (slowerThanChosen(port, rules)) return std::nullopt;  // a slower link: no rail
  if (const int index = railGidIndex(port, rules); index >= 0) return HcaPortChoice{name, index, false};
  return std::nullopt;
}

// The index shared by every port when all are RoCE ports with the same one, else -1.
int sharedGidIndex(const std::vector<HcaPortChoice>& ports) {
  if (ports.empty()) return -1;
  const int first = ports.front().gid_index;
  const bool same =
      std::all_of(ports.begin(), ports.end(), [&](const HcaPortChoice& p) { return p.gid_index == first; });
  return same ? first : -1;  // IB ports have -1: so does the result
}

std::string gbpsText(double rate) {
  char text[32];
  std::snprintf(text, sizeof text, "%g Gb/s", rate);
  return text;
}

// Why the job does not run on the subnet of `port`'s netdev.
std::string whyNotTaken(const NodeFabric& fabric, const RdmaPort& port, const SubnetFacts& facts) {
  const NetInterface* iface = fabric.findInterface(port.netdev);
  if (!iface || !iface->live || !iface->up || !iface->running || iface->ipv4.empty())
    return port.netdev + " is down or has no IPv4 address";
  std::string out;
  for (const auto& a : iface->ipv4) {
    const auto address = parseIpv4(a.address);
    if (!address) continue;
    const Ipv4Net net = networkOf(*address, a.prefix);
    const bool common = std::find(facts.common.begin(), facts.common.end(), net) != facts.common.end();
    out += (out.empty() ? "" : "; ") + port.netdev + " on " + formatCidr(net) +
           (!common                               ? ", which is not on every node"
            : carriesControl(net, facts.control) ? ", which carries the daemons' control connections"
                                                 : "");
  }
  return out;
}

}  // namespace

std::string pkeyText(int pkey) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%04x", static_cast<unsigned>(pkey) & 0xffffu);
  return text;
}

std::vector<std::uint32_t> controlAddresses(const std::vector<std::string>& control_ips) {
  std::vector<std::uint32_t> out;
  for (const auto& text : control_ips)
    if (auto ip = parseIpv4(text); ip && (*ip >> 24) != 127 && *ip != 0) out.push_back(*ip);
  return out;
}

bool carriesControl(const Ipv4Net& net, const std::vector<std::uint32_t>& control) {
  return std::any_of(control.begin(), control.end(), [&](std::uint32_t ip) { return contains(net, ip); });
}

std::vector<std::string> fillDataPorts(NodeNetChoice& node, const NodeFabric& fabric, const DataPortRules& rules) {
  std::vector<std::string> leftOut;
  std::optional<IbPrefix> ibPrefix;
  if (node.kind == NetKind::ib) {
    const RdmaPort* chosen = findPort(fabric, node.port);
    if (chosen) ibPrefix = ibSubnetPrefix(*chosen);
    choosePartition(node, fabric, chosen);
  }
  // A storage or management HCA on the same fabric is often slower than the compute rails.
  const auto slower = [&](const std::string& name, const RdmaPort& port) {
    return name + " (" + gbpsText(port.rate_gbps) + ", slower than the job's " + node.port + " at " +
           gbpsText(rules.chosen_rate) + ")";
  };
  for (const auto& device : fabric.devices) {
    for (const auto& port : device.ports) {
      if (port.state != kPortStateActive) continue;
      const std::string name = portName(device.name, port.number);
      if (port.link_layer == LinkLayer::infiniband && node.kind != NetKind::roce) {
        const auto prefix = ibSubnetPrefix(port);
        if (ibPrefix && prefix && *prefix != *ibPrefix) continue;  // another IB subnet (a storage fabric, say)
        if (node.pkey_index > 0 && !partitionAt(port, node.pkey_index, static_cast<std::uint16_t>(node.pkey))) {
          leftOut.push_back(name + " (its P_Key table holds " + node.ifname + "'s partition " + pkeyText(node.pkey) +
                            " elsewhere than entry " + std::to_string(node.pkey_index) +
                            ", and NCCL_IB_PKEY is one index for every port)");
          continue;
        }
        if (node.kind == NetKind::ib && slowerThanChosen(port, rules)) {
          leftOut.push_back(slower(name, port));
          continue;
        }
        node.hca_ports.push_back(HcaPortChoice{name, -1, false});
      } else if (port.link_layer == LinkLayer::ethernet && node.kind != NetKind::ib) {
        if (auto use = roceDataPort(name, port, rules))
          node.hca_ports.push_back(*use);
        else if (node.kind == NetKind::roce && slowerThanChosen(port, rules) && railGidIndex(port, rules) >= 0)
          leftOut.push_back(slower(name, port));
      }
    }
  }
  node.roce_gid_index = sharedGidIndex(node.hca_ports);
  return leftOut;
}

std::string slowerPortReason(const NodeNetChoice& node, const NodeFabric& fabric, double chosen_rate,
                             const SubnetFacts& facts) {
  if (node.kind != NetKind::roce || chosen_rate <= 0) return "";
  const RdmaPort* fastest = nullptr;
  std::string fastestName;
  for (const auto& device : fabric.devices)
    for (const auto& port : device.ports)
      if (port.link_layer == LinkLayer::ethernet && isRdmaDataPort(port) &&
          port.rate_gbps > (fastest ? fastest->rate_gbps : chosen_rate)) {
        fastest = &port;
        fastestName = portName(device.name, port.number);
      }
  if (!fastest) return "";
  return node.port + " (" + gbpsText(chosen_rate) + ") is slower than " + fastestName + " (" +
         gbpsText(fastest->rate_gbps) + "; " + whyNotTaken(fabric, *fastest, facts) + ")";
}

void addSlowPortNotes(std::vector<std::string>& notes, const std::vector<std::string>& reasons,
                      const std::string& cidr) {
  constexpr std::size_t kShown = 3;
  for (std::size_t i = 0; i < reasons.size() && i < kShown; ++i)
    notes.push_back(reasons[i] + "; the job runs on " + cidr +
                    ": to choose another network, --net-cidr (per node: net_if= in the hostfile)");
  if (reasons.size() > kShown)
    notes.push_back("and " + std::to_string(reasons.size() - kShown) + " more nodes whose RoCE port on " + cidr +
                    " is slower than another of theirs");
}

std::string someNodes(const std::vector<std::string>& nodes) {
  constexpr std::size_t kShown = 3;
  std::string who;
  for (std::size_t i = 0; i < nodes.size() && i < kShown; ++i) who += (i ? ", " : "") + nodes[i];
  if (nodes.size() > kShown) who += " and " + std::to_string(nodes.size() - kShown) + " more";
  return who;
}

}  // namespace tlaunch
