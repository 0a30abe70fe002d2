#!/usr/bin/python3
"""Containment on a 2-node virtual cluster (contrib/vcluster), over ssh and in a Slurm step
(proctrack/linuxproc: Slurm itself does not follow setsid): a rank that starts a setsid'ed
server, a double-forked daemon and a child deaf to SIGTERM leaves nothing behind on any node,
whether the job succeeds or fails, with the per-job cgroup and (in the Slurm step) with the
subreaper fallback; -v names the mechanism in force on each node.

Needs root (exits 77, skipped, where a virtual cluster cannot be built)."""
import os
import re
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vcluster import skip_unless_possible  # noqa: E402
import cluster_jobs as cj  # noqa: E402

import subprocess  # noqa: E402

check = cj.Checks()
jobs_seen = []


def job_ends_clean(ws, vc, label, launcher_args, code, env_extra=None):
    marker = "tlaunch-contain-" + uuid.uuid4().hex
    sync_dir = os.path.join(ws.dir, marker)  # the nodes share the file system
    os.mkdir(sync_dir)
    t0 = time.monotonic()
    r = subprocess.run([ws.tlaunch, *cj.NET, "-v", "--kill-timeout", "3", *launcher_args, "-p", "1", "--", cj.PYTHON,
                        ws.program("leave_children.py"), marker, str(code), "1", sync_dir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", timeout=300,
                       cwd=ws.dir, env={**vc.environ(), **(env_extra or {})})
    elapsed = time.monotonic() - t0
    m = re.search(r"job (tl-[0-9a-f]+)", r.stderr)
    if m:
        jobs_seen.append(m.group(1))
    notes = re.findall(r"node (\S+): (containment: .*)", r.stderr)
    check(r.returncode == code and r.stdout.count("ready") == 2,
          f"{label}, rank exit {code}: the job ran on 2 nodes and ended with {code} ({elapsed:.1f} s)",
          f"exit {r.returncode}\nstdout {r.stdout}\nstderr {r.stderr}")
    check(len(notes) == 2, f"{label}: -v names the mechanism of each node: {notes}", r.stderr)
    if env_extra:
        check(all("child subreaper" in n for _, n in notes), f"{label}: the subreaper is in force", str(notes))
    gone = cj.tl.wait_until(lambda: not cj.tl.processes_matching(marker), 10, interval=0.1)
    left = cj.tl.processes_matching(marker)
    cj.tl.kill_leftovers(marker)
    check(gone, f"{label}, rank exit {code}: nothing the ranks started survives on any node", str(left))


def main():
    skip_unless_possible()
    cj.require_tlaunch()
    cj.HostsEntries.strip()
    with cj.Workspace() as ws:
        cj.wait_for_free_cluster()
        vc = cj.OwnVirtualCluster(n=2, slurm=True)
        with vc:
            print(f"cluster up in {vc.up_seconds:.1f} s", flush=True)
            for code in (0, 3):
                job_ends_clean(ws, vc, "ssh", ["--launcher", "ssh", "--hosts", "node1,node2"], code)
                job_ends_clean(ws, vc, "slurm", ["--launcher", "slurm", "-N", "2"], code)
                # srun passes the environment on: the fallback inside a Slurm step (linuxproc).
                job_ends_clean(ws, vc, "slurm, subreaper", ["--launcher", "slurm", "-N", "2"], code,
                               {"TLAUNCH_CONTAINMENT": "subreaper"})
        print(f"cluster down in {vc.down_seconds:.1f} s", flush=True)
    left = [p for job in jobs_seen for p in cj.job_processes(job)]
    check(not left, "after down: no process of any job of this test", "\n     ".join(left))
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
