#!/bin/bash
# A Megatron-LM job script written for torchrun, run by tlaunch instead. Megatron's examples set
# these and run `torchrun $DISTRIBUTED_ARGS pretrain_gpt.py ...` once on every node, each with
# its own NODE_RANK. tlaunch runs once, from one node, for all of them:
#
#   torchrun                         tlaunch
#   --nproc_per_node $GPUS_PER_NODE  --nproc-per-node $GPUS_PER_NODE  (or gpu: one per GPU)
#   --nnodes $NUM_NODES              --nnodes $NUM_NODES, of the nodes in --hosts/--hostfile
#   --node_rank $NODE_RANK           (none: node ranks follow the order of the nodes)
#   --master_addr $MASTER_ADDR       (none: rank 0's address on the fabric; --master-addr to force)
#   --master_port $MASTER_PORT       --master-port $MASTER_PORT (default: a port found free)
#   --max_restarts N                 --max-restarts N (spares: more nodes given than --nnodes)
#
#   HOSTS=node[1-4] ./megatron_job.sh pretrain_gpt.py --tensor-model-parallel-size 2 ...
#   HOSTFILE=hosts.txt ./megatron_job.sh pretrain_gpt.py ...
#
# Ranks get RANK, LOCAL_RANK and WORLD_SIZE (what megatron/training/arguments.py reads),
# MASTER_ADDR/MASTER_PORT for init_process_group, and one GPU per local rank
# (torch.cuda.set_device(LOCAL_RANK)); CUDA_DEVICE_MAX_CONNECTIONS=1 as Megatron wants.
set -euo pipefail
script=${1:?usage: HOSTS=... $0 pretrain_gpt.py [MEGATRON ARGS...]}
shift
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
NUM_NODES=${NUM_NODES:-}
MASTER_PORT=${MASTER_PORT:-}
if [ -n "${NODE_RANK:-}" ] && [ "$NODE_RANK" != 0 ]; then
  echo "$0: NODE_RANK=$NODE_RANK: run this script once, on one node; tlaunch starts every node" >&2
  exit 64
fi
nodes=()
if [ -n "${HOSTFILE:-}" ]; then nodes=(--hostfile "$HOSTFILE"); elif [ -n "${HOSTS:-}" ]; then nodes=(--hosts "$HOSTS"); fi
DISTRIBUTED_ARGS=(--nproc-per-node "$GPUS_PER_NODE")
[ -n "$NUM_NODES" ] && DISTRIBUTED_ARGS+=(--nnodes "$NUM_NODES")
[ -n "$MASTER_PORT" ] && DISTRIBUTED_ARGS+=(--master-port "$MASTER_PORT")
# MASTER_ADDR=localhost (Megatron's single-node default) is not forwarded: tlaunch picks rank 0's
# fabric address. Set MEGATRON_MASTER_ADDR to force one.
[ -n "${MEGATRON_MASTER_ADDR:-}" ] && DISTRIBUTED_ARGS+=(--master-addr "$MEGATRON_MASTER_ADDR")
# TLAUNCH_OPTIONS: more tlaunch options (word-split), e.g. "--dry-run" or "--preflight full".
# shellcheck disable=SC2086
exec "${TLAUNCH:-tlaunch}" "${nodes[@]}" "${DISTRIBUTED_ARGS[@]}" -x CUDA_DEVICE_MAX_CONNECTIONS=1 \
  ${TLAUNCH_OPTIONS:-} -- "${PYTHON:-python3}" "$script" "$@"
