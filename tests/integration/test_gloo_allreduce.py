"""3 simulated nodes x 2 ranks: a real torch.distributed Gloo all-reduce, initialised with
init_process_group("gloo") and nothing else, gives the right sum on every rank."""
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
print("PASS")
