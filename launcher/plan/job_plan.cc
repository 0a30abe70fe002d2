#include "launcher/plan/job_plan.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "binding/fabric/ipv4_net.h"
#include "bootstrap/rank_env.h"
#include "binding/topology/topology_json.h"
#include "launcher/plan/plan_binding.h"
#include "launcher/plan/plan_network.h"
#include "launcher/plan/plan_preflight.h"
#include "launcher/plan/rank_layout.h"
#include "launcher/plan/rank_env_builder.h"
#include "tlaunch/diagnostics.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {

// A relative --chdir names a directory below the one tlaunch runs in, as srun's -D does; the
// daemons would otherwise resolve it against their own (the remote $HOME over ssh, srun's
// directory, / for warm daemons): a different directory on every kind of node.
std::string ranksDirectory(const std::string& chdir, const std::string& cwd) {
  if (chdir.empty()) return cwd;
  if (chdir.front() == '/' || cwd.empty()) return chdir;
  return cwd.back() == '/' ? cwd + chdir : cwd + "/" + chdir;
}

// The user's value of a job-wide variable (-x, --master-addr), which wins over tlaunch's.
const std::string* userValue(const PlanContext& ctx, const std::string& name) {
  auto it = ctx.user_env.find(name);
  return it == ctx.user_env.end() ? nullptr : &it->second.value;
}

// Each node's GPU list: the user's (--include/--exclude, CUDA_VISIBLE_DEVICES by index or UUID)
// inside the GPUs Slurm gave the job there, which its daemon reported.
Result<std::vector<GpuList>> nodeGpuLists(const std::vector<NodeReport>& nodes, const PlanContext& ctx,
                                          std::vector<std::string>& warnings) {
  std::vector<GpuList> lists;
  lists.reserve(nodes.size());
  std::vector<std::string> unresolved;  // nodes with GPUs whose UUIDs nobody named
  std::string by_uuid;                  // the list naming GPUs by UUID, for the warning
  for (size_t i = 0; i < nodes.size(); ++i) {
    GpuList user = i < ctx.node_gpus.size() && ctx.node_gpus[i].given() ? ctx.node_gpus[i]
                   : ctx.every_node_gpus                                 ? *ctx.every_node_gpus
                                                                         : GpuList{};
    if (const auto& topo = nodes[i].inventory.topology; topo && !user.uuids.empty()) {
      auto resolved = resolveGpuUuids(user, *topo);
      if (!resolved && !topo->gpus.empty()) {
        unresolved.push_back(nodes[i].name);
        by_uuid = user.source;
      }
      if (!resolved) {  // the user's value reaches the ranks as it is (from the base environment)
        lists.emplace_back();
        continue;
      }
      user = std::move(*resolved);
    }
    auto list = withinSlurmAllocation(user, nodes[i].inventory.slurm_gpus, nodes[i].name);
    if (!list) return tl::unexpected(list.error());
    lists.push_back(std::move(*list));
  }
  if (!unresolved.empty()) {
    const std::string names = unresolved.size() == 1
                                  ? "node " + unresolved.front()
                                  : std::to_string(unresolved.size()) + " nodes (" + joinSome(unresolved, 3) + ")";
    warnings.push_back(by_uuid + " goes unchanged to the ranks of " + names +
                       ", whose GPUs' UUIDs are unknown (neither hwloc nor the NVIDIA driver named them): local rank r "
                       "is bound to GPU r there");
  }
  return lists;
}

// No -n/-p/-g and no slots: one rank per GPU on GPU nodes, else 1 (or torchrun's word).
// A node's GPUs are those its GPU list leaves.
Result<std::string> rankDefault(JobSpec& spec, const std::vector<NodeReport>& nodes,
                                const std::vector<GpuList>& gpu_lists) {
  std::vector<int> gpus, cores;
  std::vector<std::string> names;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeReport& n = nodes[i];
    int g = 0, c = 0;
    if (const auto& topo = n.inventory.topology) {
        g = static_cast<int>(topo->gpus.size());
        // A node without GPUs ignores CUDA_VISIBLE_DEVICES (a stray one of the user's shell), not
        // an --include/--exclude list naming its GPUs: chooseNodeGpus refuses that.
        if (gpu_lists[i].given() && (g > 0 || gpu_lists[i].source.empty())) {
          auto chosen = chooseNodeGpus(*topo, gpu_lists[i], n.name);
          if (!chosen) return tl::unexpected(chosen.error());
          g = static_cast<int>(chosen->size());
        }
        for (const auto& numa : topo->numa_nodes) c += static_cast<int>(numa.cores.size());
      }
    gpus.push_back(g);
    cores.push_back(c);
    names.push_back(n.name);
  }
  return applyRankDefault(spec, gpus, cores, names);
}

