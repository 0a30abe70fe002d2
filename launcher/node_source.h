#pragma once
// Where the job's nodes come from: --hosts, --hostfile, DeepSpeed-style --include /
// --exclude, or the Slurm allocation. Pure: file contents and the environment come in as
// values; nothing here reads files, resolves names or logs.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tlaunch/result.h"

namespace tlaunch {

struct HostEntry {
  std::string name;  // what ssh connects to / what Slurm calls the node (no user@ part)
  int slots = -1;    // -1: not given
  // Extra per-host attributes from the hostfile ("net_if=ib1", "max_slots=16"), for the fabric
  // code. "user" holds the login name of a user@host entry.
  std::map<std::string, std::string> attrs;
  // Set by --include node:0,1 / --exclude node:2: the only slot (GPU) indices to use,
  // ascending. Empty: all slots.
  std::vector<int> only_slots;
  // --exclude node:2 on a host whose slot count is not given: the GPU indices to leave unused,
  // ascending; the planner resolves them against the node's GPUs.
  std::vector<int> excluded_slots;
  bool only_slots_from_exclude = false;  // only_slots is what --exclude left of the slot count
};

// The slots a job may use on the host: only_slots' size when set, else `slots` (-1: unknown,
// also when excluded_slots waits for the node's GPU count).
int usableSlots(const HostEntry& host);

// The hostfile's max_slots (parsed and range-checked with the hostfile), 0 where none was given.
int maxSlots(const HostEntry& host);
// "user@name" when the entry has a user attribute, else the name: the ssh destination.
std::string sshDestination(const HostEntry& host);

// --hosts "node1,node2:4,gpu[01-04]:8,alice@node9": names or hostlist expressions, each with
// an optional ":slots".
Result<std::vector<HostEntry>> parseHostsOption(std::string_view text);

// A hostfile in Open MPI / DeepSpeed form ("node1 slots=8 net_if=ib1") or MPICH form
// ("node1:8"); '#' starts a comment; blank lines are skipped; names may be hostlist
// expressions. `file_name` is only for messages ("hosts.txt:3: ...").
Result<std::vector<HostEntry>> parseHostfile(std::string_view content, std::string_view file_name);

// DeepSpeed's --include / --exclude ("node1:0,1@node2"): at most one of them non-empty.
// Hosts keep their order; an excluded host, or one with all its slots excluded, is dropped.
Result<std::vector<HostEntry>> applyIncludeExclude(std::vector<HostEntry> hosts, std::string_view include,
                                                   std::string_view exclude);

// SLURM_TASKS_PER_NODE's form "2(x3),1" → {2, 2, 2, 1}.
Result<std::vector<int>> parseSlurmTasksPerNode(std::string_view text);

// True inside a Slurm allocation (salloc, sbatch): a job id and a node list are set.
bool insideSlurmAllocation(const std::map<std::string, std::string>& env);
// Inside a heterogeneous allocation (salloc -N1 : -N1) Slurm sets no SLURM_JOB_NODELIST, only
// one per component: their nodes ("node1 + node2,node3"), or nullopt where there is none. A
// heterogeneous batch job's script has SLURM_JOB_NODELIST (the first component's): used, as
// srun uses that component without --het-group.
std::optional<std::string> heterogeneousSlurmNodes(const std::map<std::string, std::string>& env);
// The components of a heterogeneous Slurm job ("node1 + node2,node3"), whether or not a node list
// is set too; nullopt for a job of one component.
std::optional<std::string> slurmHetComponents(const std::map<std::string, std::string>& env);

// The allocation's nodes from SLURM_JOB_NODELIST (else SLURM_NODELIST), slots from
// SLURM_TASKS_PER_NODE when present and `tasks_as_slots`. Note: without -n/--ntasks-per-node
// Slurm puts the node's CPU count there, so it is a ceiling, not a request; inside a step
// (`srun --pty bash` in an allocation) it is the step's layout, over the step's nodes, and is
// neither read nor checked against the job's node list without `tasks_as_slots`.
Result<std::vector<HostEntry>> hostsFromSlurmEnv(const std::map<std::string, std::string>& env,
                                                 bool tasks_as_slots = true);

// The allocation's task count per node (SLURM_TASKS_PER_NODE), when the user gave one (-n /
// --ntasks: SLURM_NTASKS is set; without it that count is the CPUs, e.g. with --exclusive). Empty
// when none was given, or one task per node (a torchrun-style script's: the count is left to the
// GPUs).
std::map<std::string, int> slurmTasksGiven(const std::map<std::string, std::string>& env);

enum class NodeOrigin {
  none,      // no source: the job runs on this host only
  hosts,     // --hosts
  hostfile,  // --hostfile
  slurm,     // the Slurm allocation
};

struct NodeSourceOptions {
  std::string hosts;              // --hosts
  std::string hostfile_name;      // --hostfile (path, for messages and origin)
  std::string hostfile_content;   // the file's text, read by the caller (readHostfile)
  std::string include;            // --include
  std::string exclude;            // --exclude
  bool use_slurm_env = true;      // false: ignore the allocation (e.g. --launcher ssh with no hosts given)
  // false: SLURM_TASKS_PER_NODE does not set slots (jobs that ask Slurm for one task per node
  // and let tlaunch start the ranks, like torchrun scripts with --ntasks-per-node=1).
  bool slurm_tasks_as_slots = true;
};

// Which source resolveNodes will use: --hosts, else --hostfile, else the allocation.
NodeOrigin nodeOrigin(const NodeSourceOptions& options, const std::map<std::string, std::string>& env);
const char* describeOrigin(NodeOrigin origin);

// Nodes in rank order, include/exclude applied, duplicates rejected. Empty when there is no
// source at all (origin none): the caller runs the job on this host. --hosts together with
// --hostfile is an error.
Result<std::vector<HostEntry>> resolveNodes(const NodeSourceOptions& options,
                                            const std::map<std::string, std::string>& env);

// An IPv6 address literal ("fd00::1"): a hostfile may name nodes so.
bool isIpv6Literal(std::string_view text);

// "node[1-4]": the hosts' names as one hostlist expression, for messages.
std::string listNames(const std::vector<HostEntry>& hosts);

// The first `requested_nodes` hosts (-N; 0 = all). ranks_per_node (-p/-g; 0 = not given)
// must fit in every chosen host's usable slots where those are known, the last host's
// last_node_ranks instead where that is given (-n 5 -p 4: 4 and 1); count_source says where the
// count came from ("-p 3", "-n 6 / -g 3"), for the message.
Result<std::vector<HostEntry>> selectNodes(const std::vector<HostEntry>& hosts, int requested_nodes,
                                           int ranks_per_node, const std::string& count_source = "",
                                           int last_node_ranks = 0);

}  // namespace tlaunch
