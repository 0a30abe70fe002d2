"""--max-restarts with the local launcher (simulated nodes on this host), as a user checks it:
- a rank that fails in the first attempt only: the job runs again and ends 0, the second
  attempt's ranks see TORCHELASTIC_RESTART_COUNT=1 and the first attempt's TORCHELASTIC_RUN_ID,
  one restart line names the cause, --summary-json counts the restart, --output-dir keeps both
  attempts' output;
- without --max-restarts the same job fails with the rank's status and nothing restarts;
- a rank that always fails on the same node: that node is dropped after its second failure and
  the spare named with --hosts takes its place; the exit status is the last attempt's; with no
  spare the node is kept and every restart is used;
- a node's daemon killed mid-job: the node is dropped at once, the job runs again on the spare
  and completes; with counted nodes (-N, no spare given) the job goes on with the rest where
  --nnodes MIN:MAX allows, and ends saying why where -N asks for them all;
- Ctrl-C while a failed attempt is still ending: no restart;
- a signal after a failed attempt ended, while its daemons are reaped and the next attempt is
  set up: no restart, and the summary is written (no session handles the signal there);
- the hostfile is read once: one given as a FIFO (`--hostfile <(...)`) feeds every attempt;
- nothing of any attempt is left afterwards.
The cluster test (tests/cluster/test_faults_cluster.py) does the lost node with a real spare."""
import json
import os
import re
import shutil
import signal
import subprocess
import time

import tl

RANK = tl.program("restart_rank.py")
JOB = ["-v", "--launcher", "local", "-N", "2", "-p", "1", "--event-grace", "0"]
WITH_SPARE = JOB + ["--hosts", "local0,local1,local2"]  # simulated nodes named: local2 is the spare


def attempts(stdout):
    """[(node, rank, attempt, run_id)] from restart_rank.py's lines."""
    out = []
    for line in stdout.splitlines():
        m = re.fullmatch(r"\[([\w.-]+):(\d+)\] rank (\d+) attempt (\d+) of \d+ run (\S+) world \d+ pid \d+ ready", line)
        if m:
            out.append((m.group(1), int(m.group(3)), int(m.group(4)), m.group(5)))
    return out


def job_ids(stderr):
    return list(dict.fromkeys(re.findall(r"tlaunch: job (tl-[0-9a-f]+(?:-r\d+)?): ", stderr)))


def leftovers(ids):
    return [p for j in ids for p in tl.processes_with_env("TLAUNCH_JOB_ID", j)]


