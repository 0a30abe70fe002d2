#include "binding/fabric/fabric_discovery.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>

#include "binding/fabric/ipv4_net.h"
#include "binding/fabric/roce_gid.h"

namespace tlaunch {
namespace fs = std::filesystem;

namespace {

// First line of a sysfs attribute, trailing whitespace removed; nullopt when the file is
// absent or unreadable (an empty RoCE GID's types/<i> answers EINVAL on read).
std::optional<std::string> readAttr(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > (1u << 20)) break;  // sysfs attributes are one page at most
  }
  ::close(fd);
  text = text.substr(0, text.find('\n'));
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

std::optional<long> readNumber(const fs::path& path, int base) {
  auto text = readAttr(path);
  if (!text || text->empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text->c_str(), &end, base);
  if (errno != 0 || end == text->c_str()) return std::nullopt;
  return value;
}

// "4: ACTIVE" -> {4, "ACTIVE"}
std::pair<int, std::string> splitState(const std::optional<std::string>& text) {
  if (!text) return {0, ""};
  auto colon = text->find(':');
  int number = std::atoi(text->c_str());
  std::string name = colon == std::string::npos ? *text : text->substr(colon + 1);
  auto first = name.find_first_not_of(' ');
  return {number, first == std::string::npos ? "" : name.substr(first)};
}

LinkLayer parseLinkLayer(const std::optional<std::string>& text) {
  if (text == "InfiniBand") return LinkLayer::infiniband;
  if (text == "Ethernet") return LinkLayer::ethernet;
  return LinkLayer::unknown;
}

GidType parseGidType(const std::optional<std::string>& text) {
  if (!text) return GidType::unknown;
  if (text->rfind("RoCE v2", 0) == 0) return GidType::roce_v2;
  if (text->rfind("IB/RoCE v1", 0) == 0 || text->rfind("RoCE v1", 0) == 0) return GidType::ib_roce_v1;
  return GidType::unknown;
}

// Real path of a sysfs `device` link; "" when it does not resolve.
std::string devicePath(const fs::path& link) {
  std::error_code ec;
  fs::path real = fs::canonical(link, ec);
  return ec ? std::string() : real.string();
}

bool looksLikePciAddress(const std::string& name) {  // dddd:bb:dd.f
  return name.size() == 12 && name[4] == ':' && name[7] == ':' && name[10] == '.';
}

std::string pciAddressOf(const std::string& realDevicePath) {
  if (realDevicePath.empty()) return "";
  std::string name = fs::path(realDevicePath).filename().string();
  return looksLikePciAddress(name) ? name : "";
}

std::vector<std::string> listDir(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end(), naturalLess);
  return names;
}

bool allDigits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// Entry `index` of a P_Key table when it is a valid one (0x0000 and 0x8000 mark empty ones).
std::optional<PkeyEntry> readPkeyEntry(const fs::path& dir, int index) {
  const auto value = readNumber(dir / std::to_string(index), 16);
  if (!value || *value <= 0 || *value > 0xffff || (*value & kPkeyPartitionMask) == 0) return std::nullopt;
  return PkeyEntry{index, static_cast<std::uint16_t>(*value)};
}

// The valid entries of a P_Key table.
std::vector<PkeyEntry> readPkeyTable(const fs::path& dir) {
  std::vector<PkeyEntry> out;
  for (const auto& name : listDir(dir))
    if (allDigits(name) && name.size() <= 5)
      if (auto entry = readPkeyEntry(dir, std::stoi(name))) out.push_back(*entry);
  return out;  // listDir's natural order: by index
}

