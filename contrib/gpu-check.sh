#!/usr/bin/env bash
# On a machine with NVIDIA GPUs: build tlaunch, then check what it sees against the driver —
#   1. hwloc's GPU detection and PCI order (tlaunch topo) against nvidia-smi's bus ids;
#   2. GPU UUIDs through NVML loaded at run time (contrib/nvml_uuids.c, dlopen; no CUDA needed
#      to build) against nvidia-smi's;
#   3. the binding applied to real ranks (tlaunch -g N --report-bindings): each rank's
#      CUDA_VISIBLE_DEVICES / TLAUNCH_GPU_BUSID / TLAUNCH_GPU_UUID against nvidia-smi;
#   4. with torch and CUDA: a one-rank NCCL init whose log goes through `tlaunch nccl-report`.
# Without a GPU it runs its dry parts (arguments, tool detection), says so and exits 0.
# Exit status: 0 all checks passed (or no GPU), 1 a check failed, 2 usage or build error.
set -u

usage() {
  echo "usage: contrib/gpu-check.sh [--build-dir DIR] [--no-build] [--keep] [--nvidia-smi PATH]"
  echo "  --build-dir DIR  where tlaunch is (and is built; default build-rel)"
  echo "  --no-build       use DIR's tlaunch as it is"
  echo "  --keep           keep the work directory (logs) and print its path"
  echo "  --nvidia-smi P   nvidia-smi to use (default: from PATH; a missing one means no GPU)"
}

