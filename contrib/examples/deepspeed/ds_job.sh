#!/bin/bash
# DeepSpeed without the `deepspeed` launcher (pdsh, one launch.py per node): tlaunch starts every
# rank with the environment deepspeed.init_distributed() reads.
#
#   ./ds_job.sh hosts.txt [--steps 50]
#
# hosts.txt is DeepSpeed's hostfile ("node1 slots=8"); tlaunch runs one rank per slot, as
# `deepspeed --hostfile hosts.txt` does. Like `deepspeed`, tlaunch exports the KEY=VALUE lines of
# ~/.deepspeed_env and then ./.deepspeed_env (or of the file DS_ENV_FILE names) to every rank;
# a -x on the command line wins over them. `--dry-run` shows them:
#   TLAUNCH_OPTIONS="--dry-run" ./ds_job.sh hosts.txt
# deepspeed's --include/--exclude ("node1:0,1@node2") are tlaunch's too.
set -euo pipefail
hostfile=${1:?usage: $0 HOSTFILE [train_ds.py ARGS...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
# TLAUNCH_OPTIONS: more tlaunch options (word-split), e.g. "--dry-run" or "--preflight full".
# shellcheck disable=SC2086
exec "${TLAUNCH:-tlaunch}" --hostfile "$hostfile" ${TLAUNCH_OPTIONS:-} -- \
  "${PYTHON:-python3}" "$here/train_ds.py" --deepspeed_config "$here/ds_config.json" "$@"
