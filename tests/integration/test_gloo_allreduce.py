"""3 simulated nodes x 2 ranks: a real torch.distributed Gloo all-reduce, initialised with
init_process_group("gloo") and nothing else, gives the right sum on every rank. Then nodes that
run different numbers of ranks (a hostfile's slots=1 and slots=3, as mpirun and DeepSpeed run
them): the same all-reduce, and each rank's LOCAL_RANK, LOCAL_WORLD_SIZE and GROUP_RANK."""
import os
import re
import subprocess

import tl

try:
    subprocess.run([tl.PYTHON, "-c", "import torch.distributed"], check=True, capture_output=True, timeout=120)
except Exception:
    tl.skip("Debian's python3-torch is not installed")

r = tl.run(["--launcher", "local", "-N", "3", "-p", "2", "--", tl.PYTHON, tl.program("gloo_allreduce.py"), "5", "1000"],
           timeout=300)
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"job failed with {r.returncode}")
ranks = {}
for line in r.stdout.splitlines():
    m = re.match(r"^\[(local\d):(\d+)\] rank (\d+)/6 allreduce=21 expected=21 OK$", line)
    tl.check(m is not None, f"unexpected line: {line!r}")
    tl.check(m.group(2) == m.group(3), f"tag rank differs from RANK: {line!r}")
    tl.check(m.group(1) == f"local{int(m.group(3)) // 2}", f"rank on the wrong node: {line!r}")
    ranks[int(m.group(3))] = True
tl.check(sorted(ranks) == list(range(6)), f"ranks reporting: {sorted(ranks)}")

hostfile = os.path.join(tl.tempdir(), "hosts")
with open(hostfile, "w") as f:
    f.write("small slots=1\nbig slots=3\n")
r = tl.run(["--launcher", "local", "--hostfile", hostfile, "--", "sh", "-c",
            'echo "env $RANK $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK"; exec "$0" "$@"', tl.PYTHON,
            tl.program("gloo_allreduce.py"), "5", "1000"], timeout=300)
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"uneven job failed with {r.returncode}")
tl.check("2 node(s), 4 ranks (1, 3)" in r.stderr, f"the banner says each node's count: {r.stderr!r}")
envs, sums = set(), set()
for line in r.stdout.splitlines():
    if m := re.match(r"^\[(\w+):(\d+)\] env (\d+) (\d+) (\d+) (\d+)$", line):
        envs.add((m.group(1), int(m.group(3)), int(m.group(4)), int(m.group(5)), int(m.group(6))))
    elif m := re.match(r"^\[(\w+):(\d+)\] rank (\d+)/4 allreduce=10 expected=10 OK$", line):
        sums.add(int(m.group(3)))
    else:
        tl.check(False, f"unexpected line: {line!r}")
tl.check(envs == {("small", 0, 0, 1, 0), ("big", 1, 0, 3, 1), ("big", 2, 1, 3, 1), ("big", 3, 2, 3, 1)},
         f"(node, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK): {sorted(envs)}")
tl.check(sums == {0, 1, 2, 3}, f"every rank's all-reduce: {sorted(sums)}")
print("PASS")
