#include "launcher/plan/rank_layout.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <utility>

#include "launcher/cli_values.h"
#include "tlaunch/diagnostics.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

std::string num(int v) { return std::to_string(v); }

// "node2 has 4" or "node2 has none given" when the names are known, else "4" or "none".
std::string slotsOf(const std::vector<std::string>& names, size_t i, int slots) {
  const std::string count = slots > 0 ? num(slots) : "none";
  return i < names.size() ? names[i] + " has " + count + (slots > 0 ? "" : " given") : count;
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

// Each node's count, in order (node_ranks unless they are all the same).
RankLayout perNode(std::vector<int> counts, std::string source) {
  RankLayout l;
  l.nodes = static_cast<int>(counts.size());
  l.ranks_per_node = counts.empty() ? 0 : *std::max_element(counts.begin(), counts.end());
  l.last_node_ranks = counts.empty() ? 0 : counts.back();
  l.source = std::move(source);
  if (std::any_of(counts.begin(), counts.end(), [&](int c) { return c != l.ranks_per_node; }))
    l.node_ranks = std::move(counts);
  return l;
}

// n ranks over k nodes as srun spreads them: the first n % k nodes run one more.
std::vector<int> spreadCounts(int n, int k) {
  std::vector<int> counts(static_cast<size_t>(k), n / k);
  for (int i = 0; i < n % k; ++i) ++counts[static_cast<size_t>(i)];
  return counts;
}

RankLayout spread(int n, int k, std::string source) { return perNode(spreadCounts(n, k), std::move(source)); }

Result<RankLayout> checked(RankLayout l, int node_count) {
  // -p/-g are bounded when parsed; a hostfile's slots or -n on few nodes are not (-n 1000000 on
  // this host alone would start a million processes).
  if (l.ranks_per_node > kMaxRanksPerNode)
    return diagnostic(Errc::usage, "ranks-per-node-too-many",
                      {{"source", l.source}, {"per_node", num(l.ranks_per_node)}, {"max", num(kMaxRanksPerNode)}});
  // With -n the last node may run fewer (last_node_ranks): counted as such, not as a full node.
  const long long last = l.last_node_ranks > 0 ? l.last_node_ranks : l.ranks_per_node;
  const long long world = !l.node_ranks.empty()
                              ? std::accumulate(l.node_ranks.begin(), l.node_ranks.end(), 0LL)
                              : static_cast<long long>(node_count - 1) * l.ranks_per_node + last;
  if (node_count > 0 && l.ranks_per_node > 0 && world > kMaxWorldSize)
    return diagnostic(Errc::usage, "world-too-large",
                      {{"nodes", num(node_count)}, {"world", std::to_string(world)}, {"max", num(kMaxWorldSize)}});
  return l;
}

// n ranks over the first k nodes (n >= k) as srun spreads them, each within its slots: a node's
// excess goes to the next nodes with room. nullopt when the k nodes' slots hold fewer than n.
std::optional<std::vector<int>> spreadWithinSlots(int n, int k, const std::vector<int>& slots) {
  std::vector<int> counts = spreadCounts(n, k);
  long long room = 0;
  int excess = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    room += slots[i];
    if (counts[i] > slots[i]) excess += std::exchange(counts[i], slots[i]) - slots[i];
  }
  if (room < n) return std::nullopt;
  for (size_t i = 0; i < counts.size() && excess > 0; ++i) {
    const int add = std::min(excess, slots[i] - counts[i]);
    counts[i] += add;
    excess -= add;
  }
  return counts;
}

