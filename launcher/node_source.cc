#include "launcher/node_source.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>

#include "launcher/cli_values.h"
#include "launcher/hostlist.h"
#include "launcher/node_source_detail.h"
#include "tlaunch/strings.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

using namespace node_source_detail;

namespace {
// What a slot count may be, as the messages say it.
std::string slotsRange() { return "a whole number from 1 to " + std::to_string(node_source_detail::kMaxSlots); }
}  // namespace

namespace node_source_detail {

std::optional<int> parseCount(std::string_view text, int min_value) {
  if (text.empty() || text.size() > 7) return std::nullopt;
  int v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v < min_value || v > kMaxSlots) return std::nullopt;
  return v;
}

bool nameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_';
}

// Why `name` cannot be a host name, or nullopt when it can. IPv6 literals pass when
// `allow_ipv6` (hostfiles, where ':' is not the slot separator of a name with many colons).
std::optional<std::string> badHostName(std::string_view name, bool allow_ipv6) {
  if (name.empty()) return "empty host name";
  if (name.front() == '-' || name.front() == '.') return "host name '" + visibleText(name) + "' starts with '" + name[0] + "'";
  const bool ipv6 = allow_ipv6 && std::count(name.begin(), name.end(), ':') >= 2;
  // "node1::8" (a typo for node1:8) is no address: taken as one, it failed only later, as a node
  // nobody could reach.
  if (ipv6 && !isIpv6Literal(name))
    return "'" + visibleText(name) + "' has several ':' but is not an IPv6 address (slots: host:8 or host slots=8)";
  for (char c : name) {
    if (nameChar(c) || (ipv6 && c == ':')) continue;
    return "host name '" + visibleText(name) + "' contains '" + visibleText(std::string_view(&c, 1)) + "'";
  }
  // DNS's limits (RFC 1035): a longer name resolves nowhere, and it would not fit in the names of
  // the node's job directory and cgroup (255 bytes each).
  if (name.size() > kMaxHostNameBytes)
    return "host name '" + visibleText(name, 40) + "' has " + std::to_string(name.size()) + " characters (at most " +
           std::to_string(kMaxHostNameBytes) + ")";
  for (size_t start = 0; start < name.size();) {
    const size_t dot = std::min(name.find('.', start), name.size());
    if (dot - start > kMaxHostLabelBytes)
      return "host name '" + visibleText(name, 80) + "' has a part of " + std::to_string(dot - start) +
             " characters between dots (at most " + std::to_string(kMaxHostLabelBytes) + ")";
    start = dot + 1;
  }
  return std::nullopt;
}

std::optional<std::string> badUserName(std::string_view user) {
  if (user.empty()) return "empty user name before '@'";
  for (char c : user) {
    if (!nameChar(c)) return "user name '" + visibleText(user) + "' contains '" + visibleText(std::string_view(&c, 1)) + "'";
  }
  return std::nullopt;
}

static_assert(kMaxHostlistNames == static_cast<size_t>(kMaxNodes), "a host list holds at most a job's nodes");

std::string tooManyHosts() {
  // Appended piece by piece: GCC 12 at -O3 misreads `"literal" + std::to_string(n) + ...` here
  // as an overread (-Wstringop-overread).
  std::string text = "more than ";
  text += std::to_string(kMaxHostlistNames);
  text += " host names in all (tlaunch runs at most that many nodes)";
  return text;
}

size_t namesLeft(size_t used) { return used >= kMaxHostlistNames ? 0 : kMaxHostlistNames - used; }

// "alice@node[1-2]" → entries for node1, node2 with user alice, validated. `max_names`: what
// the names given before leave of the limit (kMaxHostlistNames in all), so that a file of many
// big expressions is refused before it is expanded.
Result<std::vector<HostEntry>> expandHostSpec(std::string_view spec, bool allow_ipv6, const std::string& where,
                                              const std::string& hint, size_t max_names) {
  std::string user;
  const size_t at = spec.find('@');
  if (at != std::string_view::npos) {
    user = std::string(spec.substr(0, at));
    spec = spec.substr(at + 1);
    if (auto bad = badUserName(user)) return fail(Errc::usage, where + *bad, hint);
  }
  std::vector<std::string> names;
  if (spec.find('[') != std::string_view::npos || spec.find(']') != std::string_view::npos) {
    auto expanded = expandHostlist(spec, max_names);
    if (!expanded) return fail(Errc::usage, where + expanded.error().message, expanded.error().hint);
    names = std::move(*expanded);
  } else {
    if (max_names == 0) return fail(Errc::usage, where + tooManyHosts(), hint);
    names.emplace_back(spec);
  }
  std::vector<HostEntry> hosts;
  for (auto& n : names) {
    if (auto bad = badHostName(n, allow_ipv6)) return fail(Errc::usage, where + *bad, hint);
    HostEntry h;
    h.name = std::move(n);
    if (!user.empty()) h.attrs["user"] = user;
    hosts.push_back(std::move(h));
  }
  return hosts;
}

}  // namespace node_source_detail

