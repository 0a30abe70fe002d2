"""Fail-fast teardown as a user sees it: a failing rank ends the whole job with its status and
a summary naming it; a rank killed -9 ends the job within 10 s; SIGINT to tlaunch gives every
rank SIGTERM and exit 130; SIGUSR1 reaches every rank; a killed daemon aborts the job naming
its node; nothing of the job survives (checked by the job's environment, not by names)."""
import glob
import json
import os
import re
import select
import signal
import time

import tl

WAIT = tl.program("wait_for_signals.py")


def job_id_of(proc_output):
    m = re.search(r"job (tl-[0-9a-f]+)", proc_output)
    return m.group(1) if m else None


def wait_ready(p, n, timeout=60):
    """Lines of stdout until n ranks said ready (raw reads with a deadline: never hangs)."""
    deadline = time.monotonic() + timeout
    buf = b""
    while buf.count(b"ready") < n:
        left = deadline - time.monotonic()
        if left <= 0:
            os.killpg(p.pid, signal.SIGKILL)
            tl.fail(f"only {buf.count(b'ready')} of {n} ranks said ready in {timeout} s; stdout so far: {buf!r}")
        r, _, _ = select.select([p.stdout], [], [], left)
        if r:
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                tl.fail(f"job ended early: {p.stderr.read()}")
            buf += chunk
    return buf.decode(errors="replace").splitlines(keepends=True)


def read_until(p, word, count, timeout=30):
    """tlaunch's stdout until `word` appeared `count` times, it ended, or `timeout` s passed."""
    got = b""
    deadline = time.monotonic() + timeout
    while got.count(word) < count and time.monotonic() < deadline:
        if select.select([p.stdout], [], [], 1)[0]:
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                break
            got += chunk
    return got


def leftovers(job):
    return tl.processes_with_env("TLAUNCH_JOB_ID", job)


# 1. A rank that exits 3 ends the job with 3; the summary names rank, node, status and stderr.
#    Rank 2 fails only once every rank's SIGTERM handler is in place (markers).
markers1 = tl.tempdir()
t0 = time.monotonic()
r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "--kill-timeout", "5", "--", tl.PYTHON, WAIT, "2", "3", "0.5",
            markers1])
elapsed = time.monotonic() - t0
print(r.stdout, r.stderr)
tl.check(r.returncode == 3, f"exit status {r.returncode}, expected 3")
tl.check("rank 2 on node local1 exited with status 3" in r.stderr, "summary names rank 2 on local1 and status 3")
tl.check("rank 2 failing on purpose" in r.stderr.split("failed:")[-1], "summary shows its last stderr lines")
# Said when the teardown starts, not only once the last rank is gone (--kill-timeout can be long).
said = r.stderr.find("ending the job (SIGTERM to the 3 ranks still running, SIGKILL after 5 s): rank 2 on node local1")
tl.check(0 <= said < r.stderr.find("failed: rank 2"), f"the teardown's reason is not said first: {r.stderr}")
for other in (0, 1, 3):
    tl.check(f"rank {other} got SIGTERM" in r.stdout, f"rank {other} was sent SIGTERM")
tl.check(elapsed < 30, f"took {elapsed:.1f} s")
job = job_id_of(r.stderr)
tl.check(job and not leftovers(job), "no process of the job remains")

# 1b. The first failure is the one named, when the failed rank leaves a child holding its pipes
#     (DataLoader workers) and a peer fails of it a moment later (first_failure.py): the
#     daemon reported the first only once its pipes closed, a second after the second.
markers1b = tl.tempdir()
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--", tl.PYTHON, tl.program("first_failure.py"), markers1b])
tl.check(r.returncode == 7, f"first failure: exit {r.returncode}, want rank 0's 7\n{r.stderr}")
tl.check("rank 0 on node local0 exited with status 7" in r.stderr and "rank 0 fails first" in r.stderr,
         f"the summary names rank 0 and quotes its stderr: {r.stderr}")
job = job_id_of(r.stderr)
tl.check(job and tl.wait_until(lambda: not leftovers(job), 10), f"rank 0's child outlived the job: {leftovers(job)}")

# 2. kill -9 of one rank mid-run: the job ends within 10 s, with 137, and nothing remains.
p = tl.start(["--launcher", "local", "-N", "2", "-p", "2", "--", tl.PYTHON, WAIT])
lines = wait_ready(p, 4)
victim = int(re.search(r"rank 1 pid (\d+)", "".join(lines)).group(1))
job = tl.job_of_rank(victim)
os.kill(victim, signal.SIGKILL)
t0 = time.monotonic()
try:
    p.wait(timeout=10)