d = tl.tempdir()
try:
    # 1. Fails once, then succeeds.
    summary = os.path.join(d, "summary.json")
    outdir = os.path.join(d, "out")
    markers = os.path.join(d, "markers")
    os.mkdir(markers)
    r = tl.run(JOB + ["--max-restarts", "2", "--summary-json", summary, "--output-dir", outdir, "--",
                      tl.PYTHON, RANK, "fail-once", markers])
    tl.check(r.returncode == 0, f"fail-once with --max-restarts 2: exit {r.returncode}\n{r.stderr}")
    # The first attempt's failure is said as an attempt's, not as the job's end.
    tl.check(re.search(r"job tl-[0-9a-f]+ \(attempt 1 of at most 3\) failed: rank", r.stderr) is not None,
             f"the failed attempt is named as one: {r.stderr}")
    seen = attempts(r.stdout)
    tl.check(sorted((rank, a) for _, rank, a, _ in seen) == [(0, 0), (0, 1), (1, 0), (1, 1)],
             f"each rank ran in attempts 0 and 1: {seen}\n{r.stdout}")
    tl.check(len({run for *_, run in seen}) == 1, f"one TORCHELASTIC_RUN_ID in every attempt: {seen}")
    restarts = [l for l in r.stderr.splitlines() if "restart 1 of 2 after" in l]
    tl.check(len(restarts) == 1 and "rank 1 on node local1 exited with status 3" in restarts[0]
             and "dropped" not in restarts[0], f"one restart line naming the cause: {r.stderr}")
    tl.check("restart 2" not in r.stderr, f"a second restart: {r.stderr}")
    with open(summary) as f:
        s = json.load(f)
    tl.check(s["exit_status"] == 0 and s["restarts"] == 1 and len(s["restart_history"]) == 1
             and "exited with status 3" in s["restart_history"][0]["cause"], f"summary: {s}")
    with open(os.path.join(outdir, "rank.1.out")) as f:
        text = f.read()
    tl.check("attempt 0" in text and "attempt 1" in text, f"--output-dir keeps both attempts: {text!r}")
    ids = job_ids(r.stderr)
    tl.check(len(ids) == 2 and ids[1] == ids[0] + "-r1", f"one job id per attempt: {ids}")
    tl.check(tl.wait_until(lambda: not leftovers(ids), 10), f"leftovers: {leftovers(ids)}")

    # 2. The default is no restart: the rank's status, no restart line.
    r = tl.run(JOB + ["--", tl.PYTHON, RANK, "fail-once"])
    tl.check(r.returncode == 3, f"no --max-restarts: exit {r.returncode}, want 3\n{r.stderr}")
    tl.check("restart" not in r.stderr and len(attempts(r.stdout)) <= 2, f"restarted anyway: {r.stderr}")

    # 3. Always failing on the node of rank 1: dropped after two failures in a row, replaced.
    r = tl.run(WITH_SPARE + ["--max-restarts", "2", "--", tl.PYTHON, RANK, "always"])
    tl.check(r.returncode == 3, f"always failing: exit {r.returncode}, want 3 (the last attempt's)\n{r.stderr}")
    lines = [l for l in r.stderr.splitlines() if re.search(r"restart \d of 2 after", l)]
    tl.check(len(lines) == 2, f"two restart lines: {r.stderr}")
    tl.check("dropped" not in lines[0], f"one failure drops nothing: {lines[0]}")
    tl.check("local1 dropped (a rank failed there in two attempts in a row); local2 added" in lines[1],
             f"the second failure drops local1 for local2: {lines[1]}")
    seen = attempts(r.stdout)
    tl.check(("local2", 1, 2, seen[0][3]) in seen, f"rank 1 ran on local2 in attempt 2: {seen}")
    tl.check("no restart left (--max-restarts 2)" in r.stderr, f"says the restarts are spent: {r.stderr}")
    ids = job_ids(r.stderr)
    tl.check(tl.wait_until(lambda: not leftovers(ids), 10), f"leftovers: {leftovers(ids)}")

    def kill_local1_midjob(args, sig=signal.SIGKILL):
        """Starts the "wait" job, kills local1's daemon once both ranks are up: (process, ready lines)."""
        p = tl.start(args + ["--heartbeat-timeout", "3", "--max-restarts", "1", "--", tl.PYTHON, RANK, "wait"])
        ready = []
        for line in p.stdout:
            if " ready" in line:
                ready.append(line)
            if len(ready) == 2:
                break
        tl.check(len(ready) == 2, "both ranks of the first attempt started")
        first_job = tl.job_of_rank(int(re.search(r"pid (\d+)", ready[0]).group(1)))
        tl.signal_daemon(first_job, "local1", sig, p.pid)
        return p, ready

    # 3b. The same without a spare (counted nodes): local1 is kept, and every restart is used
    #     (a program that fails everywhere must not lose its restarts to the node count).
    r = tl.run(JOB + ["--max-restarts", "2", "--", tl.PYTHON, RANK, "always"])
    tl.check(r.returncode == 3, f"always failing, no spare: exit {r.returncode}, want 3\n{r.stderr}")
    lines = [l for l in r.stderr.splitlines() if re.search(r"restart \d of 2 after", l)]
    tl.check(len(lines) == 2 and "local1 kept, though a rank failed there in two attempts in a row: no spare node"
             in lines[1] and "dropped" not in lines[1], f"local1 kept for the second restart: {r.stderr}")
    seen = attempts(r.stdout)
    tl.check(sorted((node, a) for node, _, a, _ in seen if node == "local1") == [("local1", 0), ("local1", 1), ("local1", 2)],
             f"rank 1 ran on local1 in every attempt: {seen}")
    tl.check("cannot restart" not in r.stderr and "no restart left (--max-restarts 2)" in r.stderr,
             f"every restart was used: {r.stderr}")

    # 4. A node's daemon killed mid-job: dropped at once, the job runs again and completes.
    p, ready = kill_local1_midjob(WITH_SPARE)
    out, err = tl.communicate_or_fail(p, 60, "after its daemon was killed")
    tl.check(p.returncode == 0, f"lost node, then a restart: exit {p.returncode}\n{err}")
    tl.check("restart 1 of 1 after lost node local1" in err and "local1 dropped (its daemon was lost); local2 added" in err,
             f"the restart line names the lost node and its replacement: {err}")
    seen = attempts("".join(ready) + out)
    tl.check(sorted((node, a) for node, _, a, _ in seen) == [("local0", 0), ("local0", 1), ("local1", 0), ("local2", 1)],
             f"attempt 1 ran on local0 and local2: {seen}")
    ids = job_ids(err)
    tl.check(tl.wait_until(lambda: not leftovers(ids), 10), f"leftovers: {leftovers(ids)}")

    # 4b. Its daemon ended by SIGTERM (the node shutting down, drained): lost the same way, and
    #     replaced by the spare. It ended the job (69) with "only a lost node restarts the job".
    p, ready = kill_local1_midjob(WITH_SPARE, signal.SIGTERM)
    out, err = tl.communicate_or_fail(p, 60, "after its daemon got SIGTERM")
    tl.check(p.returncode == 0 and "local1 dropped (its daemon was lost); local2 added" in err,
             f"daemon SIGTERM, then a restart on the spare: exit {p.returncode}\n{err}")
    tl.check(tl.wait_until(lambda: not leftovers(job_ids(err)), 10), f"leftovers: {leftovers(job_ids(err))}")

    # 5. Counted nodes have no spare: with --nnodes 1:2 the job goes on on local0 alone, with
    #    -N 2 it ends saying that one node is left.
    p, ready = kill_local1_midjob(["-v", "--launcher", "local", "--nnodes", "1:2", "-p", "1", "--event-grace", "0"])
    out, err = tl.communicate_or_fail(p, 60, "after its daemon was killed (--nnodes 1:2)")
    tl.check(p.returncode == 0, f"--nnodes 1:2, lost node: exit {p.returncode}\n{err}")
    tl.check("local1 dropped (its daemon was lost); no spare node: 1 node(s) from now on" in err,
             f"the restart line says the job shrinks: {err}")
    seen = attempts("".join(ready) + out)
    tl.check(sorted((node, rank, a) for node, rank, a, _ in seen) == [("local0", 0, 0), ("local0", 0, 1), ("local1", 1, 0)],
             f"attempt 1 ran one rank, on local0: {seen}")
    tl.check(re.search(r"^\[local0:0\] rank 0 attempt 1 of 1 run \S+ world 1 ", out, re.M) is not None,
             f"attempt 1's world is one rank: {out}")
    tl.check(tl.wait_until(lambda: not leftovers(job_ids(err)), 10), f"leftovers: {leftovers(job_ids(err))}")
    p, ready = kill_local1_midjob(JOB)
    out, err = tl.communicate_or_fail(p, 60, "after its daemon was killed (-N 2)")
    tl.check(p.returncode != 0 and "cannot restart the job: -N 2 asks for 2 nodes, but only 1 are available (local0)" in err
             and "local2" not in err, f"-N 2 without a spare: no simulated node is made up: {p.returncode}\n{err}")
    tl.check(tl.wait_until(lambda: not leftovers(job_ids(err)), 10), f"leftovers: {leftovers(job_ids(err))}")

    # 6. Ctrl-C while a failed attempt ends (rank 0 deaf to SIGTERM for --kill-timeout): the
    #    user wants the job over, so no restart follows.
    markers6 = os.path.join(d, "markers6")
    os.mkdir(markers6)
    p = tl.start(JOB + ["--max-restarts", "2", "--kill-timeout", "6", "--", tl.PYTHON, RANK, "fail-slow", markers6])
    tl.check(tl.wait_until(lambda: len(os.listdir(markers6)) == 2, 60), "attempt 0's ranks did not start")
    time.sleep(1.5)  # rank 1 has failed; rank 0 holds the attempt's end
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    tl.check(p.returncode != 0 and "restart 1 of 2" not in err, f"Ctrl-C while failing restarted the job: {p.returncode}\n{err}")
    tl.check("not restarted: tlaunch was interrupted" in err, f"Ctrl-C while failing: not said: {err}")
    tl.check(tl.wait_until(lambda: not leftovers(job_ids(err)), 10), f"leftovers: {leftovers(job_ids(err))}")

    # 7. The hostfile is read once, before the first attempt: a FIFO (`--hostfile <(...)`), like a
    #    file edited meanwhile, used to be read again by the restart, which found it empty and
    #    gave up ("names no hosts"). Here it is written once, and the restart runs.
    fifo = os.path.join(d, "hosts.fifo")
    os.mkfifo(fifo)
    summary7 = os.path.join(d, "summary7.json")
    markers7 = os.path.join(d, "markers7")
    os.mkdir(markers7)
    p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "--hostfile", fifo, "-p", "1", "--event-grace", "0",
                          "--max-restarts", "2", "--summary-json", summary7, "--", tl.PYTHON, RANK, "fail-once", markers7],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                         start_new_session=True)
    try:
        with open(fifo, "w") as f:  # blocks until tlaunch opens it
            f.write("gap0\ngap1\n")
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    tl.check(p.returncode == 0 and "restart 1 of 2" in err and "names no hosts" not in err,
             f"a hostfile read from a FIFO: exit {p.returncode}, want 0 after one restart\n{err}")
    with open(summary7) as f:
        s = json.load(f)
    tl.check(s["exit_status"] == 0 and s["restarts"] == 1, f"summary: {s}")
    tl.check(tl.wait_until(lambda: not leftovers(job_ids(err)), 10), f"leftovers: {leftovers(job_ids(err))}")

    # 7b. SIGTERM while a failed attempt's daemons are being reaped (here each takes 3 s after it
    #     ends, as a slow ssh client can): no session waited for signals there, and the one
    #     asio had queued died with the session, so the job restarted (a scheduler's SIGTERM
    #     lost). Each wrapper marks the moment its tlaunchd ended; the signal goes once both have.
    slow = os.path.join(d, "slow-tlaunchd")
    ended = os.path.join(d, "daemons-ended")
    os.mkdir(ended)
    with open(slow, "w") as f:
        f.write(f"#!/bin/sh\n'{os.path.join(os.path.dirname(tl.TLAUNCH), 'tlaunchd')}' \"$@\"\nrc=$?\n"
                f"touch '{ended}'/$$\ntrap '' TERM\nsleep 3\nexit $rc\n")
    os.chmod(slow, 0o755)
    markers7b = os.path.join(d, "markers7b")
    os.mkdir(markers7b)
    summary7b = os.path.join(d, "summary7b.json")
    p = tl.start(JOB + ["--daemon-path", slow, "--max-restarts", "2", "--summary-json", summary7b, "--", tl.PYTHON, RANK,
                        "fail-once", markers7b])
    with tl.ending(p):
        tl.check(tl.wait_until(lambda: len(os.listdir(ended)) == 2, 60), "attempt 0's daemons did not end")
        time.sleep(0.2)  # their connections' end reaches the session
        os.kill(p.pid, signal.SIGTERM)
        out, err = p.communicate(timeout=60)
    tl.check(p.returncode == 3 and "got SIGTERM between attempts: the job is not restarted" in err
             and "restart 1 of 2" not in err, f"SIGTERM while daemons were reaped: exit {p.returncode}\n{err}")
    with open(summary7b) as f:
        s = json.load(f)
    tl.check(s["exit_status"] == 3 and s["restarts"] == 0 and s["failed_rank"] == 1, f"summary: {s}")
    tl.check(tl.wait_until(lambda: not leftovers(job_ids(err)), 10), f"leftovers: {leftovers(job_ids(err))}")

    # 5. Restarts refuse --stdin (the failed attempt's input cannot be read again).
    r = tl.run(JOB + ["--max-restarts", "1", "--stdin", "0", "--", "true"])
    tl.check(r.returncode == 64 and "--stdin and --max-restarts cannot be combined" in r.stderr, r.stderr)
