#include "binding/fabric/roce_gid.h"

#include <arpa/inet.h>

#include <algorithm>
#include <string>

namespace tlaunch {
namespace {

std::uint32_t word(const GidBytes& g, int i) {
  const auto at = std::size_t{4} * static_cast<std::size_t>(i);
  return (std::uint32_t{g[at]} << 24) | (std::uint32_t{g[at + 1]} << 16) | (std::uint32_t{g[at + 2]} << 8) |
         std::uint32_t{g[at + 3]};
}

bool familyInet(const GidBytes& g) {  // NCCL getGidAddrFamily
  bool mapped = gidIpv4Mapped(g);
  bool mappedMulticast = word(g, 0) == 0xff0e0000u && word(g, 1) == 0 && word(g, 2) == 0x0000ffffu;
  return mapped || mappedMulticast;
}

bool gidValid(const GidBytes& g) { return gidConfigured(g) && !gidLinkLocal(g); }

int roceVersionOf(GidType type) {  // -1 when unreadable: NCCL leaves it unset and skips it
  switch (type) {
    case GidType::ib_roce_v1: return 1;
    case GidType::roce_v2: return 2;
    case GidType::unknown: break;
  }
  return -1;
}

GidBytes bytesAt(const RdmaPort& port, int index) {
  const GidEntry* entry = gidAt(port, index);
  if (!entry) return GidBytes{};
  return parseGid(entry->gid).value_or(GidBytes{});
}

GidType typeAt(const RdmaPort& port, int index) {
  const GidEntry* entry = gidAt(port, index);
  return entry ? entry->type : GidType::unknown;
}

}  // namespace

std::optional<GidBytes> parseGid(std::string_view text) {
  std::string copy(text);
  GidBytes bytes{};
  if (inet_pton(AF_INET6, copy.c_str(), bytes.data()) != 1) return std::nullopt;
  return bytes;
}

bool gidConfigured(const GidBytes& g) {
  std::uint32_t trailer = word(g, 1) | word(g, 2) | word(g, 3);
  if ((word(g, 0) | trailer) == 0) return false;
  if (word(g, 0) == 0xfe800000u && trailer == 0) return false;
  return true;
}

bool gidLinkLocal(const GidBytes& g) { return word(g, 0) == 0xfe800000u && word(g, 1) == 0; }

bool gidIpv4Mapped(const GidBytes& g) {
  return word(g, 0) == 0 && word(g, 1) == 0 && word(g, 2) == 0x0000ffffu;
}

std::uint32_t gidIpv4(const GidBytes& g) { return word(g, 3); }

GidEntry makeGidEntry(int index, std::string_view gidText, GidType type, std::string_view ndev) {
  GidEntry entry;
  entry.index = index;
  entry.gid = std::string(gidText);
  entry.type = type;
  entry.ndev = std::string(ndev);
  if (auto bytes = parseGid(gidText); bytes && gidIpv4Mapped(*bytes)) {
    entry.ipv4_mapped = true;
    entry.ipv4 = formatIpv4(gidIpv4(*bytes));
  }
  return entry;
}

bool isRoceV2Ipv4(const GidEntry& entry) {
  auto bytes = parseGid(entry.gid);
  return bytes && entry.type == GidType::roce_v2 && gidIpv4Mapped(*bytes) && gidValid(*bytes);
}

bool isRdmaDataPort(const RdmaPort& port) {
  if (port.state != kPortStateActive) return false;
  if (port.link_layer == LinkLayer::infiniband) return true;
  return port.link_layer == LinkLayer::ethernet && std::any_of(port.gids.begin(), port.gids.end(), isRoceV2Ipv4);
}

const GidEntry* gidAt(const RdmaPort& port, int index) {
  for (const auto& entry : port.gids)
    if (entry.index == index) return &entry;
  return nullptr;
}

int ncclRoceGidIndex(const RdmaPort& port, const std::optional<Ipv4Net>& range, int roceVersion) {
  int tableLength = 1;
  for (const auto& entry : port.gids) tableLength = std::max(tableLength, entry.index + 1);

  auto inRange = [&](const GidBytes& g) { return !range || contains(*range, gidIpv4(g)); };

  int best = 0;
  for (int candidate = 1; candidate < tableLength; ++candidate) {
    GidBytes bestGid = bytesAt(port, best);
    GidBytes candGid = bytesAt(port, candidate);
    bool candInet = familyInet(candGid);
    if (candInet != familyInet(bestGid) && candInet && inRange(candGid)) {
      best = candidate;
      continue;
    }
    if (!candInet || !gidValid(candGid) || !inRange(candGid)) continue;
    int bestVersion = roceVersionOf(typeAt(port, best));
    int candVersion = roceVersionOf(typeAt(port, candidate));
    if ((bestVersion != candVersion || !gidValid(bestGid)) && candVersion == roceVersion)
      best = candidate;
  }
  return best;
}

}  // namespace tlaunch