except Exception:
    os.killpg(p.pid, signal.SIGKILL)
    tl.fail("job did not end within 10 s of kill -9 of a rank")
err = p.stderr.read()
tl.check(p.returncode == 137, f"exit status {p.returncode}, expected 137 (128+9)")
tl.check("rank 1 on node local0 was killed by signal 9" in err, f"summary: {err}")
tl.check(tl.wait_until(lambda: not leftovers(job), 10), f"leftover processes: {leftovers(job)}")

# 2b. A rank stopped (SIGSTOP: Ctrl-Z inside it, a debugger) when the job ends: it is continued
# with its SIGTERM, so its handler runs at once instead of SIGKILL after --kill-timeout.
p = tl.start(["--launcher", "local", "-N", "2", "-p", "2", "--kill-timeout", "30", "--", tl.PYTHON, WAIT])
lines = wait_ready(p, 4)
stopped = int(re.search(r"rank 1 pid (\d+)", "".join(lines)).group(1))
job = tl.job_of_rank(stopped)
os.kill(stopped, signal.SIGSTOP)
time.sleep(0.3)
t0 = time.monotonic()
os.kill(p.pid, signal.SIGINT)
out, err = tl.communicate_or_fail(p, 60, "after SIGINT with a stopped rank")
elapsed = time.monotonic() - t0
tl.check("rank 1 got SIGTERM" in out, f"the stopped rank's SIGTERM handler did not run: {out}")
tl.check(elapsed < 15, f"the job waited {elapsed:.1f} s for a stopped rank (--kill-timeout 30)")
tl.check(tl.wait_until(lambda: not leftovers(job), 10), f"leftover processes: {leftovers(job)}")

# 3. SIGUSR1 reaches every rank; then SIGINT: every rank sees SIGTERM, tlaunch exits 130.
p = tl.start(["--launcher", "local", "-N", "2", "-p", "2", "--", tl.PYTHON, WAIT])
lines = wait_ready(p, 4)
job = tl.job_of_rank(int(re.search(r"pid (\d+)", lines[0]).group(1)))
os.kill(p.pid, signal.SIGUSR1)
got = read_until(p, b"SIGUSR1", 4)
tl.check(got.count(b"SIGUSR1") == 4, f"SIGUSR1 reached {got.count(b'SIGUSR1')} of 4 ranks (exit {p.poll()})")
os.kill(p.pid, signal.SIGINT)
out, err = p.communicate(timeout=30)
tl.check(p.returncode == 130, f"exit status {p.returncode}, expected 130")
for rank in range(4):
    tl.check(f"rank {rank} got SIGTERM" in out, f"rank {rank} did not see SIGTERM: {out}")
tl.check(tl.wait_until(lambda: not leftovers(job), 10), "leftover processes after SIGINT")

# 3a. The program behind a wrapper shell (`tlaunch -- ./train.sh`, the shell not exec'ing it):
# SIGUSR1 reaches the script, which catches it; the shell, which would die of it, is left alone.
# (Sent to the rank process alone, it killed the shell: "rank 1 ... killed by signal 10".)
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--", "/bin/sh", "-c",
              f'"{tl.PYTHON}" "{WAIT}"; echo "wrapper of rank $RANK done"'])
with tl.ending(p):
    wait_ready(p, 2)
    os.kill(p.pid, signal.SIGUSR1)
    got = read_until(p, b"SIGUSR1", 2)
    time.sleep(0.5)
    tl.check(got.count(b"SIGUSR1") == 2 and p.poll() is None,
             f"SIGUSR1 reaches the script behind each rank's wrapper shell, and the job goes on: {got!r}, "
             f"exit {p.poll()}")
    os.kill(p.pid, signal.SIGINT)
    out, err = tl.communicate_or_fail(p, 30, "after SIGINT")
    tl.check(p.returncode == 130, f"then Ctrl-C: exit {p.returncode}, want 130: {err}")

# 3b. Started under nohup (SIGHUP ignored): a closed terminal's SIGHUP does not end the job; it
# ended it with 129 although the user had asked for exactly that not to happen.
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--", tl.PYTHON, WAIT],
             preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
