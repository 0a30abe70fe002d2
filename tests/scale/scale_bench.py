#!/usr/bin/env python3
"""The scale harness: the real tlaunch frontend against N simulated daemons.

    scale_bench.py [--build-dir DIR] --nodes N --ranks-per-node 8 [--fence-bytes 64]
                   [--fences K] [--sim-processes 2] [--topology XML] [--runs K] [--check]

DIR is a CMake build tree of tlaunch (default build/) with tlaunch_scale built. The simulated
daemons (tests/scale/sim_daemons.h) run in a few event-driven processes, connect over TCP,
authenticate and seal like tlaunchd, report the inventory of a recorded GPU server, and put
--fence-bytes per rank into one fence of the whole job before their ranks "exit" 0. Prints a
per-phase table, then one line:

    scale: nodes=N ranks=R total_ms=T frontend_cpu_ms=C frontend_rss_mb=M

With --runs K the medians of K runs. --check (the test command's small run) fails unless the
job ended 0, every simulated daemon finished, and the phases came in order."""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_TOPOLOGY = ROOT / "tests/fixtures/topologies/aws-g4dn.metal_2xXeon8259CL_8xT4_1xEFA_hwloc2.8.xml"
MILESTONES = [
    ("authenticated", "every daemon connected and authenticated"),
    ("prepare", "inventories in, plan made, every daemon told to prepare"),
    ("start", "every node prepared, every daemon told to start"),
    ("first_fence_done", "first fence of the whole job complete at every daemon"),
    ("fence_done", "last fence complete at every daemon"),
    ("shutdown", "every rank exited, every daemon told to shut down"),
]


def run_once(exe, args):
    cmd = [str(exe), "--nodes", str(args.nodes), "--ranks-per-node", str(args.ranks_per_node),
           "--fence-bytes", str(args.fence_bytes), "--fences", str(args.fences), "--tree-radix", str(args.tree_radix), "--spawn", "1" if args.spawn else "0", "--sim-processes", str(args.sim_processes),
           "--topology", str(args.topology)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if not lines:
        sys.exit(f"tlaunch_scale printed no result (exit {p.returncode}):\n{p.stderr[-4000:]}")
    r = json.loads(lines[-1])
    r["stderr"] = p.stderr
    return r


def milestone_ms(r, key):
    times = [s[key] for s in r["sims"] if s and s.get(key, 0) > 0]
    if len(times) != len(r["sims"]):
        return None
    return (max(times) - r["t0_us"]) / 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--ranks-per-node", type=int, default=8)
    ap.add_argument("--fence-bytes", type=int, default=64)
    ap.add_argument("--fences", type=int, default=1, help="fences one after another (the last K-1 are timed)")
    ap.add_argument("--tree-radix", type=int, default=64, help="tlaunch's --tree-radix (0: a star)")
    ap.add_argument("--spawn", action="store_true",
                    help="tree spawn, as over ssh: the frontend starts its direct children, each daemon its own")
    ap.add_argument("--sim-processes", type=int, default=2)
    ap.add_argument("--topology", default=str(DEFAULT_TOPOLOGY))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    exe = pathlib.Path(args.build_dir) / "bin" / "tlaunch_scale"
    if not exe.exists():
        sys.exit(f"{exe} not found: build the tlaunch_scale target of {args.build_dir}")
    if not pathlib.Path(args.topology).exists():
        sys.exit(f"topology {args.topology} not found")

    runs = [run_once(exe, args) for _ in range(args.runs)]
    problems = []
    for r in runs:
        if r["exit_code"] != 0:
            problems.append(f"the job ended {r['exit_code']}: {r['summary']}\n{r['stderr'][-2000:]}")
        if any(s is None or s.get("failures", 1) != 0 for s in r["sims"]):
            problems.append(f"simulated daemons failed: {r['sims']}\n{r['stderr'][-2000:]}")

    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    shape = "a star" if args.tree_radix == 0 or args.tree_radix >= args.nodes else f"a tree of radix {args.tree_radix}"
    if shape != "a star":
        shape += ", spawned" if args.spawn else ", attached after reporting"
    print(f"{args.nodes} nodes x {args.ranks_per_node} ranks ({shape}), {args.fence_bytes} B per rank in the fence, "
          f"{args.sim_processes} simulated-daemon processes, {args.runs} run(s), medians")
    print(f"{'ms from start':>14}  phase")
    previous = 0.0
    order_ok = True
    for key, words in MILESTONES:
        ms = med([milestone_ms(r, key) for r in runs])
        if ms is None:
            order_ok = False
            print(f"{'-':>14}  {words}")
            continue
        if ms < previous:
            order_ok = False
        print(f"{ms:14.1f}  {words} (+{ms - previous:.1f})")
        previous = ms
    total = med([r["total_ms"] for r in runs])
    print(f"{total:14.1f}  the frontend returned (+{total - previous:.1f})")
    print("the frontend's own phase timings (slowest node, ms):")
    for name in runs[0]["phase_seconds"]:
        print(f"{med([r['phase_seconds'].get(name, 0) * 1000 for r in runs]):14.1f}  {name}")
    if args.fences > 1:
        per = med([(milestone_ms(r, "fence_done") - milestone_ms(r, "first_fence_done")) / (args.fences - 1)
                   for r in runs if milestone_ms(r, "fence_done") is not None])
        if per is not None:
            print(f"fence through the frontend: {per * 1000:.0f} us each ({args.fences - 1} after the first)")
    cpu = med([r["frontend_cpu_ms"] for r in runs])
    rss = med([r["frontend_rss_mb"] for r in runs])
    print(f"frontend CPU per node: {cpu * 1000 / args.nodes:.0f} us")
    print(f"scale: nodes={args.nodes} ranks={args.nodes * args.ranks_per_node} total_ms={total:.0f} "
          f"frontend_cpu_ms={cpu:.0f} frontend_rss_mb={rss:.0f}")
    if args.check and not order_ok:
        problems.append("a phase is missing or out of order")
    for p in problems:
        print("FAIL:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
