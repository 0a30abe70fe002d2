// How many nodes and ranks per node: -n, -N, -p/-g, slots, and the GPU default.
#include <catch2/catch.hpp>

#include "launcher/plan/rank_layout.h"

using namespace tlaunch;

namespace {
JobSpec spec(int n, int nodes, int p, int g = 0) {
  JobSpec s;
  s.total_ranks = n;
  s.nodes = nodes;
  s.procs_per_node = p;
  s.gpus_per_node = g;
  return s;
}
}  // namespace

TEST_CASE("counts given with -p or -g win over the slots") {
  auto l = resolveRankLayout(spec(0, 0, 2), {8, 8}, "--hostfile");
  REQUIRE(l);
  CHECK(l->ranks_per_node == 2);
  CHECK(l->source == "-p 2");
}

TEST_CASE("without a count the hostfile's slots say it, each node's own where they differ") {
  auto l = resolveRankLayout(spec(0, 0, 0), {8, 8}, "--hostfile");
  REQUIRE(l);
  CHECK(l->ranks_per_node == 8);
  CHECK(l->source == "slots=8 in --hostfile");
  CHECK(resolveRankLayout(spec(0, 1, 0), {8, 4}, "--hostfile")->ranks_per_node == 8);  // -N 1: only the first
  // A hostfile of 8 and 4 slots runs 8 and 4 ranks, as mpirun does.
  auto each = resolveRankLayout(spec(0, 0, 0), {8, 4}, "--hostfile");
  REQUIRE(each);
  CHECK(each->node_ranks == std::vector<int>{8, 4});
  CHECK(each->ranks_per_node == 8);
  CHECK(each->source == "each node's slots in --hostfile");
  // Some nodes with slots and some without: which count the others run is unknown.
  auto some = resolveRankLayout(spec(0, 0, 0), {-1, 4}, "--hosts", {"n1", "n2"});
  REQUIRE_FALSE(some);
  CHECK(some.error().message.find("some nodes in --hosts have slots and some none (n2 has 4, n1 has none given)") !=
        std::string::npos);
  auto withN = resolveRankLayout(spec(5, 0, 0), {4, -1}, "--hostfile", {"n1", "n2"});
  REQUIRE_FALSE(withN);
  CHECK(withN.error().message.find("(n1 has 4, n2 has none given)") != std::string::npos);
  auto unknown = resolveRankLayout(spec(0, 0, 0), {-1, -1}, "--hosts");
  REQUIRE(unknown);
  CHECK(unknown->ranks_per_node == 0);  // decided from the GPUs when planning
}

TEST_CASE("total ranks fill nodes by slots or evenly or with -p or -N") {
  auto bySlots = resolveRankLayout(spec(16, 0, 0), {8, 8, 8}, "--hostfile");
  REQUIRE(bySlots);
  CHECK(bySlots->nodes == 2);
  CHECK(bySlots->ranks_per_node == 8);
  auto small = resolveRankLayout(spec(3, 0, 0), {8, 8}, "--hostfile");
  CHECK(small->nodes == 1);
  CHECK(small->ranks_per_node == 3);
  auto even = resolveRankLayout(spec(8, 0, 0), {-1, -1, -1, -1}, "--hosts");
  CHECK(even->nodes == 4);
  CHECK(even->ranks_per_node == 2);
  auto withP = resolveRankLayout(spec(8, 0, 2), {}, "this host");
  CHECK(withP->nodes == 4);
  CHECK(withP->ranks_per_node == 2);
  auto withN = resolveRankLayout(spec(8, 2, 0), {}, "this host");
  CHECK(withN->nodes == 2);
  CHECK(withN->ranks_per_node == 4);
  auto here = resolveRankLayout(spec(4, 0, 0), {}, "this host");
  CHECK(here->nodes == 1);
  CHECK(here->ranks_per_node == 4);
  CHECK_FALSE(resolveRankLayout(spec(20, 0, 0), {8, 8}, "--hostfile"));  // needs 3 nodes of 8, 2 given
  CHECK_FALSE(resolveRankLayout(spec(8, 3, 2), {}, "this host"));       // -n 8 -p 2 is 4 nodes, not 3
  CHECK_FALSE(resolveRankLayout(spec(3, 4, 0), {}, "this host"));       // 3 ranks cannot fill 4 nodes
  // Filling slots that differ: node by node, as mpirun does.
  auto filled = resolveRankLayout(spec(10, 0, 0), {8, 4, 4}, "--hostfile");
  REQUIRE(filled);
  CHECK(filled->nodes == 2);
  CHECK(filled->node_ranks == std::vector<int>{8, 2});
  CHECK(filled->source == "-n 10 filling the slots in order (--hostfile)");
  auto short_slots = resolveRankLayout(spec(20, 0, 0), {8, 4}, "--hostfile");
  REQUIRE_FALSE(short_slots);
  CHECK(short_slots.error().message.find("-n 20 is more than the 12 slots of the 2 node(s) in --hostfile") !=
        std::string::npos);
}

