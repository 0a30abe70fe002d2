#!/bin/bash
# The same without Slurm: nodes from a hostfile, daemons started over ssh.
#
#   ./hostfile_job.sh hosts.txt train.py --epochs 3
#
# hosts.txt in Open MPI's form (DeepSpeed's is the same); net_if= pins a node's fabric interface
# when its name differs from the others':
#   node1 slots=8
#   node2 slots=8 net_if=ib1
# tlaunch needs passwordless ssh to every node (BatchMode) and tlaunchd installed beside tlaunch
# there, or --daemon-path. An MPI program runs the same way, without mpirun:
#   tlaunch --hostfile hosts.txt -p 16 -- ./mpi_app
set -euo pipefail
hostfile=${1:?usage: $0 HOSTFILE SCRIPT [ARGS...]}
shift
# Without -g/-p the ranks per node are the hostfile's slots, as with mpirun.
exec tlaunch --hostfile "$hostfile" --preflight full -- python3 "$@"