finally:
    shutil.rmtree(d, ignore_errors=True)

# `tlaunch status RUN_ID` after a restart: the run's id (TORCHELASTIC_RUN_ID, what the user saw
# first) reaches the attempt now running ("<id>-r1"); it said "no running job".
control_env = dict(os.environ, XDG_RUNTIME_DIR=tl.tempdir())
p = tl.start(["--launcher", "local", "-N", "1", "-p", "1", "--max-restarts", "1", "--", "sh", "-c",
              'test "$TORCHELASTIC_RESTART_COUNT" = 0 && exit 3; echo "second attempt of $TORCHELASTIC_RUN_ID."; '
              'sleep 60'], env=control_env)
with tl.ending(p):
    said = tl.read_until(p, b".\n")
    m = re.search(rb"second attempt of (tl-[0-9a-f]+)\.", said)
    tl.check(m is not None, f"no second attempt: {said!r}")
    run_id = m.group(1).decode()
    r = tl.run(["status", run_id], timeout=60, env=control_env)
    tl.check(r.returncode == 0 and "local0" in r.stdout,
             f"tlaunch status {run_id} after a restart: {r.returncode} {r.stdout} {r.stderr}")
    os.kill(p.pid, signal.SIGINT)
    tl.communicate_or_fail(p, 30, "after SIGINT")
print("PASS")
