#!/bin/bash
# From a fresh Debian 12 machine (as root): install what is missing, build tlaunch, and run a
# real job: 2 simulated nodes x 2 ranks doing a torch.distributed Gloo all-reduce.
set -euo pipefail
cd "$(dirname "$0")/.."
contrib/install-deps.sh
# The two programs only; the test suite is contrib/test.sh's.
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTLAUNCH_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target tlaunch tlaunchd
echo "+ build/bin/tlaunch --launcher local -N 2 -p 2 -- /usr/bin/python3 contrib/examples/allreduce_demo.py"
build/bin/tlaunch --launcher local -N 2 -p 2 -- /usr/bin/python3 contrib/examples/allreduce_demo.py
