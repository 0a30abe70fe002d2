#pragma once
// IPv4 addresses and CIDR networks as numbers (pure helpers).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tlaunch {

struct Ipv4Net {
  std::uint32_t network = 0;  // host byte order, host bits cleared
  int prefix = 0;
  bool operator==(const Ipv4Net&) const = default;
  auto operator<=>(const Ipv4Net&) const = default;  // NOLINT(modernize-use-nullptr): clang-tidy 14 misreads it
};

std::optional<std::uint32_t> parseIpv4(std::string_view text);  // "10.1.0.5"
std::string formatIpv4(std::uint32_t address);
std::uint32_t prefixMask(int prefix);  // 16 -> 0xffff0000
Ipv4Net networkOf(std::uint32_t address, int prefix);
// "10.1.0.0/16"; host bits are cleared ("10.1.2.3/16" -> 10.1.0.0/16). No "/": nullopt.
std::optional<Ipv4Net> parseCidr(std::string_view text);
std::string formatCidr(const Ipv4Net& net);
bool contains(const Ipv4Net& net, std::uint32_t address);
// The smallest network holding every address (10.1.0.5 and 10.1.0.9: 10.1.0.0/28); nullopt when
// there are none.
std::optional<Ipv4Net> coveringNet(const std::vector<std::uint32_t>& addresses);

}  // namespace tlaunch
