#!/usr/bin/python3
"""The control tree (issue 14) on a 4-node virtual cluster with sshd and Slurm, at --tree-radix 2:
tlaunch talks to node1 and node2 only; node3 and node4 are below node1 (bootstrap/tree_shape.h),
so node1 is an interior daemon that carries their messages, output and exits. Over ssh tlaunch
starts node1's and node2's daemons and node1 starts node3's and node4's over ssh (tree spawn);
inside salloc srun starts all four and node3 and node4 attach to node1. As a user sees it:

- an ssh launch, 4 x 2 ranks: every rank's line arrives tagged with its node, -v says the tree is
  in place with tlaunch talking to 2 of 4 daemons, exit 0;
- a rank failing on node4 (below node1): the job exits with its status and names rank and node;
- tlaunch run on node3 (a node of the job, below node1): it starts node3's daemon itself, node1
  starts node4's over ssh, every rank runs;
- node3 unable to reach node1 (a prohibit route on the management network): over ssh node1 cannot
  start node3's daemon and tlaunch starts it instead; inside salloc node3 cannot attach to node1
  and stays connected to tlaunch; either way tlaunch says so and the job runs on every node;
- the MPI hello (PMIx fences, direct modex) over ssh and inside `salloc -N 4` (where srun starts the
  daemons and the frontend places them once they are in): every rank ok;
- node1's tlaunchd killed mid-job (an interior daemon): the job ends (exit 69) naming node1 and the
  2 nodes below it; nothing of the job is left on node3 or node4 within 10 s;
- node4's tlaunchd killed mid-job (a leaf below node1): node1 reports it lost, the job ends naming
  node4; nothing of the job is left on any node within 10 s;
- node3's tlaunchd stopped (SIGSTOP) mid-job: only node1 hears its heartbeats stop; the job ends
  within the heartbeat timeout (5 s) naming node3; once it runs again it ends its ranks;
- node1's tlaunchd stopped (SIGSTOP) mid-job (an interior daemon whose children's connections stay
  open): the job ends naming node1 and the 2 nodes below it, and node3 and node4 end their ranks
  when node1's heartbeats stop, while node1 is still stopped; once it runs again it ends its own;
- node4's sshd gone: node1's ssh is refused, and the job fails at once naming node4 and its parent
  (a node down for ssh is not tried again from tlaunch).

Needs root (exits 77, skipped, where a virtual cluster cannot be built) and the MPI test program of
tests/pmix (PMIX_MPI_HELLO). One cluster for all checks.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vcluster import skip_unless_possible  # noqa: E402
import cluster_jobs as cj  # noqa: E402

TREE = ["--tree-radix", "2"]
TIMEOUT = 180
check = cj.Checks()
jobs_seen = []


def run(ws, args, timeout=TIMEOUT):
    r = subprocess.run([ws.tlaunch, *cj.NET, *TREE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace", timeout=timeout, cwd=ws.dir, env=vc.environ())
    r.job = cj.job_id_in(r.stderr)
    if r.job:
        jobs_seen.append(r.job)
    return r


def hosts():
    return ["--hosts", ",".join(vc.nodes)]


def nothing_left(what, job):
    ok = cj.tl.wait_until(lambda: not cj.job_processes(job), 10)
    check(ok, f"{what}: nothing of the job left on any node within 10 s", "\n     ".join(cj.job_processes(job)))


def ssh_launch(ws):
    r = run(ws, ["-v", *hosts(), "-p", "2", "--", "/bin/sh", "-c", "echo rank $RANK of $WORLD_SIZE on $(hostname)"])
    lines = sorted(l for l in r.stdout.splitlines() if " rank " in l)
    want = sorted(f"[{node}:{rank}] rank {rank} of 8 on {node}" for rank, node in
                  ((i, vc.nodes[i // 2]) for i in range(8)))
    check(r.returncode == 0 and lines == want, "radix 2 over ssh: 8 ranks, each line tagged with its node, exit 0",
          f"exit {r.returncode}\n     stdout {r.stdout!r}\n     stderr {r.stderr[-1500:]!r}")
    check("control tree: tlaunch talks to 2 of 4 daemons (radix 2" in r.stderr and
          "the others were started over ssh by the daemon above them" in r.stderr,
          "radix 2 over ssh: -v says tlaunch talks to 2 of the 4 daemons, node1 started the others", r.stderr[-1500:])
    if r.job:
        nothing_left("radix 2 over ssh", r.job)


def frontend_on_a_node(ws):
    """tlaunch run on node3, one of the job's nodes (a user on a login node that is also a compute
    node, or on the first node of an allocation): node3 sits below node1 in the tree, but tlaunch
    starts its daemon itself as a local process (no ssh to its own host); node1 starts only
    node4's. Every rank runs; -v counts 3 of 4 daemons talking to tlaunch; no fallback is said."""
    program = ["--", "/bin/sh", "-c",
               'd=$(ps -o ppid= -p $PPID | tr -d " "); echo rank $RANK on $(hostname) started by $(ps -o comm= -p $d)']
    argv = [ws.tlaunch, *cj.NET, *TREE, "-v", *hosts(), "-p", "1", *program]
    r = vc.exec("node3", argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                timeout=TIMEOUT, cwd=ws.dir, env=vc.environ())
    if cj.job_id_in(r.stderr):
        jobs_seen.append(cj.job_id_in(r.stderr))
    # node3's daemon is tlaunch's child; the others are sshd's (node4's: over ssh from node1).
    want = sorted(f"[{node}:{i}] rank {i} on {node} started by {'tlaunch' if node == 'node3' else 'sshd'}"
                  for i, node in enumerate(vc.nodes))
    lines = sorted(l for l in r.stdout.splitlines() if " rank " in l)
    check(r.returncode == 0 and lines == want and "control tree: tlaunch talks to 3 of 4 daemons" in r.stderr and
          "could not" not in r.stderr,
          "radix 2, tlaunch on node3: node3's daemon is tlaunch's own child, node1 starts node4's, every rank runs",
          f"exit {r.returncode}\n     stdout {r.stdout!r}\n     stderr {r.stderr[-1500:]!r}")


