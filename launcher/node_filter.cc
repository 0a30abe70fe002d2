// DeepSpeed's --include / --exclude ("node1:0,1@node2"): which of the given nodes, and which
// of their slots (GPUs), a job uses.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "launcher/hostlist.h"
#include "launcher/node_source.h"
#include "launcher/node_source_detail.h"
#include "tlaunch/strings.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

using namespace node_source_detail;

namespace {

// Names compare case-insensitively, as DNS does. An index, not a scan per name: --include with
// a big expression against a big host list was quadratic (found by fuzzing).
class HostIndex {
 public:
  explicit HostIndex(const std::vector<HostEntry>& hosts) {
    for (size_t i = 0; i < hosts.size(); ++i) index_.emplace(asciiLower(hosts[i].name), i);  // the first one wins
  }
  std::optional<size_t> find(std::string_view name) const {
    auto it = index_.find(asciiLower(name));
    return it == index_.end() ? std::nullopt : std::optional<size_t>(it->second);
  }

 private:
  std::map<std::string, size_t> index_;
};

const std::string kFilterHint =
    "write --include/--exclude as node1:0,1@node2 (host, optional slot indices, '@' between hosts; an IPv6 "
    "address as fd00::1, or [fd00::1]:0,1 with slots)";

// "node1:0,1" -> {node1, "0,1"}; "node1" -> {node1}. An IPv6 address (a hostfile may name nodes
// so) is the host whole: "fd00::1", or "[fd00::1]:0,1" with slots. nullopt: more than one ':'.
std::optional<std::vector<std::string_view>> hostAndSlots(std::string_view part) {
  part = trimBlanks(part);
  if (isIpv6Literal(part)) return std::vector<std::string_view>{part};
  if (part.starts_with('[')) {
    const size_t close = part.find(']');
    if (close != std::string_view::npos && isIpv6Literal(part.substr(1, close - 1))) {
      std::vector<std::string_view> out{part.substr(1, close - 1)};
      const std::string_view rest = part.substr(close + 1);
      if (rest.empty()) return out;
      if (rest.front() != ':' || rest.find(':', 1) != std::string_view::npos) return std::nullopt;
      out.push_back(rest.substr(1));
      return out;
    }
  }
  auto parts = splitOutsideBrackets(part, ':');
  if (parts.size() > 2) return std::nullopt;
  return std::vector<std::string_view>(parts.begin(), parts.end());
}

struct FilterItem {
  std::vector<HostEntry> hosts;  // names only
  std::vector<int> slots;        // empty: the whole host
};

Result<std::vector<FilterItem>> parseFilter(std::string_view text, const std::string& flag) {
  std::vector<FilterItem> items;
  size_t names = 0;
  // Once, not per entry: a long list would copy itself once per entry.
  const std::string where = flag + " '" + visibleText(text) + "': ";
  for (std::string_view part : splitOutsideBrackets(text, '@')) {
    part = trimBlanks(part);
    if (part.empty()) return fail(Errc::usage, where + "empty entry between '@'", kFilterHint);
    FilterItem item;
    const auto parts = hostAndSlots(part);
    if (!parts) return fail(Errc::usage, where + "more than one ':' in '" + visibleText(part) + "'", kFilterHint);
    const std::string_view host = trimBlanks(parts->front());
    auto hosts = expandHostSpec(host, isIpv6Literal(host), where, kFilterHint, namesLeft(names));
    if (!hosts) return tl::unexpected(hosts.error());
    names += hosts->size();
    item.hosts = std::move(*hosts);
    if (parts->size() == 2) {
      for (std::string_view s : splitOutsideBrackets((*parts)[1], ',')) {
        auto index = parseCount(trimBlanks(s), 0);
        if (!index) {
          return fail(Errc::usage, where + "slot index '" + visibleText(trimBlanks(s)) + "' is not a number", kFilterHint);
        }
        if (std::find(item.slots.begin(), item.slots.end(), *index) != item.slots.end())
          return fail(Errc::usage, where + "slot index " + std::to_string(*index) + " is listed twice in '" +
                                       visibleText(part) + "'",
                      kFilterHint);
        item.slots.push_back(*index);
      }
    }
    items.push_back(std::move(item));
  }
  return items;
}

std::vector<int> allSlots(const HostEntry& h) {
  if (!h.only_slots.empty()) return h.only_slots;
  std::vector<int> all;
  for (int i = 0; i < h.slots; ++i) all.push_back(i);
  return all;
}

}  // namespace

Result<std::vector<HostEntry>> applyIncludeExclude(std::vector<HostEntry> hosts, std::string_view include,
                                                   std::string_view exclude) {
  include = trimBlanks(include);
  exclude = trimBlanks(exclude);
  if (include.empty() && exclude.empty()) return hosts;
  if (!include.empty() && !exclude.empty()) {
    return diagnostic(Errc::usage, "include-and-exclude");
  }
  const bool including = !include.empty();
  const std::string flag = including ? "--include" : "--exclude";
  auto items = parseFilter(including ? include : exclude, flag);
  if (!items) return tl::unexpected(items.error());

  const HostIndex index_of(hosts);
  std::vector<bool> keep(hosts.size(), !including);
  std::vector<std::set<int>> chosen(hosts.size());
  for (const auto& item : *items) {
    for (const auto& named : item.hosts) {
      auto index = index_of.find(named.name);
      if (!index) {
        return diagnostic(Errc::usage, "filter-names-unknown-node",
                          {{"flag", flag}, {"node", named.name}, {"names", listNames(hosts)}});
      }
      HostEntry& h = hosts[*index];
      for (int s : item.slots) {
        const int limit = h.slots;
        if (limit >= 0 && s >= limit) {
          return diagnostic(Errc::usage, "filter-slot-out-of-range",
                            {{"flag", flag},
                             {"slot", std::to_string(s)},
                             {"node", h.name},
                             {"slots", std::to_string(limit)},
                             {"last", std::to_string(limit - 1)}});
        }
      }
      if (including) {
        keep[*index] = true;
        chosen[*index].insert(item.slots.begin(), item.slots.end());
        if (item.slots.empty()) chosen[*index].insert(-1);  // the whole host
        continue;
      }
      if (item.slots.empty()) {
        keep[*index] = false;
        continue;
      }
      if (h.slots < 0 && h.only_slots.empty()) {  // the node's GPUs decide what is left (planning)
        std::set<int> excluded(h.excluded_slots.begin(), h.excluded_slots.end());
        excluded.insert(item.slots.begin(), item.slots.end());
        h.excluded_slots.assign(excluded.begin(), excluded.end());
        continue;
      }
      std::vector<int> left;
      for (int s : allSlots(h)) {
        if (std::find(item.slots.begin(), item.slots.end(), s) == item.slots.end()) left.push_back(s);
      }
      h.only_slots = std::move(left);
      h.only_slots_from_exclude = true;
      if (h.only_slots.empty()) keep[*index] = false;
    }
  }
  std::vector<HostEntry> out;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!keep[i]) continue;
    if (including && !chosen[i].count(-1)) {
      hosts[i].only_slots.assign(chosen[i].begin(), chosen[i].end());
      hosts[i].only_slots_from_exclude = false;
    }
    out.push_back(std::move(hosts[i]));
  }
  if (out.empty()) {
    return diagnostic(Errc::usage, "filter-leaves-no-nodes",
                      {{"flag", flag}, {"filter", std::string(including ? include : exclude)}});
  }
  return out;
}

}  // namespace tlaunch