Result<RankLayout> totalRanks(const JobSpec& spec, const std::vector<int>& slots, const std::string& origin,
                              const std::vector<std::string>& names) {
  const int n = spec.total_ranks;
  const int given = spec.ranksPerNode();
  const int avail = static_cast<int>(slots.size());
  if (given > 0) {  // mpirun's -n with --npernode: full nodes, the last may run fewer
    const std::string flag = spec.gpus_per_node > 0 ? "-g" : "-p";
    RankLayout l = fill(n, given, "-n " + num(n) + " / " + flag + " " + num(given));
    if (spec.nodes > 0 && spec.nodes != l.nodes)
      return diagnostic(Errc::usage, "ranks-nodes-mismatch",
                        {{"total", num(n)}, {"flag", flag}, {"per_node", num(given)}, {"made", num(l.nodes)},
                         {"nodes", num(spec.nodes)}});
    return checked(l, l.nodes);
  }
  // Nodes with slots and nodes without among those the ranks go to: what would the others run?
  // With -N the ranks go to each of the first N; filling slots in order, to the first nodes
  // until the ranks are placed (a node without slots first cannot be filled).
  const size_t considered = spec.nodes > 0 ? std::min(slots.size(), static_cast<size_t>(spec.nodes)) : slots.size();
  const auto end = slots.begin() + static_cast<std::ptrdiff_t>(considered);
  const auto with = std::find_if(slots.begin(), end, [](int v) { return v > 0; });
  const auto slotsDiffer = [&](size_t other) {
    return diagnostic(Errc::usage, "ranks-slots-differ",
                      {{"total", num(n)},
                       {"first", slotsOf(names, static_cast<size_t>(with - slots.begin()), *with)},
                       {"other", slotsOf(names, other, slots[other])},
                       {"origin", origin}});
  };
  const bool have_slots = with != end;
  if (have_slots && spec.nodes > 0)
    if (const auto without = std::find_if(slots.begin(), end, [](int v) { return v <= 0; }); without != end)
      return slotsDiffer(static_cast<size_t>(without - slots.begin()));
  if (have_slots && spec.nodes <= 0 && slots.front() <= 0) return slotsDiffer(0);
  if (spec.nodes > 0) {  // srun's -n with -N: spread, the first nodes one more (within their slots)
    if (n < spec.nodes)
      return diagnostic(Errc::usage, "ranks-leave-nodes-empty",
                        {{"total", num(n)}, {"nodes", num(spec.nodes)}, {"empty", num(spec.nodes - n)}, {"per_node", "1"},
                         {"used", num(n)}});
    const std::string source = "-n " + num(n) + " over -N " + num(spec.nodes);
    if (!have_slots || considered < static_cast<size_t>(spec.nodes))  // too few nodes: said when they are chosen
      return checked(spread(n, spec.nodes, source), spec.nodes);
    auto counts = spreadWithinSlots(n, spec.nodes, slots);
    if (!counts)
      return diagnostic(Errc::usage, "ranks-exceed-slots",
                        {{"total", num(n)}, {"origin", origin},
                         {"available", std::to_string(std::accumulate(slots.begin(), end, 0LL))},
                         {"nodes", num(spec.nodes)}});
    RankLayout l = perNode(std::move(*counts), source + " within the slots (" + origin + ")");
    l.from_slots = true;
    return checked(l, spec.nodes);
  }
  if (avail == 0) return checked(fill(n, n, "-n " + num(n) + " on one node"), 1);  // this host
  if (have_slots) {  // fill nodes by their slots, in order (mpirun's default)
    std::vector<int> counts;
    int left = n;
    long long total_slots = 0;
    for (size_t i = 0; i < slots.size() && left > 0; ++i) {
      if (slots[i] <= 0) return slotsDiffer(i);
      counts.push_back(std::min(left, slots[i]));
      left -= counts.back();
      total_slots += slots[i];
    }
    if (left > 0)
      return diagnostic(Errc::usage, "ranks-exceed-slots",
                        {{"total", num(n)}, {"origin", origin}, {"available", std::to_string(total_slots)},
                         {"nodes", num(avail)}});
    const auto used_end = slots.begin() + static_cast<std::ptrdiff_t>(counts.size());
    const bool same = std::all_of(slots.begin(), used_end, [&](int v) { return v == slots.front(); });
    RankLayout l = perNode(counts, "-n " + num(n) + " filling " +
                                       (same ? "slots=" + num(slots.front()) : std::string("the slots in order")) + " (" +
                                       origin + ")");
    l.from_slots = true;
    return checked(l, l.nodes);
  }
  // No slots known: one rank per node up to the node count, else spread as srun does.
  if (n <= avail) return checked(fill(n, 1, "-n " + num(n) + ", one per node"), n);
  return checked(spread(n, avail, "-n " + num(n) + " spread over " + num(avail) + " nodes"), avail);
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
  if (known.size() != used) {  // some nodes have slots, some none: which count would they run?
    const size_t none = static_cast<size_t>(
        std::find_if(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(used), [](int v) { return v <= 0; }) -
        slots.begin());
    const size_t some = static_cast<size_t>(
        std::find_if(slots.begin(), slots.begin() + static_cast<std::ptrdiff_t>(used), [](int v) { return v > 0; }) -
        slots.begin());
    return diagnostic(Errc::usage, "slots-differ",
                      {{"origin", slots_origin},
                       {"first", slotsOf(names, some, slots[some])},
                       {"other", slotsOf(names, none, slots[none])}});
  }
  if (std::any_of(known.begin(), known.end(), [&](int v) { return v != known.front(); })) {
    // Each node runs its slots (a hostfile's 8 and 4, --include's GPU lists), as mpirun and DeepSpeed do.
    RankLayout each = perNode(known, "each node's slots in " + slots_origin);
    each.nodes = spec.nodes;
    each.from_slots = true;
    return checked(each, node_count);
  }
  l.ranks_per_node = known.front();
  l.source = "slots=" + num(known.front()) + " in " + slots_origin;
  l.from_slots = true;
  return checked(l, node_count);
}

