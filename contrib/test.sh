#!/bin/bash
# From a fresh Debian 12 machine (as root): install what is missing, build tlaunch with
# AddressSanitizer + UndefinedBehaviorSanitizer, and run the whole test suite (units,
# local integration, real Open MPI / mpi4py / PMIx clients, and the namespace cluster with real
# sshd and Slurm). CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
contrib/install-deps.sh
build=${TLAUNCH_TEST_BUILD_DIR:-build-test}
# The "ci" preset of CMakePresets.json: warnings are errors here, never in a user's build.
# Ninja and ccache where present: a developer's second run rebuilds only what changed.
extra=()
command -v ninja >/dev/null && [[ ! -f $build/Makefile ]] && extra+=(-G Ninja)
command -v ccache >/dev/null && extra+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Unity batches (eight source files to a translation unit): Asio's and json's templates are
# instantiated once per batch, not once per file (this build: 904 -> 632 s on 2 cores).
cmake -S . -B "$build" "${extra[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTLAUNCH_SANITIZE=ON -DTLAUNCH_WERROR=ON \
  -DTLAUNCH_BUILD_TESTS=ON -DCMAKE_UNITY_BUILD=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
# Leak checking is off: hwloc's PCI plugin and libpmix keep allocations for the process's life.
# alloc_dealloc_mismatch is off: in the sanitized build, Asio's recycling handler allocator
# frees with free() what another translation unit's inlined copy allocated with operator new
# (harmless with glibc, where both are malloc; flagged in the notes to find the differing copy).
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:alloc_dealloc_mismatch=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Two per core: the unit files side by side (each mostly sanitized processes starting), and
# at most one cluster test beside one local test (tests/CMakeLists.txt,
# tlaunch_schedule_non_unit_tests); a test that checks the whole machine for leftovers runs alone.
ctest --test-dir "$build" --output-on-failure --timeout 900 -j "$((2 * $(nproc)))" "$@"
