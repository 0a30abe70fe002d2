#!/usr/bin/python3
"""Warm daemons (tlaunch --keep-daemons, issue 14) on a 4-node virtual cluster with sshd. As a user
sees it, with tlaunch's cache (HOME) in a directory of the test's own:

- `--keep-daemons 600s` on node1,node2: the job runs over ssh, exits 0, nothing of the job is left,
  and a keeper stays on each node (its pid written down under ~/.cache/tlaunch/daemons, 0700,
  the secret beside it 0600);
- the same command again, without the flag: tlaunch says "reused daemons on 2 nodes (started ..
  ago)", each node's tlaunchd is the keeper's child (no ssh), the job runs, exit 0; within a
  minute the nodes send the first job's inventory and preflight again (-v says so);
- strangers on a keeper's port (junk, a 2 GiB frame header, a silent connection) change nothing;
- a changed node set (node2,node3): node2 reused, node3 started over ssh (and kept);
- another user (uid 65534) holding the keepers' addresses but not the secret cannot use them:
  `tlaunch stop-daemons` as that user is refused (exit 76), the keepers stay;
- `--keep-daemons 0` on node3: reused once, and its keeper is gone after the job;
- a registry entry naming another keeper than the one at its address (pid): not used, ssh instead;
- `--keep-daemons 3s` on node1: its keeper exits by itself a few seconds after the job;
- another tlaunchd (--daemon-path) on node4: its keeper refuses, node4 is started over ssh (-v says
  why), the keeper retires;
- a keeper that does not answer in time (SIGSTOP on node2's): node2 is started over ssh with a new
  keeper, and both keepers stay written down;
- `tlaunch stop-daemons`: the keepers that are left (node2's two) end, "stopped warm daemons on 1
  node";
- a keeper told to stop while a job of its runs: that job completes, a tlaunch holding the old
  registry entry is refused (ssh instead, not reused), and the keeper ends;
- a job that reuses a 3 s keeper and runs 9 s: the keeper stays written down meanwhile, so
  `tlaunch stop-daemons` during the job finds it, and it ends with that job.

Needs root (exits 77, skipped, where a virtual cluster cannot be built). Kills every keeper it
started, whatever happens.
"""
import json
import os
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vcluster import skip_unless_possible  # noqa: E402
import cluster_jobs as cj  # noqa: E402

TIMEOUT = 120
check = cj.Checks()
# The rank prints its node and the pid of its daemon's parent (ssh's shell, or a keeper).
GRANDPARENT = ["/bin/sh", "-c", "echo \"on $(hostname) daemon-parent $(awk '/^PPid/{print $2}' /proc/$PPID/status)\""]


def run(ws, home, args, user=None):
    env = {**vc.environ(), "HOME": home}
    argv = [ws.tlaunch, *cj.NET, *args]
    if user is not None:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                          timeout=TIMEOUT, cwd=ws.dir, env=env)


def all_entries(home):
    d = Path(home, ".cache/tlaunch/daemons")
    return [{**json.loads(f.read_text()), "file": f} for f in (d.glob("node-*.json") if d.is_dir() else [])]


def registry(home):
    """Each node's newest keeper (the one a launch tries first)."""
    out = {}
    for e in sorted(all_entries(home), key=lambda e: e["since"]):
        out[e["node"]] = e
    return out


