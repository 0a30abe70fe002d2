#!/usr/bin/python3
"""The lifeline's cluster faults (label "fault"), on a 4-node virtual cluster over ssh, the
frontend on the host (its daemons' control connections run over each node's management link,
eth0; ib0 is the job's network):

- kill -9 of the ssh client that started node3's daemon: the job goes on to exit 0 (a daemon's
  life is tied to its control connection, not to its ssh session);
- node3's control link (eth0) cut mid-job: the job ends within the heartbeat timeout (5 s here)
  naming node3, exit 69; nothing of the job is left on any node, node3 included (its daemon
  notices the dead connection at the TCP level and ends its ranks);
- node3's other network (ib0) cut mid-job, which the ranks do not use: the job completes.

Links are restored after each case. Needs root (exits 77, skipped, where a cluster cannot be built).
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vcluster import skip_unless_possible  # noqa: E402
import cluster_jobs as cj  # noqa: E402

SWITCH_NS = "tlvc-switch"
check = cj.Checks()
jobs_seen = []


def start(ws, args):
    return subprocess.Popen([ws.tlaunch, *cj.NET, "--heartbeat-timeout", "5", "--kill-timeout", "2", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", cwd=ws.dir,
                            env=vc.environ(), start_new_session=True)


def sleeping_job(ws, seconds):
    """A 4 x 1 job whose ranks print 'ready', sleep, print 'done'. Returns (process, job id)."""
    p = start(ws, ["--hosts", ",".join(vc.nodes), "-p", "1", "--", cj.PYTHON,
                   ws.program("output_patterns.py"), "sleep", str(seconds)])
    lines = cj.wait_for_lines(p.stdout, 4, "ready", 120)
    if lines is None:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        check(False, "the job started 4 ranks", f"stdout {out!r} stderr {err!r}")
        return None, None
    deadline = time.monotonic() + 10
    job = None
    while job is None and time.monotonic() < deadline:
        for pid in cj.tl.processes_matching("output_patterns.py"):
            job = job or cj.job_id_of_pid(pid)
        time.sleep(0.1)
    jobs_seen.append(job)
    return p, job


def finish(p, timeout):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    return out, err


def link(name, state):
    subprocess.run(["ip", "-n", SWITCH_NS, "link", "set", name, state], check=True)


def ssh_clients_of(job, node):
    pids = []
    for pid in cj.tl.processes_matching(job):
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if os.path.basename(argv[0].decode()) == "ssh" and node.encode() in argv:
            pids.append(pid)
    return pids


def kill_ssh_client(ws):
    p, job = sleeping_job(ws, 6)
    if not p:
        return
    victims = ssh_clients_of(job, "node3")
    check(len(victims) >= 1, "found the ssh client that started node3's daemon", str(victims))
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    out, err = finish(p, 60)
    check(p.returncode == 0 and out.count("done") == 4,
          "kill -9 of node3's ssh client: the job goes on, exit 0, every rank done",
          f"exit {p.returncode}\n     stdout {out!r}\n     stderr {err[-1500:]!r}")
    ok = cj.tl.wait_until(lambda: not cj.job_processes(job), 10)
    check(ok, "kill -9 of node3's ssh client: nothing of the job left afterwards", "\n     ".join(cj.job_processes(job)))


def cut_control_link(ws):
    p, job = sleeping_job(ws, 60)
    if not p:
        return
    t0 = time.monotonic()
    link("m3", "down")
    try:
        out, err = finish(p, 60)
        ended = time.monotonic() - t0
        summary = [line for line in err.splitlines() if "failed:" in line]
        check(p.returncode == 69 and summary and "node3" in summary[0] and ended < 5 + 10,
              f"node3's control link cut: exit 69 naming node3 after {ended:.1f} s (heartbeat timeout 5 s)",
              f"exit {p.returncode}\n     stderr {err[-1500:]!r}")
        ok = cj.tl.wait_until(lambda: not cj.job_processes(job), 20)
        check(ok, f"node3's control link cut: nothing of the job left on any node ({time.monotonic() - t0:.1f} s)",
              "\n     ".join(cj.job_processes(job)))
    finally:
        link("m3", "up")


def cut_other_link(ws):
    p, job = sleeping_job(ws, 8)
    if not p:
        return
    link("f3", "down")
    try:
        out, err = finish(p, 60)
    finally:
        link("f3", "up")
    check(p.returncode == 0 and out.count("done") == 4,
          "node3's ib0 cut (not the control link, not used by the ranks): the job completes",
          f"exit {p.returncode}\n     stdout {out!r}\n     stderr {err[-1500:]!r}")


def main():
    global vc
    skip_unless_possible(slurm=False)
    cj.require_tlaunch()
    t_start = time.monotonic()
    with cj.Workspace() as ws:
        cj.wait_for_free_cluster()
        vc = cj.OwnVirtualCluster(n=4, slurm=False)
        with vc:
            print(f"cluster up in {vc.up_seconds:.1f} s", flush=True)
            for step in (kill_ssh_client, cut_other_link, cut_control_link):
                step(ws)
        print(f"cluster down in {vc.down_seconds:.1f} s", flush=True)
    left = [p for job in jobs_seen if job for p in cj.job_processes(job)]
    check(not left, "after down: no process of any job of this test", "\n     ".join(left))
    print(f"total {time.monotonic() - t_start:.1f} s", flush=True)
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