bool isIpv6Literal(std::string_view text) {
  in6_addr addr{};
  return text.find(':') != std::string_view::npos && ::inet_pton(AF_INET6, std::string(text).c_str(), &addr) == 1;
}

std::string listNames(const std::vector<HostEntry>& hosts) {
  std::vector<std::string> names;
  for (const auto& h : hosts) names.push_back(h.name);
  return compressHostlist(names);
}

namespace {

// Removes blanks around '=' so "slots = 8" reads as "slots=8".
std::string joinAroundEquals(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == ' ' || c == '\t') {
      size_t j = i;
      while (j < line.size() && (line[j] == ' ' || line[j] == '\t')) ++j;
      const bool next_is_eq = j < line.size() && line[j] == '=';
      const bool prev_is_eq = !out.empty() && out.back() == '=';
      if (!next_is_eq && !prev_is_eq) out += ' ';
      i = j - 1;
      continue;
    }
    out += c;
  }
  return out;
}

std::vector<std::string_view> splitBlanks(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

const std::string kHostsHint = "write --hosts node1,node2:4,gpu[01-04]:8 (name or hostlist expression, optional :slots)";
const std::string kHostfileHint =
    "write one host per line: 'node1 slots=8' (Open MPI / DeepSpeed) or 'node1:8' (MPICH); '#' starts a comment";
}  // namespace

int usableSlots(const HostEntry& host) {
  return host.only_slots.empty() ? host.slots : static_cast<int>(host.only_slots.size());
}

int maxSlots(const HostEntry& host) {
  const auto it = host.attrs.find("max_slots");
  return it == host.attrs.end() ? 0 : std::atoi(it->second.c_str());
}

std::string sshDestination(const HostEntry& host) {
  auto user = host.attrs.find("user");
  return user == host.attrs.end() ? host.name : user->second + "@" + host.name;
}

Result<std::vector<HostEntry>> parseHostsOption(std::string_view text) {
  std::vector<HostEntry> hosts;
  // Once, not per item: a long list would copy itself once per item.
  const std::string where = "--hosts '" + visibleText(text) + "': ";
  for (std::string_view item : splitOutsideBrackets(text, ',')) {
    item = trimBlanks(item);
    if (item.empty()) return fail(Errc::usage, where + "empty host name", kHostsHint);
    auto parts = splitOutsideBrackets(item, ':');
    if (parts.size() > 2) {
      return fail(Errc::usage, where + "more than one ':' in '" + visibleText(item) + "'",
                  kHostsHint + "; IPv6 addresses go in a hostfile");
    }
    int slots = -1;
    if (parts.size() == 2) {
      auto n = parseCount(parts[1], 1);
      if (!n) {
        return fail(Errc::usage, where + "slots '" + visibleText(parts[1]) + "' of " + visibleText(parts[0]) +
                                     " must be " + slotsRange(),
                    kHostsHint);
      }
      slots = *n;
    }
    auto expanded = expandHostSpec(parts[0], false, where, kHostsHint, namesLeft(hosts.size()));
    if (!expanded) return tl::unexpected(expanded.error());
    for (auto& h : *expanded) {
      h.slots = slots;
      hosts.push_back(std::move(h));
    }
  }
  return hosts;
}

