#!/bin/bash
# Coverage-guided fuzzing (libFuzzer, clang) of the control plane's decoders and the host and
# line parsers: the harnesses of tests/fuzz.
#
#   contrib/fuzz.sh [SECONDS] [HARNESS...]
#
# Builds build-fuzz (CC=clang CXX=clang++ -DTLAUNCH_FUZZ=ON; TLAUNCH_FUZZ_BUILD_DIR overrides)
# when missing or stale, then runs each harness (default: all) for SECONDS (default 600, the
# long run; the test suite runs 10 each). The committed seeds in tests/fuzz/corpus/<harness> are
# only read: what the fuzzer learns goes to build-fuzz/corpus/<harness> and is reused next
# time. A crash, a sanitizer report, a timeout or running out of memory fails the run and
# prints the reproducer; `build-fuzz/bin/fuzz_<harness> <reproducer>` replays it.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-600}
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || { echo "usage: $0 [SECONDS] [HARNESS...]" >&2; exit 2; }
shift $(($# > 0 ? 1 : 0))
all=(frame_decoder message output_record hostfile hostlist line_splitter)
if (($#)); then harnesses=("$@"); else harnesses=("${all[@]}"); fi
build=${TLAUNCH_FUZZ_BUILD_DIR:-build-fuzz}

for tool in clang clang++ cmake; do
  command -v "$tool" >/dev/null || { echo "fuzz: $tool not found (contrib/install-deps.sh installs it)" >&2; exit 1; }
done

start=$SECONDS
if [[ ! -f $build/CMakeCache.txt ]]; then
  launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  generator=()
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
  # Optimised but with debug info: libFuzzer's speed is the number of inputs tried.
  CC=clang CXX=clang++ cmake -S . -B "$build" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTLAUNCH_FUZZ=ON -DTLAUNCH_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" --target tlaunch_fuzzers -j"$(nproc)" >"$build/fuzz-build.log" 2>&1 || {
  cat "$build/fuzz-build.log" >&2
  echo "fuzz: building the harnesses failed" >&2
  exit 1
}
echo "fuzz: harnesses built in $build ($((SECONDS - start)) s); ${seconds} s per harness"

# The sanitizers' options are the fuzzer's, not those of a test environment around us.
unset ASAN_OPTIONS
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# One harness: its summary on stdout when it ends; its exit status says whether it failed.
fuzz_one() {
  local h=$1 fuzzer=$build/bin/fuzz_$1 seeds=tests/fuzz/corpus/$1
  mkdir -p "$build/corpus/$h" "$build/artifacts/$h" "$build/logs"
  local log=$build/logs/$h.log
  if "$fuzzer" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/artifacts/$h/" "$build/corpus/$h" "$seeds" >"$log" 2>&1; then
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    echo "fuzz: $h: ok, ${runs:-?} inputs, corpus of $(find "$build/corpus/$h" -type f | wc -l)"
  else
    local report  # one write, so that it is not interleaved with another harness's line
    report=$(
      echo "fuzz: $h: FAILED (log: $log)"
      grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5 || true
      grep -o 'Test unit written to .*' "$log" | sed 's/^Test unit written to /fuzz: reproducer: /' || true
      echo "fuzz: replay with: $fuzzer <reproducer>"
    )
    printf '%s\n' "$report"
    return 1
  fi
}

for h in "${harnesses[@]}"; do
  [[ -x $build/bin/fuzz_$h && -d tests/fuzz/corpus/$h ]] || { echo "fuzz: no harness or seed corpus named '$h'" >&2; exit 2; }
done
# As many harnesses at once as there are cores (each fuzzer is one process on one core).
failed=()
declare -A running=()
jobs_max=$(nproc)
reap() {  # waits for one harness to end and notes a failure
  local pid status=0
  wait -n -p pid "${!running[@]}" || status=$?
  ((status == 0)) || failed+=("${running[$pid]}")
  unset "running[$pid]"
}
for h in "${harnesses[@]}"; do
  while ((${#running[@]} >= jobs_max)); do reap; done
  fuzz_one "$h" &
  running[$!]=$h
done
while ((${#running[@]} > 0)); do reap; done
echo "fuzz: done in $((SECONDS - start)) s"
((${#failed[@]} == 0)) || { echo "fuzz: failing harnesses: ${failed[*]}" >&2; exit 1; }