def alive(pid):
    try:
        return b"--keeper" in Path(f"/proc/{pid}/cmdline").read_bytes() and \
            Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def scenario(ws, home):
    r = run(ws, home, ["--keep-daemons", "600s", "--hosts", "node1,node2", "-p", "1", "--", *GRANDPARENT])
    reg = registry(home)
    d = Path(home, ".cache/tlaunch/daemons")
    secret_mode = stat.S_IMODE(os.stat(d / "secret").st_mode) if (d / "secret").exists() else None
    check(r.returncode == 0 and sorted(reg) == ["node1", "node2"] and all(alive(e["pid"]) for e in reg.values()),
          "--keep-daemons 600s: the job runs over ssh (exit 0) and a keeper stays on node1 and node2",
          f"exit {r.returncode}\n     registry {reg}\n     stderr {r.stderr[-1500:]!r}")
    check(stat.S_IMODE(os.stat(d).st_mode) == 0o700 and secret_mode == 0o600,
          "the registry directory is 0700 and the secret 0600", f"dir {oct(os.stat(d).st_mode)} secret {secret_mode}")
    job = cj.job_id_in(r.stderr)
    if job:
        ok = cj.tl.wait_until(lambda: not cj.job_processes(job), 10)
        check(ok, "nothing of the job is left on any node (the keepers run nothing of it)",
              "\n     ".join(cj.job_processes(job)))

    first = registry(home)
    r = run(ws, home, ["-v", "--hosts", "node1,node2", "-p", "1", "--", *GRANDPARENT])
    got = cj.daemon_parents(r.stdout)
    want = {n: first[n]["pid"] for n in ("node1", "node2") if n in first}
    check(r.returncode == 0 and "reused daemons on 2 nodes (started" in r.stderr and got == want,
          "relaunch: 'reused daemons on 2 nodes', each tlaunchd a child of its node's keeper (no ssh), exit 0",
          f"exit {r.returncode}\n     daemon parents {got} keepers {want}\n     stderr {r.stderr[-1500:]!r}")
    check("inventory and preflight of 2 warm nodes taken up to" in r.stderr,
          "relaunch within a minute: -v says both nodes sent the inventory and preflight of the first job again",
          f"exit {r.returncode}\n     daemon parents {got} keepers {want}\n     stderr {r.stderr[-1500:]!r}")

    # Strangers on node2's keeper port: junk, a frame header claiming 2 GiB, a connection that
    # says nothing (held open through the next job). The keeper must go on serving.
    e = first["node2"]
    with socket.create_connection((e["host"], e["port"]), timeout=5) as junk:
        junk.sendall(os.urandom(512))
    with socket.create_connection((e["host"], e["port"]), timeout=5) as huge:
        huge.sendall(b"\x7f\xff\xff\xff" + b"x" * 100)
    silent = socket.create_connection((e["host"], e["port"]), timeout=5)
    r = run(ws, home, ["-v", "--keep-daemons", "600s", "--hosts", "node2,node3", "-p", "1", "--", *GRANDPARENT])
    silent.close()
    reg = registry(home)
    got = cj.daemon_parents(r.stdout)
    check(r.returncode == 0 and "reused daemons on 1 node" in r.stderr and got.get("node2") == first["node2"]["pid"]
          and "inventory and preflight of 1 warm node taken" in r.stderr
          and got.get("node3") not in (None, first["node2"]["pid"]) and sorted(reg) == ["node1", "node2", "node3"]
          and alive(reg["node3"]["pid"]),
          "node2,node3: node2 reused (after strangers sent it junk), node3 started over ssh and kept too",
          f"exit {r.returncode}\n     parents {got}\n     registry {reg}\n     stderr {r.stderr[-1500:]!r}")

    # Another user who knows where the keepers are, but not the secret.
    other = Path(ws.dir, "other-home")
    od = other / ".cache/tlaunch/daemons"
    od.mkdir(parents=True)
    for f in Path(home, ".cache/tlaunch/daemons").glob("node-*.json"):
        shutil.copy(f, od / f.name)
    (od / "secret").write_text(os.urandom(32).hex() + "\n")
    os.chmod(od / "secret", 0o600)
    for p in [other, other / ".cache", other / ".cache/tlaunch", od, *od.iterdir()]:
        os.chown(p, 65534, 65534)
    before = registry(home)
    r = run(ws, str(other), ["stop-daemons"], user=65534)
    check(r.returncode == 76 and "did not accept this user's secret" in r.stderr and
          all(alive(e["pid"]) for e in before.values()),
          "another user (uid 65534) with the keepers' addresses but not the secret is refused; the keepers stay",
          f"exit {r.returncode}\n     stdout {r.stdout!r}\n     stderr {r.stderr[-1500:]!r}")

    node3 = registry(home)["node3"]["pid"]
    r = run(ws, home, ["--keep-daemons", "0", "--hosts", "node3", "-p", "1", "--", *GRANDPARENT])
    check(r.returncode == 0 and "reused daemons on 1 node" in r.stderr and cj.daemon_parents(r.stdout).get("node3") == node3 and
          cj.tl.wait_until(lambda: not alive(node3), 10) and "node3" not in registry(home),
          "--keep-daemons 0 on node3: reused once, then its keeper is gone within 10 s and forgotten",
          f"exit {r.returncode}\n     stderr {r.stderr[-1500:]!r}")

    # Whoever answers at the noted address must be the keeper tlaunch noted (its pid and start
    # time), not another of the user's that took over the port: otherwise ssh, and it stays.
    entry = registry(home)["node1"]["file"]
    noted = entry.read_text()
    node1 = json.loads(noted)["pid"]
    entry.write_text(json.dumps({**json.loads(noted), "pid": node1 + 100000}))
    r = run(ws, home, ["-v", "--hosts", "node1", "-p", "1", "--", *GRANDPARENT])
    check(r.returncode == 0 and "another warm daemon than the one tlaunch noted" in r.stderr and
          cj.daemon_parents(r.stdout).get("node1") != node1 and alive(node1),
          "a keeper other than the noted one (pid) is not used: node1 started over ssh, -v says why, exit 0",
          f"exit {r.returncode}\n     stderr {r.stderr[-1500:]!r}")
    entry.write_text(noted)

    r = run(ws, home, ["--keep-daemons", "3s", "--hosts", "node1", "-p", "1", "--", "true"])
    still = alive(node1)
    check(r.returncode == 0 and still and cj.tl.wait_until(lambda: not alive(node1), 15),
          "--keep-daemons 3s on node1: its keeper exits by itself a few seconds after the job",
          f"exit {r.returncode} alive right after the job {still}\n     stderr {r.stderr[-1500:]!r}")

    # Another tlaunchd (a rebuilt one elsewhere, --daemon-path): node4's keeper refuses to start
    # it, tlaunch starts node4 over ssh (-v says why) and the old keeper retires.
    r = run(ws, home, ["--keep-daemons", "600s", "--hosts", "node4", "-p", "1", "--", "true"])
    node4 = registry(home).get("node4", {}).get("pid")
    other_daemon = Path(ws.dir, "other-bin", "tlaunchd")
    other_daemon.parent.mkdir()
    shutil.copy2(Path(ws.tlaunch).parent / "tlaunchd", other_daemon)
    r = run(ws, home, ["-v", "--daemon-path", str(other_daemon), "--hosts", "node4", "-p", "1", "--", *GRANDPARENT])
    check(r.returncode == 0 and node4 is not None and "node node4: its warm daemon" in r.stderr and
          "another --daemon-path" in r.stderr and cj.daemon_parents(r.stdout).get("node4") != node4 and
          cj.tl.wait_until(lambda: not alive(node4), 10) and "node4" not in registry(home),
          "another tlaunchd (--daemon-path): node4's keeper refuses, tlaunch uses ssh and says why, the keeper retires",
          f"exit {r.returncode} keeper {node4}\n     stderr {r.stderr[-1500:]!r}")

    # A keeper that does not answer in time (a busy node; here stopped with SIGSTOP) is not
    # forgotten: its node is started over ssh with a keeper of its own, and both stay written
    # down, so that stop-daemons reaches the first once it answers again.
    node2 = registry(home)["node2"]["pid"]
    os.kill(node2, signal.SIGSTOP)
    try:
        r = run(ws, home, ["-v", "--keep-daemons", "600s", "--hosts", "node2", "-p", "1", "--", *GRANDPARENT])
    finally:
        os.kill(node2, signal.SIGCONT)
    node2_entries = [e for e in all_entries(home) if e["node"] == "node2"]
    node2_keepers = sorted(e["pid"] for e in node2_entries)
    silent_marked = [e.get("unanswered", 0) > 0 for e in node2_entries if e["pid"] == node2]
    check(r.returncode == 0 and "node node2: its warm daemon" in r.stderr and
          cj.daemon_parents(r.stdout).get("node2") not in (None, node2) and len(node2_keepers) == 2 and
          node2 in node2_keepers and all(alive(p) for p in node2_keepers) and silent_marked == [True],
          "a keeper that does not answer in time: node2 started over ssh (-v says why), exit 0, and both of its "
          "keepers are written down (the silent one marked, so that launches do not wait for it again)",
          f"exit {r.returncode} keepers {node2_keepers}\n     stderr {r.stderr[-1500:]!r}")

    r = run(ws, home, ["stop-daemons"])
    check(r.returncode == 0 and "stopped warm daemons on 1 node" in r.stdout and
          cj.tl.wait_until(lambda: not any(alive(p) for p in node2_keepers), 10) and not registry(home),
          "tlaunch stop-daemons: both of node2's keepers end, nothing is left in the registry",
          f"exit {r.returncode}\n     stdout {r.stdout!r}\n     stderr {r.stderr[-1500:]!r}\n     {registry(home)}")

    # A keeper told to stop while a job of its runs ends with that job, and takes no new one
    # from a tlaunch that read the registry before the stop (that would keep it another
    # --keep-daemons period): that tlaunch starts the node over ssh.
    r = run(ws, home, ["--keep-daemons", "600s", "--hosts", "node3", "-p", "1", "--", "true"])
    entries = {f.name: f.read_bytes() for f in Path(home, ".cache/tlaunch/daemons").glob("node-*.json")}
    node3 = registry(home).get("node3", {}).get("pid")
    env = {**vc.environ(), "HOME": str(home)}
    running = subprocess.Popen([ws.tlaunch, *cj.NET, "--hosts", "node3", "-p", "1", "--", "sh", "-c", "echo running; sleep 4"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ws.dir, env=env)
    running_err = ""
    try:
        # The stop must come while the job runs on the keeper: wait for its rank's first line.
        started = select.select([running.stdout], [], [], 60)[0] and "running" in running.stdout.readline()
        stop = run(ws, home, ["stop-daemons"])
        for name, data in entries.items():  # what a tlaunch that read the registry earlier still holds
            Path(home, ".cache/tlaunch/daemons", name).write_bytes(data)
        again = run(ws, home, ["-v", "--hosts", "node3", "-p", "1", "--", *GRANDPARENT])
        _, running_err = running.communicate(timeout=TIMEOUT)
    finally:
        if running.poll() is None:
            running.kill()
            running.communicate()
    check(r.returncode == 0 and node3 is not None and started and stop.returncode == 0 and running.returncode == 0 and
          "reused daemons on 1 node" in running_err and
          again.returncode == 0 and "reused daemons" not in again.stderr and
          cj.daemon_parents(again.stdout).get("node3") != node3 and
          cj.tl.wait_until(lambda: not alive(node3), 15),
          "a keeper told to stop during a job finishes that job, refuses the next one (ssh instead) and ends",
          f"exits {r.returncode} {stop.returncode} {running.returncode} {again.returncode} keeper {node3} "
          f"alive {alive(node3) if node3 else None}\n     running {running_err[-500:]!r}"
          f"\n     stop {stop.stdout!r} {stop.stderr[-500:]!r}"
          f"\n     again {again.stderr[-1500:]!r}")
    # A job that reuses a keeper and lasts longer than the keep: its entry said "gone 3 s after
    # the last job", and once that had passed, tlaunch dropped it as expired while the keeper
    # lived on (stop-daemons said "no warm daemons"). It is written down until the job's end.
    r = run(ws, home, ["--keep-daemons", "3s", "--hosts", "node1", "-p", "1", "--", "true"])
    node1 = registry(home).get("node1", {}).get("pid")
    env = {**vc.environ(), "HOME": str(home)}
    long_job = subprocess.Popen([ws.tlaunch, *cj.NET, "--hosts", "node1", "-p", "1", "--", "sh", "-c",
                                 "echo running; sleep 9"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ws.dir, env=env)
    try:
        started = select.select([long_job.stdout], [], [], 60)[0] and "running" in long_job.stdout.readline()
        time.sleep(5)  # past the entry's old end
        stop = run(ws, home, ["stop-daemons"])
        _, long_err = long_job.communicate(timeout=TIMEOUT)
    finally:
        if long_job.poll() is None:
            long_job.kill()
            long_job.communicate()
    check(r.returncode == 0 and node1 is not None and started and long_job.returncode == 0 and
          "reused daemons on 1 node" in long_err and stop.returncode == 0 and
          "ends once its 1 running job ends" in stop.stdout and cj.tl.wait_until(lambda: not alive(node1), 15) and
          "node1" not in registry(home),
          "a keeper reused by a job longer than its keep stays written down: stop-daemons finds it during the job, "
          "and the job's end does not write it down again",
          f"exits {r.returncode} {long_job.returncode} {stop.returncode} keeper {node1} entry {registry(home).get('node1')}"
          f"\n     stop {stop.stdout!r} "
          f"{stop.stderr[-500:]!r}\n     job {long_err[-800:]!r}")

    run(ws, home, ["stop-daemons"])


def main():
    global vc
    skip_unless_possible()
    cj.require_tlaunch()
    cj.wait_for_free_cluster()
    with cj.Workspace() as ws:
        # Another user must be able to run tlaunch from here (the workspace is 0755).
        bindir = Path(ws.dir, "bin")
        if not Path(ws.tlaunch).is_relative_to(ws.dir):
            bindir.mkdir(exist_ok=True)
            for name in ("tlaunch", "tlaunchd"):
                shutil.copy2(Path(ws.tlaunch).parent / name, bindir / name)
            ws.tlaunch = str(bindir / "tlaunch")
        exe_dir = str(Path(ws.tlaunch).parent)
        home = Path(ws.dir, "home")
        home.mkdir(mode=0o700)
        vc = cj.OwnVirtualCluster(n=4, slurm=False)
        try:
            with vc:
                print(f"cluster up in {vc.up_seconds:.1f} s", flush=True)
                scenario(ws, str(home))
        finally:
            left = cj.keeper_pids(exe_dir)
            for pid in left:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
        check(not left, "no keeper of this test was left to kill at the end", f"pids {left}")
        print(f"cluster down in {vc.down_seconds:.1f} s", flush=True)
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
