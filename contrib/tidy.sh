#!/bin/bash
# clang-tidy over tlaunch's sources with the checks of .clang-tidy; exits non-zero on any finding.
# Not part of contrib/test.sh (it takes ~5-8 minutes on 2 cores): run it before sending a change.
#
#   apt-get install clang-tidy && contrib/tidy.sh [FILE-REGEX]
set -euo pipefail
cd "$(dirname "$0")/.."
command -v run-clang-tidy >/dev/null || { echo "tidy: run-clang-tidy not found (apt-get install clang-tidy)" >&2; exit 1; }
build=${TLAUNCH_TIDY_BUILD_DIR:-build-tidy}
# Configure only: clang-tidy needs the compile commands and the generated headers, not objects.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON -DTLAUNCH_UNITY_UNIT_TESTS=OFF >/dev/null
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run-clang-tidy -p "$build" -j "$(nproc)" -quiet "${1:-$PWD/(binding|bootstrap|daemon|launcher)/.*\.cc$}" >"$log" 2>&1 || true
findings=$(grep -E "(warning|error): " "$log" | sort -u || true)
if [[ -n $findings ]]; then
  echo "$findings"
  echo "tidy: $(wc -l <<<"$findings") finding(s)" >&2
  exit 1
fi
echo "tidy: clean"
