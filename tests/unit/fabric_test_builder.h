#pragma once
// Builds NodeFabric values directly (what discovery would report), for the pure parts.
#include <stdexcept>
#include <string>

#include "binding/fabric/roce_gid.h"
#include "fabric_test_support.h"
#include "tlaunch/fabric.h"

namespace tlaunch::testing {

class FabricBuilder {
 public:
  FabricBuilder() { fabric_.sysfs_root = "/"; }

  // An InfiniBand port with its IPoIB netdev. address "" = no IPv4 on it.
  FabricBuilder& ib(const std::string& device, int port, const std::string& ifname, const std::string& address,
                    int prefix = 16, int state = kPortStateActive, bool up = true, bool running = true,
                    const std::string& subnetPrefix = "fe80:0000:0000:0000") {
    RdmaPort& p = addPort(device, port, LinkLayer::infiniband, state);
    p.has_lid = true;
    p.lid = 0x10 + static_cast<std::uint32_t>(port);
    p.gids.push_back(makeGidEntry(0, subnetPrefix + ":0002:c903:00f9:bf0" + std::to_string(port), GidType::unknown, ""));
    p.pkeys.push_back(PkeyEntry{0, 0xffff});  // the default partition, full member: what a subnet manager sets
    if (!ifname.empty()) {
      p.netdev = ifname;
      NetInterface& i = addIf(ifname, kArphrdInfiniband, address, prefix, up, running);
      i.rdma_device = device;
      i.rdma_port = port;
      i.in_sysfs = true;
      i.pkey = 0xffff;
    }
    return *this;
  }

  // A pkey child (ib0.8001) of an InfiniBand port added with ib(): the partition's entry in the
  // port's P_Key table (`value`, at `index`) and the child's IPoIB netdev sending with `pkey`.
  FabricBuilder& pkeyChild(const std::string& device, int port, const std::string& ifname, const std::string& address,
                           int pkey, int index, int value, int prefix = 16) {
    this->port(device, port).pkeys.push_back(PkeyEntry{index, static_cast<std::uint16_t>(value)});
    NetInterface& i = addIf(ifname, kArphrdInfiniband, address, prefix, true, true);
    i.rdma_device = device;
    i.rdma_port = port;
    i.in_sysfs = true;
    i.pkey = pkey;
    return *this;
  }

  // A RoCE port: GIDs 0/1 link-local v1/v2, then v1/v2 for `address`.
  FabricBuilder& roce(const std::string& device, int port, const std::string& ifname, const std::string& address,
                      int prefix = 24, int state = kPortStateActive, bool withV2 = true) {
    RdmaPort& p = addPort(device, port, LinkLayer::ethernet, state);
    p.has_lid = true;
    const std::string ll = "fe80:0000:0000:0000:0ac0:ebff:fe12:345" + std::to_string(port);
    p.gids.push_back(makeGidEntry(0, ll, GidType::ib_roce_v1, ifname));
    p.gids.push_back(makeGidEntry(1, ll, GidType::roce_v2, ifname));
    if (!address.empty()) {
      auto ip = parseIpv4(address).value();
      std::string g = ipv4Gid(static_cast<int>(ip >> 24), static_cast<int>((ip >> 16) & 255),
                              static_cast<int>((ip >> 8) & 255), static_cast<int>(ip & 255));
      p.gids.push_back(makeGidEntry(2, g, GidType::ib_roce_v1, ifname));
      if (withV2) p.gids.push_back(makeGidEntry(3, g, GidType::roce_v2, ifname));
    }
    p.netdev = ifname;
    NetInterface& i = addIf(ifname, kArphrdEther, address, prefix, true, true);
    i.rdma_device = device;
    i.rdma_port = port;
    i.in_sysfs = true;
    return *this;
  }

  // An AWS EFA device: an ACTIVE port of no known link layer (the kernel writes "Unknown"), no netdev.
  FabricBuilder& efa(const std::string& device) {
    addPort(device, 1, LinkLayer::unknown, kPortStateActive);
    for (auto& d : fabric_.devices)
      if (d.name == device) d.vendor_id = kPciVendorAmazon;
    return *this;
  }

  FabricBuilder& eth(const std::string& ifname, const std::string& address, int prefix = 24) {
    addIf(ifname, ifname == "lo" ? kArphrdLoopback : kArphrdEther, address, prefix, true, true).loopback =
        ifname == "lo";
    return *this;
  }

  NetInterface& iface(const std::string& name) {
    for (auto& i : fabric_.interfaces)
      if (i.name == name) return i;
    throw std::runtime_error("no interface " + name);
  }

  RdmaPort& port(const std::string& device, int number) {
    for (auto& d : fabric_.devices)
      if (d.name == device)
        for (auto& p : d.ports)
          if (p.number == number) return p;
    throw std::runtime_error("no port " + device);
  }

  NodeFabric build() const { return fabric_; }

 private:
  RdmaPort& addPort(const std::string& device, int number, LinkLayer layer, int state) {
    RdmaDevice* dev = nullptr;
    for (auto& d : fabric_.devices)
      if (d.name == device) dev = &d;
    if (!dev) {
      fabric_.devices.push_back(RdmaDevice{device, "0000:17:00." + std::to_string(fabric_.devices.size()), "1: CA",
                                           "20.31.1014", 0, {}});
      dev = &fabric_.devices.back();
    }
    RdmaPort p;
    p.number = number;
    p.state = state;
    p.state_name = state == kPortStateActive ? "ACTIVE" : state == 1 ? "DOWN" : "INIT";
    p.phys_state = state == kPortStateActive ? kPhysStateLinkUp : 3;
    p.phys_state_name = state == kPortStateActive ? "LinkUp" : "Disabled";
    p.link_layer = layer;
    p.rate = "200 Gb/sec (4X HDR)";
    p.rate_gbps = 200;
    dev->ports.push_back(p);
    return dev->ports.back();
  }

  NetInterface& addIf(const std::string& name, int type, const std::string& address, int prefix, bool up,
                      bool running) {
    NetInterface i;
    i.name = name;
    i.type = type;
    i.live = true;
    i.up = up;
    i.running = running;
    i.mtu = type == kArphrdInfiniband ? 2044 : 1500;
    if (!address.empty()) i.ipv4.push_back(Ipv4Address{address, prefix});
    fabric_.interfaces.push_back(i);
    return fabric_.interfaces.back();
  }

  NodeFabric fabric_;
};

}  // namespace tlaunch::testing