wait_ready(p, 2)
os.kill(p.pid, signal.SIGHUP)
time.sleep(1.5)
tl.check(p.poll() is None, f"SIGHUP under nohup ended the job: exit {p.returncode}")
os.kill(p.pid, signal.SIGINT)
out, err = p.communicate(timeout=30)
tl.check(p.returncode == 130 and "got HUP" not in err, f"under nohup: exit {p.returncode}, want 130 (SIGINT): {err}")

# 3b'. A background command of a shell script (`tlaunch ... &` in a script: SIGINT and SIGQUIT
# ignored) leaves the terminal's Ctrl-C and Ctrl-\ alone, as bash, make and Python do; it ended
# the job (130) or collected stacks. SIGTERM still ends it.
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--", tl.PYTHON, WAIT],
             preexec_fn=lambda: [signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGQUIT)])
wait_ready(p, 2)
os.kill(p.pid, signal.SIGINT)
os.kill(p.pid, signal.SIGQUIT)
time.sleep(1.5)
tl.check(p.poll() is None, f"an ignored SIGINT ended the job: exit {p.returncode}")
os.kill(p.pid, signal.SIGTERM)
out, err = tl.communicate_or_fail(p, 30, "after SIGTERM")
tl.check(p.returncode == 143 and "got SIGQUIT" not in err and "got INT" not in err,
         f"SIGINT and SIGQUIT ignored at start stay ignored, SIGTERM ends: exit {p.returncode}: {err}")

# 3b''. Ctrl-C while the job is still being set up (here: `--hostfile <(script)` whose script has
# not written yet) ends it at once, before anything starts, with 130 and its summary: the default
# action killed tlaunch (exit -2, no line, no --summary-json) until the job's session handled
# signals; held instead, it would have waited for the script for ever.
setup_dir = tl.tempdir()
slow_hostfile = os.path.join(setup_dir, "hosts")
os.mkfifo(slow_hostfile)
summary3b = os.path.join(setup_dir, "s.json")
p = tl.start(["--hostfile", slow_hostfile, "--summary-json", summary3b, "--", "sleep", "30"])
with tl.ending(p):
    time.sleep(1)
    os.kill(p.pid, signal.SIGINT)
    out, err = tl.communicate_or_fail(p, 10, "after SIGINT while its hostfile is not written yet")
with open(summary3b) as f:
    summary = json.load(f)
tl.check(p.returncode == 130 and "ending the job before its ranks start" in err and
         summary["reason"] == "tlaunch was interrupted by SIGINT" and summary["exit_status"] == 130,
         f"Ctrl-C during the set-up: exit {p.returncode}, summary {summary}: {err}")

# 3c. --keep-going: each failed rank is named as it fails (only the first was), and what ends
# the job later keeps the earlier failure in its reason (Ctrl-C dropped it).
r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "--keep-going", "--", "sh", "-c",
            'case $RANK in 1) exit 3;; 2) sleep 0.5; exit 7;; *) sleep 1.5;; esac'])
tl.check(r.returncode == 3 and "rank 1 on node local0 exited with status 3; the other ranks go on (--keep-going)" in r.stderr
         and "rank 2 on node local1 exited with status 7 (--keep-going)" in r.stderr, f"keep-going: {r.returncode} {r.stderr}")
summary3c = os.path.join(tl.tempdir(), "s.json")
p = tl.start(["--launcher", "local", "-N", "1", "-p", "2", "--keep-going", "--summary-json", summary3c, "--", "sh", "-c",
              'test $RANK = 1 && exit 3; sleep 30'])
# Ctrl-C once rank 1's failure has been said (a fixed 2 s was too short on a loaded machine).
said = tl.read_until(p, b"the other ranks go on (--keep-going)", stream=p.stderr)
tl.check(b"--keep-going" in said, f"keep-going: rank 1's failure was not said: {said!r}")
os.kill(p.pid, signal.SIGINT)
out, err = p.communicate(timeout=30)
with open(summary3c) as f:
    reason = json.load(f)["reason"]
tl.check(p.returncode == 130 and "interrupted by SIGINT (after rank 1 on node local0 exited with status 3" in reason,
         f"keep-going then Ctrl-C: exit {p.returncode}, reason {reason!r}")

