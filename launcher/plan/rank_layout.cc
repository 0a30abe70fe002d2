#include "launcher/plan/rank_layout.h"

#include <algorithm>

#include "launcher/cli_values.h"
#include "tlaunch/diagnostics.h"

namespace tlaunch {

namespace {

std::string num(int v) { return std::to_string(v); }

// "node2 has 4" when the names are known, else "4".
std::string slotsOf(const std::vector<std::string>& names, size_t i, int slots) {
  return i < names.size() ? names[i] + " has " + num(slots) : num(slots);
}

int ceilDiv(int a, int b) { return (a + b - 1) / b; }

// n ranks on full nodes of p: the node count and the last node's share.
RankLayout fill(int n, int p, std::string source) {
  RankLayout l;
  l.ranks_per_node = p;
  l.nodes = ceilDiv(n, p);
  l.last_node_ranks = n - (l.nodes - 1) * p;
  l.source = std::move(source) + (l.last_node_ranks == p ? "" : ", " + num(l.last_node_ranks) + " on the last node");
  return l;
}

Result<RankLayout> checked(RankLayout l, int node_count) {
  // -p/-g are bounded when parsed; a hostfile's slots or -n on few nodes are not (-n 1000000 on
  // this host alone would start a million processes).
  if (l.ranks_per_node > kMaxRanksPerNode)
    return diagnostic(Errc::usage, "ranks-per-node-too-many",
                      {{"source", l.source}, {"per_node", num(l.ranks_per_node)}, {"max", num(kMaxRanksPerNode)}});
  if (node_count > 0 && l.ranks_per_node > 0 &&
      static_cast<long long>(node_count) * l.ranks_per_node > kMaxWorldSize)
    return diagnostic(Errc::usage, "world-too-large",
                      {{"nodes", num(node_count)}, {"per_node", num(l.ranks_per_node)}, {"max", num(kMaxWorldSize)}});
  return l;
}

Result<RankLayout> totalRanks(const JobSpec& spec, const std::vector<int>& slots, const std::string& origin,
                              const std::vector<std::string>& names) {
  const int n = spec.total_ranks;
  const int given = spec.ranksPerNode();
  const int avail = static_cast<int>(slots.size());
  if (given > 0) {
    const std::string flag = spec.gpus_per_node > 0 ? "-g" : "-p";
    RankLayout l = fill(n, given, "-n " + num(n) + " / " + flag + " " + num(given));
    if (spec.nodes > 0 && spec.nodes != l.nodes)
      return diagnostic(Errc::usage, "ranks-nodes-mismatch",
                        {{"total", num(n)}, {"flag", flag}, {"per_node", num(given)}, {"made", num(l.nodes)},
                         {"nodes", num(spec.nodes)}});
    return checked(l, l.nodes);
  }
  if (spec.nodes > 0) {
    RankLayout l = fill(n, ceilDiv(n, spec.nodes), "-n " + num(n) + " over -N " + num(spec.nodes));
    if (l.nodes != spec.nodes)
      return diagnostic(Errc::usage, "ranks-leave-nodes-empty",
                        {{"total", num(n)}, {"nodes", num(spec.nodes)}, {"empty", num(spec.nodes - l.nodes)},
                         {"per_node", num(l.ranks_per_node)}, {"used", num(l.nodes)}});
    return checked(l, l.nodes);
  }
  if (avail == 0) return checked(fill(n, n, "-n " + num(n) + " on one node"), 1);  // this host
  if (slots.front() > 0) {  // fill nodes by their slots, in order (mpirun's default)
    const int s = slots.front();
    RankLayout l = fill(n, std::min(n, s), "-n " + num(n) + " filling slots=" + num(s) + " (" + origin + ")");
    l.from_slots = true;
    if (l.nodes > avail)
      return diagnostic(Errc::usage, "ranks-exceed-slots",
                        {{"total", num(n)}, {"needed", num(l.nodes)}, {"slots", num(s)}, {"origin", origin},
                         {"available", num(avail)}});
    for (int i = 0; i < l.nodes; ++i)
      if (slots[static_cast<size_t>(i)] != s)
        return diagnostic(Errc::usage, "ranks-slots-differ",
                          {{"total", num(n)},
                           {"first", slotsOf(names, 0, s)},
                           {"other", slotsOf(names, static_cast<size_t>(i), slots[static_cast<size_t>(i)])},
                           {"origin", origin}});
    return checked(l, l.nodes);
  }
  // No slots known: one rank per node up to the node count, else spread evenly. Every node but
  // the last runs the same number, so some counts leave nodes out (-n 4 over 3: 2 + 2): say so.
  const int per_node = ceilDiv(n, avail);
  if (n > avail && ceilDiv(n, per_node) < avail)
    return checked(fill(n, per_node,
                        "-n " + num(n) + " over " + num(avail) + " nodes given: " + num(per_node) + " per node on " +
                            num(ceilDiv(n, per_node)) + " of them; -n " + num((n / avail) * avail) + " or " +
                            num(per_node * avail) + " would use all " + num(avail)),
                   avail);
  return checked(fill(n, per_node, "-n " + num(n) + " spread over " + num(avail) + " nodes"), avail);
}

}  // namespace

Result<RankLayout> resolveRankLayout(const JobSpec& spec, const std::vector<int>& slots, const std::string& slots_origin,
                                     const std::vector<std::string>& names) {
  if (spec.total_ranks > 0) return totalRanks(spec, slots, slots_origin, names);
  RankLayout l;
  l.nodes = spec.nodes;
  const int node_count = spec.nodes > 0 ? spec.nodes : static_cast<int>(slots.size());
  if (spec.ranksPerNode() > 0) {
    l.ranks_per_node = spec.ranksPerNode();
    l.source = spec.gpus_per_node > 0 ? "-g " + num(spec.gpus_per_node) : "-p " + num(spec.procs_per_node);
    return checked(l, node_count);
  }
  if (!spec.nproc_per_node_word.empty()) return l;  // decided from the inventories
  // The chosen nodes' slots, when every one has the same.
  const size_t used = std::min(slots.size(), static_cast<size_t>(node_count > 0 ? node_count : 0));
  std::vector<int> known;
  for (size_t i = 0; i < used; ++i)
    if (slots[i] > 0) known.push_back(slots[i]);
  if (known.empty()) return l;  // one per GPU, else 1: when planning
  for (size_t i = 1; i < used; ++i)
    if (slots[i] != slots.front()) {
      auto said = [&](size_t k) {
        return slots[k] > 0 ? slotsOf(names, k, slots[k]) : k < names.size() ? names[k] + " has none given" : "none";
      };
      return diagnostic(Errc::usage, "slots-differ", {{"origin", slots_origin}, {"first", said(0)}, {"other", said(i)}});
    }
  l.ranks_per_node = known.front();
  l.source = "slots=" + num(known.front()) + " in " + slots_origin;
  l.from_slots = true;
  return checked(l, node_count);
}

Result<std::string> applyRankDefault(JobSpec& spec, const std::vector<int>& gpus, const std::vector<int>& cores,
                                     const std::vector<std::string>& names) {
  const std::string& word = spec.nproc_per_node_word;
  auto same = [&](const std::vector<int>& counts, const char* what) -> Result<int> {
    for (size_t i = 1; i < counts.size(); ++i)
      if (counts[i] != counts.front())
        return diagnostic(Errc::usage, "nodes-differ-per-rank-unit",
                          {{"what", what},
                           {"first_node", names.front()},
                           {"first_count", num(counts.front())},
                           {"other_node", names[i]},
                           {"other_count", num(counts[i])}});
    return counts.empty() ? 0 : counts.front();
  };
  const bool any_gpu = std::any_of(gpus.begin(), gpus.end(), [](int g) { return g > 0; });
  if (word == "cpu" || (word == "auto" && !any_gpu)) {
    auto c = same(cores, "cores");
    if (!c) return tl::unexpected(c.error());
    spec.procs_per_node = std::clamp(*c, 1, kMaxRanksPerNode);
    return "--nproc-per-node " + word + ": one per core (" + num(spec.procs_per_node) + ")";
  }
  if (word == "gpu" && !any_gpu)
    return diagnostic(Errc::usage, "no-gpu-for-gpu-ranks", {{"node", names.empty() ? std::string("the nodes") : names.front()}});
  if (any_gpu) {
    auto g = same(gpus, "GPUs");
    if (!g) return tl::unexpected(g.error());
    spec.gpus_per_node = std::min(*g, kMaxRanksPerNode);
    return (word.empty() ? std::string("one per GPU") : "--nproc-per-node " + word + ": one per GPU") + " (" +
           num(spec.gpus_per_node) + ")";
  }
  spec.procs_per_node = 1;
  return std::string("1 (no -n/-p/-g, no slots, no GPU)");
}

}  // namespace tlaunch
