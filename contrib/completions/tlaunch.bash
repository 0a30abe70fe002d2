# bash completion for tlaunch. Install: copy to /usr/share/bash-completion/completions/tlaunch
# (or source it from ~/.bashrc). tests/integration/test_completion.py keeps it in step with
# `tlaunch --help`.

_tlaunch_options="--bind --chdir --check-reachability --connect-timeout --cpus-per-rank --daemon-path --dry-run
  --event-grace --exclude --expect-rate --export --gpus-per-node --hang-timeout --heartbeat-timeout --help --hostfile --hosts --include --json
  --keep-daemons --keep-going --kill-timeout --label --launcher --master-addr --master_addr --master-port --master_port
  --max-restarts --max_restarts --mca --nccl-check --net --net-cidr --net-if --nnodes --nodes --np
  --npernode --nproc-per-node --nproc_per_node --ntasks-per-node --offline --output-dir --pmix --preflight --preflight-skip
  --preflight-strict --procs-per-node --pty --quiet --report-bindings --slurm-args --ssh-connect-timeout --ssh-fanout
  --ssh-option --ssh-reuse --stdin --summary-json --sysfs-root --tag-output --time-limit --topology-xml --tree-radix --verbose --version"
_tlaunch_preflight_options="--check-reachability --connect-timeout --daemon-path --exclude --expect-rate
  --gpus-per-node --heartbeat-timeout --help --hostfile --hosts --include --json --launcher --level --net --net-cidr
  --net-if --nnodes --nodes --preflight --preflight-skip --preflight-strict --slurm-args --ssh-connect-timeout
  --ssh-fanout --ssh-option --ssh-reuse --sysfs-root --topology-xml --verbose"
_tlaunch_topo_options="--help --topology-xml"
_tlaunch_stacks_options="--help"
_tlaunch_status_options="--help"
_tlaunch_stop_daemons_options="--help"
_tlaunch_nccl_report_options="--help --json"
_tlaunch_checks="rdma_devices port_state lid rate netdev roce_gid verbs_devices uverbs memlock gpus gpudirect nccl_env
  nccl_socket_ifname verbs_port verbs_selftest cross_rails cross_rate cross_mtu cross_subnets rdma_pair reachability
  network"

# Values of the options that take one; returns 1 when `prev` takes none. `prev2`, the word
# before it: --mca takes two values (KEY VALUE).
_tlaunch_values() {
  local prev=$1 cur=$2 prev2=${3-}
  [[ $prev2 == --mca ]] && COMPREPLY=() && return 0
  case $prev in
    --launcher) COMPREPLY=($(compgen -W "auto local ssh slurm" -- "$cur")) ;;
    --bind) COMPREPLY=($(compgen -W "none numa core" -- "$cur")) ;;
    --tag-output) COMPREPLY=($(compgen -W "none rank full" -- "$cur")) ;;
    --net) COMPREPLY=($(compgen -W "auto ib tcp" -- "$cur")) ;;
    --nproc-per-node | --nproc_per_node) COMPREPLY=($(compgen -W "gpu auto cpu" -- "$cur")) ;;
    --preflight) COMPREPLY=($(compgen -W "quick full off" -- "$cur")) ;;
    --level) COMPREPLY=($(compgen -W "quick full" -- "$cur")) ;;
    --check-reachability) COMPREPLY=($(compgen -W "ring all off" -- "$cur")) ;;
    --nccl-check) COMPREPLY=($(compgen -W "off warn strict" -- "$cur")) ;;
    --pmix | --ssh-reuse) COMPREPLY=($(compgen -W "on off" -- "$cur")) ;;
    --preflight-skip) COMPREPLY=($(compgen -W "$_tlaunch_checks" -- "$cur")) ;;
    --hostfile | --topology-xml | --daemon-path | --summary-json) COMPREPLY=($(compgen -f -- "$cur")) ;;
    --output-dir | --sysfs-root | -D | --chdir) COMPREPLY=($(compgen -d -- "$cur")) ;;
    -H | --hosts | --include | --exclude) COMPREPLY=($(compgen -A hostname -- "$cur")) ;;
    -N | --nodes | -p | --procs-per-node | -g | --gpus-per-node | --cpus-per-rank | --stdin | --kill-timeout | \
      --connect-timeout | --heartbeat-timeout | --hang-timeout | --event-grace | --ssh-fanout | --ssh-connect-timeout | --expect-rate | \
      --net-if | --net-cidr | --ssh-option | --slurm-args | -x | --export | -n | --np | --nnodes | --ntasks-per-node | \
      --npernode | --master-addr | --master_addr | --master-port | --master_port | --mca | --time-limit | --tree-radix | \
      --keep-daemons | --max-restarts | --max_restarts) COMPREPLY=() ;;
    *) return 1 ;;
  esac
  return 0
}

_tlaunch() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local i word before sub="" options=$_tlaunch_options
  # The program starts after "--" or at the first word that is neither an option nor a value.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $word == -- ]]; then
      _tlaunch_program $((i + 1))
      return
    fi
    before=""
    ((i >= 2)) && before=${COMP_WORDS[i - 2]}
    if [[ $word != -* ]] && ! _tlaunch_values "${COMP_WORDS[i - 1]}" "" "$before" 2>/dev/null; then
      if [[ -z $sub && ($word == preflight || $word == topo || $word == stacks || $word == status || $word == stop-daemons || ($word == nccl-report && $i == 1)) ]]; then
        sub=$word
      else
        _tlaunch_program "$i"
        return
      fi
    fi
  done
  COMPREPLY=()
  before=""
  ((COMP_CWORD >= 2)) && before=${COMP_WORDS[COMP_CWORD - 2]}
  _tlaunch_values "$prev" "$cur" "$before" && return
  case $sub in
    preflight) options=$_tlaunch_preflight_options ;;
    topo) options=$_tlaunch_topo_options ;;
    stacks) options=$_tlaunch_stacks_options ;;
    status) options=$_tlaunch_status_options ;;
    stop-daemons) options=$_tlaunch_stop_daemons_options ;;
    nccl-report)  # NCCL logs to read
      [[ $cur != -* ]] && COMPREPLY=($(compgen -f -- "$cur")) && return
      options=$_tlaunch_nccl_report_options
      ;;
  esac
  if [[ $cur == -* || -n $sub ]]; then
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$options preflight topo stacks status stop-daemons$( ((COMP_CWORD == 1)) && echo " nccl-report")" -- "$cur") \
      $(compgen -c -- "$cur"))
  fi
}

# Completes the program and its arguments as bash would on their own.
_tlaunch_program() {
  local start=$1
  if declare -F _command_offset >/dev/null; then
    _command_offset "$start"
  elif ((COMP_CWORD == start)); then
    COMPREPLY=($(compgen -c -- "${COMP_WORDS[COMP_CWORD]}"))
  else
    COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
  fi
}

complete -F _tlaunch tlaunch
