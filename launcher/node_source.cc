#include "launcher/node_source.h"

#include <algorithm>
#include <optional>
#include <set>

#include "launcher/hostlist.h"

namespace tlaunch {

namespace {

constexpr int kMaxSlots = 1'000'000;

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

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
  if (name.front() == '-' || name.front() == '.') return "host name '" + std::string(name) + "' starts with '" + name[0] + "'";
  const bool ipv6 = allow_ipv6 && std::count(name.begin(), name.end(), ':') >= 2;
  for (char c : name) {
    if (nameChar(c) || (ipv6 && c == ':')) continue;
    return "host name '" + std::string(name) + "' contains '" + std::string(1, c) + "'";
  }
  return std::nullopt;
}

std::optional<std::string> badUserName(std::string_view user) {
  if (user.empty()) return "empty user name before '@'";
  for (char c : user) {
    if (!nameChar(c)) return "user name '" + std::string(user) + "' contains '" + std::string(1, c) + "'";
  }
  return std::nullopt;
}

std::string tooManyHosts() { return "more than " + std::to_string(kMaxHostlistNames) + " host names in all"; }

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

// Names compare case-insensitively, as DNS does. An index, not a scan per name: --include with
// a big expression against a big host list was quadratic (found by fuzzing).
class HostIndex {
 public:
  explicit HostIndex(const std::vector<HostEntry>& hosts) {
    for (size_t i = 0; i < hosts.size(); ++i) index_.emplace(lower(hosts[i].name), i);  // the first one wins
  }
  std::optional<size_t> find(std::string_view name) const {
    auto it = index_.find(lower(name));
    return it == index_.end() ? std::nullopt : std::optional<size_t>(it->second);
  }