RdmaPort readPort(const fs::path& dir, int number) {
  RdmaPort port;
  port.number = number;
  std::tie(port.state, port.state_name) = splitState(readAttr(dir / "state"));
  std::tie(port.phys_state, port.phys_state_name) = splitState(readAttr(dir / "phys_state"));
  port.link_layer = parseLinkLayer(readAttr(dir / "link_layer"));
  port.rate = readAttr(dir / "rate").value_or("");
  port.rate_gbps = port.rate.empty() ? 0 : std::strtod(port.rate.c_str(), nullptr);
  if (auto lid = readNumber(dir / "lid", 16)) {
    port.has_lid = true;
    port.lid = static_cast<std::uint32_t>(*lid);
  }
  for (const auto& name : listDir(dir / "gids")) {
    if (!allDigits(name)) continue;
    auto text = readAttr(dir / "gids" / name);
    if (!text) continue;
    auto bytes = parseGid(*text);
    if (!bytes || !gidConfigured(*bytes)) continue;
    GidType type = parseGidType(readAttr(dir / "gid_attrs" / "types" / name));
    std::string ndev = readAttr(dir / "gid_attrs" / "ndevs" / name).value_or("");
    port.gids.push_back(makeGidEntry(std::stoi(name), *text, type, ndev));
  }
  if (port.link_layer == LinkLayer::infiniband)  // entry 0 only here: see completePkeyTables
    if (auto entry = readPkeyEntry(dir / "pkeys", 0)) port.pkeys.push_back(*entry);
  return port;
}

// A port's whole P_Key table (up to 128 sysfs reads) where it matters: entry 0 is no full
// membership (a tenant's port: the self-tests need a full-membership entry), or an IPoIB
// interface of the port sends in another partition (a pkey child: its entry's index).
void completePkeyTables(NodeFabric& fabric, const fs::path& ibClass) {
  for (auto& device : fabric.devices)
    for (auto& port : device.ports) {
      if (port.link_layer != LinkLayer::infiniband) continue;
      const std::uint16_t first = port.pkeys.empty() ? 0 : port.pkeys.front().value;
      bool needed = (first & kPkeyFullMember) == 0;
      for (const auto& iface : fabric.interfaces)
        needed = needed || (iface.rdma_device == device.name && iface.rdma_port == port.number && iface.pkey > 0 &&
                            (iface.pkey & kPkeyPartitionMask) != (first & kPkeyPartitionMask));
      if (needed) port.pkeys = readPkeyTable(ibClass / device.name / "ports" / std::to_string(port.number) / "pkeys");
    }
}

struct SysfsNetdev {
  std::string realDevice;  // realpath of /sys/class/net/<if>/device
  std::optional<GidBytes> ipoibGid;
};