// Two of the job's nodes that are one machine (an alias and an address, `localhost` and the host
// name): each would plan every GPU and core of it, twice. Known by the kernel's boot id, the host
// name and the pid namespace: a namespace per node (the test cluster) has a host name of its own,
// and containers sharing the host's name and network (hostNetwork pods, each given its own GPUs)
// have pid namespaces of their own.
std::optional<Error> oneMachineTwice(const std::vector<NodeReport>& nodes) {
  std::map<std::string, const NodeReport*> seen;
  for (const NodeReport& n : nodes) {
    const NodeInventory& inv = n.inventory;
    if (inv.boot_id.empty() || inv.hostname.empty()) continue;  // an older daemon: nothing to compare
    const auto [it, fresh] = seen.emplace(inv.boot_id + "\n" + inv.hostname + "\n" + inv.pid_ns, &n);
    if (!fresh)
      return diagnosticError(Errc::usage, "one-machine-twice",
                             {{"first", it->second->name}, {"second", n.name}, {"host", inv.hostname}});
  }
  return std::nullopt;
}

// More ranks than the CPUs (hardware threads) the node lets them run on: ranks that wait by
// polling (Open MPI's progress loop) then wait for each other's time slices.
// `ranks`: those of the node, or of every node when all are this host (simulated nodes share its
// CPUs: 3 nodes of 2 ranks on 2 cores are 6 ranks on 2 cores).
bool oversubscribed(const NodeReport& node, size_t ranks) {
  const auto& topo = node.inventory.topology;
  if (!topo) return false;
  size_t pus = 0;
  for (const auto& numa : topo->numa_nodes)
    for (const auto& core : numa.cores) pus += core.size();
  return pus > 0 && ranks > pus;
}

// Every rank's variables, from the one builder. Job-wide names the user set (-x MASTER_ADDR=...)
// keep the user's value, from base_env; per-rank ones cannot be exported (forwardEnvironment
// refuses them).
// Each PU's (OS index's) core, numbered in the topology's order; -1 for PUs it does not list.
std::vector<int> coreOfPu(const TopologySnapshot& topo) {
  std::vector<int> out;
  int next = 0;
  for (const auto& numa : topo.numa_nodes)
    for (const auto& core : numa.cores) {
      for (int pu : core) {
        if (pu < 0) continue;
        if (static_cast<size_t>(pu) >= out.size()) out.resize(static_cast<size_t>(pu) + 1, -1);
        out[static_cast<size_t>(pu)] = next;
      }
      ++next;
    }
  return out;
}

// How many cores the CPUs touch: hardware threads of one core count once, as OMP_NUM_THREADS
// should (PyTorch's own default is the physical cores). A CPU the topology does not list counts as a core.
size_t coresOf(const std::vector<int>& cpus, const std::vector<int>& core_of_pu) {
  std::set<int> cores;
  size_t unknown = 0;
  for (int cpu : cpus) {
    const int core = cpu >= 0 && static_cast<size_t>(cpu) < core_of_pu.size() ? core_of_pu[static_cast<size_t>(cpu)] : -1;
    if (core < 0) ++unknown;
    else cores.insert(core);
  }
  return cores.size() + unknown;
}