# 4. A node's daemon killed: the job aborts naming the node, nothing remains.
# A TMPDIR of its own (for this job and the next): another test's daemon beside this one would
# sweep the killed daemon's directories from a shared /tmp before this test looks at them.
tmp4 = tl.tempdir()
env4 = {**os.environ, "TMPDIR": tmp4}
p = tl.start(["--launcher", "local", "-N", "2", "-p", "2", "--", tl.PYTHON, WAIT], env=env4)
lines = wait_ready(p, 4)
job = tl.job_of_rank(int(re.search(r"pid (\d+)", lines[0]).group(1)))
tl.signal_daemon(job, "local1", signal.SIGKILL, p.pid)
out, err = tl.communicate_or_fail(p, 15, "after its daemon was killed")
tl.check(p.returncode != 0, "job failed")
tl.check("lost node local1" in err, f"summary names the node: {err}")
# How it ended, as the frontend saw its process end, instead of a guess.
tl.check("lost node local1: its tlaunchd went away" in err and "tlaunchd was killed by signal 9 (Killed)" in err,
         f"the summary says how the daemon ended: {err}")
# Only local0's two ranks get our SIGTERM: the lost node's are not counted as running.
tl.check("ending the job (SIGTERM to the 2 ranks still running" in err, f"the teardown line's count: {err}")
tl.check(tl.wait_until(lambda: not leftovers(job), 10), f"leftovers: {leftovers(job)}")
# The killed daemon could not remove its job's directories: its watcher does, once it has
# ended the job's processes (before, they stayed until the next daemon started on the node).
def killed_dirs():
    return glob.glob(f"{tmp4}/tlaunch.{job}.local1.*") + glob.glob(f"/dev/shm/tlaunch.{job}.local1.*")


tl.check(tl.wait_until(lambda: not killed_dirs(), 10), f"kill -9 of a daemon: its job's directories remain: {killed_dirs()}")
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--", "true"], env=env4)
tl.check(r.returncode == 0, f"next job: {r.stderr}")

# 4a. A node whose daemon goes away after all its ranks ended 0 and were reported (a crash in its
# own cleanup, libpmix's teardown; a node going down once its part is done) cost the whole job
# its success (exit 69 "lost node") while the other node's rank was still running to its end.
marker4a = os.path.join(tl.tempdir(), "go")
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--", "sh", "-c",
              f'test $RANK = 0 && exit 0; sleep 1; echo "pid $$ ready"; '
              f'i=0; while [ ! -e {marker4a} ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; echo "rank 1 done"'])
with tl.ending(p):
    out = tl.read_until(p, b"ready")
    job = tl.job_of_rank(int(re.search(rb"pid (\d+) ready", out).group(1)))
    tl.signal_daemon(job, "local0", signal.SIGKILL, p.pid)
    time.sleep(1)
    open(marker4a, "w").close()
    rest, err = tl.communicate_or_fail(p, 30, "after local0's daemon went away")
tl.check(p.returncode == 0 and "rank 1 done" in rest, f"the job ends as its ranks did: exit {p.returncode}\n{err}")
tl.check("node local0: its tlaunchd went away after all its ranks had ended" in err and "killed by signal 9" in err
         and "lost node" not in err, f"a warning names the node and how its daemon ended: {err}")

# 4b. A node's daemon sent SIGTERM (what scancel or a node shutdown does): its ranks get SIGTERM
# first, so their handlers run (a checkpoint), and exit 0 on it; yet the job must not look
# finished: it fails naming the node and the signal.
p = tl.start(["--launcher", "local", "-N", "2", "-p", "2", "--", tl.PYTHON, WAIT])
lines = wait_ready(p, 4)
job = tl.job_of_rank(int(re.search(r"pid (\d+)", lines[0]).group(1)))
tl.signal_daemon(job, "local1", signal.SIGTERM, p.pid)
out, err = tl.communicate_or_fail(p, 15, "after its daemon got SIGTERM")
tl.check(p.returncode != 0, f"a daemon's SIGTERM fails the job (exit {p.returncode}): {err}")
tl.check("node local1: its tlaunchd received SIGTERM" in err, f"summary names the node and the signal: {err}")
for rank in (2, 3):  # local1's
    tl.check(f"rank {rank} got SIGTERM" in out, f"rank {rank} was not sent SIGTERM before SIGKILL: {out}")
tl.check(tl.wait_until(lambda: not leftovers(job), 10), f"leftovers: {leftovers(job)}")

