#include "launcher/launcher_choice.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "launcher/cli_values.h"
#include "launcher/hostlist.h"
#include "launcher/listen_address.h"
#include "launcher/local_starter.h"
#include "launcher/node_source.h"
#include "launcher/slurm_keeper_step.h"
#include "launcher/slurm_starter.h"
#include "launcher/split_starter.h"
#include "launcher/ssh_starter.h"
#include "launcher/warm_starter.h"
#include "launcher/text_file.h"
#include "launcher/this_host.h"
#include "tlaunch/diagnostics.h"
#include "tlaunch/strings.h"

namespace tlaunch {

namespace {
// --nnodes as the user wrote it: "3", or "2:3" (elastic).
std::string nnodesAsGiven(const JobSpec& spec) {
  return spec.min_nodes == spec.nodes ? std::to_string(spec.nodes)
                                      : std::to_string(spec.min_nodes) + ":" + std::to_string(spec.nodes);
}

std::vector<std::string> netIfOf(const HostEntry& h) {
  std::vector<std::string> out;
  auto it = h.attrs.find("net_if");
  if (it == h.attrs.end()) return out;
  size_t start = 0;
  while (start <= it->second.size()) {
    size_t comma = it->second.find(',', start);
    out.push_back(it->second.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// For --keep-daemons 0 with a registry that cannot be opened: its own hint would be "pass
// --keep-daemons 0".
constexpr std::string_view kNoRegistryHint =
    "fix it as said, or run without --keep-daemons (the warm daemons end by themselves when their time is up)";

// The user's warm daemons, where this launch makes or may reuse some: --keep-daemons N creates
// the secret (and fails loudly when it cannot); otherwise only where one of the job's nodes has
// a keeper (warm daemons turn tree spawn off: no job should lose it for another job's nodes).
// `slurm_job`: the allocation a usable keeper must belong to ("" over ssh); `slurm_step`: the
// settings of its keeper step (keeperStepSettings).
Result<std::optional<WarmRegistry>> warmRegistryFor(const JobSpec& spec, const std::map<std::string, std::string>& env,
                                                    const std::vector<NodeTarget>& nodes, const std::string& slurm_job,
                                                    const std::string& slurm_step = "") {
  const bool keeping = spec.keep_daemons_s > 0;
  auto registry = WarmRegistry::open(env, keeping);
  if (!registry) {
    if (spec.keep_daemons_s == 0)
      return fail(registry.error().code, registry.error().message, std::string(kNoRegistryHint));
    if (keeping) return tl::unexpected(registry.error());
    return std::optional<WarmRegistry>{};  // never asked for: a broken cache dir is not this job's problem
  }
  if (!keeping) {
    const long long now = epochSeconds();
    const auto kept = registry->secret().empty() ? std::vector<WarmEntry>{} : registry->all(now);
    const bool any = std::any_of(nodes.begin(), nodes.end(), [&](const NodeTarget& n) {
      return WarmRegistry::newest(kept, n.name, [&](const WarmEntry& e) { return e.mayServe(slurm_job, slurm_step); })
          .has_value();
    });
    if (!any) return std::optional<WarmRegistry>{};
  }
  return std::optional<WarmRegistry>{std::move(*registry)};
}

// A host's GPU list from --include/--exclude (with what --exclude left of its slot count).
GpuList gpuListOf(const HostEntry& host) {
  GpuList list(host.only_slots, host.excluded_slots);
  list.only_from_exclude = host.only_slots_from_exclude;
  return list;
}

}  // namespace

namespace {

// Where the daemons reach this frontend: the route toward the first node that resolves and is
// not reached over loopback. tlaunch's own host among the nodes (Debian's /etc/hosts names it
// 127.0.1.1) must not make every other node connect to 127.0.0.1, and a first name that does not
// resolve must not stop the others: its starter names it with every other failure. Loopback
// where every node is this host; the first node's error where none resolves.
Result<std::string> frontendAddressFor(const std::vector<NodeTarget>& nodes) {
  std::optional<Result<std::string>> first, loopback;
  for (const auto& n : nodes) {
    auto addr = sourceAddressToward(n.name);
    if (addr && !addr->starts_with("127.")) return addr;
    if (addr && !loopback) loopback = addr;
    if (!first) first = addr;
  }
  return loopback ? *loopback : *first;
}

}  // namespace

LauncherKind launcherForHostsInAllocation(const std::vector<HostEntry>& hosts, const JobSpec& spec,
                                          const std::map<std::string, std::string>& env,
                                          std::vector<std::string>& notes) {
  auto allocation = hostsFromSlurmEnv(env, false);
  if (!allocation) return LauncherKind::ssh;
  std::vector<std::string> outside;
  bool ssh_only = !spec.ssh_flags_given.empty();  // the user's ssh options ask for ssh
  // A name's first label; an IPv4 address has none to compare.
  const auto shortName = [](const std::string& name) {
    const bool address = name.find_first_not_of("0123456789.") == std::string::npos;
    return address ? name : name.substr(0, name.find('.'));
  };
  for (const auto& h : hosts) {
    if (h.attrs.contains("user")) ssh_only = true;  // user@host: a login only ssh can use
    const bool in = std::any_of(allocation->begin(), allocation->end(), [&](const HostEntry& a) { return a.name == h.name; });
    // node1.cluster.example for Slurm's node1: the node is the allocation's, but srun knows it
    // by Slurm's name only; ssh as given, and nothing to warn of.
    const bool by_short_name = !in && std::any_of(allocation->begin(), allocation->end(), [&](const HostEntry& a) {
      return shortName(a.name) == shortName(h.name);
    });
    if (by_short_name) ssh_only = true;
    else if (!in) outside.push_back(h.name);
  }
  if (!outside.empty()) {
    const auto job = env.find("SLURM_JOB_ID");
    notes.push_back("warning: " + compressHostlist(outside) + " " + (outside.size() == 1 ? "is" : "are") +
                    " not in Slurm allocation " + (job != env.end() ? job->second : std::string("?")) +
                    ": the daemons start over ssh, outside Slurm's control (its GPUs and cgroups do not apply)");
    return LauncherKind::ssh;
  }
  if (ssh_only) return LauncherKind::ssh;
  return LauncherKind::slurm;
}

Result<LauncherChoice> chooseLauncher(const JobSpec& spec, const std::map<std::string, std::string>& env,
                                      bool resolve_only) {
  NodeSourceOptions src;
  src.hosts = spec.hosts;
  src.include = spec.include;
  src.exclude = spec.exclude;
  if (!spec.hostfile.empty()) {
    auto content = spec.hostfile_content ? Result<std::string>(*spec.hostfile_content)
                                         : readTextFile(spec.hostfile, "hostfile");
    if (!content) return tl::unexpected(content.error());
    src.hostfile_name = spec.hostfile;
    src.hostfile_content = std::move(*content);
  }
  src.use_slurm_env = spec.launcher != LauncherKind::local && spec.launcher != LauncherKind::ssh;
  // In an allocation SLURM_TASKS_PER_NODE is a CPU count or another step's task count, not a
  // cap on our ranks per node (a script's --ntasks-per-node=1 must not block tlaunch -g 8).
  src.slurm_tasks_as_slots = false;
  auto hosts = resolveNodes(src, env);
  if (!hosts) return tl::unexpected(hosts.error());
  // Nodes a restart left out (launcher/restart_policy.h) are no longer candidates.
  const auto dropped = [&spec](const std::string& name) {
    return std::find(spec.dropped_nodes.begin(), spec.dropped_nodes.end(), name) != spec.dropped_nodes.end();
  };
  const bool hosts_given = !hosts->empty();
  std::erase_if(*hosts, [&](const HostEntry& h) { return dropped(h.name); });
  // Not the counted simulated nodes (local0, ...) nor "no nodes given" in their place.
  if (hosts_given && hosts->empty())
    return diagnostic(Errc::usage, "nodes-all-dropped", {{"names", compressHostlist(spec.dropped_nodes)}});
  JobSpec sized = spec;  // --nnodes MIN:MAX given fewer than MAX nodes: as many as there are
  if (spec.min_nodes > 0 && !hosts->empty() && static_cast<int>(hosts->size()) < spec.nodes &&
      static_cast<int>(hosts->size()) >= std::min(spec.min_nodes, spec.nodes))
    sized.nodes = static_cast<int>(hosts->size());
  if (spec.min_nodes > 0 && !hosts->empty() && static_cast<int>(hosts->size()) < spec.min_nodes)
    return diagnostic(Errc::usage, "nnodes-short",
                      {{"given", nnodesAsGiven(spec)},
                       {"min", std::to_string(spec.min_nodes)},
                       {"available", std::to_string(hosts->size())},
                       {"names", listNames(*hosts)}});
  const NodeOrigin origin = nodeOrigin(src, env);
  std::vector<std::string> notes;
  if (origin == NodeOrigin::slurm) {
    // A heterogeneous batch job's script sees its first component's nodes only.
    if (auto components = slurmHetComponents(env))
      notes.push_back("this Slurm job is heterogeneous (" + *components + "): tlaunch runs on its first component, as " +
                      "srun does without --het-group; name the nodes with --hosts to use others");
  }
  std::vector<int> slots;
  for (const auto& h : *hosts) slots.push_back(usableSlots(h));
  // A GPU list (--include 'n1:0,1@n2') counts a node's chosen GPUs, not slots it was given:
  // beside a node with neither, each node runs the GPU default's count (one per chosen GPU,
  // from the inventories), not a mix of slots and none.
  const auto nothing_given = [](const HostEntry& h) { return h.slots <= 0 && h.only_slots.empty(); };
  if (std::any_of(hosts->begin(), hosts->end(), nothing_given))
    for (size_t i = 0; i < hosts->size(); ++i)
      if ((*hosts)[i].slots <= 0 && !(*hosts)[i].only_slots.empty()) slots[i] = -1;
  std::string slots_origin = describeOrigin(origin);
  const bool gpu_lists =
      std::any_of(hosts->begin(), hosts->end(), [](const HostEntry& h) { return !h.only_slots.empty(); });
  if (origin == NodeOrigin::slurm && !gpu_lists) {
    // The allocation's --ntasks-per-node, when it was given, is its slots (for the count only:
    // it does not cap -p/-g, see slurm_tasks_as_slots above) -- but not 1: that is the
    // torchrun-style allocation of one launcher per node, whose ranks are one per GPU (README).
    // Your GPU lists (--include/--exclude) say the count more precisely than the allocation.
    // Slurm writes "8", or "8(x3),4" when nodes differ: the first count, if it is a sane one.
    auto it = env.find("SLURM_NTASKS_PER_NODE");
    int per_node = 0;
    if (it != env.end()) {
      const char* s = it->second.c_str();
      const char* stop = s + it->second.size();
      const auto [end, ec] = std::from_chars(s, stop, per_node);
      if (ec != std::errc() || end == s || (end != stop && *end != '(') || per_node < 2 || per_node > kMaxRanksPerNode)
        per_node = 0;
    }
    if (per_node > 0) {
      slots.assign(slots.size(), per_node);
      slots_origin = "SLURM_NTASKS_PER_NODE";
    } else if (const auto tasks = slurmTasksGiven(env); !tasks.empty()) {
      // `salloc -n 4`, `#SBATCH --ntasks=64`: as many ranks as srun (and mpirun) would run there.
      for (size_t i = 0; i < hosts->size(); ++i)
        if (const auto t = tasks.find((*hosts)[i].name); t != tasks.end()) slots[i] = t->second;
      slots_origin = "the allocation's tasks (SLURM_NTASKS=" + env.at("SLURM_NTASKS") + ")";
    }
  }
  if (gpu_lists) slots_origin += " after --include/--exclude's GPU lists";
  std::vector<std::string> names;
  for (const auto& h : *hosts) names.push_back(h.name);
  auto layout = resolveRankLayout(sized, slots, slots_origin, names);
  if (!layout) return tl::unexpected(layout.error());
  const int want_nodes = layout->nodes;
  // Counts that differ between nodes come from their slots (never above them) or from nodes
  // without slots; their max_slots are checked when planning.
  const int uniform_count = layout->node_ranks.empty() ? layout->ranks_per_node : 0;
  // -n without -N made the node count: say so when the hosts are short, not "-N".
  if (spec.total_ranks > 0 && spec.nodes == 0 && spec.ranksPerNode() > 0 && !hosts->empty() &&
      static_cast<size_t>(want_nodes) > hosts->size()) {
    return diagnostic(Errc::usage, "ranks-need-more-nodes",
                      {{"total", std::to_string(spec.total_ranks)},
                       {"flag", spec.gpus_per_node > 0 ? "-g" : "-p"},
                       {"per_node", std::to_string(spec.ranksPerNode())},
                       {"needed", std::to_string(want_nodes)},
                       {"available", std::to_string(hosts->size())},
                       {"names", listNames(*hosts)},
                       {"most", std::to_string(static_cast<long long>(hosts->size()) * spec.ranksPerNode())}});
  }

  LauncherKind kind = spec.launcher;
  if (kind == LauncherKind::automatic) {
    kind = origin == NodeOrigin::slurm                                      ? LauncherKind::slurm
           : (origin == NodeOrigin::hosts || origin == NodeOrigin::hostfile) ? LauncherKind::ssh
                                                                             : LauncherKind::local;
    if (kind == LauncherKind::ssh && insideSlurmAllocation(env) && !resolve_only)
      kind = launcherForHostsInAllocation(*hosts, spec, env, notes);
  }
  // Flags of a launcher this job does not use would do nothing: refused, not ignored.
  const char* kind_name = kind == LauncherKind::slurm ? "srun" : kind == LauncherKind::ssh ? "ssh" : "the local launcher";
  if (!spec.slurm_args.empty() && kind != LauncherKind::slurm)
    return diagnostic(Errc::usage, "flag-of-other-launcher",
                      {{"flag", "--slurm-args"}, {"for", "srun"}, {"launcher", kind_name}});
  if (!spec.slurm_args.empty())
    if (auto ok = checkSlurmArgs(spec.slurm_args); !ok) return tl::unexpected(ok.error());
  if (!spec.ssh_flags_given.empty() && kind != LauncherKind::ssh)
    return diagnostic(Errc::usage, "flag-of-other-launcher",
                      {{"flag", spec.ssh_flags_given.front()}, {"for", "ssh"}, {"launcher", kind_name}});
  // Warm daemons replace ssh sessions, or srun steps inside an allocation (which they live in);
  // a local fork has nothing as slow to save, and srun outside an allocation makes a new one.
  const bool can_keep = kind == LauncherKind::ssh || (kind == LauncherKind::slurm && insideSlurmAllocation(env));
  if (spec.keep_daemons_s > 0 && !can_keep && !resolve_only)
    return diagnostic(Errc::usage, "keep-daemons-needs-ssh",
                      {{"launcher", kind == LauncherKind::slurm ? "srun outside a Slurm allocation" : "the local launcher"}});
  LauncherChoice choice;
  choice.kind = kind;
  choice.layout = *layout;
  choice.notes = std::move(notes);
  if (kind == LauncherKind::local) {
    // Each simulated node is a daemon process on this host: beyond this it is a fork bomb, not a
    // test, whether the nodes are counted (-N) or named (--hosts, --hostfile).
    constexpr int kMaxSimulatedNodes = 1024;
    auto tooMany = [&](size_t n) {
      return diagnostic(Errc::usage, "simulated-nodes-too-many",
                        {{"count", std::to_string(n)}, {"max", std::to_string(kMaxSimulatedNodes)}});
    };
    std::vector<HostEntry> chosen;
    if (hosts->empty()) {
      // Simulated nodes on this host: local0, local1, ...
      int n = want_nodes > 0 ? want_nodes : 1;
      if (spec.launcher != LauncherKind::local && n > 1)
        return diagnostic(Errc::usage, "nodes-none-given",
                          {{"flag", spec.min_nodes > 0 ? "--nnodes" : "-N"}, {"count", std::to_string(n)}});
      if (n > kMaxSimulatedNodes) return tooMany(static_cast<size_t>(n));
      // Counted nodes are local0..local<n-1>, as if a hostfile named exactly those: a node a
      // restart dropped is not replaced (name a spare: --hosts local0,local1,local2 -N 2), and
      // the job goes on with the rest where --nnodes MIN:MAX allows, as on real nodes.
      for (int i = 0; i < n; ++i) {
        std::string name = "local" + std::to_string(i);
        if (!dropped(name)) chosen.push_back(HostEntry{std::move(name), -1, {}, {}, {}, false});
      }
      if (const int left = static_cast<int>(chosen.size()); left < n) {
        if (spec.min_nodes <= 0 || left < spec.min_nodes || left == 0)
          return spec.min_nodes > 0 ? diagnostic(Errc::usage, "nnodes-short",
                                                 {{"given", nnodesAsGiven(spec)},
                                                  {"min", std::to_string(spec.min_nodes)},
                                                  {"available", std::to_string(left)},
                                                  {"names", listNames(chosen)}})
                                    : diagnostic(Errc::usage, "nodes-short",
                                                 {{"asked", std::to_string(n)},
                                                  {"available", std::to_string(left)},
                                                  {"names", listNames(chosen)}});
        JobSpec fewer = sized;
        fewer.nodes = left;
        auto shrunk = resolveRankLayout(fewer, slots, slots_origin, names);
        if (!shrunk) return tl::unexpected(shrunk.error());
        choice.layout = *shrunk;
      }
    } else {
      auto sel = selectNodes(*hosts, want_nodes, uniform_count, layout->source, layout->last_node_ranks);
      if (!sel) return tl::unexpected(sel.error());
      chosen = std::move(*sel);
      if (chosen.size() > static_cast<size_t>(kMaxSimulatedNodes)) return tooMany(chosen.size());
    }
    for (size_t i = 0; i < chosen.size(); ++i) {
      choice.nodes.push_back({static_cast<int>(i), chosen[i].name, {}, netIfOf(chosen[i])});
      choice.node_slots.push_back(usableSlots(chosen[i]));
      choice.node_max_slots.push_back(maxSlots(chosen[i]));
      choice.node_gpus.push_back(gpuListOf(chosen[i]));
    }
    choice.starter = std::make_unique<LocalStarter>();
    choice.listen_address = "127.0.0.1";
    choice.loopback_only = true;
    return choice;
  }
  if (kind == LauncherKind::ssh && hosts->empty())
    return diagnostic(Errc::usage, "ssh-needs-nodes");
  std::vector<HostEntry> chosen;
  if (kind == LauncherKind::slurm && hosts->empty()) {
    if (!insideSlurmAllocation(env) && want_nodes <= 0)
      return diagnostic(Errc::usage, "slurm-needs-node-count");
  } else {
    auto sel = selectNodes(*hosts, want_nodes, uniform_count, layout->source, layout->last_node_ranks);
    if (!sel) return tl::unexpected(sel.error());
    chosen = std::move(*sel);
  }
  for (size_t i = 0; i < chosen.size(); ++i) {
    choice.nodes.push_back({static_cast<int>(i), chosen[i].name, sshDestination(chosen[i]), netIfOf(chosen[i])});
    choice.node_slots.push_back(usableSlots(chosen[i]));
    choice.node_max_slots.push_back(maxSlots(chosen[i]));
    choice.node_gpus.push_back(gpuListOf(chosen[i]));
  }
  if (resolve_only) {  // --dry-run --offline: the same nodes, nothing to start or connect to
    for (int i = 0; choice.nodes.empty() && i < want_nodes; ++i)
      choice.nodes.push_back({i, "srun" + std::to_string(i), "", {}});  // srun would choose them
    return choice;
  }
  if (kind == LauncherKind::ssh) {
    SshStarterOptions o;
    o.connect_timeout_s = spec.ssh_connect_timeout_s;
    o.ssh_options = spec.ssh_options;
    o.fanout = spec.ssh_fanout;
    o.reuse_connections = spec.ssh_reuse;
    std::vector<bool> is_local;
    bool any_local = false;
    for (const auto& n : choice.nodes) {
      is_local.push_back(n.host == n.name && isThisHost(n.name));
      any_local = any_local || is_local.back();
    }
    if (any_local && spec.keep_daemons_s > 0 && !resolve_only) {
      std::vector<std::string> here;
      for (size_t i = 0; i < choice.nodes.size(); ++i)
        if (is_local[i]) here.push_back(choice.nodes[i].name);
      choice.notes.push_back("--keep-daemons: " + joinStrings(here, ", ") +
                             (here.size() == 1 ? " is this host: its daemon is" : " are this host: their daemons are") +
                             " started directly each time, nothing is kept for " + (here.size() == 1 ? "it" : "them"));
    }
    auto warm = warmRegistryFor(spec, env, choice.nodes, "");
    if (!warm) return tl::unexpected(warm.error());
    std::unique_ptr<DaemonStarter> remote = std::make_unique<SshStarter>(o);
    // With warm daemons the frontend starts every daemon (by keeper or ssh), and the tree forms
    // by attaching, as under srun: a keeper is no ssh client for tree spawn.
    if (*warm) {
      WarmOptions w;
      w.keep_s = spec.keep_daemons_s;
      remote = std::make_unique<WarmStarter>(std::move(w), std::move(**warm), std::move(remote));
    }
    if (!*warm) {
      choice.tree_spawn = o;  // a daemon starts its tree children the same way
      // tlaunch's own host is one of the nodes: it starts that daemon itself, as a local
      // process, wherever the node sits in the tree (no ssh to itself, as without a tree).
      if (any_local) choice.started_by_frontend = is_local;
    }
    if (any_local) choice.starter = std::make_unique<SplitStarter>(std::move(is_local), std::move(remote));
    else choice.starter = std::move(remote);
  } else {
    SlurmStarterOptions o;
    o.slurm_args = spec.slurm_args;
    o.inside_allocation = insideSlurmAllocation(env);
    if (o.inside_allocation) o.job_gpus_per_node = slurmPerTaskGpus(env);
    choice.starter = std::make_unique<SlurmStarter>(o);
    if (o.inside_allocation && !choice.nodes.empty()) {
      const auto job = env.find("SLURM_JOB_ID");
      const std::string slurm_job = job == env.end() ? "" : job->second;
      const std::string slurm_step = keeperStepSettings(o);
      auto warm = warmRegistryFor(spec, env, choice.nodes, slurm_job, slurm_step);
      if (!warm) return tl::unexpected(warm.error());
      if (*warm) {
        WarmOptions w;
        w.keep_s = spec.keep_daemons_s;
        w.slurm_job = slurm_job;
        w.slurm_step = slurm_step;
        SlurmKeeperStepOptions step;
        step.srun = o;
        step.slurm_job = slurm_job;
        step.log_path = (*warm)->dir() + "/keepers-" + slurm_job + ".log";
        step.keep_s = spec.keep_daemons_s;
        w.start_keepers = [step](const std::vector<NodeTarget>& nodes, const std::string& daemon_path,
                                 const std::string& user_secret) {
          return startSlurmKeepers(nodes, daemon_path, user_secret, step);
        };
        choice.starter = std::make_unique<WarmStarter>(std::move(w), std::move(**warm), std::move(choice.starter));
      }
    }
  }
  if (!choice.nodes.empty()) {
    auto addr = frontendAddressFor(choice.nodes);
    if (!addr) return tl::unexpected(addr.error());
    choice.listen_address = *addr;
    // On a fabric-connected frontend the daemons try its fabric addresses first (--net tcp:
    // the route toward the nodes is the network).
    if (spec.net_mode != "tcp") {
      std::string list;
      for (const auto& a : ownFabricAddresses(spec.sysfs_root)) list += a + ",";
      if (!list.empty()) {
        choice.advertise_address = list + *addr;
        choice.listen_address = "0.0.0.0";
      }
    }
  } else {
    // srun picks the nodes: listen everywhere; daemons try each of our addresses.
    choice.listen_address = "0.0.0.0";
    choice.advertise_address = localAddressList();
    choice.unnamed_nodes = want_nodes;
    for (int i = 0; i < want_nodes; ++i) choice.starter_nodes.push_back({i, "", "", {}});
  }
  return choice;
}

}  // namespace tlaunch
