#!/usr/bin/python3
"""The lifeline's cluster faults (label "fault"), on a 4-node virtual cluster over ssh, the
frontend on the host (its daemons' control connections run over each node's management link,
eth0; ib0 is the job's network):

- kill -9 of the ssh client that started node3's daemon: the job goes on to exit 0 (a daemon's
  life is tied to its control connection, not to its ssh session);
- node3's control link (eth0) cut mid-job: the job ends within the heartbeat timeout (5 s here)
  naming node3, exit 69; nothing of the job is left on any node, node3 included (its daemon
  notices the dead connection at the TCP level and ends its ranks);
- node3's other network (ib0) cut mid-job, which the ranks do not use: the job completes;
- node3 gone between two launches, while ssh's master connection to it (ControlPersist) is
  still up: the next launch names node3 as unreachable well within --connect-timeout (ssh's
  keepalives end the dead master; without them every new session hung until the timeout);
- --max-restarts 1, a rank failing in the first attempt only: every rank runs again, exit 0;
  --max-restarts 0: the rank's status, no restart;
- --max-restarts 1 on 3 of the 4 nodes, node3's daemon killed mid-job: the job runs again on
  node1, node2 and node4 (the spare) and completes.

Links are restored after each case. Needs root (exits 77, skipped, where a cluster cannot be built).
"""
import os
import re
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
        for pid in cj.node_processes_matching("output_patterns.py"):
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


def restart_on_spare(ws):
    """--max-restarts with a spare node: 3 of the 4 nodes run, node3's daemon is killed mid-job,
    the job runs again on node1, node2 and node4 (the spare) and completes."""
    p = start(ws, ["-v", "--hosts", ",".join(vc.nodes), "-N", "3", "-p", "1", "--event-grace", "0",
                   "--max-restarts", "1", "--", cj.PYTHON, ws.program("restart_rank.py"), "wait"])
    lines = cj.wait_for_lines(p.stdout, 3, " ready", 120)
    if lines is None:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        check(False, "restarts: the first attempt started 3 ranks", f"stdout {out!r} stderr {err!r}")
        return
    job = cj.job_id_of_pid(int(re.search(r"pid (\d+)", lines[0]).group(1)))
    jobs_seen.append(job)
    daemons = [pid for pid in set(cj.tl.processes_matching("--node-name\0node3")) & set(cj.tl.processes_matching(job))
               if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"tlaunchd")]
    check(len(daemons) == 1, "restarts: found node3's tlaunchd", str(daemons))
    t0 = time.monotonic()
    for pid in daemons:
        os.kill(pid, signal.SIGKILL)
    out, err = finish(p, 90)
    jobs_seen.extend(re.findall(r"job (tl-[0-9a-f]+-r\d+)", err))
    ran = re.findall(r"\[(node\d):\d+\] rank \d+ attempt 1 ", out)
    check(p.returncode == 0 and "node3 dropped (its daemon was lost); node4 added" in err
          and sorted(ran) == ["node1", "node2", "node4"],
          f"restarts: node3's daemon killed -> node3 dropped, node4 added, the job completes "
          f"({time.monotonic() - t0:.1f} s)", f"exit {p.returncode}\n     stdout {out!r}\n     stderr {err[-2000:]!r}")
    ok = cj.tl.wait_until(lambda: not any(cj.job_processes(j) for j in jobs_seen if j), 10)
    check(ok, "restarts: nothing of either attempt left on any node",
          "\n     ".join(q for j in jobs_seen if j for q in cj.job_processes(j)))


def close_ssh_master(node):
    """Ends the master connection tlaunch's ssh keeps to `node` (ControlPersist), if any."""
    env = vc.environ()
    runtime = env.get("XDG_RUNTIME_DIR", "")
    control_dir = f"{runtime}/tlaunch-ssh" if runtime.startswith("/") else f"{env['HOME']}/.cache/tlaunch/ssh"
    subprocess.run(["ssh", "-O", "exit", "-o", f"ControlPath={control_dir}/%C", node], env=env, capture_output=True,
                   timeout=30)


def dead_node_behind_master_connection(ws):
    # A master made by this case's first job, with keepalives for a 2 s connect timeout.
    close_ssh_master("node3")
    fast = ["--ssh-connect-timeout", "2"]
    first = subprocess.run([ws.tlaunch, *cj.NET, *fast, "--hosts", "node2,node3", "-p", "1", "--", "/bin/true"],
                           capture_output=True, text=True, errors="replace", cwd=ws.dir, env=vc.environ(), timeout=120)
    check(first.returncode == 0, "a job on node2,node3 leaves ssh master connections behind", cj.describe(first))
    link("m3", "down")
    link("f3", "down")
    try:
        t0 = time.monotonic()
        p = start(ws, [*fast, "--connect-timeout", "45", "--hosts", "node2,node3", "-p", "1", "--", "/bin/true"])
        out, err = finish(p, 120)
        ended = time.monotonic() - t0
        at = err.find("not started:")  # no rank ran
        summary = err[at:] if at >= 0 else ""
        check(p.returncode == 69 and "could not start tlaunchd on node node3" in summary and ended < 30,
              f"node3 dead behind a master connection: exit 69 naming node3 after {ended:.1f} s "
              f"(--connect-timeout 45)", f"exit {p.returncode}\n     stderr {err[-1500:]!r}")
        job = cj.job_id_in(err)
        if job:
            jobs_seen.append(job)
    finally:
        link("m3", "up")
        link("f3", "up")


def restart_after_failed_rank(ws):
    """--max-restarts 1 over ssh, rank 1 failing in the first attempt only: the job runs again and
    ends 0; with --max-restarts 0 the same job ends with the rank's status 3 and no restart."""
    for restarts, want in (("1", 0), ("0", 3)):
        p = start(ws, ["-v", "--hosts", ",".join(vc.nodes), "-p", "1", "--event-grace", "0", "--max-restarts", restarts,
                       "--", cj.PYTHON, ws.program("restart_rank.py"), "fail-once"])
        out, err = finish(p, 120)
        jobs_seen.extend(re.findall(r"job (tl-[0-9a-f]+(?:-r\d+)?): ", err))
        again = re.findall(r"\] rank \d+ attempt 1 ", out)
        restarted = "restart 1 of 1 after rank 1 on node node2 exited with status 3" in err
        check(p.returncode == want and (len(again) == 4 if want == 0 else not again) and restarted == (want == 0),
              f"restarts: rank 1 fails once, --max-restarts {restarts}: exit {want}"
              f"{', every rank runs again' if want == 0 else ', no restart'}",
              f"exit {p.returncode}\n     stdout {out!r}\n     stderr {err[-2000:]!r}")


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
            for step in (kill_ssh_client, cut_other_link, cut_control_link, dead_node_behind_master_connection,
                         restart_after_failed_rank, restart_on_spare):
                step(ws)
        print(f"cluster down in {vc.down_seconds:.1f} s", flush=True)
    left = [p for job in jobs_seen if job for p in cj.job_processes(job)]
    check(not left, "after down: no process of any job of this test", "\n     ".join(left))
    print(f"total {time.monotonic() - t_start:.1f} s", flush=True)
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