# 4b'. One SIGTERM to every process of the job (a cancelled batch job, `kill` of them all): the
# job was interrupted (143, never restarted, no node lost), whichever signal tlaunch hears of
# first. A daemon's report came first and made it exit 69 naming local0 as a lost node.
summary4b = os.path.join(tl.tempdir(), "s.json")
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--summary-json", summary4b, "--", tl.PYTHON, WAIT])
with tl.ending(p):
    lines = wait_ready(p, 2)
    job = tl.job_of_rank(int(re.search(r"pid (\d+)", lines[0]).group(1)))
    tl.signal_daemon(job, "local0", signal.SIGTERM, p.pid)
    tl.signal_daemon(job, "local1", signal.SIGTERM, p.pid)
    os.kill(p.pid, signal.SIGTERM)
    out, err = tl.communicate_or_fail(p, 30, "after SIGTERM to all of it")
with open(summary4b) as f:
    summary = json.load(f)
tl.check(p.returncode == 143 and summary["lost_nodes"] == [] and "its tlaunchd received" not in err,
         f"SIGTERM to the whole job: exit {p.returncode} (want 143), lost_nodes {summary['lost_nodes']}: {err}")
tl.check(tl.wait_until(lambda: not leftovers(job), 10), f"leftovers: {leftovers(job)}")
# The ranks too (scancel signals every process of the step), whose SIGTERM handler exits 1, and
# tlaunch a moment after: still the job's interrupt, not "rank 0 exited with status 1".
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--summary-json", summary4b, "--", "sh", "-c",
              "trap 'exit 1' TERM; echo ready $TLAUNCH_JOB_ID; while :; do sleep 0.1; done"])
with tl.ending(p):
    said = "".join(wait_ready(p, 2))
    m = re.search(r"ready (tl-[0-9a-f]+)", said)
    tl.check(m is not None, f"the ranks did not start: {said!r}")
    job = m.group(1)
    for pid in tl.processes_with_env("TLAUNCH_JOB_ID", job):  # the ranks (and their sleep)
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    tl.signal_daemon(job, "local0", signal.SIGTERM, p.pid)
    tl.signal_daemon(job, "local1", signal.SIGTERM, p.pid)
    time.sleep(0.1)
    os.kill(p.pid, signal.SIGTERM)
    out, err = tl.communicate_or_fail(p, 30, "after SIGTERM to every process of the job")
with open(summary4b) as f:
    summary = json.load(f)
tl.check(p.returncode == 143 and summary["origin"] == "tlaunch" and summary["lost_nodes"] == [],
         f"SIGTERM to ranks, daemons and tlaunch: exit {p.returncode} (want 143), {summary['reason']}: {err}")

# 4c. Slurm's --signal=USR1@60 (and scancel --signal=USR1) signals every task of a step: the
# daemons. A daemon passes SIGUSR1 to its ranks and the job goes on (the daemon died of it: the
# job ended "lost node").
p = tl.start(["--launcher", "local", "-N", "2", "-p", "2", "--", tl.PYTHON, WAIT])
with tl.ending(p):
    lines = wait_ready(p, 4)
    job = tl.job_of_rank(int(re.search(r"pid (\d+)", lines[0]).group(1)))
    tl.signal_daemon(job, "local1", signal.SIGUSR1, p.pid)
    got = read_until(p, b"SIGUSR1", 2)
    tl.check(b"rank 2 got SIGUSR1" in got and b"rank 3 got SIGUSR1" in got,
             f"a daemon's SIGUSR1 reaches its node's ranks: {got!r}")
    time.sleep(0.5)
    tl.check(p.poll() is None, f"the job goes on after a daemon's SIGUSR1 (exit {p.returncode})")
    os.kill(p.pid, signal.SIGINT)
    out, err = tl.communicate_or_fail(p, 30, "after SIGINT")
    tl.check(p.returncode == 130 and "lost node" not in err, f"then Ctrl-C: exit {p.returncode}, want 130: {err}")

