#pragma once
// GID helpers and NCCL's RoCE GID auto-selection (NCCL >= 2.21 with NCCL_IB_GID_INDEX=-1,
// src/transport/net_ib/connect.cc ncclIbGetGidIndex), over the sysfs GID table. Pure.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "binding/fabric/ipv4_net.h"
#include "tlaunch/fabric.h"

namespace tlaunch {

using GidBytes = std::array<std::uint8_t, 16>;

std::optional<GidBytes> parseGid(std::string_view text);  // kernel "%pI6" text
bool gidConfigured(const GidBytes& gid);  // not all-zero and not fe80:: with a zero tail
bool gidLinkLocal(const GidBytes& gid);   // fe80:0000:0000:0000/64
bool gidIpv4Mapped(const GidBytes& gid);  // ::ffff:a.b.c.d
std::uint32_t gidIpv4(const GidBytes& gid);  // the last 4 bytes, host order

// Fills ipv4_mapped / ipv4 from `gid`.
GidEntry makeGidEntry(int index, std::string_view gidText, GidType type, std::string_view ndev);

// RoCE v2, IPv4-mapped, valid (not link-local): what NCCL and UCX want on RoCE.
bool isRoceV2Ipv4(const GidEntry& entry);

// A port that can carry the job's RDMA traffic, as the network choice counts them: ACTIVE
// InfiniBand, or ACTIVE Ethernet with a RoCE v2 IPv4 GID. An Ethernet port without one (Azure's
// accelerated-networking VF, whose netdev has no IPv4 address by design) is not a data port.
bool isRdmaDataPort(const RdmaPort& port);

// The index NCCL would pick for AF_INET with NCCL_IB_ROCE_VERSION_NUM=`roceVersion` and,
// when given, NCCL_IB_ADDR_RANGE=`range`. Entries missing from port.gids count as empty,
// an unknown type as an unreadable types/<i> file (NCCL skips those). 0 when nothing fits.
int ncclRoceGidIndex(const RdmaPort& port, const std::optional<Ipv4Net>& range = std::nullopt,
                     int roceVersion = 2);

// The entry at `index`, or nullptr when the port's table has none there.
const GidEntry* gidAt(const RdmaPort& port, int index);

}  // namespace tlaunch
