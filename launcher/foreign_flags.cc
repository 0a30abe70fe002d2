#include "launcher/foreign_flags.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace tlaunch {

namespace {

struct ForeignFlag {
  std::string_view names;  // space-separated spellings, as the other launchers accept them
  std::string_view owner;  // whose flag it is
  std::string_view instead;
};

constexpr std::string_view kRendezvous =
    "tlaunch is the rendezvous: it starts every node from this one command and sets MASTER_ADDR and "
    "MASTER_PORT itself; drop it, and name the nodes with --hosts or --hostfile (or run inside a Slurm "
    "allocation)";

constexpr std::array kFlags = {
    ForeignFlag{"-np", "mpirun's", "give -n N (or --np N) for the total number of ranks"},
    ForeignFlag{"--host -host", "mpirun's", "give --hosts NODE[:SLOTS],... (-H)"},
    ForeignFlag{"-hosts", "mpiexec's", "give --hosts NODE[:SLOTS],... (-H)"},
    ForeignFlag{"-hostfile --machinefile -machinefile --machine-file -f", "mpirun's", "give --hostfile FILE"},
    ForeignFlag{"-npernode", "mpirun's", "give -p N (ranks per node)"},
    ForeignFlag{"-ppn --ppn", "mpiexec's", "give -p N (ranks per node)"},
    ForeignFlag{"--map-by -map-by --bind-to -bind-to --rank-by -rank-by --cpu-bind --cpu_bind --cpu-set", "a launcher's",
                "tlaunch places and binds every rank itself (its GPU, the nearest HCA and NUMA node, cores): "
                "see --bind, --cpus-per-rank and --report-bindings"},
    ForeignFlag{"--oversubscribe -oversubscribe", "mpirun's",
                "drop it: a node runs at most the slots its hostfile or --hosts gives; to run more, raise them or "
                "give none"},
    ForeignFlag{"--allow-run-as-root -allow-run-as-root", "mpirun's", "drop it: tlaunch runs as root without it"},
    ForeignFlag{"--output-filename -output-filename --log_dir --log-dir", "a launcher's",
                "give --output-dir DIR (one file per rank, beside the tagged output)"},
    ForeignFlag{"-wdir --wdir -wd --wd", "mpirun's", "give -D DIR (--chdir)"},
    ForeignFlag{"-mca -gmca --gmca", "mpirun's", "give --mca KEY VALUE (exported to every rank as OMPI_MCA_KEY)"},
    ForeignFlag{"-genv -env", "mpiexec's", "give -x NAME=VALUE"},
    ForeignFlag{"--standalone", "torchrun's",
                "drop it: tlaunch needs no rendezvous setup, and without --hosts it runs on this host"},
    ForeignFlag{"--rdzv_backend --rdzv-backend --rdzv_endpoint --rdzv-endpoint --rdzv_id --rdzv-id --rdzv_conf "
                "--rdzv-conf",
                "torchrun's", kRendezvous},
    ForeignFlag{"--monitor_interval --monitor-interval", "torchrun's",
                "drop it: tlaunch hears of a rank's end as it happens"},
    ForeignFlag{"--redirects --tee", "torchrun's",
                "drop it: tlaunch relays every rank's stdout and stderr, tagged (-l, --tag-output); --output-dir "
                "DIR also keeps each rank's in a file"},
    ForeignFlag{"-m --module --no_python --no-python --run_path --run-path", "torchrun's",
                "tlaunch runs a program: give it in full, e.g. tlaunch -p 2 -- python3 -m MODULE"},
    ForeignFlag{"--ntasks", "srun's", "give -n N (or --np N)"},
    ForeignFlag{"--nodelist -w", "srun's", "give --hosts NODES (-H); inside an allocation tlaunch takes Slurm's nodes"},
    ForeignFlag{"--mpi", "srun's",
                "drop it: each tlaunchd is its ranks' PMIx server, as srun --mpi=pmix is (--pmix off turns it off)"},
    ForeignFlag{"--gpus-per-node --gpus-per-task", "srun's", "give -g N (one rank per GPU)"},
    ForeignFlag{"--num_gpus --num-gpus", "DeepSpeed's", "give -g N (one rank per GPU)"},
    ForeignFlag{"--cpus-per-task", "srun's", "give --cpus-per-rank N"},
    ForeignFlag{"--kill-on-bad-exit -K", "srun's",
                "drop it: a failed rank ends the whole job unless --keep-going is given"},
    ForeignFlag{"--time -t", "srun's", "give --time-limit DURATION (e.g. 90s, 10m, 1h30m)"},
    ForeignFlag{"--num_nodes --num-nodes", "DeepSpeed's", "give -N N (--nodes)"},
    ForeignFlag{"--ssh_port --ssh-port", "DeepSpeed's", "give --ssh-option='-p PORT'"},
    ForeignFlag{"--force_multi --force-multi --no_local_rank --no-local-rank", "DeepSpeed's",
                "drop it: tlaunch always sets LOCAL_RANK and starts every node it is given"},
};

bool listed(std::string_view names, std::string_view name) {
  while (!names.empty()) {
    const size_t space = names.find(' ');
    if (names.substr(0, space) == name) return true;
    if (space == std::string_view::npos) break;
    names.remove_prefix(space + 1);
  }
  return false;
}

}  // namespace

std::optional<std::string> foreignLauncherFlag(std::string_view token) {
  if (token.size() < 2 || token[0] != '-') return std::nullopt;
  std::string_view name = token.substr(0, token.find('='));
  // mpirun -np4 and MPICH's -ppn8: the count in the same word.
  for (std::string_view counted : {std::string_view("-np"), std::string_view("-ppn"), std::string_view("-npernode")})
    if (name.size() > counted.size() && name.starts_with(counted) &&
        std::all_of(name.begin() + static_cast<std::ptrdiff_t>(counted.size()), name.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
      name = counted;
  for (const ForeignFlag& f : kFlags)
    if (listed(f.names, name))
      return std::string(name) + " is " + std::string(f.owner) + " flag, not tlaunch's\n  -> " + std::string(f.instead);
  return std::nullopt;
}

}  // namespace tlaunch