src=$(cd "$(dirname "$0")/.." && pwd)
build_dir="$src/build-rel"
do_build=1
keep=0
smi=nvidia-smi
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) [ $# -ge 2 ] || { usage >&2; exit 2; }; build_dir=$2; shift 2 ;;
    --build-dir=*) build_dir=${1#*=}; shift ;;
    --no-build) do_build=0; shift ;;
    --keep) keep=1; shift ;;
    --nvidia-smi) [ $# -ge 2 ] || { usage >&2; exit 2; }; smi=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-check: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done

failures=0
say() { echo "gpu-check: $*"; }
fail() { echo "gpu-check: FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "gpu-check: ok: $*"; }
have() { command -v "$1" > /dev/null 2>&1; }

# Tool detection (the dry part).
for tool in cmake ninja cc python3 "$smi"; do
  if have "$tool"; then say "tool $tool: $(command -v "$tool")"; else say "tool $tool: not found"; fi
done
torch=0
if have python3 && python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  torch=1
fi
say "torch with CUDA: $([ $torch = 1 ] && echo yes || echo no)"

gpu_count=0
if have "$smi"; then gpu_count=$("$smi" -L 2> /dev/null | grep -c '^GPU ' || true); fi
if [ "$gpu_count" -eq 0 ]; then
  say "no GPU on this machine ($smi $(have "$smi" && echo 'lists none' || echo 'not found')): only the dry parts ran"
  exit 0
fi
say "$gpu_count GPU(s)"

if [ $do_build = 1 ]; then
  if ! cmake -S "$src" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null ||
    ! cmake --build "$build_dir" --target tlaunch tlaunchd > /dev/null; then
    say "build failed"
    exit 2
  fi
fi
tlaunch="$build_dir/bin/tlaunch"
[ -x "$tlaunch" ] || { say "no tlaunch at $tlaunch"; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
if [ $keep = 1 ]; then say "work directory $work"; else trap 'rm -rf "$work"' EXIT; fi

# "00000000:18:00.0" and "0000:18:00.0" alike: bus:device.function, lower case.
busOf() { sed -E 's/.*([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]).*/\1/' | tr 'A-F' 'a-f'; }

"$smi" --query-gpu=index,pci.bus_id,uuid --format=csv,noheader | tr -d ' ' > "$work/smi.csv"
cut -d, -f2 "$work/smi.csv" | busOf > "$work/smi.bus"

# 1. hwloc's detection and order: the bus ids tlaunch topo shows, in its order.
"$tlaunch" topo > "$work/topo.txt" 2>&1 || fail "tlaunch topo exited $?"
grep -oE '[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]' "$work/topo.txt" | busOf | awk '!seen[$0]++' |
  grep -xFf "$work/smi.bus" > "$work/topo.bus"
if cmp -s "$work/smi.bus" "$work/topo.bus"; then pass "tlaunch topo lists the $gpu_count GPUs in nvidia-smi's PCI order"
else fail "GPU order differs: nvidia-smi $(paste -sd' ' "$work/smi.bus"), tlaunch topo $(paste -sd' ' "$work/topo.bus")"; fi

# 2. UUIDs through NVML loaded at run time.
if cc -O2 -I "$src" -o "$work/nvml_uuids" "$src/contrib/nvml_uuids.c" -ldl && "$work/nvml_uuids" > "$work/nvml.csv"; then
  if diff <(cut -d, -f1,3 "$work/smi.csv") <(cut -d, -f1,3 "$work/nvml.csv") > /dev/null; then
    pass "NVML (dlopen) and nvidia-smi agree on every GPU's UUID"
  else fail "NVML UUIDs differ from nvidia-smi's: $(paste -sd' ' "$work/nvml.csv")"; fi
else fail "NVML helper could not build or query libnvidia-ml.so.1"; fi

# 3. The binding applied to real ranks. Fields are '|'-separated: CUDA_VISIBLE_DEVICES is unset
# when the ranks use every GPU of the node (as torchrun leaves it), and an empty field must stay one.
# Without CUDA_VISIBLE_DEVICES, local rank r uses CUDA device r, which CUDA_DEVICE_ORDER=PCI_BUS_ID
# makes nvidia-smi's GPU r; with it, the r-th entry of the list (an index or a UUID). With torch,
# the rank also names the bus id of the device CUDA gives it, which must be the planned one.
if [ $torch = 1 ]; then
  rank_cmd=(python3 -c '
import os, torch
e = os.environ.get
p = torch.cuda.get_device_properties(int(e("LOCAL_RANK")))
print("RANKENV|%s|%s|%s|%s|%s|%04x:%02x:%02x.0" % (e("LOCAL_RANK"), e("CUDA_VISIBLE_DEVICES", "unset"), e("CUDA_DEVICE_ORDER", ""),
      e("TLAUNCH_GPU_BUSID", ""), e("TLAUNCH_GPU_UUID", ""), p.pci_domain_id, p.pci_bus_id, p.pci_device_id))')
else
  # shellcheck disable=SC2016 # expanded by the rank's shell
  rank_cmd=(sh -c 'echo "RANKENV|$LOCAL_RANK|${CUDA_VISIBLE_DEVICES-unset}|${CUDA_DEVICE_ORDER:-}|${TLAUNCH_GPU_BUSID:-}|${TLAUNCH_GPU_UUID:-}|"')
fi
"$tlaunch" --launcher local -N 1 -g "$gpu_count" --report-bindings --tag-output none -- "${rank_cmd[@]}" \
  > "$work/bind.txt" 2>&1 || fail "tlaunch -g $gpu_count exited $?"
grep '^RANKENV|' "$work/bind.txt" | sort -t'|' -k2n | while IFS='|' read -r _ lr cvd order busid uuid cuda_bus; do
  if [ "$cvd" = unset ]; then dev=$lr; else dev=$(echo "$cvd" | cut -d, -f$((lr + 1))); fi
  row=$(awk -F, -v d="$dev" '$1 == d || $3 == d' "$work/smi.csv")
  if [ -z "$row" ]; then echo "FAIL rank $lr: its CUDA device ($dev, CUDA_VISIBLE_DEVICES=$cvd) is no GPU of nvidia-smi"; continue; fi
  [ "$cvd" != unset ] || [ "$order" = PCI_BUS_ID ] ||
    echo "FAIL rank $lr: CUDA_DEVICE_ORDER is '$order', not PCI_BUS_ID: CUDA device $lr need not be GPU $lr"
  [ "$(echo "$row" | cut -d, -f2 | busOf)" = "$(echo "$busid" | busOf)" ] ||
    echo "FAIL rank $lr: its CUDA device is $(echo "$row" | cut -d, -f2) but TLAUNCH_GPU_BUSID=$busid"
  [ -z "$cuda_bus" ] || [ "$(echo "$cuda_bus" | busOf)" = "$(echo "$busid" | busOf)" ] ||
    echo "FAIL rank $lr: CUDA gave it the GPU at $cuda_bus, tlaunch planned $busid"
  [ -z "$uuid" ] || [ "$(echo "$row" | cut -d, -f3)" = "$uuid" ] ||
    echo "FAIL rank $lr: TLAUNCH_GPU_UUID=$uuid is not that GPU's ($(echo "$row" | cut -d, -f3))"
done > "$work/bind.fail"
ranks=$(grep -c '^RANKENV|' "$work/bind.txt")
if [ -s "$work/bind.fail" ] || [ "$ranks" -ne "$gpu_count" ]; then
  fail "binding ($ranks of $gpu_count ranks reported): $(paste -sd';' "$work/bind.fail")"
else pass "$ranks ranks each use the GPU tlaunch bound them to ($([ $torch = 1 ] && echo 'as CUDA reports it' || echo 'by their environment'))"; fi

# 4. A one-rank NCCL init through the transport report.
if [ $torch = 1 ]; then
  cat > "$work/nccl_init.py" << 'PY'
import torch, torch.distributed as dist
dist.init_process_group("nccl")
t = torch.ones(1, device="cuda")
dist.all_reduce(t)
torch.cuda.synchronize()
dist.destroy_process_group()
PY
  "$tlaunch" --launcher local -N 1 -g 1 -x NCCL_DEBUG=INFO --tag-output none -- python3 "$work/nccl_init.py" \
    > "$work/nccl.log" 2>&1 || fail "one-rank NCCL init exited $?"
  if "$tlaunch" nccl-report "$work/nccl.log" > "$work/report.txt" 2>&1 && grep -q 'NCCL' "$work/report.txt" &&
    grep -q 'Init COMPLETE' "$work/nccl.log"; then
    pass "nccl-report: $(head -1 "$work/report.txt")"
  else fail "nccl-report on a one-rank init: $(head -3 "$work/report.txt")"; fi
else
  say "skipping the NCCL init: no torch with CUDA"
fi

if [ $failures = 0 ]; then say "all checks passed"; exit 0; fi
say "$failures check(s) failed"
exit 1