def parent_unreachable(ws):
    """node3 cannot reach node1 (its parent) over the management network. Over ssh node1 cannot
    start node3's daemon (tree spawn): tlaunch starts it itself; inside salloc node3 cannot attach
    to node1: it stays connected to tlaunch. Either way tlaunch says so, and every rank runs."""
    route = ["ip", "route", "add", "prohibit", f"{vc.mgmt_ip('node1')}/32"]
    vc.exec("node3", route, check=True)
    program = ["--", "/bin/sh", "-c", "echo rank $RANK on $(hostname)"]
    try:
        # node1's ssh to node3 waits for an answer that never comes: for as long as ConnectTimeout
        # (a user on such a network shortens it the same way).
        r = run(ws, ["-v", *hosts(), "--ssh-connect-timeout", "4", "-p", "1", *program])
        argv = ["salloc", "-N", "4", "--", ws.tlaunch, *cj.NET, *TREE, "-v", "-p", "1", *program]
        s = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                           timeout=TIMEOUT, cwd=ws.dir, env=vc.environ())
        if cj.job_id_in(s.stderr):
            jobs_seen.append(cj.job_id_in(s.stderr))
    finally:
        vc.exec("node3", ["ip", "route", "del", "prohibit", f"{vc.mgmt_ip('node1')}/32"], check=True)
    want = sorted(f"[{node}:{i}] rank {i} on {node}" for i, node in enumerate(vc.nodes))

    def notes(err):
        return [l for l in err.splitlines() if "control tree" in l or "could not" in l]
    lines = sorted(l for l in r.stdout.splitlines() if " rank " in l)
    check(r.returncode == 0 and lines == want and
          "node node1 could not start tlaunchd on node3 over ssh" in r.stderr and
          "tlaunch starts it and talks to it directly" in r.stderr and
          "control tree: tlaunch talks to 3 of 4 daemons" in r.stderr,
          "over ssh, node1 cannot start node3: tlaunch starts it, says so with -v, every rank runs, exit 0",
          f"exit {r.returncode}\n     stdout {r.stdout!r}\n     notes {notes(r.stderr)!r}")
    lines = sorted(l for l in s.stdout.splitlines() if " rank " in l)
    check(s.returncode == 0 and lines == want and
          "node node3 could not attach to its parent node1 in the control tree" in s.stderr and
          "it stays connected to tlaunch directly" in s.stderr and
          "control tree: tlaunch talks to 3 of 4 daemons" in s.stderr,
          "inside salloc, node3 cannot attach to node1: tlaunch says so, node3 stays direct, every rank runs, exit 0",
          f"exit {s.returncode}\n     stdout {s.stdout!r}\n     notes {notes(s.stderr)!r}\n     {s.stderr[-800:]!r}")