// IPoIB hardware address: 4 bytes of QPN/flags, then the port's GID 0 (FABRIC.md §3b).
std::optional<GidBytes> ipoibGidOf(const std::string& hwAddress) {
  std::vector<std::uint8_t> bytes;
  std::size_t pos = 0;
  while (pos < hwAddress.size()) {
    auto next = hwAddress.find(':', pos);
    std::string part = hwAddress.substr(pos, next == std::string::npos ? next : next - pos);
    if (part.empty() || part.size() > 2) return std::nullopt;
    bytes.push_back(static_cast<std::uint8_t>(std::strtoul(part.c_str(), nullptr, 16)));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  if (bytes.size() != 20) return std::nullopt;
  GidBytes gid{};
  std::copy(bytes.begin() + 4, bytes.end(), gid.begin());
  return gid;
}

NetInterface readNetdev(const fs::path& dir, const std::string& name, SysfsNetdev& facts) {
  NetInterface iface;
  iface.name = name;
  iface.in_sysfs = true;
  iface.type = static_cast<int>(readNumber(dir / "type", 10).value_or(-1));
  iface.mtu = static_cast<int>(readNumber(dir / "mtu", 10).value_or(0));
  iface.hw_address = readAttr(dir / "address").value_or("");
  iface.ipoib_mode = readAttr(dir / "mode").value_or("");
  if (auto devPort = readNumber(dir / "dev_port", 10)) {
    iface.dev_port = static_cast<int>(*devPort);
  } else if (auto devId = readNumber(dir / "dev_id", 16)) {  // kernels before dev_port
    iface.dev_port = static_cast<int>(*devId);
  }
  facts.realDevice = devicePath(dir / "device");
  iface.pci_address = pciAddressOf(facts.realDevice);
  if (iface.type == kArphrdInfiniband) {
    facts.ipoibGid = ipoibGidOf(iface.hw_address);
    if (auto pkey = readNumber(dir / "pkey", 16); pkey && *pkey > 0 && *pkey <= 0xffff)
      iface.pkey = static_cast<int>(*pkey);
  }
  return iface;
}

bool gid0Equals(const RdmaPort& port, const GidBytes& gid) {
  const GidEntry* entry = gidAt(port, 0);
  if (!entry) return false;
  auto bytes = parseGid(entry->gid);
  return bytes && *bytes == gid;
}

// A port's preferred netdev among several (an IPoIB parent before its pkey children).
void offerNetdev(RdmaPort& port, const std::string& name) {
  if (port.netdev.empty() || name.size() < port.netdev.size() ||
      (name.size() == port.netdev.size() && naturalLess(name, port.netdev)))
    port.netdev = name;
}

void matchIpoib(NodeFabric& fabric, const std::map<std::string, std::string>& deviceReal,
                const std::map<std::string, SysfsNetdev>& netFacts) {
  for (auto& iface : fabric.interfaces) {
    if (!iface.in_sysfs || iface.type != kArphrdInfiniband) continue;
    const SysfsNetdev& facts = netFacts.at(iface.name);
    RdmaDevice* matchedDevice = nullptr;
    RdmaPort* matchedPort = nullptr;
    std::string how;
    for (auto& device : fabric.devices) {
      if (facts.realDevice.empty() || deviceReal.at(device.name) != facts.realDevice) continue;
      for (auto& port : device.ports) {
        if (facts.ipoibGid && gid0Equals(port, *facts.ipoibGid)) {
          matchedDevice = &device, matchedPort = &port, how = "gid";
          break;
        }
      }
      if (!matchedPort && iface.dev_port >= 0) {
        for (auto& port : device.ports)
          if (port.number == iface.dev_port + 1) matchedDevice = &device, matchedPort = &port, how = "dev_port";
      }
      if (!matchedPort && device.ports.size() == 1)
        matchedDevice = &device, matchedPort = &device.ports.front(), how = "only port";
      if (matchedPort) break;
    }
    if (!matchedPort && facts.ipoibGid) {  // e.g. a virtual function whose device link differs
      for (auto& device : fabric.devices)
        for (auto& port : device.ports)
          if (!matchedPort && gid0Equals(port, *facts.ipoibGid))
            matchedDevice = &device, matchedPort = &port, how = "gid";
    }
    if (!matchedPort) {
      fabric.notes.push_back(iface.name + ": IPoIB interface matches no HCA port (device " +
                             (iface.pci_address.empty() ? "unknown" : iface.pci_address) + ")");
      continue;
    }
    if (how != "gid" && facts.ipoibGid)
      fabric.notes.push_back(iface.name + ": address GID differs from " +
                             portName(matchedDevice->name, matchedPort->number) +
                             " gids/0; matched by " + how);
    iface.rdma_device = matchedDevice->name;
    iface.rdma_port = matchedPort->number;
    offerNetdev(*matchedPort, iface.name);
  }
}

void matchRoce(NodeFabric& fabric, const std::map<std::string, std::string>& deviceReal,
               const std::map<std::string, SysfsNetdev>& netFacts) {
  for (auto& device : fabric.devices) {
    for (auto& port : device.ports) {
      if (port.link_layer != LinkLayer::ethernet) continue;
      std::string netdev;
      if (const GidEntry* chosen = gidAt(port, ncclRoceGidIndex(port))) netdev = chosen->ndev;
      for (const auto& entry : port.gids)
        if (netdev.empty()) netdev = entry.ndev;
      if (netdev.empty()) {  // no ndevs: the netdevs of the same PCI function and port
        const std::string& real = deviceReal.at(device.name);
        for (const auto& iface : fabric.interfaces) {
          auto facts = netFacts.find(iface.name);
          if (facts == netFacts.end() || real.empty() || facts->second.realDevice != real) continue;
          if (iface.dev_port + 1 == port.number || (device.ports.size() == 1 && iface.dev_port <= 0)) {
            netdev = iface.name;
            break;
          }
        }
      }
      if (netdev.empty()) {
        fabric.notes.push_back(portName(device.name, port.number) + ": RoCE port with no netdev");
        continue;
      }
      port.netdev = netdev;
      for (auto& iface : fabric.interfaces) {
        if (iface.name == netdev && iface.rdma_device.empty()) {
          iface.rdma_device = device.name;
          iface.rdma_port = port.number;
        }
      }
    }
  }
}

}  // namespace