Result<std::vector<HostEntry>> parseHostfile(std::string_view content, std::string_view file_name) {
  // A byte order mark (a hostfile saved by a Windows editor) is no part of the first host's name.
  if (content.starts_with("\xEF\xBB\xBF")) content.remove_prefix(3);
  std::vector<HostEntry> hosts;
  std::map<std::string, int> first_line;  // lower-case name → the line that named it
  int line_no = 0;
  size_t pos = 0;
  while (pos <= content.size()) {
    size_t eol = content.find('\n', pos);
    if (eol == std::string_view::npos) eol = content.size();
    const std::string_view raw = content.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    std::string_view line = raw;
    if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trimBlanks(line);
    if (line.empty()) continue;

    const std::string where = std::string(file_name) + ":" + std::to_string(line_no) + ": ";
    const std::string quoted = " in '" + visibleText(trimBlanks(raw)) + "'";
    auto bad = [&](const std::string& what, const std::string& hint = kHostfileHint) {
      return fail(Errc::usage, where + what + quoted, hint);
    };

    const std::string joined = joinAroundEquals(line);
    const auto tokens = splitBlanks(joined);
    std::string_view host_spec = tokens[0];
    if (host_spec.find('=') != std::string_view::npos) return bad("the line must start with a host name");

    int slots = -1;
    // MPICH "host:8". A name with two or more colons is an IPv6 address.
    const auto colon_parts = splitOutsideBrackets(host_spec, ':');
    if (colon_parts.size() == 2) {
      auto n = parseCount(colon_parts[1], 1);
      if (!n) return bad("slots '" + visibleText(colon_parts[1]) + "' must be " + slotsRange());
      slots = *n;
      host_spec = colon_parts[0];
    }

    std::map<std::string, std::string> attrs;
    for (size_t t = 1; t < tokens.size(); ++t) {
      const size_t eq = tokens[t].find('=');
      if (eq == std::string_view::npos || eq == 0) {
        return bad("expected key=value after the host name, found '" + visibleText(tokens[t]) + "'");
      }
      std::string key = asciiLower(tokens[t].substr(0, eq));
      const std::string value(tokens[t].substr(eq + 1));
      if (value.empty()) return bad("no value for '" + visibleText(key) + "'");
      // Open MPI's spellings of the same keys; anything else is a mistake, not an attribute
      // (a misspelt "slot=4" made a node of one rank without a word).
      if (key == "max-slots" || key == "slots_max" || key == "slots-max") key = "max_slots";
      if (key == "username" || key == "login") key = "user";
      if (key == "slot" || key == "cpu") key = "slots";
      if (key != "slots" && key != "count" && key != "max_slots" && key != "user" && key != "net_if")
        return bad("unknown key '" + visibleText(key) + "'", "a hostfile line knows slots=, max_slots=, user= and net_if=");
      if (key == "slots" || key == "count") {
        if (slots != -1) return bad("slots given twice");
        auto n = parseCount(value, 1);
        if (!n) return bad("slots '" + visibleText(value) + "' must be " + slotsRange());
        slots = *n;
        continue;
      }
      if (key == "max_slots" && !parseCount(value, 1)) {
        return bad("max_slots '" + visibleText(value) + "' must be " + slotsRange());
      }
      if (key == "user") {
        if (auto why = badUserName(value)) return bad(*why);
      }
      if (!attrs.emplace(key, value).second) return bad("'" + key + "' given twice");
    }
    if (auto it = attrs.find("max_slots"); it != attrs.end() && slots > 0 && std::stoi(it->second) < slots) {
      return bad("max_slots " + it->second + " is less than slots " + std::to_string(slots),
                 "max_slots is the most ranks the host may run, slots how many it runs: lower slots to " +
                     it->second + " or raise max_slots");
    }

    auto expanded = expandHostSpec(host_spec, true, where, kHostfileHint, namesLeft(hosts.size()));
    if (!expanded) return fail(Errc::usage, expanded.error().message + quoted, expanded.error().hint);
    for (auto& h : *expanded) {
      if (h.attrs.count("user") && attrs.count("user")) return bad("user given both as user@host and user=");
      if (auto [it, fresh] = first_line.emplace(asciiLower(h.name), line_no); !fresh) {
        return bad(h.name + " is listed twice (first at line " + std::to_string(it->second) + ")",
                   "give each host once, with all its slots (" +
                       (colon_parts.size() == 2 ? h.name + ":8" : h.name + " slots=8") + ")");
      }
      h.slots = slots;
      h.attrs.insert(attrs.begin(), attrs.end());
      hosts.push_back(std::move(h));
    }
  }
  if (hosts.empty()) {
    return diagnostic(Errc::usage, "hostfile-no-hosts", {{"file", std::string(file_name)}, {"hint", kHostfileHint}});
  }
  return hosts;
}

NodeOrigin nodeOrigin(const NodeSourceOptions& options, const std::map<std::string, std::string>& env) {
  if (!trimBlanks(options.hosts).empty()) return NodeOrigin::hosts;
  if (!options.hostfile_name.empty()) return NodeOrigin::hostfile;
  if (options.use_slurm_env && insideSlurmAllocation(env)) return NodeOrigin::slurm;
  return NodeOrigin::none;
}

const char* describeOrigin(NodeOrigin origin) {
  switch (origin) {
    case NodeOrigin::none: return "this host";
    case NodeOrigin::hosts: return "--hosts";
    case NodeOrigin::hostfile: return "--hostfile";
    case NodeOrigin::slurm: return "the Slurm allocation";
  }
  return "?";
}

