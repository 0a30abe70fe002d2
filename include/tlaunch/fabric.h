#pragma once
// What one node knows about its RDMA devices and IP interfaces: plain data, no behaviour.
// Device/port/type facts come from sysfs (under a configurable root); addresses and link
// state come from the live system. See shared/research/FABRIC.md §3 for the sysfs formats.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tlaunch {

enum class LinkLayer { unknown, infiniband, ethernet };

// gid_attrs/types/<i>: "IB/RoCE v1" or "RoCE v2"; unknown when absent or unreadable (the
// kernel answers EINVAL for an empty entry).
enum class GidType { unknown, ib_roce_v1, roce_v2 };

struct GidEntry {
  int index = 0;
  std::string gid;           // as the kernel prints it: "0000:0000:0000:0000:0000:ffff:0a01:0005"
  GidType type = GidType::unknown;
  bool ipv4_mapped = false;  // ::ffff:a.b.c.d
  std::string ipv4;          // "10.1.0.5" when ipv4_mapped
  std::string ndev;          // gid_attrs/ndevs/<i>, "" when absent (IB link layer)
  bool operator==(const GidEntry&) const = default;
};

// One entry of an InfiniBand port's P_Key table (ports/<p>/pkeys/<index>). Bit 15 is full
// membership; the low 15 bits name the partition (0x7fff: the default partition).
struct PkeyEntry {
  int index = 0;
  std::uint16_t value = 0;
  bool operator==(const PkeyEntry&) const = default;
};
inline constexpr std::uint16_t kPkeyFullMember = 0x8000;
inline constexpr std::uint16_t kPkeyPartitionMask = 0x7fff;

inline constexpr int kPortStateActive = 4;      // "4: ACTIVE"
inline constexpr int kPhysStateLinkUp = 5;      // "5: LinkUp"
inline constexpr std::uint32_t kPciVendorAmazon = 0x1d0f;  // EFA: NCCL reaches it through aws-ofi-nccl
inline constexpr int kArphrdEther = 1;
inline constexpr int kArphrdInfiniband = 32;
inline constexpr int kArphrdLoopback = 772;

struct RdmaPort {
  int number = 0;
  int state = 0;               // 4
  std::string state_name;      // "ACTIVE"
  int phys_state = 0;          // 5
  std::string phys_state_name; // "LinkUp"
  LinkLayer link_layer = LinkLayer::unknown;
  std::string rate;            // "56 Gb/sec (4X FDR)"
  double rate_gbps = 0;        // 56
  bool has_lid = false;
  std::uint32_t lid = 0;
  std::vector<GidEntry> gids;  // configured entries only (empty ones are left out)
  // InfiniBand: the P_Key table's valid entries (verbs use entry 0 by default). Entry 0 alone
  // when it is a full membership and no IPoIB interface of the port sends in another partition.
  std::vector<PkeyEntry> pkeys;
  std::string netdev;          // the IPoIB / RoCE netdev matched to this port, "" if none
  bool operator==(const RdmaPort&) const = default;
};

struct RdmaDevice {
  std::string name;         // "mlx4_0"
  std::string pci_address;  // "0000:82:00.0", "" when not a PCI function
  std::string node_type;    // "1: CA"
  std::string fw_ver;
  int numa_node = -1;
  std::vector<RdmaPort> ports;
  std::uint32_t vendor_id = 0;  // PCI vendor (device/vendor): 0x15b3 NVIDIA/Mellanox, 0x1d0f Amazon; 0 unknown
  bool operator==(const RdmaDevice&) const = default;
};

struct Ipv4Address {
  std::string address;  // "10.1.0.5"
  int prefix = 0;       // 16
  bool operator==(const Ipv4Address&) const = default;
};

struct NetInterface {
  std::string name;
  int type = -1;           // ARPHRD_*: 1 Ethernet, 32 InfiniBand (IPoIB), 772 loopback
  bool in_sysfs = false;   // described under <sysfs-root>/sys/class/net
  bool live = false;       // present on the running system (getifaddrs)
  bool up = false;         // IFF_UP
  bool running = false;    // IFF_RUNNING
  bool loopback = false;   // IFF_LOOPBACK
  int mtu = 0;
  std::vector<Ipv4Address> ipv4;
  std::string pci_address;  // of /sys/class/net/<if>/device
  int dev_port = -1;        // dev_port (or dev_id on old kernels); IPoIB: HCA port - 1
  std::string hw_address;
  std::string ipoib_mode;   // "datagram" / "connected" for IPoIB
  int pkey = -1;            // IPoIB: the P_Key it sends with (0xffff; a child's such as 0x8001); -1 none
  std::string rdma_device;  // matched HCA port, "" if none
  int rdma_port = 0;
  bool operator==(const NetInterface&) const = default;
};

struct NodeFabric {
  std::string sysfs_root;  // "/" or a captured tree
  std::vector<RdmaDevice> devices;       // natural name order (mlx5_2 before mlx5_10)
  std::vector<NetInterface> interfaces;  // natural name order
  std::vector<std::string> notes;        // discovery remarks (unmatched netdevs, unreadable files)
  bool operator==(const NodeFabric&) const = default;

  // The interface of that name, nullptr when the node has none.
  const NetInterface* findInterface(std::string_view name) const {
    for (const auto& iface : interfaces)
      if (iface.name == name) return &iface;
    return nullptr;
  }
};

// "mlx4_0:1": the form NCCL_IB_HCA and UCX_NET_DEVICES use.
inline std::string portName(const std::string& device, int port) {
  return device + ":" + std::to_string(port);
}

}  // namespace tlaunch
