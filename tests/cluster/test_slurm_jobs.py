#!/usr/bin/python3
"""tlaunch under Slurm on a 4-node virtual cluster (contrib/vcluster, Slurm 22.05), as a user sees it:

- inside `salloc -N 4`, with no launcher flag, 4 nodes x 2 ranks run a torch Gloo all-reduce:
  tlaunch picks Slurm by itself, every rank prints OK, tags name the right node;
- `scancel` of the allocation mid-job: ranks and daemons are gone within 10 s and tlaunch exits
  non-zero;
- kill -9 of node3's tlaunchd mid-job: node3 is named as the lost node (exit 69, `lost_nodes` in
  --summary-json), not one of the nodes whose daemons Slurm then signalled;
- outside any allocation, `tlaunch --launcher slurm -N 2 -p 1` runs (srun makes an allocation),
  and the allocation is released afterwards; while another job holds every node, it says srun's
  job is queued and runs once Slurm gives the nodes, past a 2 s --connect-timeout;
- inside `salloc -N 2` with `-x SLURM_JOB_ID`, each rank sees the allocation's id and no other Slurm
  variable (SLURM_JOB_NAME, SLURM_PROCID, SLURM_NTASKS, SLURM_STEP_ID, SLURM_NODELIST);
- tlaunchd missing on node3 only: node3 is named, alone, and --max-restarts replaces it by a spare;
- `salloc -N2 -n3`: the allocation's tasks are the ranks, node by node;
- --hosts naming the allocation's nodes starts the daemons with srun there, not over ssh;
- `srun tlaunch ...` (one tlaunch per task) is refused: each task would start the whole job;
- inside a heterogeneous allocation (`salloc -N1 : -N1`, no SLURM_JOB_NODELIST), tlaunch refuses
  with exit 64 and says why, instead of running the job on the host it was started on; in a
  heterogeneous batch job it runs on the first component and says the job has others;
- contrib/examples/slurm_job.sbatch, submitted with `sbatch` as its comment says, then waited for (CPU ranks:
  GPUS_PER_NODE=0, and --gres=gpu:1 for the 4 stand-in GPUs of a node), runs the Gloo all-reduce on
  4 nodes x 2 ranks;
- GPUs of a shared node (Slurm's gres/gpu on stand-in devices, the nodes' GPUs from a recorded
  4-GPU topology): while another job holds GPUs 0,1 of node1, `salloc -N 2 --gres=gpu:2` runs one
  rank per GPU Slurm gave the job on each node, with that node's CUDA_VISIBLE_DEVICES (2,3 on
  node1, 0,1 on node2) and the bus id of the GPU it names; under `sbatch --gres=gpu:1`, whose
  script holds node1's CUDA_VISIBLE_DEVICES=2, node2's rank still gets node2's GPU 0; under
  `sbatch --ntasks-per-node=2 --gpus-per-task=1` the daemons' one-task step still gets both GPUs
  of each node; `-g 4` with 2 GPUs given is refused naming Slurm's allocation;
- warm daemons inside one `salloc -N 2`: `--keep-daemons 60s` starts keepers in a step of their
  own ("tlaunch-keepers", listed by squeue -s) that start the job's daemons; the next tlaunch
  says "reused daemons on 2 nodes" and its daemons are the same keepers' children (no new srun
  step for daemons); `tlaunch stop-daemons` ends them and their step; in a second allocation,
  keepers left running end with the allocation (nothing outlives it).

The cluster has no sshd: nothing here may depend on ssh. Needs root (exits 77, skipped, where a
virtual cluster cannot be built). One cluster for all checks.
"""
import contextlib
import json
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

TIMEOUT = 300
check = cj.Checks()
jobs_seen = []

# salloc's own exit status hides tlaunch's when the allocation is revoked: a shell in between
# reports it; its traps (handlers, reset at exec for tlaunch) keep it alive if salloc signals it.
REPORT_STATUS = 'trap ":" HUP TERM; "$@"; echo "tlaunch exit status $?" >&2'


def run(argv, timeout=TIMEOUT):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                          timeout=timeout, cwd=ws.dir, env=vc.environ())


def squeue(*args):
    return run(["squeue", "-h", *args], timeout=60).stdout.split()


