#!/usr/bin/python3
"""Launch and output benchmark of tlaunch (not a ctest test; prints a table).

    sudo /usr/bin/python3 tests/bench/launch_bench.py [--tlaunch build/bin/tlaunch] [--runs 7]

On one 4-node virtual cluster (contrib/vcluster) it takes the median wall time of a trivial job,
8 ranks (2 per node) of /bin/true and of `/usr/bin/python3 -c 'print(1)'`, under
- tlaunch --launcher ssh from node1, with ssh connection reuse (default) and without, and with
  reuse but --preflight off (the virtual nodes have no RDMA: tlaunch runs with --net tcp --net-if ib0);
- the same with warm daemons (--keep-daemons 10m: the warm-up run leaves them, the timed runs reuse them);
- Open MPI's mpirun --hostfile from node1 (ssh);
- tlaunch --launcher slurm (also with --preflight off) and srun -N4 -n8, both inside
  `salloc -N4 --ntasks-per-node=2`,
and prints the ratios tlaunch-ssh / mpirun and tlaunch-slurm / srun. On this host it times
`tlaunch --launcher local -N k -p 2 -- /bin/true` for k = 1 and 4, and the output path: 8 ranks
(local, 4 nodes x 2) each writing --mb-per-rank MB of 100-byte lines to stdout, through tlaunch
(its stdout to /dev/null) against the same 8 writers straight into /dev/null and each through a
pipe into `cat > /dev/null` (the least any relay does), and through mpirun --tag-output.

With --plain-shell-user it also runs the ssh rows of /bin/true (tlaunch with and without reuse,
mpirun) as a temporary user made for the run (useradd from /etc/skel, removed at the end): every
ssh session runs the login shell with ~/.bashrc, and on a fresh Debian machine that is Debian's
default, which returns at once for a non-interactive shell; root's .bashrc on the machine these
numbers come from runs `pyenv init` (~100 ms of CPU per session), common to both launchers.

Each measurement: --warmup untimed runs, then --runs timed ones, commands interleaved round-robin
so that a change in machine load affects every command alike. Timings are taken where the
command runs (inside node1, inside the allocation), without the cost of getting there. Every run
must succeed (and print 8 lines for the Python job), or its row says FAILED with the reason.
Without root or namespaces the cluster rows are left out.
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "cluster"))

PYTHON = "/usr/bin/python3"
HELLO = [PYTHON, "-c", "print(1)"]
LINE_BYTES = 100
# Writes `mb` MB (10^6 bytes) of 100-byte lines to stdout as fast as Python can.
WRITER = (
    "import os, sys\n"
    "mb = float(sys.argv[1]); r = os.environ.get('RANK', '0')\n"
    "lines = [('rank %s line %07d ' % (r, i)).ljust(99, 'x').encode() + b'\\n' for i in range(1000)]\n"
    "block = b''.join(lines)\n"
    "out = sys.stdout.buffer\n"
    "for _ in range(int(mb * 1e6) // len(block)):\n"
    "    out.write(block)\n"
    "out.flush()\n"
)


# -- timing (also runs inside node1 and inside salloc: --inner) ---------------------------------

def time_commands(commands, runs, warmup, cwd=None):
    """commands: [{"name", "argv", "lines"?}]. Returns {name: {"times": [...], "error": str|None}}."""
    results = {c["name"]: {"times": [], "error": None} for c in commands}
    for i in range(warmup + runs):
        for c in commands:
            res = results[c["name"]]
            if res["error"]:
                continue
            t0 = time.perf_counter()
            p = subprocess.run(c["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, timeout=300)
            elapsed = time.perf_counter() - t0
            lines = p.stdout.count(b"\n")
            if p.returncode != 0 or ("lines" in c and lines != c["lines"]):
                res["error"] = (f"exit {p.returncode}, {lines} output lines: "
                                f"{(p.stdout + p.stderr)[-400:].decode(errors='replace')!r}")
            elif i >= warmup:
                res["times"].append(elapsed)
    return results


def inner(spec_file):
    spec = json.loads(Path(spec_file).read_text())
    print(json.dumps(time_commands(spec["commands"], spec["runs"], spec["warmup"], spec.get("cwd"))))
    return 0


def run_inner(prefix, commands, args, workdir, env, name):
    """Runs this script with --inner under `prefix` (vcluster exec node1 / salloc) and returns its results."""
    spec = Path(workdir, f"spec-{name}.json")
    spec.write_text(json.dumps({"commands": commands, "runs": args.runs, "warmup": args.warmup, "cwd": workdir}))
    p = subprocess.run([*prefix, PYTHON, str(Path(__file__).resolve()), "--inner", str(spec)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, cwd=workdir, env=env, timeout=3600)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        err = f"{name}: exit {p.returncode}: {p.stderr[-400:]!r}"
        return {c["name"]: {"times": [], "error": err} for c in commands}


# -- output throughput ---------------------------------------------------------------------------

def throughput(tlaunch, args, workdir):
    ranks, mb = 8, args.mb_per_rank
    writer = [PYTHON, "-c", WRITER, str(mb)]
    total_bytes = ranks * (int(mb * 1e6) // (LINE_BYTES * 1000)) * LINE_BYTES * 1000  # WRITER's blocks

    def through_tlaunch():
        t0 = time.perf_counter()
        p = subprocess.run([tlaunch, "--launcher", "local", "-N", "4", "-p", "2", "--", *writer],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=workdir, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"tlaunch exit {p.returncode}: {p.stderr[-400:]!r}")
        return time.perf_counter() - t0

    def direct():
        t0 = time.perf_counter()
        procs = [subprocess.Popen(writer, stdout=subprocess.DEVNULL, cwd=workdir, env={**os.environ, "RANK": str(r)})
                 for r in range(ranks)]
        if any(p.wait() != 0 for p in procs):
            raise RuntimeError("a writer failed")
        return time.perf_counter() - t0

    def through_pipe():
        # The least any relay does: every writer's bytes through a pipe into a reader process
        # (cat, 128 KiB reads) that writes them to /dev/null: no lines, tags, sockets or sealing.
        t0 = time.perf_counter()
        line = "set -o pipefail; " + " ".join(shlex.quote(w) for w in writer) + " | cat > /dev/null"
        procs = [subprocess.Popen(["bash", "-c", line], cwd=workdir, env={**os.environ, "RANK": str(r)})
                 for r in range(ranks)]
        if any(p.wait() != 0 for p in procs):
            raise RuntimeError("a piped writer failed")
        return time.perf_counter() - t0

    def through_mpirun():
        # Open MPI's own output relay (ORTE's IOF), tagged like tlaunch's, for an anchor.
        t0 = time.perf_counter()
        p = subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), "--tag-output",
                            *writer], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=workdir, timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"mpirun exit {p.returncode}: {p.stderr[-400:]!r}")
        return time.perf_counter() - t0

    commands = [("tlaunch", through_tlaunch), ("direct", direct), ("pipe", through_pipe)]
    if shutil.which("mpirun"):
        commands.append(("mpirun", through_mpirun))
    times = {name: [] for name, _ in commands}
    failed = {}  # an anchor (mpirun) that does not run here: its row says why; tlaunch's must run
    for i in range(1 + args.throughput_runs):
        for name, fn in commands:
            if name in failed:
                continue
            try:
                t = fn()
            except RuntimeError as e:
                if name != "mpirun":
                    raise
                failed[name] = str(e)
                continue
            if i >= 1:
                times[name].append(t)
    return total_bytes, {k: failed.get(k) or statistics.median(v) for k, v in times.items()}


# -- report --------------------------------------------------------------------------------------

def median_ms(res):
    if res is None:
        return None
    if res["error"]:
        return res["error"]
    return statistics.median(res["times"]) * 1000


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, str):
        return "FAILED"
    return f"{v:8.0f}"


def ratio(a, b):
    return f"{a / b:5.2f}" if isinstance(a, float) and isinstance(b, float) and b > 0 else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tlaunch", default=os.environ.get("TLAUNCH_BIN") or str(HERE.parents[1] / "build/bin/tlaunch"))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--throughput-runs", type=int, default=3)
    ap.add_argument("--mb-per-rank", type=float, default=50)
    ap.add_argument("--no-cluster", action="store_true", help="only the local rows")
    ap.add_argument("--plain-shell-user", action="store_true",
                    help="also run the ssh rows as a temporary user with Debian's default shell start-up")
    ap.add_argument("--inner", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        return inner(args.inner)

    import cluster_jobs as cj  # noqa: E402  (after --inner: node-side runs need nothing of it)
    os.environ["TLAUNCH_BIN"] = args.tlaunch
    cj.tl.TLAUNCH = args.tlaunch
    cj.require_tlaunch()
    rows = {}
    with cj.Workspace() as ws:
        tlaunch = ws.tlaunch
        print(f"tlaunch: {tlaunch}; {args.warmup} warm-up + {args.runs} timed runs each, median", flush=True)

        local = [{"name": f"local{k}", "argv": [tlaunch, "--launcher", "local", "-N", str(k), "-p", "2", "--",
                                                "/bin/true"]} for k in (1, 4)]
        rows.update(time_commands(local, args.runs, args.warmup, ws.dir))
        print("local rows done", flush=True)
        total_bytes, tp = throughput(tlaunch, args, ws.dir)
        print("throughput done", flush=True)

        if not args.no_cluster:
            cluster_rows(args, ws, tlaunch, rows)

    print_table(args, rows, total_bytes, tp)
    return 0


def cluster_rows(args, ws, tlaunch, rows):
    import cluster_jobs as cj
    from vcluster import skip_unless_possible
    try:
        skip_unless_possible()
    except SystemExit:
        print("note: no virtual cluster here: cluster rows left out", flush=True)
        return
    Path(ws.path("hostfile")).write_text("".join(f"node{i} slots=2\n" for i in range(1, 5)))
    programs = {"true": (["/bin/true"], {}), "python": (HELLO, {"lines": 8})}
    ssh_cmds, slurm_cmds = [], []
    net = cj.NET  # no RDMA device in the virtual nodes: --net tcp over ib0, as a user would run it
    for prog, (argv, extra) in programs.items():
        for key, opts in (("tlaunch-ssh-reuse-on", []), ("tlaunch-ssh-reuse-off", ["--ssh-reuse", "off"]),
                          ("tlaunch-ssh-reuse-on-nopf", ["--preflight", "off"]),
                          ("tlaunch-ssh-reuse-on-full", ["--preflight", "full"])):
            ssh_cmds.append({"name": f"{key}/{prog}", **extra,
                             "argv": [tlaunch, *net, "--launcher", "ssh", *opts, "--hosts", "node[1-4]", "-p", "2",
                                      "--", *argv]})
        # Warm daemons: the warm-up run leaves them, every timed run reuses them (a private HOME
        # holds their registry; the row ends them afterwards).
        ssh_cmds.append({"name": f"tlaunch-ssh-warm/{prog}", **extra,
                         "argv": ["env", f"HOME={ws.path('warm-home')}", tlaunch, *net, "--launcher", "ssh",
                                  "--keep-daemons", "10m", "--hosts", "node[1-4]", "-p", "2", "--", *argv]})
        ssh_cmds.append({"name": f"mpirun/{prog}", **extra,
                         "argv": ["mpirun", "--allow-run-as-root", "--oversubscribe", "-mca", "plm_rsh_agent", "ssh",
                                  "--hostfile", ws.path("hostfile"), "-np", "8", *argv]})
        for key, opts in (("tlaunch-slurm", []), ("tlaunch-slurm-nopf", ["--preflight", "off"])):
            slurm_cmds.append({"name": f"{key}/{prog}", **extra,
                               "argv": [tlaunch, *net, "--launcher", "slurm", *opts, "-p", "2", "--", *argv]})
        slurm_cmds.append({"name": f"srun/{prog}", **extra, "argv": ["srun", "-N4", "-n8", *argv]})
    cj.wait_for_free_cluster()
    with cj.OwnVirtualCluster(n=4, slurm=True) as vc:
        print(f"cluster up in {vc.up_seconds:.1f} s", flush=True)
        node_env = {k: v for k, v in vc.environ().items() if not k.startswith("OMPI_")}
        Path(ws.path("warm-home")).mkdir(mode=0o700, exist_ok=True)
        try:
            rows.update(run_inner(vc.exec_argv("node1", []), ssh_cmds, args, ws.dir, node_env, "node1"))
        finally:
            subprocess.run(vc.exec_argv("node1", ["env", f"HOME={ws.path('warm-home')}", tlaunch, "stop-daemons"]),
                           capture_output=True, timeout=60)
        print("ssh rows done", flush=True)
        if args.plain_shell_user:
            rows.update(plain_shell_rows(args, ws, vc, tlaunch, node_env))
            print("ssh rows as a user with a plain shell done", flush=True)
        rows.update(run_inner(["salloc", "-N4", "--ntasks-per-node=2", "-J", "launch-bench"], slurm_cmds, args,
                              ws.dir, vc.environ(), "salloc"))
        print("slurm rows done", flush=True)


PLAIN_USER = "tlbench"
VCLUSTER_STATE = Path("/var/lib/tlaunch-vcluster")  # contrib/vcluster's STATE: its client key, known hosts


def plain_shell_rows(args, ws, vc, tlaunch, node_env):
    """The ssh rows of /bin/true as a user made for them (Debian's default ~/.bashrc), removed after."""
    import pwd
    import cluster_jobs as cj
    try:
        pwd.getpwnam(PLAIN_USER)
        return {"plain/" + k: {"times": [], "error": f"a user {PLAIN_USER} exists already: not touched"}
                for k in ("tlaunch-ssh-reuse-on", "tlaunch-ssh-reuse-off", "mpirun")}
    except KeyError:
        pass
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", PLAIN_USER], check=True)
    try:
        subprocess.run(["usermod", "-p", "*", PLAIN_USER], check=True)  # not locked: sshd refuses a locked account
        user = pwd.getpwnam(PLAIN_USER)
        ssh_dir = Path(user.pw_dir, ".ssh")
        ssh_dir.mkdir(mode=0o700)
        keys = VCLUSTER_STATE / "keys"
        shutil.copy(keys / "id_ed25519", ssh_dir / "id_ed25519")
        shutil.copy(keys / "id_ed25519.pub", ssh_dir / "authorized_keys")
        shutil.copy(VCLUSTER_STATE / "run" / "known_hosts", ssh_dir / "known_hosts")
        (ssh_dir / "config").write_text("Host node*\n    IdentityFile ~/.ssh/id_ed25519\n    BatchMode yes\n"
                                        "    StrictHostKeyChecking yes\n")
        for f in [ssh_dir, *ssh_dir.iterdir()]:
            os.chown(f, user.pw_uid, user.pw_gid)
            os.chmod(f, 0o700 if f.is_dir() else 0o600)
        cmds = [{"name": f"plain/{key}/true",
                 "argv": [tlaunch, *cj.NET, "--launcher", "ssh", *opts, "--hosts", "node[1-4]", "-p", "2", "--",
                          "/bin/true"]}
                for key, opts in (("tlaunch-ssh-reuse-on", []), ("tlaunch-ssh-reuse-off", ["--ssh-reuse", "off"]))]
        cmds.append({"name": "plain/mpirun/true", "argv": ["mpirun", "--oversubscribe", "-mca", "plm_rsh_agent", "ssh",
                                                           "--hostfile", ws.path("hostfile"), "-np", "8", "/bin/true"]})
        as_user = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "env", "-i",
                   f"PATH={node_env.get('PATH', '/usr/bin:/bin')}", f"HOME={user.pw_dir}", f"USER={PLAIN_USER}",
                   f"LOGNAME={PLAIN_USER}", "SHELL=/bin/bash"]
        return run_inner(vc.exec_argv("node1", as_user), cmds, args, ws.dir, node_env, "plain")
    finally:
        subprocess.run(["pkill", "-KILL", "-u", PLAIN_USER], capture_output=True)  # ssh masters that persist
        time.sleep(0.5)
        subprocess.run(["userdel", "--remove", PLAIN_USER], capture_output=True)