# 4d. Signalled twice (slurmstepd's SIGTERM and the one srun passes on, 200 ms apart): the ranks
# keep --kill-timeout for their checkpoint. The daemon's own grace was at most 2 s, and its
# second signal SIGKILLed them at once; tlaunch's second SIGTERM did the same.
CHECKPOINT = {**os.environ, "CHECKPOINT_SECONDS": "3"}
# "SIGINT twice": the terminal's Ctrl-C, and `timeout` (or a script's trap) passing it on 1 ms
# later; it killed the ranks at once, as a second Ctrl-C does.
for who in ("daemon", "tlaunch", "tlaunch, SIGTERM then SIGHUP", "tlaunch, SIGINT twice"):
    p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--kill-timeout", "30", "--", tl.PYTHON, WAIT],
                 env=CHECKPOINT)
    with tl.ending(p):
        lines = wait_ready(p, 2)
        job = tl.job_of_rank(int(re.search(r"pid (\d+)", lines[0]).group(1)))
        pair = ((signal.SIGINT, signal.SIGINT) if who.endswith("SIGINT twice") else
                (signal.SIGTERM, signal.SIGHUP if who.endswith("SIGHUP") else signal.SIGTERM))
        for sig in pair:
            if who == "daemon":
                tl.signal_daemon(job, "local1", sig, p.pid)
            else:
                os.kill(p.pid, sig)
            # Two deliveries, not one pending signal taken once: 200 ms (within the 1 s of
            # SIGTERM/SIGHUP), or 20 ms for the one keypress.
            time.sleep(0.02 if sig == signal.SIGINT else 0.2)
        out, err = tl.communicate_or_fail(p, 60, f"after two signals to {who}")
        checkpointed = [r for r in (0, 1) if f"rank {r} checkpointed" in out]
        want = [0, 1]  # the daemon's node's rank, and the other's by the job's teardown that follows
        tl.check(checkpointed == want and p.returncode != 0,
                 f"two signals to {who}: ranks {want} finish a 3 s checkpoint (--kill-timeout 30); "
                 f"got {checkpointed}, exit {p.returncode}: {out} {err}")
    tl.check(tl.wait_until(lambda: not leftovers(job), 10), f"leftovers: {leftovers(job)}")

# 5. tlaunch killed with SIGKILL: daemons and ranks die with it.
p = tl.start(["--launcher", "local", "-N", "2", "-p", "2", "--", tl.PYTHON, WAIT])
lines = wait_ready(p, 4)
job = tl.job_of_rank(int(re.search(r"pid (\d+)", lines[0]).group(1)))
os.kill(p.pid, signal.SIGKILL)
p.wait()
tl.check(tl.wait_until(lambda: not leftovers(job), 10), f"leftovers 10 s after SIGKILL of tlaunch: {leftovers(job)}")

# 5b. tlaunch killed (the OOM killer on a login node) while the ranks run: they get their SIGTERM
#     checkpoint within --kill-timeout as in any teardown (it was cut to 2 s), then nothing is left.
marks = tl.tempdir()
ckpt = ("import os, signal, time\n"
        "def on_term(*_):\n"
        "    time.sleep(3)\n"
        f"    open(os.path.join({marks!r}, 'rank' + os.environ['RANK']), 'w').close()\n"
        "    os._exit(0)\n"
        "signal.signal(signal.SIGTERM, on_term)\n"
        "print('ready pid', os.getpid(), flush=True)\n"
        "time.sleep(120)\n")
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--kill-timeout", "20", "--", tl.PYTHON, "-c", ckpt])
lines = wait_ready(p, 2)
job = tl.job_of_rank(int(re.search(r"pid (\d+)", lines[0]).group(1)))
os.kill(p.pid, signal.SIGKILL)
p.wait()
both = tl.wait_until(lambda: sorted(os.listdir(marks)) == ["rank0", "rank1"], 15)
tl.check(both, f"tlaunch SIGKILLed: the ranks' 3 s checkpoints ended (--kill-timeout 20): {os.listdir(marks)}")
tl.check(tl.wait_until(lambda: not leftovers(job), 10), f"leftovers after the checkpoints: {leftovers(job)}")

# 5c'. A node lost while the job ends (its daemon killed during rank 0's checkpoint, after rank 1
#      failed): the failure stays the job's reason, and the node is named with its ranks' end unknown;
#      nothing said it, and --summary-json's lost_nodes was empty.
summary = os.path.join(tl.tempdir(), "lost-in-teardown.json")
slow = ("import os, signal, sys, time\n"
        "def on_term(*_):\n"
        "    print('checkpointing', flush=True)\n"
        "    time.sleep(5)\n"
        "    os._exit(0)\n"
        "signal.signal(signal.SIGTERM, on_term)\n"
        "print('ready pid', os.getpid(), flush=True)\n"
        "time.sleep(1 if os.environ['RANK'] == '1' else 120)\n"
        "sys.exit(3)\n")
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--summary-json", summary, "--", tl.PYTHON, "-c", slow])
lines = wait_ready(p, 2)
rank0 = next(int(m.group(1)) for m in re.finditer(r"\[local0:0\] ready pid (\d+)", "\n".join(lines)))
daemon = rank0
while daemon > 1:
    with open(f"/proc/{daemon}/stat") as f:
        daemon = int(f.read().rsplit(")", 1)[1].split()[1])
    with open(f"/proc/{daemon}/comm") as f:
        if f.read().strip() == "tlaunchd":
            break
