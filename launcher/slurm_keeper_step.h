#pragma once
// tlaunch --keep-daemons inside a Slurm allocation. A keeper (daemon/warm_keeper.h) started by a
// job's daemon would live in that daemon's step and die with it; so under Slurm the keepers are
// the tasks of a step of their own, "tlaunch-keepers":
//   sh -c 'exec "$@" 2>>LOG' sh srun --job-name=tlaunch-keepers <the daemons' srun options>
//        tlaunchd --keeper --keep-for N --in-slurm-step
// Its srun is left running when this tlaunch exits (no death signal, its own process group),
// so Slurm accounts the keepers to the allocation, lists them (squeue -s) and ends them with it,
// like any step; a keeper ends its task, and with the last one srun, when its time runs out or
// on `tlaunch stop-daemons`. srun's stderr goes to a log beside the registry, not to a pipe: a
// write to a pipe nobody reads any more would make srun abort the step (its SIGPIPE handler).
// The user's secret goes to srun's stdin (--input=all), each keeper's "NODE PORT PID SINCE"
// line comes back on its stdout, which is a file beside the log (keepers-JOB-XXXXXX.lines, one
// per step: two tlaunch runs in one allocation must not read each other's keepers), not a pipe,
// for the same reason: a keeper that answers after tlaunch stopped waiting must not end the
// step. After that line a keeper writes nothing there; the file is removed once read (srun
// keeps writing into it unharmed).
#include <string>
#include <vector>

#include "launcher/daemon_starter.h"
#include "launcher/slurm_starter.h"
#include "launcher/warm_registry.h"

namespace tlaunch {

struct SlurmKeeperStepOptions {
  SlurmStarterOptions srun;  // the srun program and --slurm-args, as for the daemons' step
  std::string slurm_job;     // SLURM_JOB_ID: written into every entry
  std::string log_path;      // srun's stderr (appended); keepers-*.log beside it older than a week go
  int keep_s = 0;
  int timeout_ms = 30'000;   // for every keeper's line together
};

struct SlurmKeepers {
  std::vector<WarmEntry> entries;  // one per node whose keeper answered (destination: its name)
  std::string problem;             // why the others did not, for the user; empty when all did
};

// What of the daemons' srun options shapes the keeper step, where a keeper's job daemons run
// (--slurm-args, GPUs per node): "" for srun's defaults. Written into each entry (slurm_step).
std::string keeperStepSettings(const SlurmStarterOptions& srun);

// Removes the files named keepers-*.log and keepers-*.lines in `dir` last written more than `max_age_s` ago: one log
// is left per allocation that kept daemons, and allocations end.
void removeOldKeeperLogs(const std::string& dir, long long max_age_s);

// One keeper line: "NODE PORT PID SINCE", NODE one of `nodes` not in `seen`. Pure: tested alone.
std::optional<WarmEntry> parseKeeperLine(const std::string& line, const std::vector<NodeTarget>& nodes,
                                         const std::vector<std::string>& seen);

// Starts the step on `nodes` and waits (bounded) for their keepers' lines. `host` of each entry
// is the node name's IPv4 address as this host resolves it (where the keeper listens too).
SlurmKeepers startSlurmKeepers(const std::vector<NodeTarget>& nodes, const std::string& daemon_path,
                               const std::string& user_secret, const SlurmKeeperStepOptions& options);

}  // namespace tlaunch