def sshd_down_below(ws):
    """node4's sshd gone (its listener killed; run last): node1, its parent, is refused. The node
    is down for ssh from anywhere: the job fails at once naming node4 and its parent's attempt,
    without tlaunch trying again (it did, taking up to twice --ssh-connect-timeout)."""
    for pid in subprocess.run(["ip", "netns", "pids", "tlvc-node4"], capture_output=True, text=True).stdout.split():
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes()  # "sshd: /usr/sbin/sshd -D ... [listener] ..."
            if title.startswith(b"sshd") and b"[listener]" in title:
                os.kill(int(pid), signal.SIGTERM)
        except OSError:
            pass
    t0 = time.monotonic()
    r = run(ws, ["-v", *hosts(), "--ssh-reuse", "off", "-p", "1", "--", "/bin/true"], timeout=60)
    took = time.monotonic() - t0
    check(r.returncode == 69 and "could not start tlaunchd on node node4" in r.stderr and
          "(from node node1, its parent in the control tree)" in r.stderr and
          "tlaunch starts it and talks to it directly" not in r.stderr and took < 20,
          f"node4's sshd down below node1: named at once, not tried again from tlaunch ({took:.1f} s)",
          f"exit {r.returncode}\n     stderr {r.stderr[-1500:]!r}")


def rank_failure(ws):
    r = run(ws, [*hosts(), "-p", "2", "--event-grace", "0", "--", "/bin/sh", "-c",
                 'if [ "$RANK" = 7 ]; then echo broken >&2; exit 5; fi; sleep 30'])
    check(r.returncode == 5 and "rank 7 on node node4 exited with status 5" in r.stderr and "broken" in r.stderr,
          "radix 2: rank 7 on node4 (below node1) fails -> exit 5 naming rank 7 and node4, its stderr shown",
          f"exit {r.returncode}\n     stderr {r.stderr[-1500:]!r}")
    if r.job:
        nothing_left("radix 2, failed rank", r.job)


def mpi_hello(ws, hello):
    world = 8
    pattern = re.compile(rf"\[(node\d):(\d+)\] mpi_hello rank (\d+)/{world} on (node\d): .* ok$")
    r = run(ws, [*hosts(), "-p", "2", "--", hello, str(world), "2"])
    oks = [m for m in map(pattern.match, r.stdout.splitlines()) if m and m.group(1) == m.group(4)]
    check(r.returncode == 0 and len(oks) == world, "radix 2 over ssh: the MPI hello (fences, modex) ok on 8 ranks",
          f"exit {r.returncode}\n     stdout {r.stdout[-1500:]!r}\n     stderr {r.stderr[-1500:]!r}")
    # Inside an allocation: srun starts every daemon, the frontend places them once all are in.
    argv = ["salloc", "-N", "4", "--", ws.tlaunch, *cj.NET, *TREE, "-v", "-p", "2", "--", hello, str(world), "2"]
    s = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                       timeout=TIMEOUT, cwd=ws.dir, env=vc.environ())
    job = cj.job_id_in(s.stderr)
    if job:
        jobs_seen.append(job)
    oks = [m for m in map(pattern.match, s.stdout.splitlines()) if m and m.group(1) == m.group(4)]
    check(s.returncode == 0 and len(oks) == world and "control tree: tlaunch talks to 2 of 4 daemons" in s.stderr,
          "radix 2 inside salloc -N 4: the daemons srun started form the tree, the MPI hello ok on 8 ranks",
          f"exit {s.returncode}\n     stdout {s.stdout[-1500:]!r}\n     stderr {s.stderr[-2000:]!r}")


def processes_on(job, node):
    """'pid command' of the job's processes serving `node`: its tlaunchd and its rank (-p 1 on
    node1..node4 in order: rank i runs on node i+1)."""
    rank = str(vc.nodes.index(node))
    ranks = set(cj.tl.processes_with_env("TLAUNCH_JOB_ID", job)) & set(cj.tl.processes_with_env("RANK", rank))
    return [f"{pid} {node}" for pid in sorted(set(cj.daemons_of(job, node)) | ranks)]