// `as_planned`: take the binding as applied where the topology is no live machine's (--offline
// --topology-xml: the plan shows what the nodes will get, OMP_NUM_THREADS included).
void buildEnvironments(const NetworkChoice* network, const std::vector<NodeReport>& nodes, const PlanContext& ctx,
                       bool as_planned, JobPlan& plan) {
  const JobIdentity job{ctx.job_id, plan.master_addr, plan.master_port, ctx.run_id, ctx.restart_count,
                       ctx.max_restarts};
  UserEnv user = ctx.user_env;  // every name the user set, with its value
  for (const auto& name : ctx.user_set)
    if (!user.count(name)) user[name] = {envValue(ctx.base_env, name), "environment"};
  const int num_nodes = static_cast<int>(plan.nodes.size());
  RankEnvInput in;  // filled once per node; per rank only its identity and binding change
  in.job = job;
  in.network = network;
  in.network_unasked = plan.network_unasked;
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    NodeLaunch& nl = plan.nodes[i];
    const int here = static_cast<int>(nl.ranks.size());
    in.node = i;
    in.gpu_rank = i < plan.node_gpus.size() && plan.node_gpus[i].gpu_ranks;
    in.visible_gpus = i < plan.node_gpus.size() ? plan.node_gpus[i].visible_gpus : std::string();
    in.rocr_visible = i < plan.node_gpus.size() ? plan.node_gpus[i].rocr_visible : std::string();
    in.cwd = nl.cwd;
    in.pmix = nl.pmix.enabled;
    in.pmix_tcp_if_include = nl.pmix.tcp_if_include;
    in.oversubscribed = nl.pmix.oversubscribed;
    // How many ranks of the node each CPU is bound to: a rank's CPUs are its own (its
    // OMP_NUM_THREADS) only where the binding is applied and no other rank shares them.
    std::map<int, int> ranks_on_cpu;
    std::vector<int> core_of_pu;
    const bool bound = nl.apply_binding || as_planned;
    if (bound) {
      for (const auto& r : nl.ranks)
        for (int cpu : r.cpus) ++ranks_on_cpu[cpu];
      if (i < nodes.size() && nodes[i].inventory.topology) core_of_pu = coreOfPu(*nodes[i].inventory.topology);
    }
    for (auto& r : nl.ranks) {
      in.identity = {r.rank, r.local_rank, plan.world_size, here, static_cast<int>(i), num_nodes};
      const auto row = static_cast<size_t>(r.rank);  // the manifest holds every rank, by rank
      in.binding = row < plan.manifest.size() && plan.manifest[row].rank == r.rank ? &plan.manifest[row].binding : nullptr;
      const bool own = bound && !r.cpus.empty() &&
                       std::all_of(r.cpus.begin(), r.cpus.end(), [&](int cpu) { return ranks_on_cpu[cpu] == 1; });
      in.own_cpus = own ? coresOf(r.cpus, core_of_pu) : 0;
      r.env = buildRankEnv(in, user);
    }
  }
}

}  // namespace

