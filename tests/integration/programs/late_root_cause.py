# The root cause reported last (test_failure_blame.py, case 1). Rank 0 crashes first (SIGSEGV),
# but a process it started in a session of its own (out of reach of the daemon's kill of its
# group) holds its pipes until 0.1 s after rank 1 has failed of it, so the daemon's report of
# rank 0 goes after rank 1's, as a long traceback still on its way would make it. The job must
# name rank 0 (the frontend waits a moment for earlier failures: launcher/failure_blame.h).
# argv[1]: a directory both ranks see (one host).
import os
import signal
import subprocess
import sys
import time

import rank_markers

markers = sys.argv[1]
rank = int(os.environ["RANK"])
peer_failed = os.path.join(markers, "rank1.failed")
if rank == 0:
    holder = ("import os, sys, time\n"
              "def gone():\n"
              "    try:\n"
              "        pid = open(sys.argv[1]).read()\n"
              "        return open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0] in ('Z', 'X')\n"
              "    except (FileNotFoundError, ProcessLookupError):\n"
              "        return os.path.exists(sys.argv[1])\n"
              "while not gone(): time.sleep(0.005)\n"
              "time.sleep(0.1)\n")  # then its end closes rank 0's pipes: the report goes
    subprocess.Popen([sys.executable, "-c", holder, peer_failed], start_new_session=True)
    with open(os.path.join(markers, "rank0.pid.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.rename(os.path.join(markers, "rank0.pid.tmp"), os.path.join(markers, "rank0.pid"))
    print("Traceback (most recent call last): rank 0 is the root cause", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)


def rank0_dead():
    try:
        with open(os.path.join(markers, "rank0.pid")) as f:
            pid = f.read()
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return os.path.exists(os.path.join(markers, "rank0.pid"))  # reaped already


rank_markers.wait_until(rank0_dead, 60)
time.sleep(0.02)
print("rank 1: connection reset by peer", file=sys.stderr, flush=True)
with open(peer_failed + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(peer_failed + ".tmp", peer_failed)
sys.exit(1)