read_until(p, b"checkpointing", 1, 20)  # rank 1 failed; rank 0 writes its checkpoint
time.sleep(0.5)
os.kill(daemon, signal.SIGKILL)
out, err = tl.communicate_or_fail(p, 60, "a node lost while the job ended")
with open(summary) as f:
    outcome = json.load(f)
tl.check(p.returncode == 3 and "node local0 was lost while the job ended" in err and
         outcome["lost_nodes"] == ["local0"] and outcome["failed_rank"] == 1,
         f"lost during the teardown: exit {p.returncode}, lost_nodes {outcome['lost_nodes']}: {err[-800:]}")

# 5c''. Ctrl-C during the teardown a failed rank began: said as it is (the job is ending already;
#       it said "ending the job ... SIGKILL after 10 s", a new deadline that was not), and the
#       failed rank's status stays the job's.
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--", tl.PYTHON, "-c", slow])
wait_ready(p, 2)
read_until(p, b"checkpointing", 1, 20)
os.killpg(p.pid, signal.SIGINT)
out, err = tl.communicate_or_fail(p, 60, "Ctrl-C during the teardown")
tl.check(p.returncode == 3 and "got INT: the job is ending already" in err and err.count("SIGKILL after") == 1,
         f"Ctrl-C during the teardown: exit {p.returncode}: {err[-600:]}")

# 5a. A checkpoint a rank's SIGTERM handler starts runs to its end: the teardown's sweep for
# strays (processes that left the rank's group) took a process forked after its snapshot of
# /proc for one, and sent it the SIGTERM too (a shell's `sleep 1` below, killed at once).
for attempt in range(2):
    p = tl.start(["--launcher", "local", "-N", "1", "-p", "1", "--", "bash", "-c",
                  'trap "sleep 1; echo checkpoint done; exit 0" TERM; echo "pid $$ ready"; sleep 30 & wait'])
    wait_ready(p, 1)
    os.kill(p.pid, signal.SIGTERM)
    out, err = tl.communicate_or_fail(p, 30, "after SIGTERM with a checkpoint")
    tl.check("checkpoint done" in out and "Terminated" not in out + err,
             f"a checkpoint forked by the rank's SIGTERM handler was cut short: {out!r} {err!r}")

# 5b. A training script that checkpoints on SIGTERM, with a data-loader worker, behind a wrapper
# shell that does not exec it: the teardown's SIGTERM goes to the script alone. Sent to the whole
# group, it killed the worker at once (torch's SIGCHLD handler then raises in the checkpoint) and
# the shell, whose end counted as the rank's: the script was swept within 0.1 s.
ckpt = os.path.join(tl.tempdir(), "ckpt_with_worker.py")
with open(ckpt, "w") as f:
    f.write("import os, signal, sys, time\n"
            "stop = []\n"
            "signal.signal(signal.SIGTERM, lambda *_: stop.append(1))\n"
            "worker = os.fork()\n"
            "if worker == 0:\n"
            "    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as torch's workers: SIGTERM kills them\n"
            "    time.sleep(600)\n"
            "    os._exit(0)\n"
            "print(f'pid {os.getpid()} ready', flush=True)\n"
            "while not stop:\n"
            "    time.sleep(0.05)\n"
            "time.sleep(1.5)  # the checkpoint\n"
            "alive = os.waitpid(worker, os.WNOHANG) == (0, 0)\n"
            "print(f'checkpointed, worker alive: {alive}', flush=True)\n"
            "os.kill(worker, signal.SIGKILL)\n")
# A wrapper with an EXIT trap catches SIGTERM to run it, and died of it at once just the same.
for wrapper in (f"{tl.PYTHON} {ckpt}; echo wrapper saw $?",
                f"trap 'echo wrapper cleanup' EXIT; {tl.PYTHON} {ckpt}; echo wrapper saw $?"):
    p = tl.start(["--launcher", "local", "-N", "1", "-p", "1", "--kill-timeout", "20", "--", "bash", "-c", wrapper])
    with tl.ending(p):
        lines = wait_ready(p, 1)
        job = tl.job_of_rank(int(re.search(r"pid (\d+)", lines[0]).group(1)))
        os.kill(p.pid, signal.SIGTERM)
        out, err = tl.communicate_or_fail(p, 30, "after SIGTERM to a checkpointing script with a worker")
        tl.check("checkpointed, worker alive: True" in out and "wrapper saw 0" in out and
                 ("trap" not in wrapper or "wrapper cleanup" in out),
                 f"{wrapper}: the teardown's SIGTERM reached the worker or the wrapper: {out!r} {err!r}")
        tl.check("SIGKILL after 20 s" in err and "did not end within --kill-timeout" not in err,
                 f"the interrupt's line says the grace; no rank was killed at its end: {err!r}")
    tl.check(tl.wait_until(lambda: not leftovers(job), 10), f"leftovers: {leftovers(job)}")