def gloo_inside_salloc():
    t0 = time.monotonic()
    r = run(["salloc", "-N", "4", "-J", "tlc-gloo", ws.tlaunch, *cj.NET, "-v", "-p", "2", "--", cj.PYTHON,
             ws.program("gloo_allreduce.py"), "3", "1000"])
    wrong = cj.gloo_lines_ok(r.stdout, vc.nodes, 2)
    check(r.returncode == 0 and wrong is None,
          f"inside salloc -N 4: Gloo all-reduce 4 nodes x 2 ranks ({time.monotonic() - t0:.1f} s)",
          f"{wrong}\n     {cj.describe(r)}")
    check("via slurm" in r.stderr, "inside an allocation tlaunch starts its daemons with Slurm by itself",
          r.stderr)
    job = cj.job_id_in(r.stderr)
    if job:
        jobs_seen.append(job)


def scancel_mid_job():
    name = "tlc-scancel"
    p = subprocess.Popen(["salloc", "-N", "4", "-J", name, "/bin/sh", "-c", REPORT_STATUS, "sh", ws.tlaunch, *cj.NET,
                          "-p", "2", "--", cj.PYTHON, ws.program("wait_for_signals.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", cwd=ws.dir,
                         env=vc.environ(), start_new_session=True)
    lines = cj.wait_for_lines(p.stdout, 8, " ready", 120)
    if lines is None:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        check(False, "inside salloc: the job started 8 ranks", f"stdout {out!r} stderr {err!r}")
        return
    job = cj.job_id_of_pid(int(lines[0].split(" pid ")[1].split()[0]))
    jobs_seen.append(job)
    allocation = squeue("-n", name, "-o", "%i")
    check(len(allocation) == 1, "found the allocation with squeue", str(allocation))
    if not allocation:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return
    t0 = time.monotonic()
    run(["scancel", allocation[0]], timeout=60)
    try:
        _, err = p.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
    ended = time.monotonic() - t0
    status = re.search(r"tlaunch exit status (\d+)", err)
    check(status is not None and int(status.group(1)) != 0 and ended < 10,
          f"scancel: tlaunch exits non-zero ({status.group(1) if status else '?'}) "
          f"within 10 s ({ended:.1f} s)", err)
    check(f"tlaunch: job {job} failed:" in err, "scancel: tlaunch says the job failed", err)
    gone = cj.tl.wait_until(lambda: not cj.job_processes(job), max(0.0, 10 - (time.monotonic() - t0)), 0.1)
    check(gone, f"scancel: no rank or daemon of the job left on any node within 10 s "
                f"({time.monotonic() - t0:.1f} s)", "\n     ".join(cj.job_processes(job)))


def daemon_killed_mid_job():
    """kill -9 of node3's tlaunchd inside salloc: srun's --kill-on-bad-exit has Slurm signal the
    other daemons of the step, but the lost node is the cause, named as such (it was one of the
    signalled ones, and --max-restarts did not restart)."""
    p = subprocess.Popen(["salloc", "-N", "4", "-J", "tlc-kill9", "/bin/sh", "-c", REPORT_STATUS, "sh", ws.tlaunch,
                          *cj.NET, "-p", "1", "--summary-json", "kill9.json", "--",
                          cj.PYTHON, ws.program("wait_for_signals.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", cwd=ws.dir,
                         env=vc.environ(), start_new_session=True)
    lines = cj.wait_for_lines(p.stdout, 4, " ready", 120)
    on_node3 = [line for line in lines or [] if line.startswith("[node3:")]
    if not on_node3:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        check(False, "inside salloc: a rank ready on node3", f"stdout {lines} {out!r} stderr {err!r}")
        return
    jobs_seen.append(cj.job_id_of_pid(int(on_node3[0].split(" pid ")[1].split()[0])))
    rank_pid = int(on_node3[0].split(" pid ")[1].split()[0])
    daemon = int(Path(f"/proc/{rank_pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # the rank's parent
    os.kill(daemon, signal.SIGKILL)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
    status = re.search(r"tlaunch exit status (\d+)", err)
    summary = json.loads(Path(ws.dir, "kill9.json").read_text()) if Path(ws.dir, "kill9.json").exists() else {}
    check(status is not None and status.group(1) == "69" and "lost node node3" in err and
          summary.get("lost_nodes") == ["node3"],
          "kill -9 of node3's tlaunchd inside salloc: node3 named as the lost node (not a node Slurm then signalled), "
          "exit 69", f"{err[-1500:]!r} summary {summary}")


def srun_allocates():
    t0 = time.monotonic()
    r = run([ws.tlaunch, *cj.NET, "-v", "--launcher", "slurm", "-N", "2", "-p", "1", "--", "/bin/hostname"])
    got = cj.rank_hosts(r.stdout)
    tags = sorted(node for node, _ in got.values())
    ok = (r.returncode == 0 and sorted(got) == [0, 1] and all(tag == host for tag, host in got.values())
          and len(set(tags)) == 2 and set(tags) <= set(vc.nodes))
    check(ok, f"outside an allocation: --launcher slurm -N 2 -p 1 runs 2 ranks on 2 nodes "
              f"({time.monotonic() - t0:.1f} s)", f"got {{rank: (tag, hostname)}} {got}\n     {cj.describe(r)}")
    job = cj.job_id_in(r.stderr)
    if job:
        jobs_seen.append(job)
    released = cj.tl.wait_until(lambda: not squeue("-o", "%i %T"), 10, 0.2)
    check(released, "outside an allocation: the allocation srun made is released", str(squeue("-o", "%i %T")))


def slurm_job_identity():
    """Ranks see no Slurm variable of their own accord (a program seeing SLURM_JOB_ID takes itself
    for an srun task); -x SLURM_JOB_ID passes the job's id, and only it."""
    keys = ["SLURM_JOB_ID", "SLURM_JOB_NAME", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_ID", "SLURM_NODELIST"]
    script = 'echo "allocation=$SLURM_JOB_ID"; exec "$@"'
    r = run(["salloc", "-N", "2", "-J", "tlc-ident", "/bin/sh", "-c", script, "sh", ws.tlaunch, *cj.NET, "-p", "1",
             "-x", "SLURM_JOB_ID", "--", cj.PYTHON, ws.program("print_env.py"), *keys])
    allocation = next((line.split("=", 1)[1] for line in r.stdout.splitlines() if line.startswith("allocation=")), None)
    ranks = [json.loads(line.split("] ", 1)[1]) for line in r.stdout.splitlines() if line.startswith("[")]
    want = {k: None for k in keys}
    want["SLURM_JOB_ID"] = allocation
    check(r.returncode == 0 and allocation and len(ranks) == 2 and all(g == want for g in ranks),
          f"inside salloc with -x SLURM_JOB_ID: each rank has the job's id ({allocation}), no other Slurm variable",
          cj.describe(r))


def heterogeneous_allocation_refused():
    # `salloc -N1 : -N1` sets no SLURM_JOB_NODELIST: tlaunch ran the job on the host it was
    # started on, as if outside any allocation. It now says why it cannot use the allocation.
    t0 = time.monotonic()
    r = run(["salloc", "-N", "1", "-J", "tlc-het", ":", "-N", "1", "/bin/sh", "-c", REPORT_STATUS, "sh", ws.tlaunch,
             *cj.NET, "-p", "1", "--", "/bin/hostname"], timeout=120)
    ok = ("tlaunch exit status 64" in r.stderr and "is a heterogeneous allocation (node" in r.stderr
          and "--hosts" in r.stderr and not cj.rank_hosts(r.stdout))
    check(ok, f"inside a heterogeneous allocation: refused with a message, no rank run ({time.monotonic() - t0:.1f} s)",
          cj.describe(r))
    # A heterogeneous batch job's script has the first component's SLURM_JOB_NODELIST: tlaunch runs
    # there, as srun does without --het-group, and says that the job has other components.
    out = Path(ws.dir, "het.out")
    script = Path(ws.dir, "het.sbatch")
    script.write_text(f"#!/bin/sh\n#SBATCH -N1 -J tlc-het-batch\n#SBATCH hetjob\n#SBATCH -N1\n"
                      f"exec {ws.tlaunch} {' '.join(cj.NET)} -p 1 -- /bin/hostname\n")
    r = sbatch_wait([f"--output={out}", str(script)], vc.environ())
    text = out.read_text(errors="replace") if out.exists() else ""
    got = cj.rank_hosts(text)
    check(r.returncode == 0 and "this Slurm job is heterogeneous (node" in text and len(got) == 1
          and got[0][0] == got[0][1], "a heterogeneous batch job: runs on its first component and says so",
          f"{cj.describe(r)}\n     {text!r}")


def srun_tasks_refused():
    """`srun tlaunch ...` (torchrun's Slurm recipe puts srun in front of it): each task was a whole
    tlaunch starting the whole job, two jobs of two nodes each, exit 0. Refused, saying why."""
    r = run(["salloc", "-N", "2", "-J", "tlc-srun-tl", "srun", "-N", "2", ws.tlaunch, *cj.NET, "-p", "1", "--",
             "/bin/hostname"], timeout=120)
    check(r.returncode != 0 and "one of 2 tasks of an srun step" in r.stderr and not cj.rank_hosts(r.stdout),
          "`srun tlaunch` in an allocation: refused, no rank run", cj.describe(r))


def daemon_missing_on_one_node():
    """tlaunchd at a path that exists on node1, node2 and node4 only: node3 is named, alone (it
    was a healthy node whose daemon Slurm signalled when node3's could not start, or all four);
    with a spare node and --max-restarts 1, node3 is dropped and the job runs on the others."""
    daemon = str(Path(ws.tlaunch).parent / "tlaunchd")
    local = "/tmp/tlc-node-local-tlaunchd"  # each node's own /tmp
    for node in ("node1", "node2", "node4"):
        vc.exec(node, ["cp", daemon, local], check=True)
    for attempt in range(2):  # the daemons' reports and srun's words race: twice
        r = run(["salloc", "-N", "4", "-J", "tlc-missing", "/bin/sh", "-c", REPORT_STATUS, "sh", ws.tlaunch, *cj.NET,
                 "-p", "1", "--daemon-path", local, "--", "/bin/hostname"], timeout=120)
        check("tlaunch exit status 69" in r.stderr and f"tlaunchd not found at {local} on node3:" in r.stderr
              and "SIGTERM" not in r.stderr and "lost node" not in r.stderr and not cj.rank_hosts(r.stdout),
              f"tlaunchd missing on node3 (run {attempt + 1}): node3 named, alone", cj.describe(r))
    r = run(["salloc", "-N", "4", "-J", "tlc-missing-spare", ws.tlaunch, *cj.NET, "-N", "3", "-p", "1",
             "--max-restarts", "1", "--daemon-path", local, "--", "/bin/hostname"], timeout=120)
    got = sorted(node for node, _ in cj.rank_hosts(r.stdout).values())
    check(r.returncode == 0 and "node3 dropped" in r.stderr and got == ["node1", "node2", "node4"],
          "tlaunchd missing on node3, a spare and --max-restarts 1: node3 replaced, the job runs", cj.describe(r))
    for node in ("node1", "node2", "node4"):
        vc.exec(node, ["rm", "-f", local])


def hosts_inside_allocation():
    """--hosts naming the allocation's nodes (a script's `--hosts $(scontrol show hostnames)`): the
    daemons start with srun in the allocation (this cluster has no sshd: over ssh it fails)."""
    r = run(["salloc", "-N", "2", "-w", "node[1-2]", "-J", "tlc-hosts-in", ws.tlaunch, *cj.NET, "-v", "--hosts",
             "node2,node1", "-p", "1", "--", "/bin/hostname"], timeout=120)
    got = sorted(node for node, _ in cj.rank_hosts(r.stdout).values())
    check(r.returncode == 0 and "via slurm" in r.stderr and got == ["node1", "node2"],
          "--hosts of the allocation's nodes inside it: started with srun", cj.describe(r))


def allocation_tasks_as_ranks():
    """`salloc -N2 -n3`: the allocation's three tasks are the ranks (2 + 1), as srun runs them; it
    ran one rank per node and said "no slots"."""
    r = run(["salloc", "-N", "2", "-n", "3", "-J", "tlc-ntasks", ws.tlaunch, *cj.NET, "--", "/bin/hostname"],
            timeout=120)
    got = cj.rank_hosts(r.stdout)
    per_node = sorted(list(node for node, _ in got.values()).count(n) for n in {node for node, _ in got.values()})
    check(r.returncode == 0 and len(got) == 3 and per_node == [1, 2],
          "salloc -N2 -n3: 3 ranks, 2 on one node and 1 on the other", cj.describe(r))


@contextlib.contextmanager
def another_job(name, salloc_args, seconds, what):
    """Another user's job holding part of the cluster (salloc ... sleep) for the body; yields
    whether it got to run."""
    hold = subprocess.Popen(["salloc", *salloc_args, "-J", name, "sleep", str(seconds)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=ws.dir, env=vc.environ(), start_new_session=True)
    try:
        held = cj.tl.wait_until(lambda: squeue("-n", name, "-t", "R", "-o", "%i"), 30, 0.2)
        check(bool(held), what, str(squeue("-o", "%i %j %T %b")))
        yield bool(held)
    finally:
        # salloc ignores SIGTERM and runs its command in a process group of its own (and here
        # hears nothing of an scancel: it is outside the nodes' network); it ends, releasing the
        # allocation, once its command does.
        for pid in cj.tl.children_of(hold.pid):
            os.kill(pid, signal.SIGTERM)
        try:
            hold.wait(timeout=15)
        except subprocess.TimeoutExpired:
            for pid in cj.tl.children_of(hold.pid):
                os.kill(pid, signal.SIGKILL)
            os.killpg(hold.pid, signal.SIGKILL)
            hold.wait()


def srun_waits_for_busy_nodes():
    """A busy cluster: srun's job is queued. tlaunch says why nothing happens and waits for Slurm,
    however long that takes; --connect-timeout counts from when the nodes are given."""
    with another_job("tlc-busy", ["-N", "4", "--exclusive"], 6, "another job holds every node") as held:
        if not held:
            return
        t0 = time.monotonic()
        r = run([ws.tlaunch, *cj.NET, "--launcher", "slurm", "-N", "2", "-p", "1", "--connect-timeout", "2", "--",
                 "/bin/hostname"])
        waited = time.monotonic() - t0
        got = cj.rank_hosts(r.stdout)
        check(r.returncode == 0 and sorted(got) == [0, 1] and "queued and waiting for resources" in r.stderr
              and "has been allocated resources" in r.stderr and waited > 2,
              f"a busy cluster, --connect-timeout 2: tlaunch says srun's job is queued and runs once Slurm gives "
              f"the nodes ({waited:.1f} s)", cj.describe(r))
        job = cj.job_id_in(r.stderr)
        if job:
            jobs_seen.append(job)


def sbatch_wait(argv, env, **kw):
    """`sbatch ARGV`, then its job's end, as a CompletedProcess whose returncode is the job's exit
    code. Not `sbatch --wait`: it polls after 2, 10, then 42 s (its sleep grows 4-fold while under
    half of MinJobAge), so a job of 11 s took 42."""
    r = subprocess.run(["sbatch", "--parsable", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace", timeout=60, cwd=ws.dir, env=env, **kw)
    job = r.stdout.strip().split(";")[0]
    if r.returncode != 0 or not job.isdigit():
        return r
    deadline = time.monotonic() + TIMEOUT
    while True:
        state = subprocess.run(["scontrol", "-o", "show", "job", job], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, errors="replace", timeout=60, cwd=ws.dir, env=env).stdout
        m = re.search(r"\bJobState=(\S+).*\bExitCode=(\d+):(\d+)", state)
        # COMPLETING: the script has ended (its exit code is known) and the nodes are cleaning up;
        # sbatch --wait returns then too.
        if m and m.group(1) not in ("PENDING", "CONFIGURING", "RUNNING", "SUSPENDED"):
            code, sig = int(m.group(2)), int(m.group(3))
            if not code and sig:
                code = 128 + sig
            if not code and m.group(1) not in ("COMPLETED", "COMPLETING"):  # CANCELLED, TIMEOUT, NODE_FAIL, ...
                code = 1
            return subprocess.CompletedProcess(r.args, code, r.stdout + state, r.stderr)
        if time.monotonic() > deadline:
            return subprocess.CompletedProcess(r.args, 124, r.stdout + state, r.stderr + "job did not end in time")
        time.sleep(0.2)


def sbatch_example():
    script = Path(__file__).resolve().parents[2] / "contrib" / "examples" / "slurm_job.sbatch"
    env = vc.environ()
    env["PATH"] = f"{Path(ws.tlaunch).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    env.update(GPUS_PER_NODE="0", RANKS_PER_NODE="2", PYTHON=cj.PYTHON, TLAUNCH_OPTIONS=" ".join(cj.NET),
               TRAIN=f"{ws.program('gloo_allreduce.py')} 3 1000")
    out, err = Path(ws.dir, "sbatch.out"), Path(ws.dir, "sbatch.err")
    t0 = time.monotonic()
    # --gres on the command line wins over the script's 8 GPUs (the virtual nodes have 4 stand-ins).
    r = sbatch_wait(["--export=ALL", "--gres=gpu:1", f"--output={out}", f"--error={err}", str(script)], env)
    stdout = out.read_text(errors="replace") if out.exists() else ""
    stderr = err.read_text(errors="replace") if err.exists() else ""
    wrong = cj.gloo_lines_ok(stdout, vc.nodes, 2)
    check(r.returncode == 0 and wrong is None,
          f"contrib/examples/slurm_job.sbatch under sbatch: Gloo all-reduce 4 nodes x 2 ranks "
          f"({time.monotonic() - t0:.1f} s)", f"{wrong}\n     sbatch: {r.returncode} {r.stdout} {r.stderr}\n"
                                             f"     job stdout: {stdout[-1500:]!r}\n     job stderr: {stderr[-1500:]!r}")
    job = cj.job_id_in(stderr)
    if job:
        jobs_seen.append(job)


JUWELS = "jsc-juwels-booster-jwb0004_2xEPYC7402_4xA100_4xmlx5-HDR_pci-only-gpus_hwloc2.2.xml"
JUWELS_BUS = ["0000:03:00.0", "0000:44:00.0", "0000:84:00.0", "0000:c4:00.0"]  # GPUs 0-3, PCI order
GPU_LINE = 'echo "gpu $(hostname) $LOCAL_RANK ${CUDA_VISIBLE_DEVICES-unset} ${TLAUNCH_GPU_BUSID-unset}"'


def gpu_lines(text):
    """{(hostname, local rank): (CUDA_VISIBLE_DEVICES, bus id)} from GPU_LINE's output."""
    out = {}
    for line in text.splitlines():
        m = re.search(r"\bgpu (node\d+) (\d+) (\S+) (\S+)$", line)
        if m:
            out[(m.group(1), int(m.group(2)))] = (m.group(3), m.group(4))
    return out


def sbatch_gpu_lines(options, name, sbatch_options):
    """Runs tlaunch in an `sbatch -N 2` script on node1 and node2; returns (sbatch, job output)."""
    out = Path(ws.dir, f"gpus-batch-{name}.out")
    script = f"#!/bin/sh\necho \"script CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES\"\n" \
             f"exec {ws.tlaunch} {' '.join(options)} -- /bin/sh -c '{GPU_LINE}'\n"
    batch = sbatch_wait(["-N", "2", "-w", "node1,node2", *sbatch_options, "-J", f"tlc-gpub{name}", f"--output={out}"],
                        vc.environ(), input=script)
    return batch, out.read_text(errors="replace") if out.exists() else ""


def slurm_gpus_node_by_node():
    # Copied where the nodes see it: each node has its own /tmp, where a clone may be.
    topology = shutil.copy(Path(__file__).resolve().parents[1] / "fixtures" / "topologies" / JUWELS, ws.dir)
    options = [*cj.NET, "-v", "--topology-xml", str(topology)]
    with another_job("tlc-hold", ["-N", "1", "-w", "node1", "--gres=gpu:2"], 300,
                     "another job holds 2 of node1's 4 GPUs") as held:
        if not held:
            return
        r = run(["salloc", "-N", "2", "-w", "node1,node2", "--gres=gpu:2", "-J", "tlc-gpus", ws.tlaunch, *options,
                 "--", "/bin/sh", "-c", GPU_LINE])
        want = {("node1", 0): ("2,3", JUWELS_BUS[2]), ("node1", 1): ("2,3", JUWELS_BUS[3]),
                ("node2", 0): ("0,1", JUWELS_BUS[0]), ("node2", 1): ("0,1", JUWELS_BUS[1])}
        got = gpu_lines(r.stdout)
        check(r.returncode == 0 and got == want,
              "salloc --gres=gpu:2 on a shared node: one rank per GPU Slurm gave the job on each node, "
              "bound to that GPU", f"want {want}\n     got {got}\n     {cj.describe(r)}")

        refused = run(["salloc", "-N", "2", "-w", "node1,node2", "--gres=gpu:2", "-J", "tlc-gpus4", ws.tlaunch,
                       *options, "-g", "4", "--", "/bin/true"])
        check(refused.returncode != 0 and "GPU(s) left by Slurm's allocation on node" in refused.stderr
              and "--gres=gpu:N" in refused.stderr,
              "-g 4 with 2 GPUs given by Slurm: refused, naming Slurm's allocation", cj.describe(refused))

        # sbatch's script runs on node1 with node1's GPU in CUDA_VISIBLE_DEVICES: not node2's.
        batch, text = sbatch_gpu_lines(options, "1", ["--gres=gpu:1"])
        want = {("node1", 0): ("2", JUWELS_BUS[2]), ("node2", 0): ("0", JUWELS_BUS[0])}
        got = gpu_lines(text)
        check(batch.returncode == 0 and "script CUDA_VISIBLE_DEVICES=2" in text and got == want,
              "sbatch --gres=gpu:1: the script's CUDA_VISIBLE_DEVICES (node1's GPU 2) does not reach node2, "
              "whose rank gets its own GPU 0", f"want {want}\n     got {got}\n     sbatch: {cj.describe(batch)}\n"
                                               f"     job output: {text[-1500:]!r}")
        jobs_seen.extend(j for j in (cj.job_id_in(r.stderr), cj.job_id_in(text)) if j)
        # GPUs asked per task: the daemons' step (one task per node) still gets all of the node's.
        batch, text = sbatch_gpu_lines(options, "2", ["--ntasks-per-node=2", "--gpus-per-task=1"])
        want = {("node1", 0): ("2,3", JUWELS_BUS[2]), ("node1", 1): ("2,3", JUWELS_BUS[3]),
                ("node2", 0): ("0,1", JUWELS_BUS[0]), ("node2", 1): ("0,1", JUWELS_BUS[1])}
        got = gpu_lines(text)
        check(batch.returncode == 0 and got == want,
              "sbatch --ntasks-per-node=2 --gpus-per-task=1: one rank per GPU of the job on each node",
              f"want {want}\n     got {got}\n     sbatch: {cj.describe(batch)}\n     job output: {text[-1500:]!r}")
        jobs_seen.extend(j for j in [cj.job_id_in(text)] if j)


# The rank prints its node and the pid of its daemon's parent (a keeper, or slurmstepd).
GRANDPARENT = "echo \"on $(hostname) daemon-parent $(awk '/^PPid/{print $2}' /proc/$PPID/status)\""
WARM_SCRIPT = r'''
tl() { "$TLAUNCH" --net tcp --net-if ib0 "$@" 2>&1; echo "=== exit $?"; }
steps() { squeue -h -s -j "$SLURM_JOB_ID" -o "%j"; }
echo "=== first"; tl -v --keep-daemons 60s -p 1 -- /bin/sh -c "$GRANDPARENT"
echo "=== keepers"; cat "$HOME"/.cache/tlaunch/daemons/node-*.json
echo "=== steps"; steps
echo "=== second"; tl -v -p 1 -- /bin/sh -c "$GRANDPARENT"
echo "=== stop"; "$TLAUNCH" stop-daemons 2>&1; echo "=== exit $?"
for i in $(seq 50); do steps | grep -q tlaunch-keepers || break; sleep 0.2; done
echo "=== steps after"; steps
echo "=== end"
'''


def sections(text):
    """'=== name' markers -> {name: text up to the next marker}."""
    out, name = {}, None
    for line in text.splitlines():
        if line.startswith("=== ") and not line.startswith("=== exit"):
            name = line[4:]
            out[name] = ""
        elif name is not None:
            out[name] += line + "\n"
    return out


def warm_daemons_inside_salloc():
    home = Path(ws.dir, "warm-home")
    home.mkdir(mode=0o700)
    env = {**vc.environ(), "HOME": str(home), "TLAUNCH": ws.tlaunch, "GRANDPARENT": GRANDPARENT}
    t0 = time.monotonic()
    r = subprocess.run(["salloc", "-N", "2", "-J", "tlc-warm", "/bin/sh", "-c", WARM_SCRIPT], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, errors="replace", timeout=TIMEOUT, cwd=ws.dir, env=env)
    s = sections(r.stdout)
    exits = re.findall(r"=== exit (\d+)", r.stdout)
    keepers = {}
    for line in s.get("keepers", "").splitlines():
        try:
            e = json.loads(line)
            keepers[e["node"]] = e
        except ValueError:
            pass
    first, second = cj.daemon_parents(s.get("first", "")), cj.daemon_parents(s.get("second", ""))
    want = {n: e["pid"] for n, e in keepers.items()}
    detail = f"salloc exit {r.returncode}, exits {exits}\n     {r.stdout[-3000:]}"
    check(exits[:1] == ["0"] and "started warm-daemon keepers on 2 node(s) in Slurm step tlaunch-keepers" in s["first"]
          and len(want) == 2 and all(e.get("slurm_job") for e in keepers.values()) and first == want,
          f"salloc -N 2, --keep-daemons 60s: keepers start in their own step and start the job's daemons, exit 0 "
          f"({time.monotonic() - t0:.1f} s for the whole scenario)", detail)
    check("tlaunch-keepers" in s.get("steps", ""), "squeue -s lists the keepers' step as tlaunch-keepers", detail)
    check(exits[1:2] == ["0"] and "reused daemons on 2 nodes (started" in s.get("second", "") and second == want,
          "relaunch in the allocation: 'reused daemons on 2 nodes', each tlaunchd the child of its node's keeper",
          detail)
    check(exits[2:3] == ["0"] and "stopped warm daemons on 2 nodes" in s.get("stop", "") and
          "tlaunch-keepers" not in s.get("steps after", "x") and not cj.keeper_pids(Path(ws.tlaunch).parent),
          "tlaunch stop-daemons ends the keepers and their step", detail + f"\n     keepers left {cj.keeper_pids(Path(ws.tlaunch).parent)}")
    job = cj.job_id_in(s.get("first", ""))
    if job:
        jobs_seen.append(job)

    # Keepers the user left running end with their allocation, as every step does.
    r = subprocess.run(["salloc", "-N", "2", "-J", "tlc-warm2", ws.tlaunch, *cj.NET, "--keep-daemons", "10m", "-p", "1",
                        "--", "true"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                       timeout=TIMEOUT, cwd=ws.dir, env=env)
    gone = cj.tl.wait_until(lambda: not cj.keeper_pids(Path(ws.tlaunch).parent), 30, 0.2)
    check(r.returncode == 0 and gone and cj.tl.wait_until(lambda: not squeue("-o", "%i"), 30, 0.2),
          "keepers left running (--keep-daemons 10m) end with their allocation, and it is released",
          f"exit {r.returncode} keepers left {cj.keeper_pids(Path(ws.tlaunch).parent)}\n     {r.stdout[-2000:]}")


def main():
    global vc, ws
    skip_unless_possible(ssh=False)
    cj.require_tlaunch()
    torch = cj.have_torch()
    t_start = time.monotonic()
    with cj.Workspace() as ws:
        cj.wait_for_free_cluster()
        vc = cj.OwnVirtualCluster(n=4, slurm=True, ssh=False)
        with vc:
            print(f"cluster up in {vc.up_seconds:.1f} s", flush=True)
            heterogeneous_allocation_refused()
            srun_tasks_refused()
            daemon_missing_on_one_node()
            hosts_inside_allocation()
            allocation_tasks_as_ranks()
            slurm_job_identity()
            if torch:
                gloo_inside_salloc()
            else:
                print("note: Debian's python3-torch is missing: the Gloo all-reduce is not checked", flush=True)
            scancel_mid_job()
            daemon_killed_mid_job()
            srun_allocates()
            srun_waits_for_busy_nodes()
            if torch:
                sbatch_example()
            slurm_gpus_node_by_node()
            warm_daemons_inside_salloc()
        print(f"cluster down in {vc.down_seconds:.1f} s", flush=True)
    left = [p for job in jobs_seen for p in cj.job_processes(job)]
    check(not left, "after down: no process of any job of this test", "\n     ".join(left))
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    check("tlvc-" not in netns, "after down: no network namespace of the cluster", netns)
    print(f"total {time.monotonic() - t_start:.1f} s", flush=True)
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