Result<std::vector<HostEntry>> resolveNodes(const NodeSourceOptions& options,
                                            const std::map<std::string, std::string>& env) {
  if (!trimBlanks(options.hosts).empty() && !options.hostfile_name.empty()) {
    return diagnostic(Errc::usage, "hosts-and-hostfile");
  }
  Result<std::vector<HostEntry>> hosts;
  const NodeOrigin origin = nodeOrigin(options, env);
  switch (origin) {
    case NodeOrigin::hosts: hosts = parseHostsOption(options.hosts); break;
    case NodeOrigin::hostfile: hosts = parseHostfile(options.hostfile_content, options.hostfile_name); break;
    case NodeOrigin::slurm:
      hosts = hostsFromSlurmEnv(env, options.slurm_tasks_as_slots);
      break;
    case NodeOrigin::none:
      // Not this host: the user is inside an allocation, only not one tlaunch can use.
      if (auto components = options.use_slurm_env ? heterogeneousSlurmNodes(env) : std::nullopt) {
        auto job = env.find("SLURM_JOB_ID");
        if (job == env.end()) job = env.find("SLURM_JOBID");
        return diagnostic(Errc::usage, "slurm-heterogeneous",
                          {{"job", job != env.end() ? job->second : "?"}, {"components", *components}});
      }
      if (!trimBlanks(options.include).empty() || !trimBlanks(options.exclude).empty()) {
        return diagnostic(Errc::usage, "select-without-nodes");
      }
      return std::vector<HostEntry>{};
  }
  if (!hosts) return hosts;
  std::set<std::string> seen;
  for (const auto& h : *hosts) {
    if (!seen.insert(asciiLower(h.name)).second) {
      return diagnostic(Errc::usage, "node-listed-twice", {{"node", h.name}, {"origin", describeOrigin(origin)}});
    }
  }
  return applyIncludeExclude(std::move(*hosts), options.include, options.exclude);
}

Result<std::vector<HostEntry>> selectNodes(const std::vector<HostEntry>& hosts, int requested_nodes,
                                           int ranks_per_node, const std::string& count_source, int last_node_ranks) {
  if (requested_nodes < 0) {
    return diagnostic(Errc::usage, "node-count-invalid", {{"count", std::to_string(requested_nodes)}});
  }
  if (ranks_per_node < 0) {
    return diagnostic(Errc::usage, "ranks-per-node-negative", {{"count", std::to_string(ranks_per_node)}});
  }
  if (hosts.empty()) return hosts;
  if (static_cast<size_t>(requested_nodes) > hosts.size()) {
    return diagnostic(Errc::usage, "nodes-short",
                      {{"asked", std::to_string(requested_nodes)},
                       {"available", std::to_string(hosts.size())},
                       {"names", listNames(hosts)}});
  }
  const size_t count = requested_nodes == 0 ? hosts.size() : static_cast<size_t>(requested_nodes);
  std::vector<HostEntry> chosen(hosts.begin(), hosts.begin() + static_cast<long>(count));
  if (ranks_per_node > 0) {
    for (const auto& h : chosen) {
      const int ranks = &h == &chosen.back() && last_node_ranks > 0 ? last_node_ranks : ranks_per_node;
      const int usable = usableSlots(h);
      // A hostfile's max_slots (Open MPI's hard limit): never more ranks than that on the node.
      // With slots too (never above max_slots), slots is the tighter limit: both are named, so
      // that raising one does not run into the other.
      if (const int cap = maxSlots(h); cap > 0 && cap < ranks)
        return usable >= 0 && h.only_slots.empty()
                   ? diagnostic(Errc::usage, "slots-and-max-slots-short",
                                {{"node", h.name}, {"slots", std::to_string(usable)}, {"max", std::to_string(cap)},
                                 {"asked", std::to_string(ranks)}})
                   : diagnostic(Errc::usage, "max-slots-short",
                                {{"node", h.name}, {"max", std::to_string(cap)}, {"asked", std::to_string(ranks)}});
      if (usable < 0 || usable >= ranks) continue;
      const std::string what = h.only_slots.empty() ? std::to_string(usable) + (usable == 1 ? " slot" : " slots")
                                                    : std::to_string(usable) + " usable slots after --include/--exclude";
      return diagnostic(Errc::usage, "slots-short",
                        {{"node", h.name},
                         {"slots", what},
                         {"asked", std::to_string(ranks)},
                         {"source", count_source.empty() ? "-p/-g " + std::to_string(ranks_per_node) : count_source}});
    }
  }
  return chosen;
}

}  // namespace tlaunch