 private:
  std::map<std::string, size_t> index_;
};

std::string listNames(const std::vector<HostEntry>& hosts) {
  std::vector<std::string> names;
  for (const auto& h : hosts) names.push_back(h.name);
  return compressHostlist(names);
}

const std::string kHostsHint = "write --hosts node1,node2:4,gpu[01-04]:8 (name or hostlist expression, optional :slots)";
const std::string kHostfileHint =
    "write one host per line: 'node1 slots=8' (Open MPI / DeepSpeed) or 'node1:8' (MPICH); '#' starts a comment";
const std::string kFilterHint = "write --include/--exclude as node1:0,1@node2 (host, optional slot indices, '@' between hosts)";

struct FilterItem {
  std::vector<HostEntry> hosts;  // names only
  std::vector<int> slots;        // empty: the whole host
};

Result<std::vector<FilterItem>> parseFilter(std::string_view text, const std::string& flag) {
  std::vector<FilterItem> items;
  size_t names = 0;
  // Once, not per entry: a long list would copy itself once per entry.
  const std::string where = flag + " '" + std::string(text) + "': ";
  for (std::string_view part : splitOutsideBrackets(text, '@')) {
    part = trim(part);
    if (part.empty()) return fail(Errc::usage, where + "empty entry between '@'", kFilterHint);
    FilterItem item;
    auto parts = splitOutsideBrackets(part, ':');
    if (parts.size() > 2) return fail(Errc::usage, where + "more than one ':' in '" + std::string(part) + "'", kFilterHint);
    auto hosts = expandHostSpec(trim(parts[0]), false, where, kFilterHint, namesLeft(names));
    if (!hosts) return tl::unexpected(hosts.error());
    names += hosts->size();
    item.hosts = std::move(*hosts);
    if (parts.size() == 2) {
      for (std::string_view s : splitOutsideBrackets(parts[1], ',')) {
        auto index = parseCount(trim(s), 0);
        if (!index) {
          return fail(Errc::usage, where + "slot index '" + std::string(trim(s)) + "' is not a number", kFilterHint);
        }
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

int usableSlots(const HostEntry& host) {
  return host.only_slots.empty() ? host.slots : static_cast<int>(host.only_slots.size());
}

std::string sshDestination(const HostEntry& host) {
  auto user = host.attrs.find("user");
  return user == host.attrs.end() ? host.name : user->second + "@" + host.name;
}

Result<std::vector<HostEntry>> parseHostsOption(std::string_view text) {
  std::vector<HostEntry> hosts;
  // Once, not per item: a long list would copy itself once per item.
  const std::string where = "--hosts '" + std::string(text) + "': ";
  for (std::string_view item : splitOutsideBrackets(text, ',')) {
    item = trim(item);
    if (item.empty()) return fail(Errc::usage, where + "empty host name", kHostsHint);
    auto parts = splitOutsideBrackets(item, ':');
    if (parts.size() > 2) {
      return fail(Errc::usage, where + "more than one ':' in '" + std::string(item) + "'",
                  kHostsHint + "; IPv6 addresses go in a hostfile");
    }
    int slots = -1;
    if (parts.size() == 2) {
      auto n = parseCount(parts[1], 1);
      if (!n) {
        return fail(Errc::usage, where + "slots '" + std::string(parts[1]) + "' of " + std::string(parts[0]) +
                                     " must be a whole number of at least 1",
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
    line = trim(line);
    if (line.empty()) continue;

    const std::string where = std::string(file_name) + ":" + std::to_string(line_no) + ": ";
    const std::string quoted = " in '" + std::string(trim(raw)) + "'";
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
      if (!n) return bad("slots '" + std::string(colon_parts[1]) + "' must be a whole number of at least 1");
      slots = *n;
      host_spec = colon_parts[0];
    }

    std::map<std::string, std::string> attrs;
    for (size_t t = 1; t < tokens.size(); ++t) {
      const size_t eq = tokens[t].find('=');
      if (eq == std::string_view::npos || eq == 0) {
        return bad("expected key=value after the host name, found '" + std::string(tokens[t]) + "'");
      }
      std::string key = lower(tokens[t].substr(0, eq));
      const std::string value(tokens[t].substr(eq + 1));
      if (value.empty()) return bad("no value for '" + key + "'");
      if (key == "max-slots") key = "max_slots";
      if (key == "username") key = "user";
      if (key == "slots" || key == "count") {
        if (slots != -1) return bad("slots given twice");
        auto n = parseCount(value, 1);
        if (!n) return bad("slots '" + value + "' must be a whole number of at least 1");
        slots = *n;
        continue;
      }
      if (key == "max_slots" && !parseCount(value, 1)) {
        return bad("max_slots '" + value + "' must be a whole number of at least 1");
      }
      if (key == "user") {
        if (auto why = badUserName(value)) return bad(*why);
      }
      if (!attrs.emplace(key, value).second) return bad("'" + key + "' given twice");
    }
    if (auto it = attrs.find("max_slots"); it != attrs.end() && slots > 0 && std::stoi(it->second) < slots) {
      return bad("max_slots " + it->second + " is less than slots " + std::to_string(slots));
    }

    auto expanded = expandHostSpec(host_spec, true, where, kHostfileHint, namesLeft(hosts.size()));
    if (!expanded) return fail(Errc::usage, expanded.error().message + quoted, expanded.error().hint);
    for (auto& h : *expanded) {
      if (h.attrs.count("user") && attrs.count("user")) return bad("user given both as user@host and user=");
      if (auto [it, fresh] = first_line.emplace(lower(h.name), line_no); !fresh) {
        return bad(h.name + " is listed twice (first at line " + std::to_string(it->second) + ")",
                   "give each host once, with all its slots (" + h.name + " slots=8)");
      }
      h.slots = slots;
      h.attrs.insert(attrs.begin(), attrs.end());
      hosts.push_back(std::move(h));
    }
  }
  if (hosts.empty()) {
    return fail(Errc::usage, "hostfile " + std::string(file_name) + " names no hosts", kHostfileHint);
  }
  return hosts;
}

Result<std::vector<HostEntry>> applyIncludeExclude(std::vector<HostEntry> hosts, std::string_view include,
                                                   std::string_view exclude) {
  include = trim(include);
  exclude = trim(exclude);
  if (include.empty() && exclude.empty()) return hosts;
  if (!include.empty() && !exclude.empty()) {
    return fail(Errc::usage, "--include and --exclude were both given", "use one of them");
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
        return fail(Errc::usage, flag + " names " + named.name + ", which is not among the nodes (" + listNames(hosts) + ")",
                    "check the spelling, or add " + named.name + " to --hosts / the hostfile");
      }
      HostEntry& h = hosts[*index];
      for (int s : item.slots) {
        const int limit = h.slots;
        if (limit >= 0 && s >= limit) {
          return fail(Errc::usage,
                      flag + " names slot " + std::to_string(s) + " of " + h.name + ", which has " +
                          std::to_string(limit) + " slots (0-" + std::to_string(limit - 1) + ")",
                      "use slot indices below the host's slot count");
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
      if (h.only_slots.empty()) keep[*index] = false;
    }
  }
  std::vector<HostEntry> out;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!keep[i]) continue;
    if (including && !chosen[i].count(-1)) hosts[i].only_slots.assign(chosen[i].begin(), chosen[i].end());
    out.push_back(std::move(hosts[i]));
  }
  if (out.empty()) {
    return fail(Errc::usage, flag + " '" + std::string(including ? include : exclude) + "' leaves no nodes",
                "keep at least one node");
  }
  return out;
}

Result<std::vector<int>> parseSlurmTasksPerNode(std::string_view text) {
  std::vector<int> counts;
  const std::string where = "SLURM_TASKS_PER_NODE='" + std::string(text) + "': ";
  const std::string hint = "expected a form like 2(x3),1; unset SLURM_TASKS_PER_NODE if it was set by hand";
  for (std::string_view item : splitOutsideBrackets(text, ',')) {
    item = trim(item);
    int repeat = 1;
    if (const size_t paren = item.find('('); paren != std::string_view::npos) {
      std::string_view rep = item.substr(paren);
      if (rep.size() < 4 || rep.substr(0, 2) != "(x" || rep.back() != ')') {
        return fail(Errc::usage, where + "bad repeat '" + std::string(rep) + "'", hint);
      }
      auto r = parseCount(rep.substr(2, rep.size() - 3), 1);
      if (!r) return fail(Errc::usage, where + "bad repeat '" + std::string(rep) + "'", hint);
      repeat = *r;
      item = item.substr(0, paren);
    }
    auto n = parseCount(item, 0);
    if (!n) return fail(Errc::usage, where + "'" + std::string(item) + "' is not a task count", hint);
    if (counts.size() + static_cast<size_t>(repeat) > static_cast<size_t>(kMaxSlots)) {
      return fail(Errc::usage, where + "too many nodes", hint);
    }
    counts.insert(counts.end(), static_cast<size_t>(repeat), *n);
  }
  return counts;
}

namespace {
const std::string* envValue(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() || trim(it->second).empty() ? nullptr : &it->second;
}
const char* nodelistVariable(const std::map<std::string, std::string>& env) {
  if (envValue(env, "SLURM_JOB_NODELIST")) return "SLURM_JOB_NODELIST";
  if (envValue(env, "SLURM_NODELIST")) return "SLURM_NODELIST";
  return nullptr;
}
}  // namespace

bool insideSlurmAllocation(const std::map<std::string, std::string>& env) {
  return (envValue(env, "SLURM_JOB_ID") || envValue(env, "SLURM_JOBID")) && nodelistVariable(env);
}

Result<std::vector<HostEntry>> hostsFromSlurmEnv(const std::map<std::string, std::string>& env) {
  const char* variable = nodelistVariable(env);
  if (!variable) {
    return fail(Errc::usage, "not inside a Slurm allocation: SLURM_JOB_NODELIST is not set",
                "run under salloc/sbatch, or give --hosts / --hostfile");
  }
  const std::string& nodelist = *envValue(env, variable);
  auto names = expandHostlist(nodelist);
  if (!names) {
    return fail(Errc::usage, std::string(variable) + ": " + names.error().message,
                "this variable is set by Slurm; do not set it by hand");
  }
  std::vector<HostEntry> hosts;
  for (auto& n : *names) {
    if (auto bad = badHostName(n, false)) return fail(Errc::usage, std::string(variable) + ": " + *bad);
    hosts.push_back(HostEntry{std::move(n), -1, {}, {}, {}});
  }
  if (const std::string* tasks = envValue(env, "SLURM_TASKS_PER_NODE")) {
    auto counts = parseSlurmTasksPerNode(*tasks);
    if (!counts) return tl::unexpected(counts.error());
    if (counts->size() != hosts.size()) {
      return fail(Errc::usage,
                  "SLURM_TASKS_PER_NODE='" + *tasks + "' covers " + std::to_string(counts->size()) + " nodes but " +
                      variable + " names " + std::to_string(hosts.size()),
                  "these variables are set by Slurm; do not set them by hand");
    }
    for (size_t i = 0; i < hosts.size(); ++i) {
      if ((*counts)[i] > 0) hosts[i].slots = (*counts)[i];
    }
  }
  return hosts;
}

NodeOrigin nodeOrigin(const NodeSourceOptions& options, const std::map<std::string, std::string>& env) {
  if (!trim(options.hosts).empty()) return NodeOrigin::hosts;
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
  if (!trim(options.hosts).empty() && !options.hostfile_name.empty()) {
    return fail(Errc::usage, "--hosts and --hostfile were both given", "use one of them; --include/--exclude select from either");
  }
  Result<std::vector<HostEntry>> hosts;
  const NodeOrigin origin = nodeOrigin(options, env);
  switch (origin) {
    case NodeOrigin::hosts: hosts = parseHostsOption(options.hosts); break;
    case NodeOrigin::hostfile: hosts = parseHostfile(options.hostfile_content, options.hostfile_name); break;
    case NodeOrigin::slurm:
      hosts = hostsFromSlurmEnv(env);
      if (hosts && !options.slurm_tasks_as_slots) {
        for (auto& h : *hosts) h.slots = -1;
      }
      break;
    case NodeOrigin::none:
      if (!trim(options.include).empty() || !trim(options.exclude).empty()) {
        return fail(Errc::usage, "--include/--exclude select among nodes, but no nodes were given",
                    "give --hosts or --hostfile, or run inside a Slurm allocation");
      }
      return std::vector<HostEntry>{};
  }
  if (!hosts) return hosts;
  std::set<std::string> seen;
  for (const auto& h : *hosts) {
    if (!seen.insert(lower(h.name)).second) {
      return fail(Errc::usage, h.name + " is listed twice in " + describeOrigin(origin),
                  "give each node once; use slots (node:8) for more ranks on one node");
    }
  }
  return applyIncludeExclude(std::move(*hosts), options.include, options.exclude);
}

Result<std::vector<HostEntry>> selectNodes(const std::vector<HostEntry>& hosts, int requested_nodes,
                                           int ranks_per_node) {
  if (requested_nodes < 0) {
    return fail(Errc::usage, "-N " + std::to_string(requested_nodes) + " is not a node count", "give -N 1 or more");
  }
  if (ranks_per_node < 0) {
    return fail(Errc::usage, "ranks per node " + std::to_string(ranks_per_node) + " is negative", "give -p/-g 1 or more");
  }
  if (hosts.empty()) return hosts;
  if (static_cast<size_t>(requested_nodes) > hosts.size()) {
    return fail(Errc::usage,
                "-N " + std::to_string(requested_nodes) + " asks for " + std::to_string(requested_nodes) +
                    " nodes, but only " + std::to_string(hosts.size()) + " are available (" + listNames(hosts) + ")",
                "ask for at most " + std::to_string(hosts.size()) + " nodes, or add hosts");
  }
  const size_t count = requested_nodes == 0 ? hosts.size() : static_cast<size_t>(requested_nodes);
  std::vector<HostEntry> chosen(hosts.begin(), hosts.begin() + static_cast<long>(count));
  if (ranks_per_node > 0) {
    for (const auto& h : chosen) {
      const int usable = usableSlots(h);
      if (usable < 0 || usable >= ranks_per_node) continue;
      const std::string what = h.only_slots.empty() ? std::to_string(usable) + (usable == 1 ? " slot" : " slots")
                                                    : std::to_string(usable) + " usable slots after --include/--exclude";
      return fail(Errc::usage,
                  h.name + " has " + what + ", fewer than the " + std::to_string(ranks_per_node) +
                      " ranks per node asked for (-p/-g " + std::to_string(ranks_per_node) + ")",
                  "lower -p/-g, give " + h.name + " " + std::to_string(ranks_per_node) +
                      " slots (hostfile '" + h.name + " slots=" + std::to_string(ranks_per_node) +
                      "', --hosts " + h.name + ":" + std::to_string(ranks_per_node) +
                      ", or Slurm --ntasks-per-node), or leave it out");
    }
  }
  return chosen;
}

}  // namespace tlaunch