Result<JobPlan> makePlan(const JobSpec& input, const std::vector<NodeReport>& nodes, const PlanContext& ctx) {
  if (nodes.empty()) return fail(Errc::internal, "no nodes to plan for");
  if (!ctx.simulated_nodes)
    if (auto twice = oneMachineTwice(nodes)) return tl::unexpected(*twice);
  JobSpec spec = input;
  JobPlan plan;
  plan.job_id = ctx.job_id;
  plan.ranks_source = ctx.ranks_source;
  auto gpu_lists = nodeGpuLists(nodes, ctx, plan.warnings);
  if (!gpu_lists) return tl::unexpected(gpu_lists.error());
  if (spec.ranksPerNode() == 0) {
    auto why = rankDefault(spec, nodes, *gpu_lists);
    if (!why) return tl::unexpected(why.error());
    plan.ranks_source = *why;
    // A hostfile's max_slots is a hard limit (Open MPI's), for the count decided here too.
    for (size_t i = 0; i < nodes.size() && i < ctx.node_max_slots.size(); ++i) {
      const int here = i < spec.ranks_by_node.size() ? spec.ranks_by_node[i] : spec.ranksPerNode();
      if (const int cap = ctx.node_max_slots[i]; cap > 0 && here > cap)
        return diagnostic(Errc::usage, "max-slots-short-default",
                          {{"node", nodes[i].name}, {"max", std::to_string(cap)},
                           {"ranks", std::to_string(here)}, {"source", *why}});
    }
  }
  plan.ranks_per_node = spec.ranksPerNode();
  const int num_nodes = static_cast<int>(nodes.size());
  // Each node's count (rank_layout.h): its own where they differ, else ranks_per_node, and with
  // -n the last node may run fewer.
  std::vector<int> counts = spec.ranks_by_node;
  if (counts.empty()) {
    counts.assign(static_cast<size_t>(num_nodes), plan.ranks_per_node);
    if (spec.total_ranks > 0) {
      const int last = spec.total_ranks - (num_nodes - 1) * plan.ranks_per_node;
      if (last < 1 || last > plan.ranks_per_node)
        return fail(Errc::usage, "-n " + std::to_string(spec.total_ranks) + " does not fit " +
                                     std::to_string(num_nodes) + " node(s) of " + std::to_string(plan.ranks_per_node) +
                                     " ranks");
      counts.back() = last;
    }
  } else if (counts.size() != static_cast<size_t>(num_nodes)) {
    return fail(Errc::internal, "the rank layout names " + std::to_string(counts.size()) + " nodes' counts for " +
                                    std::to_string(num_nodes) + " nodes");
  }
  plan.world_size = std::accumulate(counts.begin(), counts.end(), 0);
  for (size_t i = 0; i < counts.size() && i < ctx.node_max_slots.size(); ++i)  // Open MPI's hard limit
    if (const int cap = ctx.node_max_slots[i]; cap > 0 && counts[i] > cap)
      return diagnostic(Errc::usage, "max-slots-short",
                        {{"node", nodes[i].name}, {"max", std::to_string(cap)}, {"asked", std::to_string(counts[i])}});
  if (spec.stdin_rank >= plan.world_size)
    return fail(Errc::usage,
                "--stdin " + std::to_string(spec.stdin_rank) + ": the job has ranks 0-" +
                    std::to_string(plan.world_size - 1),
                "give a rank of the job, or --stdin none");
  const NodeReport& head = nodes.front();
  const std::string* user_addr = userValue(ctx, "MASTER_ADDR");
  const std::string* user_port = userValue(ctx, "MASTER_PORT");
  plan.master_addr = user_addr ? *user_addr : head.control_ip;
  plan.network_unasked = ctx.network_unasked;
  plan.master_port = user_port ? std::atoi(user_port->c_str()) : head.inventory.free_port;
  if (plan.master_port <= 0 && !spec.offline && !user_port) {
    return fail(Errc::io, "node " + head.name + " found no free TCP port for MASTER_PORT");
  }
  if (user_port && !user_addr && head.inventory.master_port_in_use) {
    Error taken = diagnosticError(Errc::resources, "master-port-in-use",
                                  {{"node", head.name}, {"port", *user_port}, {"source", ctx.user_env.at("MASTER_PORT").source}});
    if (!spec.dry_run) return tl::unexpected(std::move(taken));
    plan.warnings.push_back(taken.message + " (" + taken.hint + ")");  // --dry-run: the plan is still worth seeing
  }

  // The network first, so that preflight knows the job's data ports; preflight's verdict first.
  auto network = chooseJobNetwork(spec, nodes, ctx);
  const NetworkChoice* chosen = network && *network ? &**network : nullptr;
  if (auto p = evaluatePreflight(spec, nodes, plan, ctx.measured_preflight, chosen); !p)
    return tl::unexpected(p.error());
  if (!network) return tl::unexpected(network.error());
  if (*network) {
    if (!user_addr) plan.master_addr = (*network)->master_addr;
    // --net tcp: the user chose plain sockets (often because the fabric is broken): NCCL, UCX
    // and Open MPI must not take the HCAs (or EFA) on their own either. Without RDMA devices
    // there is nothing to keep them off, and a NCCL net plugin there (GCP's TCPX) stays theirs.
    if (spec.net_mode == "tcp") {
      (*network)->rdma = false;
      const RdmaPresence rdma = rdmaPresence(nodes);
      (*network)->sockets_only = rdma.with > 0 || rdma.efa > 0;
    }
  }
  if (user_addr && *network) {
    // The user's rendezvous address off the job's network: TCPStore traffic takes another route.
    auto addr = parseIpv4(*user_addr);
    auto net = parseCidr((*network)->cidr);
    if (addr && net && !contains(*net, *addr))
      plan.warnings.push_back("MASTER_ADDR " + *user_addr + " is not on the job's network " + (*network)->cidr +
                              " (rank 0's address there is " + (*network)->master_addr + ")");
  }
  if (!ctx.unused_master_env.empty())
    plan.warnings.push_back(joinStrings(ctx.unused_master_env) +
                            " in tlaunch's environment not used: the ranks' rendezvous is rank 0's address on the "
                            "job's network; to use yours, pass it with -x (e.g. -x MASTER_ADDR, -x NCCL_COMM_ID) or "
                            "--master-addr");
  for (const auto& twice : ctx.overridden_exports)
    plan.warnings.push_back("exported twice with different values: " + twice +
                            " (--master-addr, --master-port and --mca win over -x, a later -x over an earlier one)");
  if (spec.net_mode == "tcp") {
    const RdmaPresence rdma = rdmaPresence(nodes);
    // EFA-only nodes count too: NCCL_NET=Socket keeps NCCL off its aws-ofi-nccl plugin.
    std::vector<std::string> with = rdma.with_names;
    with.insert(with.end(), rdma.efa_names.begin(), rdma.efa_names.end());
    if (!with.empty()) {
      std::string names;
      for (size_t i = 0; i < with.size() && i < 4; ++i) names += (i ? ", " : "") + with[i];
      if (with.size() > 4) names += ", ...";
      plan.warnings.push_back("--net tcp: " + std::to_string(with.size()) + " node(s) have RDMA devices (" + names +
                              ") that this job does not use; NCCL (NCCL_IB_DISABLE=1), UCX and Open MPI run over TCP sockets");
    }
  }
  // Ranks are node-major: node i's first rank is the sum of the counts before it.
  std::vector<int> first_rank(counts.size(), 0);
  std::partial_sum(counts.begin(), counts.end() - 1, first_rank.begin() + 1);
  for (const auto& n : nodes) {
    NodeLaunch nl;
    nl.job_id = ctx.job_id;
    nl.node_name = n.name;
    nl.argv = spec.argv;
    nl.cwd = ranksDirectory(spec.chdir, ctx.cwd);
    nl.base_env = ctx.base_env;
    nl.stdin_rank = spec.stdin_rank;
    nl.kill_timeout_ms = spec.kill_timeout_s * 1000;
    nl.umask = ctx.umask;
    nl.nofile = ctx.nofile;
    nl.stdout_terminal = spec.stdout_terminal;
    for (int l = 0; l < counts[static_cast<size_t>(n.index)]; ++l) {
      RankSpec r;
      r.rank = first_rank[static_cast<size_t>(n.index)] + l;
      r.local_rank = l;
      nl.ranks.push_back(std::move(r));
    }
    plan.nodes.push_back(std::move(nl));
  }
  auto reach = reachabilityTargets(spec, nodes, *network);
  for (size_t i = 0; i < reach.size(); ++i) plan.nodes[i].reach = std::move(reach[i]);
  if (auto b = planBindings(spec, nodes, ctx, *gpu_lists, *network ? &**network : nullptr, plan); !b)
    return tl::unexpected(b.error());
  if (spec.pmix) {
    PmixSpec pmix;
    pmix.enabled = true;
    pmix.nspace = "tlaunch." + ctx.job_id;
    for (const auto& nl : plan.nodes) {
      pmix.node_names.push_back(nl.node_name);
      std::vector<int> ranks;
      for (const auto& r : nl.ranks) ranks.push_back(r.rank);
      pmix.ranks_by_node.push_back(std::move(ranks));
    }
    // MPI's TCP traffic follows the network choice; simulated nodes on this host talk over lo.
    pmix.tcp_if_include = *network ? (*network)->cidr : plan.network_unasked ? "" : "lo";
    // Each node gets its place; the geometry is the plan's, sent once (JobPlan::pmix).
    size_t on_this_host = 0;  // --launcher local: every node's ranks run on this host's CPUs
    if (ctx.simulated_nodes)
      for (const auto& nl : plan.nodes) on_this_host += nl.ranks.size();
    for (size_t i = 0; i < plan.nodes.size(); ++i) {
      plan.nodes[i].pmix.enabled = true;
      plan.nodes[i].pmix.tcp_if_include = pmix.tcp_if_include;
      plan.nodes[i].pmix.this_node = static_cast<int>(i);
      plan.nodes[i].pmix.oversubscribed =
          oversubscribed(nodes[i], on_this_host > 0 ? on_this_host : plan.nodes[i].ranks.size());
    }
    plan.pmix = std::move(pmix);
  }
  const auto order = ctx.user_env.find("CUDA_DEVICE_ORDER");
  if (order != ctx.user_env.end() && order->second.value != "PCI_BUS_ID" &&
      std::any_of(plan.node_gpus.begin(), plan.node_gpus.end(), [](const JobPlan::NodeGpus& g) { return g.gpu_ranks; }))
    plan.warnings.push_back("CUDA_DEVICE_ORDER=" + order->second.value + " (" + order->second.source +
                            ") numbers the GPUs otherwise than the plan, which binds LOCAL_RANK r to the r-th GPU in PCI "
                            "bus order with its cores and HCA: ranks may run far from their GPU; unset it");
  // What the user exported (-x, --mca, --master-*, DeepSpeed's env files), for --dry-run.
  for (const auto& [name, v] : ctx.user_env)
    if (v.source != "environment") plan.exports.push_back({name, v.value, v.source});
  if (const auto& g = ctx.gpu_list_export; g && g->second != "environment")
    plan.exports.push_back({"CUDA_VISIBLE_DEVICES", g->first, g->second + "; each node's GPU list: set per node"});
  if (*network) applyNetworkEnv(**network, ctx, nodes, plan);
  buildEnvironments(*network ? &**network : nullptr, nodes, ctx, spec.offline && spec.bind != "none", plan);
  return plan;
}

}  // namespace tlaunch
