#!/bin/bash
# Regenerates the golden files of the unit tests from the current code, for a change that means
# to alter them: review `git diff tests/unit/golden` before committing. The tests themselves never
# write a golden file.
#   contrib/update-golden.sh [BUILD_DIR]    (default build-test, as contrib/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-test}
[[ -x $build/bin/topology_tests ]] || { echo "update-golden: build the tests first (bash contrib/test.sh, or cmake --build $build)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
TLAUNCH_GOLDEN_OUT=$out "$build/bin/topology_tests" '[report]' >/dev/null || true
for f in "$out"/*; do
  cp "$f" tests/unit/golden/
  echo "update-golden: wrote tests/unit/golden/$(basename "$f")"
done
git --no-pager diff --stat -- tests/unit/golden