def print_table(args, rows, total_bytes, tp):
    print()
    print(f"Launch: median wall time in ms of {args.runs} runs (after {args.warmup} warm-up), 4 nodes x 2 ranks")
    print(f"{'launcher':<44} {'/bin/true':>9} {'python':>9}")
    labels = [
        ("tlaunch --launcher ssh (from node1, ssh reuse)", "tlaunch-ssh-reuse-on"),
        ("tlaunch --launcher ssh (from node1, no reuse)", "tlaunch-ssh-reuse-off"),
        ("  same, ssh reuse, --preflight off", "tlaunch-ssh-reuse-on-nopf"),
        ("  same, ssh reuse, --preflight full", "tlaunch-ssh-reuse-on-full"),
        ("  same, warm daemons (--keep-daemons 10m)", "tlaunch-ssh-warm"),
        ("mpirun --hostfile (ssh, from node1)", "mpirun"),
        ("tlaunch --launcher slurm (inside salloc)", "tlaunch-slurm"),
        ("  same, --preflight off", "tlaunch-slurm-nopf"),
        ("srun -N4 -n8 (inside salloc)", "srun"),
    ]
    med = {key: {p: median_ms(rows.get(f"{key}/{p}")) for p in ("true", "python")} for _, key in labels}
    for label, key in labels:
        print(f"{label:<44} {fmt(med[key]['true']):>9} {fmt(med[key]['python']):>9}")
    for label, a, b in [("ratio tlaunch-ssh (reuse) / mpirun", "tlaunch-ssh-reuse-on", "mpirun"),
                        ("ratio tlaunch-ssh (no reuse) / mpirun", "tlaunch-ssh-reuse-off", "mpirun"),
                        ("ratio tlaunch-ssh (warm daemons) / mpirun", "tlaunch-ssh-warm", "mpirun"),
                        ("ratio tlaunch-ssh (warm daemons) / srun", "tlaunch-ssh-warm", "srun"),
                        ("ratio tlaunch-slurm / srun", "tlaunch-slurm", "srun")]:
        print(f"{label:<44} {ratio(med[a]['true'], med[b]['true']):>9} "
              f"{ratio(med[a]['python'], med[b]['python']):>9}")
    for label, key in labels:
        for p in ("true", "python"):
            if isinstance(med[key][p], str):
                print(f"  {key}/{p} FAILED: {med[key][p]}")
    if any(k.startswith("plain/") for k in rows):
        print(f"As user {PLAIN_USER}, Debian's default ~/.bashrc (/bin/true):")
        plain = {key: median_ms(rows.get(f"plain/{key}/true"))
                 for key in ("tlaunch-ssh-reuse-on", "tlaunch-ssh-reuse-off", "mpirun")}
        for label, key in (("  tlaunch --launcher ssh (ssh reuse)", "tlaunch-ssh-reuse-on"),
                           ("  tlaunch --launcher ssh (no reuse)", "tlaunch-ssh-reuse-off"),
                           ("  mpirun --hostfile (ssh)", "mpirun")):
            print(f"{label:<44} {fmt(plain[key]):>9}")
        print(f"{'  ratio tlaunch-ssh (reuse) / mpirun':<44} "
              f"{ratio(plain['tlaunch-ssh-reuse-on'], plain['mpirun']):>9}")
        print(f"{'  ratio tlaunch-ssh (no reuse) / mpirun':<44} "
              f"{ratio(plain['tlaunch-ssh-reuse-off'], plain['mpirun']):>9}")
    print()
    print(f"Local simulated nodes, /bin/true, 2 ranks per node: median ms of {args.runs} runs")
    for k in (1, 4):
        print(f"  tlaunch --launcher local -N {k} -p 2      {fmt(median_ms(rows.get(f'local{k}')))}")
    print()
    lines = total_bytes / LINE_BYTES
    print(f"Output: 8 ranks x {args.mb_per_rank:g} MB of {LINE_BYTES}-byte lines, "
          f"median of {args.throughput_runs} runs")
    print(f"{'path':<44} {'s':>7} {'Mlines/s':>9} {'MB/s':>8}")
    for label, key in [("through tlaunch (local -N 4 -p 2, to /dev/null)", "tlaunch"),
                       ("8 writers straight to /dev/null", "direct"),
                       ("8 writers each | cat > /dev/null", "pipe"),
                       ("through mpirun -np 8 --tag-output (local)", "mpirun")]:
        if key not in tp:
            continue
        s = tp[key]
        if isinstance(s, str):
            print(f"{label:<44} FAILED: {s}")
            continue
        print(f"{label:<44} {s:7.2f} {lines / s / 1e6:9.2f} {total_bytes / s / 1e6:8.0f}")
    print(f"{'ratio through tlaunch / direct (throughput)':<44} {'':>7} {tp['direct'] / tp['tlaunch']:9.2f}")
    print(f"{'ratio through tlaunch / through a pipe':<44} {'':>7} {tp['pipe'] / tp['tlaunch']:9.2f}")
    if isinstance(tp.get("mpirun"), float):
        print(f"{'ratio through tlaunch / through mpirun':<44} {'':>7} {tp['mpirun'] / tp['tlaunch']:9.2f}")


if __name__ == "__main__":
    sys.exit(main())