def kill_daemon(ws, node, expect, sig=signal.SIGKILL, gone_while_stopped=()):
    p = subprocess.Popen([ws.tlaunch, *cj.NET, *TREE, "--heartbeat-timeout", "5", "--kill-timeout", "2", *hosts(),
                          "-p", "1", "--", cj.PYTHON, ws.program("output_patterns.py"), "sleep", "60"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", cwd=ws.dir,
                         env=vc.environ(), start_new_session=True)
    if cj.wait_for_lines(p.stdout, 4, "ready", 120) is None:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        check(False, f"kill {node}'s daemon: the job started 4 ranks", f"stdout {out!r} stderr {err!r}")
        return
    job = None
    deadline = time.monotonic() + 10
    while job is None and time.monotonic() < deadline:
        for pid in cj.node_processes_matching("output_patterns.py"):
            job = job or cj.job_id_of_pid(pid)
        time.sleep(0.1)
    jobs_seen.append(job)
    daemons = cj.daemons_of(job, node) if job else []
    check(len(daemons) == 1, f"found {node}'s tlaunchd", str(daemons))
    t0 = time.monotonic()
    for pid in daemons:
        os.kill(pid, sig)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    ended = time.monotonic() - t0
    what = f"{signal.Signals(sig).name} to {node}'s tlaunchd"
    summary = [line for line in err.splitlines() if "failed:" in line]
    check(p.returncode == 69 and summary and all(s in summary[0] for s in expect) and ended < 15,
          f"{what}: exit 69 after {ended:.1f} s, the summary names {', '.join(expect)}",
          f"exit {p.returncode}\n     stderr {err[-1500:]!r}")
    if job and gone_while_stopped:
        # Frozen interior: its children hear its heartbeats stop and end their ranks themselves.
        left = lambda: [p for n in gone_while_stopped for p in processes_on(job, n)]  # noqa: E731
        ok = cj.tl.wait_until(lambda: not left(), 15)
        check(ok, f"{what}: nothing of the job left on {', '.join(gone_while_stopped)} while {node} is still stopped",
              "\n     ".join(left()))
    if sig == signal.SIGSTOP:
        for pid in daemons:  # it finds its parent gone, and ends its ranks
            os.kill(pid, signal.SIGCONT)
    if job:
        nothing_left(what, job)


def main():
    global vc
    skip_unless_possible(slurm=True)
    cj.require_tlaunch()
    hello_program = os.environ.get("PMIX_MPI_HELLO")
    t_start = time.monotonic()
    with cj.Workspace() as ws:
        cj.wait_for_free_cluster()
        vc = cj.OwnVirtualCluster(n=4, slurm=True)
        with vc:
            print(f"cluster up in {vc.up_seconds:.1f} s", flush=True)
            ssh_launch(ws)
            rank_failure(ws)
            frontend_on_a_node(ws)
            parent_unreachable(ws)
            if hello_program and os.path.exists(hello_program):
                hello = hello_program
                if str(Path(hello).resolve()).startswith(cj.NODE_PRIVATE):
                    hello = shutil.copy2(hello, ws.dir)
                mpi_hello(ws, hello)
            else:
                print("SKIP the MPI hello: tests/pmix's programs were not built", flush=True)
            kill_daemon(ws, "node1", ["lost node node1", "The 2 nodes below it", "node3", "node4"])
            kill_daemon(ws, "node4", ["lost node node4"])
            # Frozen: only its parent, node1, hears its heartbeats stop (--heartbeat-timeout 5).
            kill_daemon(ws, "node3", ["lost node node3", "no heartbeat for 5 s"], signal.SIGSTOP)
            # A frozen interior daemon: tlaunch gives it up with its subtree, and node3 and node4,
            # whose connections to it stay open, end their ranks when its heartbeats stop.
            kill_daemon(ws, "node1", ["lost node node1", "The 2 nodes below it"], signal.SIGSTOP,
                        gone_while_stopped=("node3", "node4"))
            sshd_down_below(ws)  # last: node4 has no sshd after it
        print(f"cluster down in {vc.down_seconds:.1f} s", flush=True)
    left = [p for job in jobs_seen if job for p in cj.job_processes(job)]
    check(not left, "after down: no process of any job of this test", "\n     ".join(left))
    print(f"total {time.monotonic() - t_start:.1f} s", flush=True)
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
