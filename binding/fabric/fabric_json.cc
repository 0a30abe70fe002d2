#include "binding/fabric/fabric_json.h"

#include <nlohmann/json.hpp>

namespace tlaunch {
namespace {

using nlohmann::json;

// Field readers throw json::exception on a missing field or a wrong type; the public
// functions turn that into an Error.
template <class T>
T field(const json& j, const char* key) {
  return j.at(key).get<T>();
}

const char* linkLayerName(LinkLayer l) {
  switch (l) {
    case LinkLayer::infiniband: return "InfiniBand";
    case LinkLayer::ethernet: return "Ethernet";
    case LinkLayer::unknown: break;
  }
  return "unknown";
}

const char* gidTypeName(GidType t) {
  switch (t) {
    case GidType::ib_roce_v1: return "IB/RoCE v1";
    case GidType::roce_v2: return "RoCE v2";
    case GidType::unknown: break;
  }
  return "unknown";
}

// An unknown enum name is malformed input, reported like a type error.
[[noreturn]] void badValue(const std::string& what, const std::string& value) {
  throw json::other_error::create(599, what + " \"" + value + "\" is not known", nullptr);
}

LinkLayer linkLayerFrom(const std::string& s) {
  if (s == "InfiniBand") return LinkLayer::infiniband;
  if (s == "Ethernet") return LinkLayer::ethernet;
  if (s == "unknown") return LinkLayer::unknown;
  badValue("link layer", s);
}

GidType gidTypeFrom(const std::string& s) {
  if (s == "IB/RoCE v1") return GidType::ib_roce_v1;
  if (s == "RoCE v2") return GidType::roce_v2;
  if (s == "unknown") return GidType::unknown;
  badValue("GID type", s);
}

NetKind netKindFrom(const std::string& s) {
  if (s == "ib") return NetKind::ib;
  if (s == "roce") return NetKind::roce;
  if (s == "tcp") return NetKind::tcp;
  badValue("network kind", s);
}

json ipv4ToJson(const std::vector<Ipv4Address>& list) {
  json out = json::array();
  for (const auto& a : list) out.push_back({{"address", a.address}, {"prefix", a.prefix}});
  return out;
}

std::vector<Ipv4Address> ipv4From(const json& j) {
  std::vector<Ipv4Address> out;
  for (const auto& a : j) out.push_back(Ipv4Address{field<std::string>(a, "address"), field<int>(a, "prefix")});
  return out;
}

}  // namespace

json fabricToJson(const NodeFabric& fabric) {
  json devices = json::array();
  for (const auto& d : fabric.devices) {
    json ports = json::array();
    for (const auto& p : d.ports) {
      json gids = json::array();
      for (const auto& g : p.gids)
        gids.push_back({{"index", g.index}, {"gid", g.gid}, {"type", gidTypeName(g.type)},
                        {"ipv4_mapped", g.ipv4_mapped}, {"ipv4", g.ipv4}, {"ndev", g.ndev}});
      json pkeys = json::array();
      for (const auto& k : p.pkeys) pkeys.push_back({k.index, k.value});
      ports.push_back({{"number", p.number}, {"state", p.state}, {"state_name", p.state_name},
                       {"phys_state", p.phys_state}, {"phys_state_name", p.phys_state_name},
                       {"link_layer", linkLayerName(p.link_layer)}, {"rate", p.rate}, {"rate_gbps", p.rate_gbps},
                       {"has_lid", p.has_lid}, {"lid", p.lid}, {"gids", std::move(gids)}, {"pkeys", std::move(pkeys)},
                       {"netdev", p.netdev}});
    }
    devices.push_back({{"name", d.name}, {"pci_address", d.pci_address}, {"node_type", d.node_type},
                       {"fw_ver", d.fw_ver}, {"numa_node", d.numa_node}, {"ports", std::move(ports)},
                       {"vendor_id", d.vendor_id}});
  }
  json interfaces = json::array();
  for (const auto& i : fabric.interfaces)
    interfaces.push_back({{"name", i.name}, {"type", i.type}, {"in_sysfs", i.in_sysfs}, {"live", i.live},
                          {"up", i.up}, {"running", i.running}, {"loopback", i.loopback}, {"mtu", i.mtu},
                          {"ipv4", ipv4ToJson(i.ipv4)}, {"pci_address", i.pci_address}, {"dev_port", i.dev_port},
                          {"hw_address", i.hw_address}, {"ipoib_mode", i.ipoib_mode}, {"pkey", i.pkey},
                          {"rdma_device", i.rdma_device}, {"rdma_port", i.rdma_port}});
  return {{"sysfs_root", fabric.sysfs_root}, {"devices", std::move(devices)},
          {"interfaces", std::move(interfaces)}, {"notes", fabric.notes}};
}

Result<NodeFabric> fabricFromJson(const json& j) {
  try {
    NodeFabric f;
    f.sysfs_root = field<std::string>(j, "sysfs_root");
    for (const auto& d : j.at("devices")) {
      RdmaDevice device{field<std::string>(d, "name"), field<std::string>(d, "pci_address"),
                        field<std::string>(d, "node_type"), field<std::string>(d, "fw_ver"),
                        field<int>(d, "numa_node"), {}, d.value("vendor_id", std::uint32_t{0})};
      for (const auto& p : d.at("ports")) {
        RdmaPort port;
        port.number = field<int>(p, "number");
        port.state = field<int>(p, "state");
        port.state_name = field<std::string>(p, "state_name");
        port.phys_state = field<int>(p, "phys_state");
        port.phys_state_name = field<std::string>(p, "phys_state_name");
        port.link_layer = linkLayerFrom(field<std::string>(p, "link_layer"));
        port.rate = field<std::string>(p, "rate");
        port.rate_gbps = field<double>(p, "rate_gbps");
        port.has_lid = field<bool>(p, "has_lid");
        port.lid = field<std::uint32_t>(p, "lid");
        port.netdev = field<std::string>(p, "netdev");
        for (const auto& g : p.at("gids"))
          port.gids.push_back(GidEntry{field<int>(g, "index"), field<std::string>(g, "gid"),
                                       gidTypeFrom(field<std::string>(g, "type")), field<bool>(g, "ipv4_mapped"),
                                       field<std::string>(g, "ipv4"), field<std::string>(g, "ndev")});
        if (auto it = p.find("pkeys"); it != p.end())  // absent from a daemon before P_Keys were read
          for (const auto& k : *it)
            port.pkeys.push_back(PkeyEntry{k.at(0).get<int>(), k.at(1).get<std::uint16_t>()});
        device.ports.push_back(std::move(port));
      }
      f.devices.push_back(std::move(device));
    }
    for (const auto& i : j.at("interfaces")) {
      NetInterface iface;
      iface.name = field<std::string>(i, "name");
      iface.type = field<int>(i, "type");
      iface.in_sysfs = field<bool>(i, "in_sysfs");
      iface.live = field<bool>(i, "live");
      iface.up = field<bool>(i, "up");
      iface.running = field<bool>(i, "running");
      iface.loopback = field<bool>(i, "loopback");
      iface.mtu = field<int>(i, "mtu");
      iface.ipv4 = ipv4From(i.at("ipv4"));
      iface.pci_address = field<std::string>(i, "pci_address");
      iface.dev_port = field<int>(i, "dev_port");
      iface.hw_address = field<std::string>(i, "hw_address");
      iface.ipoib_mode = field<std::string>(i, "ipoib_mode");
      iface.pkey = i.value("pkey", -1);
      iface.rdma_device = field<std::string>(i, "rdma_device");
      iface.rdma_port = field<int>(i, "rdma_port");
      f.interfaces.push_back(std::move(iface));
    }
    f.notes = field<std::vector<std::string>>(j, "notes");
    return f;
  } catch (const json::exception& e) {
    return fail(Errc::protocol, std::string("malformed fabric inventory from a daemon: ") + e.what(),
                "tlaunch and tlaunchd versions may differ; install the same version on every node");
  }
}

json networkChoiceToJson(const NetworkChoice& choice) {
  json nodes = json::array();
  for (const auto& n : choice.nodes) {
    json ports = json::array();
    for (const auto& p : n.hca_ports)
      ports.push_back({{"name", p.name}, {"gid_index", p.gid_index}, {"gid_in_subnet", p.gid_in_subnet}});
    nodes.push_back({{"node", n.node}, {"ifname", n.ifname}, {"ipv4", n.ipv4}, {"prefix", n.prefix},
                     {"cidr", n.cidr}, {"kind", netKindName(n.kind)}, {"port", n.port},
                     {"hca_ports", std::move(ports)}, {"roce_gid_index", n.roce_gid_index}, {"efa", n.efa},
                     {"pkey", n.pkey}, {"pkey_index", n.pkey_index}});
  }
  return {{"kind", netKindName(choice.kind)}, {"cidr", choice.cidr}, {"master_addr", choice.master_addr},
          {"rdma", choice.rdma}, {"sockets_only", choice.sockets_only}, {"nodes", std::move(nodes)},
          {"notes", choice.notes}};
}

Result<NetworkChoice> networkChoiceFromJson(const json& j) {
  try {
    NetworkChoice c;
    c.kind = netKindFrom(field<std::string>(j, "kind"));
    c.cidr = field<std::string>(j, "cidr");
    c.master_addr = field<std::string>(j, "master_addr");
    c.rdma = field<bool>(j, "rdma");
    c.sockets_only = j.value("sockets_only", false);
    for (const auto& n : j.at("nodes")) {
      NodeNetChoice node;
      node.node = field<std::string>(n, "node");
      node.ifname = field<std::string>(n, "ifname");
      node.ipv4 = field<std::string>(n, "ipv4");
      node.prefix = field<int>(n, "prefix");
      node.cidr = field<std::string>(n, "cidr");
      node.kind = netKindFrom(field<std::string>(n, "kind"));
      node.port = field<std::string>(n, "port");
      for (const auto& p : n.at("hca_ports"))
        node.hca_ports.push_back(
            HcaPortChoice{field<std::string>(p, "name"), field<int>(p, "gid_index"), field<bool>(p, "gid_in_subnet")});
      node.roce_gid_index = field<int>(n, "roce_gid_index");
      node.efa = n.value("efa", false);
      node.pkey = n.value("pkey", -1);
      node.pkey_index = n.value("pkey_index", -1);
      c.nodes.push_back(std::move(node));
    }
    c.notes = field<std::vector<std::string>>(j, "notes");
    return c;
  } catch (const json::exception& e) {
    return fail(Errc::protocol, std::string("malformed network choice: ") + e.what(),
                "tlaunch and tlaunchd versions may differ; install the same version on every node");
  }
}

}  // namespace tlaunch