bool naturalLess(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    bool da = std::isdigit(static_cast<unsigned char>(a[i])), db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      std::string na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      na.erase(0, std::min(na.find_first_not_of('0'), na.size() - 1));
      nb.erase(0, std::min(nb.find_first_not_of('0'), nb.size() - 1));
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei, j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

Result<NodeFabric> discoverFabric(const std::string& sysfsRoot, const std::vector<LiveInterface>& live) {
  std::error_code ec;
  if (!fs::is_directory(sysfsRoot, ec))
    return fail(Errc::fabric, "sysfs root " + sysfsRoot + " is not a directory",
                "pass --sysfs-root DIR naming a directory that holds sys/class/infiniband and sys/class/net");
  NodeFabric fabric;
  fabric.sysfs_root = sysfsRoot;
  const fs::path root(sysfsRoot);

  std::map<std::string, std::string> deviceReal;
  const fs::path ibClass = root / "sys/class/infiniband";
  for (const auto& name : listDir(ibClass)) {
    const fs::path dir = ibClass / name;
    if (!fs::is_directory(dir, ec)) {
      fabric.notes.push_back(name + ": " + dir.string() + " does not resolve; skipped");
      continue;
    }
    RdmaDevice device;
    device.name = name;
    deviceReal[name] = devicePath(dir / "device");
    device.pci_address = pciAddressOf(deviceReal[name]);
    device.node_type = readAttr(dir / "node_type").value_or("");
    device.fw_ver = readAttr(dir / "fw_ver").value_or("");
    device.numa_node = static_cast<int>(readNumber(dir / "device" / "numa_node", 10).value_or(-1));
    device.vendor_id = static_cast<std::uint32_t>(readNumber(dir / "device" / "vendor", 16).value_or(0));
    for (const auto& portName : listDir(dir / "ports"))
      if (allDigits(portName)) device.ports.push_back(readPort(dir / "ports" / portName, std::stoi(portName)));
    fabric.devices.push_back(std::move(device));
  }

  std::map<std::string, SysfsNetdev> netFacts;
  std::map<std::string, NetInterface> byName;
  const fs::path netClass = root / "sys/class/net";
  for (const auto& name : listDir(netClass)) {
    const fs::path dir = netClass / name;
    if (!fs::exists(dir / "type", ec)) continue;  // a link into parts the capture left out
    byName[name] = readNetdev(dir, name, netFacts[name]);
  }
  for (const auto& l : live) {
    NetInterface& iface = byName[l.name];
    if (!iface.in_sysfs) {
      iface.name = l.name;
      iface.type = l.type;
    }
    iface.live = true;
    iface.up = l.up;
    iface.running = l.running;
    iface.loopback = l.loopback;
    if (l.mtu > 0) iface.mtu = l.mtu;
    iface.ipv4 = l.ipv4;
  }
  for (auto& [name, iface] : byName) fabric.interfaces.push_back(std::move(iface));
  std::sort(fabric.interfaces.begin(), fabric.interfaces.end(),
            [](const NetInterface& a, const NetInterface& b) { return naturalLess(a.name, b.name); });

  matchIpoib(fabric, deviceReal, netFacts);
  matchRoce(fabric, deviceReal, netFacts);
  completePkeyTables(fabric, ibClass);
  return fabric;
}

Result<NodeFabric> discoverNodeFabric(const std::string& sysfsRoot) {
  auto live = listLiveInterfaces();
  if (!live) return tl::unexpected(live.error());
  return discoverFabric(sysfsRoot, *live);
}

}  // namespace tlaunch
