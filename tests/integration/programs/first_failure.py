# The first failure and the failures it causes (test_failures.py, case 1b). Rank 0 starts a
# child that inherits its stdout and stderr (as PyTorch's DataLoader workers do), then exits 7;
# rank 1 waits until rank 0 is dead, as a peer whose collective broke would, and exits 9 a
# moment later. The job must end with rank 0's 7, not with the failure it caused.
# argv[1]: a directory both ranks see (one host).
import os
import subprocess
import sys
import time

import rank_markers

markers = sys.argv[1]
rank = int(os.environ["RANK"])
if rank == 0:
    subprocess.Popen(["sleep", "60"])  # holds the pipes open after rank 0 is gone
    with open(os.path.join(markers, "rank0.pid.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.rename(os.path.join(markers, "rank0.pid.tmp"), os.path.join(markers, "rank0.pid"))
    print("rank 0 fails first", file=sys.stderr, flush=True)
    sys.exit(7)


def rank0_dead():
    try:
        with open(os.path.join(markers, "rank0.pid")) as f:
            pid = f.read()
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return os.path.exists(os.path.join(markers, "rank0.pid"))  # reaped already


rank_markers.wait_until(rank0_dead, 60)
time.sleep(0.3)
print("rank 1 fails because rank 0 is gone", file=sys.stderr, flush=True)
sys.exit(9)