# 5c. A rank that ignores SIGTERM (or whose checkpoint outlasts --kill-timeout) is killed: said,
# and counted in the summary, so that a job script knows the last checkpoint may be cut short.
summary = os.path.join(tl.tempdir(), "summary.json")
p = tl.start(["--launcher", "local", "-N", "1", "-p", "2", "--kill-timeout", "1", "--summary-json", summary, "--",
              "sh", "-c", 'if [ "$RANK" = 0 ]; then trap "" TERM; fi; echo "pid $$ ready"; sleep 60'])
with tl.ending(p):
    wait_ready(p, 2)
    os.kill(p.pid, signal.SIGTERM)
    out, err = tl.communicate_or_fail(p, 30, "after SIGTERM with a rank that ignores it")
with open(summary) as f:
    killed = json.load(f)["killed_at_kill_timeout"]
tl.check(p.returncode == 143 and killed == 1 and
         "1 process of the job did not end within --kill-timeout (1 s) of the SIGTERM and was killed" in err,
         f"a rank past --kill-timeout: exit {p.returncode}, counted {killed}: {err!r}")

# 6. `tlaunch preflight` where a node's daemon cannot start: its row says so (the table, and
# --json for scripts: it was empty), and the other nodes are checked without it, in the same
# report (an admin sweeping a cluster wants every broken node in one run); exit 69.
wrapper = os.path.join(tl.tempdir(), "broken_local1.sh")
with open(wrapper, "w") as f:
    f.write('#!/bin/sh\ncase "$*" in *"--node-name local1"*) echo "this node is broken" >&2; exit 3;; esac\n'
            f'exec {os.path.join(os.path.dirname(os.path.abspath(tl.TLAUNCH)), "tlaunchd")} "$@"\n')
os.chmod(wrapper, 0o755)
for as_json in (False, True):
    r = tl.run(["preflight", "--launcher", "local", "-N", "3", "--daemon-path", wrapper] + (["--json"] if as_json else []))
    if as_json:
        rows = json.loads(r.stdout)
        broken = [i for i in rows if i["node"] == "local1"]
        checked = {i["node"] for i in rows if i["status"] == "pass"}
        failed_elsewhere = [i for i in rows if i["status"] == "fail" and i["node"] != "local1"]
        ok = (broken == [{"check": "daemon_start", "node": "local1", "device": "", "status": "fail",
                          "found": "tlaunchd exited with status 3: this node is broken",
                          "expected": "tlaunchd started and connected", "fix": ""}] and
              {"local0", "local2"} <= checked and not failed_elsewhere)
    else:
        ok = ("daemon_start          fail    tlaunchd exited with status 3" in r.stdout and
              "\nlocal0 (" in "\n" + r.stdout and "\nlocal2 (" in r.stdout and
              "checking the other nodes without local1" in r.stderr)
    tl.check(r.returncode == 69 and ok,
             f"preflight with a node that cannot start (json={as_json}): exit {r.returncode} {r.stdout!r} {r.stderr}")
# No other node: that row alone, said so.
r = tl.run(["preflight", "--launcher", "local", "--hosts", "local1", "--daemon-path", wrapper])
tl.check(r.returncode == 69 and "daemon_start          fail" in r.stdout and "(no other node to check)" in r.stdout,
         f"preflight of one node that cannot start: exit {r.returncode} {r.stdout!r} {r.stderr}")
# What would refuse the job refuses the preflight too: it passed where the job's network could
# not be chosen (an interface missing on a node).
r = tl.run(["preflight", "--launcher", "local", "-N", "2", "--net-if", "nosuch0", "--json"])
rows = json.loads(r.stdout) if r.stdout.strip() else []
tl.check(r.returncode == 78 and any(i["check"] == "network" and i["status"] == "fail" and
                                    "local1: has no interface named nosuch0" in i["found"] for i in rows),
         f"preflight --net-if of an interface the nodes lack: exit {r.returncode} {r.stdout!r} {r.stderr}")
print("PASS")
