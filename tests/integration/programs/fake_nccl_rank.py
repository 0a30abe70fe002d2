# A rank that "initialises NCCL" without a GPU: it replays one process of a real NCCL log fixture
# (tests/fixtures/nccl-logs) — the process whose position in the log is this rank's (RANK mod
# the processes in the log) — as NCCL would: into NCCL_DEBUG_FILE when set (%h and %p expanded
# like NCCL does), else to stderr when NCCL_DEBUG is set, else nowhere. Written progressively
# (a few lines at a time) so a tail sees the file grow. Usage: fake_nccl_rank.py FIXTURE [SECONDS]
import os
import socket
import sys
import time

fixture = sys.argv[1]
linger = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
rank = int(os.environ.get("RANK", "0"))

hosts, by_host = [], {}
with open(fixture, encoding="utf-8", errors="replace") as f:
    for line in f:
        head = line.split(":", 1)[0]
        if ":" not in line or "NCCL" not in line or " " in head:
            continue
        if head not in by_host:
            hosts.append(head)
            by_host[head] = []
        by_host[head].append(line)
lines = by_host[hosts[rank % len(hosts)]] if hosts else []

out = None
if os.environ.get("NCCL_DEBUG_FILE"):
    path = os.environ["NCCL_DEBUG_FILE"].replace("%h", socket.gethostname()).replace("%p", str(os.getpid()))
    out = open(path, "w", encoding="utf-8")
elif os.environ.get("NCCL_DEBUG"):
    out = sys.stderr
if out is not None:
    for i in range(0, len(lines), 5):
        out.write("".join(lines[i:i + 5]))
        out.flush()
        time.sleep(0.02)
print(f"rank {rank} done", flush=True)
time.sleep(linger)