TEST_CASE("total ranks as with mpirun: the last node may run fewer") {
  auto withP = resolveRankLayout(spec(6, 0, 4), {}, "this host");
  REQUIRE(withP);
  CHECK(withP->nodes == 2);
  CHECK(withP->ranks_per_node == 4);
  CHECK(withP->last_node_ranks == 2);
  CHECK(withP->source == "-n 6 / -p 4, 2 on the last node");
  auto bySlots = resolveRankLayout(spec(10, 0, 0), {8, 8}, "--hostfile");
  REQUIRE(bySlots);
  CHECK(bySlots->nodes == 2);
  CHECK(bySlots->last_node_ranks == 2);
  // -n over -N (or over the nodes given, without slots): spread as srun spreads them.
  auto overN = resolveRankLayout(spec(10, 4, 0), {}, "this host");
  REQUIRE(overN);
  CHECK(overN->nodes == 4);
  CHECK(overN->ranks_per_node == 3);
  CHECK(overN->node_ranks == std::vector<int>{3, 3, 2, 2});
  CHECK(overN->source == "-n 10 over -N 4");
  auto spread = resolveRankLayout(spec(7, 0, 0), {-1, -1, -1}, "--hosts");
  REQUIRE(spread);
  CHECK(spread->nodes == 3);
  CHECK(spread->node_ranks == std::vector<int>{3, 2, 2});
  // -n 4 over 3 hosts ran 2 + 2 and left the third idle: now 2, 1, 1.
  auto all = resolveRankLayout(spec(4, 0, 0), {-1, -1, -1}, "--hosts");
  REQUIRE(all);
  CHECK(all->nodes == 3);
  CHECK(all->node_ranks == std::vector<int>{2, 1, 1});
  auto few = resolveRankLayout(spec(2, 0, 0), {-1, -1, -1}, "--hosts");
  REQUIRE(few);
  CHECK(few->nodes == 2);
  CHECK(few->ranks_per_node == 1);
  CHECK(few->node_ranks.empty());
}

TEST_CASE("-n over -N stays within the nodes' slots, and slots given to some nodes only are refused") {
  // srun's spread (3, 2) would put 3 ranks on a node of 2 slots: the excess goes on.
  auto within = resolveRankLayout(spec(5, 2, 0), {2, 4}, "--hosts");
  REQUIRE(within);
  CHECK(within->node_ranks == std::vector<int>{2, 3});
  CHECK(within->source == "-n 5 over -N 2 within the slots (--hosts)");
  CHECK(within->from_slots);
  auto roomy = resolveRankLayout(spec(5, 2, 0), {8, 8, 8}, "--hosts");  // the first 2 of 3 nodes
  REQUIRE(roomy);
  CHECK(roomy->node_ranks == std::vector<int>{3, 2});
  auto over = resolveRankLayout(spec(7, 2, 0), {3, 1}, "--hosts");
  REQUIRE_FALSE(over);
  CHECK_THAT(over.error().message, Catch::StartsWith("-n 7 is more than the 4 slots of the 2 node(s) in --hosts"));
  CHECK_FALSE(resolveRankLayout(spec(4, 2, 0), {1, 1, 4}, "--hosts"));  // -N 2: the first two only
  auto mixedN = resolveRankLayout(spec(4, 2, 0), {4, -1}, "--hosts", {"a", "b"});
  REQUIRE_FALSE(mixedN);
  CHECK_THAT(mixedN.error().message, Catch::Contains("(a has 4, b has none given)"));
  // Filling in order: a first node without slots cannot be filled; one past the ranks is unused.
  auto first = resolveRankLayout(spec(5, 0, 0), {-1, 1}, "--hosts", {"a", "b"});
  REQUIRE_FALSE(first);
  CHECK_THAT(first.error().message, Catch::Contains("(b has 1, a has none given)"));
  auto unused = resolveRankLayout(spec(3, 0, 0), {4, -1}, "--hosts");
  REQUIRE(unused);
  CHECK(unused->nodes == 1);
  // The slots filled are said as the nodes have them, not as the ranks placed.
  CHECK(resolveRankLayout(spec(4, 0, 0), {8, 8}, "--hosts")->source == "-n 4 filling slots=8 (--hosts)");
  CHECK(resolveRankLayout(spec(4, 0, 0), {2, 8}, "--hosts")->source == "-n 4 filling the slots in order (--hosts)");
}

