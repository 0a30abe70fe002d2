#pragma once
// What the node sources share (launcher/node_source.cc: --hosts and hostfiles; node_filter.cc:
// --include/--exclude; node_source_slurm.cc: the allocation). Internal to those three files.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/node_source.h"

namespace tlaunch::node_source_detail {

constexpr int kMaxSlots = 1'000'000;
constexpr size_t kMaxHostNameBytes = 253;  // RFC 1035
constexpr size_t kMaxHostLabelBytes = 63;   // between two dots

// A whole number from min_value to kMaxSlots, digits only.
std::optional<int> parseCount(std::string_view text, int min_value);
// Why `name` cannot be a host name, or nullopt when it can. IPv6 literals pass when
// `allow_ipv6` (hostfiles, where ':' is not the slot separator of a name with many colons).
std::optional<std::string> badHostName(std::string_view name, bool allow_ipv6);
// How many more names the hostlist limit allows after `used`.
size_t namesLeft(size_t used);
// "alice@node[1-2]" -> entries for node1, node2 with user alice, validated; at most max_names.
Result<std::vector<HostEntry>> expandHostSpec(std::string_view spec, bool allow_ipv6, const std::string& where,
                                              const std::string& hint, size_t max_names);

}  // namespace tlaunch::node_source_detail
