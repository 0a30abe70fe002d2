#include "binding/fabric/ipv4_net.h"

#include <arpa/inet.h>

#include <algorithm>
#include <bit>
#include <charconv>

namespace tlaunch {

std::optional<std::uint32_t> parseIpv4(std::string_view text) {
  std::string copy(text);
  in_addr addr{};
  if (inet_pton(AF_INET, copy.c_str(), &addr) != 1) return std::nullopt;
  return ntohl(addr.s_addr);
}

std::string formatIpv4(std::uint32_t address) {
  return std::to_string(address >> 24) + "." + std::to_string((address >> 16) & 0xff) + "." +
         std::to_string((address >> 8) & 0xff) + "." + std::to_string(address & 0xff);
}

std::uint32_t prefixMask(int prefix) {
  if (prefix <= 0) return 0;
  if (prefix >= 32) return 0xffffffffu;
  return ~((std::uint32_t{1} << (32 - prefix)) - 1);
}

Ipv4Net networkOf(std::uint32_t address, int prefix) {
  return Ipv4Net{address & prefixMask(prefix), prefix};
}

std::optional<Ipv4Net> parseCidr(std::string_view text) {
  auto slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto address = parseIpv4(text.substr(0, slash));
  if (!address) return std::nullopt;
  std::string_view bits = text.substr(slash + 1);
  int prefix = -1;
  auto [end, ec] = std::from_chars(bits.data(), bits.data() + bits.size(), prefix);
  if (ec != std::errc() || end != bits.data() + bits.size() || bits.empty() || prefix < 0 ||
      prefix > 32)
    return std::nullopt;
  return networkOf(*address, prefix);
}

std::string formatCidr(const Ipv4Net& net) {
  return formatIpv4(net.network) + "/" + std::to_string(net.prefix);
}

bool contains(const Ipv4Net& net, std::uint32_t address) {
  return (address & prefixMask(net.prefix)) == net.network;
}

std::optional<Ipv4Net> coveringNet(const std::vector<std::uint32_t>& addresses) {
  if (addresses.empty()) return std::nullopt;
  const auto [low, high] = std::minmax_element(addresses.begin(), addresses.end());
  // Every address between the lowest and the highest shares their common leading bits.
  return networkOf(*low, std::countl_zero(*low ^ *high));
}

}  // namespace tlaunch
