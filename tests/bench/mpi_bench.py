#!/usr/bin/python3
"""MPI direct-launch benchmark of tlaunch (issue 6; not a ctest test; prints tables).

    sudo /usr/bin/python3 tests/bench/mpi_bench.py [--tlaunch build/bin/tlaunch] [--runs 5]

On one 4-node virtual cluster (contrib/vcluster, sshd and Slurm) it takes the median wall time of an
MPI hello, 4 nodes x 2 ranks (pmix_mpi_hello: MPI_Init, Allreduce, ring, Barrier, MPI_Finalize),
started by
- tlaunch over ssh from node1 (every tlaunchd is its ranks' PMIx server, no mpirun);
- Open MPI's mpirun --hostfile from node1 (ssh);
- tlaunch inside `salloc -N4 --ntasks-per-node=2` (it picks Slurm by itself);
- srun --mpi=pmix -N4 -n8 inside the same kind of allocation (Slurm's own PMIx server),
(both tlaunch rows also with --preflight off, to show what the checks cost; inside salloc also with
warm daemons, --keep-daemons, whose keepers the warm-up run starts; and tlaunch and srun of /bin/true
inside salloc, to split the launch from the MPI work in the ranks)
and prints the ratios tlaunch / srun and tlaunch / mpirun. The virtual nodes have no RDMA device:
tlaunch runs with --net tcp --net-if ib0 (which sets OMPI_MCA_btl_tcp_if_include to ib0's subnet), and
mpirun and srun get the same btl_tcp_if_include, so that every MPI job uses the same network. For CPU
ranks without RDMA tlaunch also plans OMPI_MCA_pml=ob1 (Open MPI then skips UCX's start-up in
MPI_Init); srun and mpirun run once as a user would (without it) and once with it, so that the
launchers also compare alone.

Then the PMIx fence micro-benchmark (pmix_fence_bench: time per PMIx_Fence without data, and with
64 B and 4 KiB per rank collected) under tlaunch and mpirun from node1 and under srun --mpi=pmix
inside salloc, at 8 ranks (4 x 2) and 64 ranks (4 x 16, oversubscribed: the cluster is built with
16 CPUs per node so that Slurm allocates them). Last, whether a fence without data waits for every
node under each of them (pmix_barrier: rank 0 enters it late): under srun --mpi=pmix (Slurm 22.05,
PMIx 4.2.2) it waits only for the ranks of the same node, so its barrier row is not a barrier of
the job; mpirun's and tlaunch's are.

Each measurement: --warmup untimed runs, then --runs timed ones, commands interleaved round-robin
so that a change in machine load affects every command alike. Timings are taken where the command
runs (inside node1, inside the allocation), without the cost of getting there. A run must exit 0
(and the hello print one ok line per rank); failed runs are left out of the median and listed
below the table with their output; a row none of whose runs succeeded says FAILED.
"""
import argparse
import json
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
NODES = 4
CPUS_PER_NODE = 16  # Slurm's view, so that salloc grants 4 x 16 tasks for the 64-rank fence run
FENCE_BYTES = (0, 64, 4096)
FENCE_LINE = re.compile(r"pmix_fence_bench ranks=(\d+) bytes_per_rank=(\d+) \w+ iterations=\d+ "
                        r"us_per_fence mean=([\d.]+) slowest_rank=([\d.]+)")


# -- timing (also runs inside node1 and inside salloc: --inner) ---------------------------------

