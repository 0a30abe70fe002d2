#!/usr/bin/python3
"""Restart benchmark of tlaunch --max-restarts (not a ctest test; prints numbers).

    sudo /usr/bin/python3 tests/bench/restart_bench.py [--tlaunch build/bin/tlaunch] [--runs 5]

Measures the time from a rank's failure to every rank of the next attempt running: rank 1 of
the first attempt prints the wall clock and exits 1; every rank of the second attempt prints
the wall clock as its first act; the restart time is the latest of those minus the failure.
Rows: `--launcher local -N 4 -p 2` on this host, and, with root and namespaces, the 4-node
virtual cluster over ssh from node1 (4 x 2; the virtual nodes have no RDMA: --net tcp over ib0).
Each row runs with --event-grace 0 and with the default 1 s (which applies only once a rank has
called PMIx_Init: these Python ranks never do, so both rows should agree); the issue's goal is
<= 2 s on the 4-node cluster. The final line is
`restart: local_ms=L cluster_ms=C` (medians; C is absent without a cluster).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "cluster"))
PYTHON = "/usr/bin/python3"
RANK = (
    "import os, sys, time\n"
    "t = time.time()\n"
    "a = int(os.environ['TORCHELASTIC_RESTART_COUNT']); r = int(os.environ['RANK'])\n"
    "print(f'attempt {a} rank {r} at {t:.6f}', flush=True)\n"
    "if a == 0 and r == 1: sys.exit(1)\n"
    "if a == 0: time.sleep(60)\n"
)


def restart_ms(stdout):
    failed = [float(t) for t in re.findall(r"attempt 0 rank 1 at (\d+\.\d+)", stdout)]
    again = [float(t) for t in re.findall(r"attempt 1 rank \d+ at (\d+\.\d+)", stdout)]
    if len(failed) != 1 or len(again) != 8:
        return None
    return (max(again) - failed[0]) * 1000


def measure(argv_prefix, tlaunch, base, grace, runs, env=None, cwd=None):
    times, error = [], None
    for _ in range(runs):
        p = subprocess.run([*argv_prefix, tlaunch, *base, "--event-grace", grace, "--max-restarts", "1", "--",
                            PYTHON, "-c", RANK], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=300, env=env, cwd=cwd)
        ms = restart_ms(p.stdout)
        if p.returncode != 0 or ms is None:
            error = f"exit {p.returncode}: {p.stderr[-400:]!r}"
            break
        times.append(ms)
    return times, error


def row(name, times, error):
    if error:
        print(f"{name:<52} FAILED: {error}", flush=True)
        return None
    med = statistics.median(times)
    print(f"{name:<52} median {med:7.0f} ms  (min {min(times):.0f}, max {max(times):.0f}, {len(times)} runs)",
          flush=True)
    return med


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tlaunch", default=os.environ.get("TLAUNCH_BIN") or str(HERE.parents[1] / "build/bin/tlaunch"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-cluster", action="store_true")
    args = ap.parse_args()
    tlaunch = str(Path(args.tlaunch).resolve())
    os.environ["TLAUNCH_BIN"] = tlaunch  # the cluster workspace copies this build for the nodes
    print("Restart: a rank fails -> every rank of the next attempt running (ms)", flush=True)
    local = None
    for grace in ("0", "1s"):
        t, e = measure([], tlaunch, ["--launcher", "local", "-N", "4", "-p", "2"], grace, args.runs)
        m = row(f"local -N 4 -p 2, --event-grace {grace}", t, e)
        local = m if grace == "0" else local
    cluster = None
    if not args.no_cluster:
        cluster = cluster_rows(args, tlaunch)
    print(f"restart: local_ms={local:.0f}" if local is not None else "restart: local_ms=FAILED",
          f"cluster_ms={cluster:.0f}" if cluster is not None else "", flush=True)
    return 0


def cluster_rows(args, tlaunch):
    import cluster_jobs as cj
    from vcluster import skip_unless_possible
    try:
        skip_unless_possible(slurm=False)
    except SystemExit:
        print("note: no virtual cluster here: cluster rows left out", flush=True)
        return None
    result = None
    with cj.Workspace() as ws:
        cj.wait_for_free_cluster()
        with cj.OwnVirtualCluster(n=4, slurm=False) as vc:
            env = {k: v for k, v in vc.environ().items() if not k.startswith("OMPI_")}
            for grace in ("0", "1s"):
                t, e = measure(vc.exec_argv("node1", []), ws.tlaunch,
                               [*cj.NET, "--hosts", "node[1-4]", "-p", "2"], grace, args.runs, env=env, cwd=ws.dir)
                m = row(f"4-node cluster over ssh from node1, --event-grace {grace}", t, e)
                result = m if grace == "0" else result
    return result


if __name__ == "__main__":
    sys.exit(main())