Result<std::string> applyRankDefault(JobSpec& spec, const std::vector<int>& gpus, const std::vector<int>& cores,
                                     const std::vector<std::string>& names) {
  const std::string& word = spec.nproc_per_node_word;
  // One rank per GPU (or core) of each node: the same count on each, or each node's own (a node
  // of 8 GPUs beside one of 4, as DeepSpeed runs them). The largest goes to -p/-g.
  auto set = [&](int& target, std::vector<int> counts) {
    if (counts.empty()) counts.push_back(1);
    for (int& c : counts) c = std::clamp(c, 1, kMaxRanksPerNode);
    target = *std::max_element(counts.begin(), counts.end());
    if (std::any_of(counts.begin(), counts.end(), [&](int c) { return c != target; })) spec.ranks_by_node = counts;
    return spec.ranks_by_node.empty() ? num(target) : joinSome(counts, 8);
  };
  const bool any_gpu = std::any_of(gpus.begin(), gpus.end(), [](int g) { return g > 0; });
  if (word == "cpu" || (word == "auto" && !any_gpu)) {
    const std::string counts = set(spec.procs_per_node, cores);
    return "--nproc-per-node " + word + ": one per core (" + counts + ")";
  }
  if (word == "gpu" && !any_gpu)
    return diagnostic(Errc::resources, "no-gpu-for-gpu-ranks",  // as -g on a node without GPUs
                      {{"node", names.empty() ? std::string("the nodes") : names.front()}});
  if (any_gpu) {
    // A node without a GPU among GPU nodes: its ranks would have none.
    for (size_t i = 0; i < gpus.size(); ++i)
      if (gpus[i] == 0) {
        const size_t with = static_cast<size_t>(std::find_if(gpus.begin(), gpus.end(), [](int g) { return g > 0; }) - gpus.begin());
        return diagnostic(Errc::usage, "nodes-differ-per-rank-unit",
                          {{"what", "GPUs"},
                           {"first_node", names[with]},
                           {"first_count", num(gpus[with])},
                           {"other_node", names[i]}});
      }
    const std::string counts = set(spec.gpus_per_node, gpus);
    return (word.empty() ? std::string("one per GPU") : "--nproc-per-node " + word + ": one per GPU") + " (" + counts + ")";
  }
  spec.procs_per_node = 1;
  return std::string("no -n/-p/-g, no slots, no GPU");
}

}  // namespace tlaunch