def time_commands(commands, runs, warmup, cwd=None):
    """commands: [{"name", "argv", "ok_lines"?}]. ok_lines: how many stdout lines must end in ' ok'.
    A failed run is recorded and left out of the timings. Returns {name: {"times": [s...] of the
    successful timed runs, "stdouts": [...] of those, "errors": [str...] of the failed runs}}."""
    results = {c["name"]: {"times": [], "stdouts": [], "errors": []} for c in commands}
    for i in range(warmup + runs):
        for c in commands:
            res = results[c["name"]]
            t0 = time.perf_counter()
            p = subprocess.run(c["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, timeout=600)
            elapsed = time.perf_counter() - t0
            out = p.stdout.decode(errors="replace")
            oks = sum(line.endswith(" ok") for line in out.splitlines())
            failed = p.returncode != 0 and not c.get("any_exit")
            if p.returncode != 0 and c.get("any_exit"):  # kept for the report: the lines and why it exited
                out += f"\n(exit {p.returncode}) " + p.stderr[-600:].decode(errors="replace")
            if failed or ("ok_lines" in c and oks != c["ok_lines"]):
                res["errors"].append(f"{'warm-up' if i < warmup else 'timed'} run: exit {p.returncode}, {oks} ok "
                                     f"lines: {(p.stdout + p.stderr)[-600:].decode(errors='replace')!r}")
            elif i >= warmup:
                res["times"].append(elapsed)
                res["stdouts"].append(out)
    return results


def inner(spec_file):
    spec = json.loads(Path(spec_file).read_text())
    print(json.dumps(time_commands(spec["commands"], spec["runs"], spec["warmup"], spec.get("cwd"))))
    return 0


def run_inner(prefix, commands, runs, warmup, workdir, env, name):
    """Runs this script with --inner under `prefix` (vcluster exec node1 / salloc); returns its results."""
    spec = Path(workdir, f"spec-{name}.json")
    spec.write_text(json.dumps({"commands": commands, "runs": runs, "warmup": warmup, "cwd": workdir}))
    p = subprocess.run([*prefix, PYTHON, str(Path(__file__).resolve()), "--inner", str(spec)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace", cwd=workdir, env=env, timeout=3600)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        err = f"{name}: exit {p.returncode}: {p.stderr[-600:]!r}"
        return {c["name"]: {"times": [], "stdouts": [], "errors": [err]} for c in commands}


# -- the measurements ----------------------------------------------------------------------------

def hello_rows(args, ws, vc, programs, env):
    import cluster_jobs as cj
    world, ppn = NODES * 2, 2
    hello = [programs["hello"], str(world), str(ppn)]
    fabric = f"{vc.fabric_ip('node1').rsplit('.', 1)[0]}.0/24"
    hosts = f"node[1-{NODES}]"
    ssh_cmds = [
        {"name": key, "ok_lines": world,
         "argv": [ws.tlaunch, *cj.NET, "--launcher", "ssh", *opts, "--hosts", hosts, "-p", str(ppn), "--", *hello]}
        for key, opts in (("tlaunch-ssh", []), ("tlaunch-ssh-nopf", ["--preflight", "off"]))
    ] + [
        {"name": "mpirun", "ok_lines": world, "argv": mpirun_argv(ws, vc, ppn, hello)},
        {"name": "mpirun-ob1", "ok_lines": world, "argv": mpirun_argv(ws, vc, ppn, hello, ["-mca", "pml", "ob1"])},
    ]
    # Warm daemons inside the allocation: the warm-up run starts the keepers (in a step of their
    # own), every timed run reuses them. A HOME of the bench's own holds the registry and secret.
    home = Path(ws.dir, "warm-home")
    home.mkdir(mode=0o700, exist_ok=True)
    warm = ["env", f"HOME={home}", ws.tlaunch, "--keep-daemons", "10m"]
    slurm_cmds = [
        {"name": key, "ok_lines": world, "argv": [*launcher, *cj.NET, *opts, "-p", str(ppn), "--", *hello]}
        for key, launcher, opts in (("tlaunch-slurm", [ws.tlaunch], []),
                                    ("tlaunch-slurm-nopf", [ws.tlaunch], ["--preflight", "off"]),
                                    ("tlaunch-slurm-nobind", [ws.tlaunch], ["--bind", "none"]),
                                    ("tlaunch-slurm-warm", warm, []))
    ] + [
        {"name": "srun", "ok_lines": world, "argv": ["srun", f"--export=ALL,OMPI_MCA_btl_tcp_if_include={fabric}",
                                                     "--mpi=pmix", f"-N{NODES}", f"-n{world}", *hello]},
        # With the Open MPI setting tlaunch plans for CPU ranks without RDMA (pml ob1: no UCX
        # start-up in MPI_Init), so that the launchers compare alone.
        {"name": "srun-ob1", "ok_lines": world,
         "argv": ["srun", f"--export=ALL,OMPI_MCA_btl_tcp_if_include={fabric},OMPI_MCA_pml=ob1",
                  "--mpi=pmix", f"-N{NODES}", f"-n{world}", *hello]},
        # The same launches of /bin/true: what the launch alone costs, without MPI.
        {"name": "tlaunch-slurm-true", "argv": [ws.tlaunch, *cj.NET, "-p", str(ppn), "--", "/bin/true"]},
        {"name": "srun-true", "argv": ["srun", "--mpi=pmix", f"-N{NODES}", f"-n{world}", "/bin/true"]},
        {"name": "tlaunch-slurm-warm-true", "argv": [*warm, *cj.NET, "-p", str(ppn), "--", "/bin/true"]},
    ]
    rows = run_inner(vc.exec_argv("node1", []), ssh_cmds, args.runs, args.warmup, ws.dir, env, "hello-node1")
    print("hello: ssh rows done", flush=True)
    rows.update(run_inner(["salloc", f"-N{NODES}", f"--ntasks-per-node={ppn}", "-J", "mpi-bench"], slurm_cmds,
                          args.runs, args.warmup, ws.dir, env, "hello-salloc"))
    print("hello: slurm rows done", flush=True)
    return rows


def mpirun_argv(ws, vc, ppn, program, mca=()):
    hostfile = ws.path(f"hostfile-{ppn}")
    Path(hostfile).write_text("".join(f"{n} slots={ppn}\n" for n in vc.nodes))
    fabric = f"{vc.fabric_ip('node1').rsplit('.', 1)[0]}.0/24"
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-mca", "plm_rsh_agent", "ssh",
            "-mca", "btl_tcp_if_include", fabric, *mca, "--hostfile", hostfile, "-np", str(NODES * ppn), *program]


BARRIER_DELAY_MS = 200
BARRIER_LINE = re.compile(r"^pmix_barrier rank (\d+) host (\S+) fence \d+ waited_ms ([\d.]+)$", re.M)


def barrier_rows(args, ws, vc, programs, env):
    """pmix_barrier under each launcher, 4 x 2 ranks: rank 0 enters 3 fences without data 200 ms
    late. Whether the ranks on the other nodes wait for it says whether the fence is a barrier of
    the whole job (PMIx's definition) or of each node only; it decides what the barrier rows of
    the fence table compare."""
    import cluster_jobs as cj
    program = [programs["barrier"], str(BARRIER_DELAY_MS), "3"]
    node1 = [{"name": "tlaunch", "any_exit": True,
              "argv": [ws.tlaunch, *cj.NET, "--launcher", "ssh", "--hosts", f"node[1-{NODES}]", "-p", "2",
                       "--tag-output", "none", "--", *program]},
             {"name": "mpirun", "any_exit": True, "argv": mpirun_argv(ws, vc, 2, program)}]
    rows = run_inner(vc.exec_argv("node1", []), node1, 1, 0, ws.dir, env, "barrier-node1")
    rows.update(run_inner(["salloc", f"-N{NODES}", "--ntasks-per-node=2", "-J", "mpi-bench-barrier"],
                          [{"name": "srun", "any_exit": True,
                            "argv": ["srun", "--mpi=pmix", f"-N{NODES}", f"-n{NODES * 2}", *program]}],
                          1, 0, ws.dir, env, "barrier-srun"))
    print("barrier check done", flush=True)
    return rows


def barrier_waits(res):
    """(shortest wait of a rank on rank 0's node other than rank 0, shortest wait of a rank on
    another node) in ms, or an error text."""
    if not res:
        return "no run"
    if not res["stdouts"]:
        return res["errors"][-1] if res["errors"] else "no run"
    waits = [(int(r), host, float(w)) for r, host, w in BARRIER_LINE.findall(res["stdouts"][-1])]
    home = next((host for r, host, _ in waits if r == 0), None)
    if home is None:
        return f"no line of rank 0: {res['stdouts'][-1][-400:]!r}"
    same = [w for r, host, w in waits if host == home and r != 0]
    other = [w for r, host, w in waits if host != home]
    return (min(same) if same else None, min(other) if other else None)


def fence_rows(args, ws, vc, programs, env):
    import cluster_jobs as cj
    rows = {}
    for ppn in (2, 16):
        world = NODES * ppn
        iterations = args.fence_iterations if ppn == 2 else max(1, args.fence_iterations // 4)
        bench = [programs["fence"], str(iterations), *map(str, FENCE_BYTES)]
        # Also unbound: the four virtual nodes share two cores, so --bind core (the default) pins
        # ranks of different "nodes" onto the same core, which srun (task/none) does not do.
        tl_cmd = [{"name": f"{key}/{world}",
                   "argv": [ws.tlaunch, *cj.NET, "--launcher", "ssh", "--hosts", f"node[1-{NODES}]", "-p", str(ppn),
                            "--tag-output", "none", *extra, "--", *bench]}
                  for key, extra in (("tlaunch", []), ("tlaunch-nobind", ["--bind", "none"]))]
        srun_cmd = [{"name": f"srun/{world}", "argv": ["srun", "--mpi=pmix", f"-N{NODES}", f"-n{world}", *bench]}]
        # Open MPI's own runtime (ORTE's PMIx server in every orted): a fence without data is a
        # barrier of the whole job there, as under tlaunch (see barrier_rows).
        tl_cmd.append({"name": f"mpirun/{world}", "argv": mpirun_argv(ws, vc, ppn, bench)})
        rows.update(run_inner(vc.exec_argv("node1", []), tl_cmd, args.fence_runs, 0, ws.dir, env,
                              f"fence-tlaunch-{world}"))
        rows.update(run_inner(["salloc", f"-N{NODES}", f"--ntasks-per-node={ppn}", "-J", "mpi-bench-fence"], srun_cmd,
                              args.fence_runs, 0, ws.dir, env, f"fence-srun-{world}"))
        print(f"fence: {world} ranks done", flush=True)
    return rows


def fence_means(res):
    """{bytes: median over the successful runs of the mean us per fence} from pmix_fence_bench's
    lines; an error text if no run succeeded."""
    if res is None:
        return None
    if not res["stdouts"]:
        return res["errors"][-1] if res["errors"] else "no run"
    per_bytes = {}
    for out in res["stdouts"]:
        for m in FENCE_LINE.finditer(out):
            per_bytes.setdefault(int(m.group(2)), []).append(float(m.group(3)))
    if sorted(per_bytes) != sorted(FENCE_BYTES):
        return f"unexpected output: {res['stdouts'][-1][-400:]!r}"
    return {b: statistics.median(v) for b, v in per_bytes.items()}


# -- report --------------------------------------------------------------------------------------

def median_ms(res):
    """Median ms of the successful timed runs; the last error if none succeeded."""
    if res is None:
        return None
    if not res["times"]:
        return res["errors"][-1] if res["errors"] else "no run"
    return statistics.median(res["times"]) * 1000


def failure_notes(name, res):
    if res and res["errors"]:
        n = len(res["errors"])
        return [f"  {name}: {n} failed run{'s' if n > 1 else ''} (left out of the median); last: {res['errors'][-1]}"]
    return []


def fmt(v, width=9, digits=0):
    if v is None:
        return f"{'-':>{width}}"
    if isinstance(v, str):
        return f"{'FAILED':>{width}}"
    return f"{v:{width}.{digits}f}"


def ratio(a, b):
    return f"{a / b:9.2f}" if isinstance(a, float) and isinstance(b, float) and b > 0 else f"{'-':>9}"


def print_tables(args, hello, fence, barrier):
    if hello:
        print_hello(args, hello)
    if fence:
        print_fences(args, fence)
    if barrier:
        print_barrier(barrier)


def print_hello(args, hello):
    print()
    print(f"MPI hello (pmix_mpi_hello: Init, Allreduce, ring, Barrier, Finalize), {NODES} nodes x 2 ranks: "
          f"median wall ms of {args.runs} runs (after {args.warmup} warm-up)")
    labels = [("tlaunch over ssh (from node1)", "tlaunch-ssh"),
              ("  same, --preflight off", "tlaunch-ssh-nopf"),
              ("mpirun --hostfile (ssh, from node1)", "mpirun"),
              ("tlaunch inside salloc (Slurm)", "tlaunch-slurm"),
              ("  same, --preflight off", "tlaunch-slurm-nopf"),
              ("  same, --bind none (srun leaves ranks unbound)", "tlaunch-slurm-nobind"),
              ("  same, warm daemons (--keep-daemons 10m)", "tlaunch-slurm-warm"),
              (f"srun --mpi=pmix -N{NODES} -n{NODES * 2} inside salloc", "srun"),
              ("  same, OMPI_MCA_pml=ob1 (as tlaunch plans here)", "srun-ob1"),
              ("mpirun --hostfile, -mca pml ob1", "mpirun-ob1")]
    med = {key: median_ms(hello.get(key)) for _, key in labels}
    for label, key in labels:
        print(f"  {label:<46} {fmt(med[key])}")
    print(f"  {'ratio tlaunch (salloc) / srun':<46} {ratio(med['tlaunch-slurm'], med['srun'])}")
    print(f"  {'ratio tlaunch (salloc, warm daemons) / srun':<46} {ratio(med['tlaunch-slurm-warm'], med['srun'])}")
    true = {key: median_ms(hello.get(f"{key}-true")) for key in ("tlaunch-slurm", "srun", "tlaunch-slurm-warm")}
    print(f"  {'  of which launching /bin/true: tlaunch, srun':<46} {fmt(true['tlaunch-slurm'])} {fmt(true['srun'])}")
    print(f"  {'  /bin/true with warm daemons, ratio to srun':<46} {fmt(true['tlaunch-slurm-warm'])} "
          f"{ratio(true['tlaunch-slurm-warm'], true['srun'])}")
    mpi = {key: med[key] - true[key] if all(isinstance(v, float) for v in (med[key], true[key])) else None
           for key in ("tlaunch-slurm", "srun")}
    print(f"  {'  the rest (MPI in the ranks): tlaunch, srun':<46} {fmt(mpi['tlaunch-slurm'])} {fmt(mpi['srun'])}")
    print(f"  {'ratio tlaunch (ssh) / srun':<46} {ratio(med['tlaunch-ssh'], med['srun'])}")
    print(f"  {'ratio tlaunch (ssh) / mpirun':<46} {ratio(med['tlaunch-ssh'], med['mpirun'])}")
    print(f"  {'same Open MPI settings: tlaunch (salloc) / srun':<46} {ratio(med['tlaunch-slurm'], med['srun-ob1'])}")
    print(f"  {'same Open MPI settings: tlaunch (ssh) / mpirun':<46} {ratio(med['tlaunch-ssh'], med['mpirun-ob1'])}")
    for key in [key for _, key in labels] + ["tlaunch-slurm-true", "srun-true", "tlaunch-slurm-warm-true"]:
        for note in failure_notes(key, hello.get(key)):
            print(note)


def print_fences(args, fence):
    print()
    print(f"PMIx_Fence (pmix_fence_bench): microseconds per fence, mean over ranks, median of {args.fence_runs} runs; "
          f"{args.fence_iterations} fences per case at 8 ranks, {max(1, args.fence_iterations // 4)} at 64")
    print(f"  {'ranks':>5} {'case':<18} {'tlaunch':>9} {'srun':>9} {'tl/srun':>9} {'unbound':>9} {'ub/srun':>9} "
          f"{'mpirun':>9} {'tl/mpirun':>9}")
    failures = []
    for world in (NODES * 2, NODES * 16):
        got = {who: fence_means(fence.get(f"{who}/{world}")) for who in ("tlaunch", "srun", "tlaunch-nobind", "mpirun")}
        for who in got:
            failures += failure_notes(f"{who}/{world}", fence.get(f"{who}/{world}"))
        for b in FENCE_BYTES:
            case = "barrier (no data)" if b == 0 else f"collect {b} B/rank"
            vals = {who: (v if isinstance(v, str) or v is None else v.get(b)) for who, v in got.items()}
            print(f"  {world:>5} {case:<18} {fmt(vals['tlaunch'], digits=1)} {fmt(vals['srun'], digits=1)} "
                  f"{ratio(vals['tlaunch'], vals['srun'])} {fmt(vals['tlaunch-nobind'], digits=1)} "
                  f"{ratio(vals['tlaunch-nobind'], vals['srun'])} {fmt(vals['mpirun'], digits=1)} "
                  f"{ratio(vals['tlaunch'], vals['mpirun'])}")
    for f in failures:
        print(f)


def print_barrier(barrier):
    print()
    print(f"Is a fence without data a barrier of the whole job? (pmix_barrier: rank 0 enters 3 fences "
          f"{BARRIER_DELAY_MS} ms late; the shortest wait, ms)")
    print(f"  {'launcher':<24} {'rank 0 node':>12} {'other nodes':>12}  barrier of")
    for who, label in (("tlaunch", "tlaunch (ssh)"), ("mpirun", "mpirun"), ("srun", "srun --mpi=pmix")):
        got = barrier_waits(barrier.get(who))
        if isinstance(got, str):
            print(f"  {label:<24} FAILED: {got}")
            continue
        same, other = got
        verdict = "-" if other is None else ("the job" if other >= BARRIER_DELAY_MS / 2 else "each node only")
        print(f"  {label:<24} {fmt(same, 12, 1)} {fmt(other, 12, 1)}  {verdict}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    build = HERE.parents[1] / "build" / "bin"
    ap.add_argument("--tlaunch", default=os.environ.get("TLAUNCH_BIN") or str(build / "tlaunch"))
    ap.add_argument("--hello", default=os.environ.get("PMIX_MPI_HELLO"),
                    help="pmix_mpi_hello (default: next to tlaunch)")
    ap.add_argument("--fence-bench", default=os.environ.get("PMIX_FENCE_BENCH"),
                    help="pmix_fence_bench (default: next to tlaunch)")
    ap.add_argument("--barrier", default=os.environ.get("PMIX_BARRIER"),
                    help="pmix_barrier (default: next to tlaunch)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--fence-runs", type=int, default=3)
    ap.add_argument("--fence-iterations", type=int, default=200)
    ap.add_argument("--only", choices=("hello", "fence", "barrier"), action="append",
                    help="measure only this part (repeatable; default: all three)")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        return inner(args.inner)

    import cluster_jobs as cj  # noqa: E402  (after --inner: node-side runs need nothing of it)
    from vcluster import skip_unless_possible
    os.environ["TLAUNCH_BIN"] = args.tlaunch
    cj.tl.TLAUNCH = args.tlaunch
    cj.require_tlaunch()
    bindir = Path(args.tlaunch).resolve().parent
    programs = {"hello": args.hello or str(bindir / "pmix_mpi_hello"),
                "fence": args.fence_bench or str(bindir / "pmix_fence_bench"),
                "barrier": args.barrier or str(bindir / "pmix_barrier")}
    for name, path in programs.items():
        if not os.access(path, os.X_OK):
            sys.exit(f"mpi_bench: {path} is not an executable (build the targets pmix_mpi_hello pmix_fence_bench pmix_barrier, "
                     "or pass --hello / --fence-bench / --barrier)")
        if str(Path(path).resolve()).startswith(cj.NODE_PRIVATE):
            sys.exit(f"mpi_bench: {path} lies in a node-private directory (/tmp, /dev/shm): build outside it")
    skip_unless_possible()
    with cj.Workspace() as ws:
        print(f"tlaunch: {ws.tlaunch}", flush=True)
        cj.wait_for_free_cluster()
        with cj.OwnVirtualCluster(n=NODES, slurm=True, cpus=CPUS_PER_NODE) as vc:
            print(f"cluster up in {vc.up_seconds:.1f} s", flush=True)
            clean = ("OMPI_", "PMIX_", "PRTE_", "NCCL_", "GLOO_", "UCX_")
            env = {k: v for k, v in vc.environ().items() if not k.startswith(clean)}
            wanted = set(args.only or ("hello", "fence", "barrier"))
            hello = hello_rows(args, ws, vc, programs, env) if "hello" in wanted else {}
            fence = fence_rows(args, ws, vc, programs, env) if "fence" in wanted else {}
            barrier = barrier_rows(args, ws, vc, programs, env) if "barrier" in wanted else {}
    print_tables(args, hello, fence, barrier)
    return 0


if __name__ == "__main__":
    sys.exit(main())