TEST_CASE("the layout stays within the world size bound") {
  CHECK_FALSE(resolveRankLayout(spec(0, 100000, 4096), {}, "this host"));
  // Nodes of different counts: the message says the world size, not nodes x the largest count.
  std::vector<int> slots(245, 4096);
  slots.resize(1245, 1);
  auto big = resolveRankLayout(spec(0, 0, 0), slots, "--hostfile");
  REQUIRE_FALSE(big);
  CHECK_THAT(big.error().message, Catch::StartsWith("1245 nodes with 1004520 ranks in all is more than 1000000 ranks"));
  // -n with a partly filled last node counts that node's ranks, not a full node's.
  std::vector<int> many(300, -1);
  auto at_bound = resolveRankLayout(spec(1000000, 0, 4096), many, "--hosts");
  REQUIRE(at_bound);
  CHECK(at_bound->nodes == 245);
  CHECK(at_bound->last_node_ranks == 1000000 - 244 * 4096);
}

TEST_CASE("default: one rank per GPU on GPU nodes else 1 and torchrun's words") {
  JobSpec s;
  auto why = applyRankDefault(s, {4, 4}, {64, 64}, {"a", "b"});
  REQUIRE(why);
  CHECK(s.gpus_per_node == 4);
  CHECK(*why == "one per GPU (4)");
  JobSpec c;
  applyRankDefault(c, {0, 0}, {64, 64}, {"a", "b"});
  CHECK(c.procs_per_node == 1);
  CHECK(c.gpus_per_node == 0);
  JobSpec mixed;
  CHECK_FALSE(applyRankDefault(mixed, {4, 0}, {64, 64}, {"a", "b"}));
  JobSpec cpu;
  cpu.nproc_per_node_word = "cpu";
  applyRankDefault(cpu, {4, 4}, {64, 64}, {"a", "b"});
  CHECK(cpu.procs_per_node == 64);
  JobSpec autoNoGpu;
  autoNoGpu.nproc_per_node_word = "auto";
  applyRankDefault(autoNoGpu, {0}, {16}, {"a"});
  CHECK(autoNoGpu.procs_per_node == 16);
  JobSpec gpuNoGpu;
  gpuNoGpu.nproc_per_node_word = "gpu";
  CHECK_FALSE(applyRankDefault(gpuNoGpu, {0}, {16}, {"a"}));
}

// -p/-g are bounded on the command line; -n on this host alone, a hostfile's slots or -n over a
// few nodes were not: `tlaunch -n 1000000 -- true` started a million processes on one node.
TEST_CASE("no layout puts more ranks on a node than one node can run") {
  auto here = resolveRankLayout(spec(1'000'000, 0, 0), {}, "this host");
  REQUIRE_FALSE(here);
  CHECK(here.error().code == Errc::usage);
  CHECK(here.error().message.find("1000000 ranks on a node, more than the 4096") != std::string::npos);
  CHECK_FALSE(resolveRankLayout(spec(0, 0, 0), {100'000}, "--hostfile"));           // slots=100000
  CHECK_FALSE(resolveRankLayout(spec(200'000, 0, 0), {100'000, 100'000}, "--hostfile"));
  CHECK_FALSE(resolveRankLayout(spec(10'000, 2, 0), {}, "this host"));              // -n over -N 2
  CHECK(resolveRankLayout(spec(8192, 2, 0), {}, "this host"));                       // 4096 each: fine
}
