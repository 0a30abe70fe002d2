"""Where is it stuck: `tlaunch stacks` from another terminal merges the ranks' stacks into
classes (rank 1 blocked in select() inside one function, the others asleep in another: two
classes), `tlaunch status` prints one row per rank, Ctrl-\\ (SIGQUIT) prints the stacks and the
job goes on to exit 0, and --hang-timeout collects once after silence. A private
XDG_RUNTIME_DIR keeps other users' and tests' jobs out of `tlaunch stacks` without a JOB.

Without the interpreter's gdb helpers (python3.11-dbg) there are no Python frames: then the
classes are told apart by their native frames (select vs clock_nanosleep), and the report must
say that Python frames are missing."""
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time

import tl
from test_stacks_lib import classes, wait_ready

if not shutil.which("gdb"):
    tl.skip("gdb is not installed (contrib/install-deps.sh installs it)")

STUCK = tl.program("stuck_rank.py")
env = dict(os.environ, XDG_RUNTIME_DIR=tempfile.mkdtemp(prefix="tl-stacks-"))


def ask(what, *job):
    r = tl.run([what] + list(job), timeout=120, env=env)
    print(f"$ tlaunch {what}\n{r.stdout}{r.stderr}", flush=True)
    tl.check(r.returncode == 0, f"tlaunch {what}: exit {r.returncode}: {r.stderr}")
    return r.stdout


def two_classes_problem(report, others, stuck):
    """What is wrong with report as two classes (`others` asleep, `stuck` in select), or None."""
    if not re.search(r"stacks of \d+ rank\(s\): 2 classes", report):
        return f"not two classes: {report}"
    c = classes(report)
    if set(c) != {others, stuck}:
        return f"classes {sorted(c)}, expected {others!r} and {stuck!r}: {report}"
    if "no Python frames" in report:
        # Native frames only (python3.11-dbg missing): select() against the sleepers' clock_nanosleep.
        if not ("select" in c[stuck] and "select" not in c[others]):
            return f"select: {report}"
        if not ("clock_nanosleep" in c[others] and "clock_nanosleep" not in c[stuck]):
            return f"nanosleep: {report}"
    else:
        if "tlaunch_test_rank_is_stuck_here" not in c[stuck]:
            return f"stuck function: {report}"
        if "tlaunch_test_ranks_sleep_here" not in c[others]:
            return f"sleeping function: {report}"
    return None


def check_two_classes(report, others, stuck):
    problem = two_classes_problem(report, others, stuck)
    tl.check(problem is None, problem)


def stderr_until_report(p, others, stuck, timeout=120):
    """tlaunch's stderr until it holds the whole stacks report (raw reads with a deadline)."""
    deadline = time.monotonic() + timeout
    buf = b""
    while two_classes_problem(buf.decode(errors="replace"), others, stuck):
        left = deadline - time.monotonic()
        if left <= 0 or p.poll() is not None and not select.select([p.stderr], [], [], 0)[0]:
            break
        if select.select([p.stderr], [], [], min(left, 1))[0]:
            chunk = os.read(p.stderr.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
    return buf.decode(errors="replace")


def start(args):
    p = tl.start(args, env=env)
    return p


# (a) + (d): 2 nodes x 2 ranks; rank 1 is stuck.
p = start(["--launcher", "local", "-N", "2", "-p", "2", "--", tl.PYTHON, STUCK, "1", "300"])
try:
    wait_ready(p, 4, timeout=120)
    t0 = time.monotonic()
    report = ask("stacks")
    print(f"stacks took {time.monotonic() - t0:.1f} s")
    check_two_classes(report, "ranks 0, 2-3", "rank 1")
    # Two at once (a double Ctrl-\\, a script polling): one after the other, each whole, and no
    # rank left stopped by a gdb that took another's attach stop for the user's.
    both = [subprocess.Popen([tl.TLAUNCH, "stacks"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env) for _ in range(2)]
    for q in both:
        check_two_classes(q.communicate(timeout=240)[0], "ranks 0, 2-3", "rank 1")

    def stopped_ranks():
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if STUCK.encode() not in f.read():
                        continue
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] in "Tt":
                        out.append(pid)
            except OSError:
                pass
        return out
    tl.check(tl.wait_until(lambda: not stopped_ranks(), 5), f"ranks left stopped: {stopped_ranks()}")
    status = ask("status")
    rows = [l for l in status.splitlines() if re.match(r"^\d+\s+local\d\s+\d+\s+\S+\s+[\d.]+\s+[\d.]+\s+\d+ s ago$", l)]
    tl.check(sorted(int(r.split()[0]) for r in rows) == [0, 1, 2, 3], f"one row per rank: {status}")
    tl.check(len([l for l in status.splitlines() if re.match(r"^local[01]\s+connected\s+[\d.]+ s ago$", l)]) == 2,
             f"one row per node with its heartbeat: {status}")
    # The job itself is untouched by all this: still running.
    tl.check(p.poll() is None, "the job ended after tlaunch stacks")
    # A JOB that is not running is an error, not a hang.
    r = tl.run(["stacks", "tl-0000000000"], timeout=30, env=env)
    tl.check(r.returncode != 0 and "no running job tl-0000000000" in r.stderr, f"unknown job: {r.returncode} {r.stderr}")
finally:
    os.killpg(p.pid, signal.SIGINT)
    p.communicate(timeout=60)

# A rank that wraps its program (`bash train.sh`, here bash -c with a second command, so bash
# does not exec it): the stacks are python's, not bash's waiting for its child, and the report
# says so.
p = start(["--launcher", "local", "-p", "2", "--", "bash", "-c", '"$0" "$@"; echo after', tl.PYTHON, STUCK, "1", "300"])
try:
    wait_ready(p, 2, timeout=120)
    report = ask("stacks")
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            scope = f.read().strip()
    except OSError:
        scope = "0"
    if scope == "0" or os.geteuid() == 0:
        check_two_classes(report, "rank 0", "rank 1")
        tl.check(re.search(r"the rank is a bash that runs python3[.\d]*: these are the stacks of python3", report),
                 f"no note on the wrapper: {report}")
        tl.check("wait4" not in report and "waitchld" not in report, f"bash's own stacks: {report}")
    else:  # Yama admits the rank itself only: bash's stacks, said so
        tl.check("which gdb may not attach to" in report and "kernel.yama.ptrace_scope" in report,
                 f"no note on the refused program: {report}")
finally:
    os.killpg(p.pid, signal.SIGINT)
    p.communicate(timeout=60)

# (c): Ctrl-\ prints the stacks and the job goes on to exit 0. The ranks wait up to 120 s; once
# the report is out, SIGUSR1 to tlaunch (forwarded to the ranks) lets them finish.
# A second SIGQUIT a moment later (`timeout` passes one Ctrl-\ to tlaunch and to its group) is the
# same request: one collection, one report.
p = start(["--launcher", "local", "-p", "2", "--", tl.PYTHON, STUCK, "0", "120"])
wait_ready(p, 2, timeout=120)
p.send_signal(signal.SIGQUIT)
time.sleep(0.2)
p.send_signal(signal.SIGQUIT)
err = stderr_until_report(p, "rank 1", "rank 0")
time.sleep(3)
p.send_signal(signal.SIGUSR1)
out, rest = p.communicate(timeout=60)
err += rest
print(out, err)
tl.check(p.returncode == 0, f"SIGQUIT ended the job: exit {p.returncode}")
tl.check(err.count("got SIGQUIT: collecting") == 1 and len(re.findall(r"stacks of 2 rank\(s\)", err)) == 1,
         f"two SIGQUITs 0.2 s apart: one collection, one report: {err}")
check_two_classes(err, "rank 1", "rank 0")
tl.check("rank 0 done" in out and "rank 1 done" in out, f"ranks did not finish: {out}")

# --hang-timeout: silence for 5 s collects the stacks once; the job goes on. (The silence counts
# from the start: 5 s is more than the ranks need to print, even on a loaded machine.) The ranks
# are released 6 s after the report: more silence than --hang-timeout, yet no second collection.
p = start(["--launcher", "local", "-p", "2", "--hang-timeout", "5s", "--", tl.PYTHON, STUCK, "1", "120"])
err = stderr_until_report(p, "rank 0", "rank 1")
time.sleep(6)
p.send_signal(signal.SIGUSR1)
out, rest = p.communicate(timeout=60)
err += rest
print(out, err)
tl.check(p.returncode == 0, f"--hang-timeout ended the job: exit {p.returncode}")
tl.check(err.count("no rank printed anything for 5 s") == 1, f"not collected exactly once: {err}")
check_two_classes(err, "rank 0", "rank 1")

# No gdb on the node (the daemon's PATH has none): the report says so instead of hanging.
nogdb = tempfile.mkdtemp(prefix="tl-nogdb-")
p = tl.start(["--launcher", "local", "-p", "2", "--", tl.PYTHON, STUCK, "1", "300"], env=dict(env, PATH=nogdb))
try:
    wait_ready(p, 2, timeout=120)
    report = ask("stacks")
    tl.check("ranks 0-1: no stacks: gdb is not installed on node local0" in report, f"no gdb: {report}")
finally:
    os.killpg(p.pid, signal.SIGINT)
    p.communicate(timeout=60)
os.rmdir(nogdb)

# The job ends while gdb holds the ranks (tlaunch stacks, then SIGTERM to tlaunch 0.15 s later):
# the gdbs go and the ranks run again at once, so their SIGTERM handler's checkpoint completes.
# Before, the stop of a gdb's attach outlived it (about half the time at this timing) and held
# its rank until SIGKILL at --kill-timeout: the checkpoint was lost.
work = tl.tempdir()
ckpt = os.path.join(work, "ckpt.py")
with open(ckpt, "w") as f:
    f.write("import os, signal, sys, time\n"
            "def on_term(*_):\n"
            "    time.sleep(1)\n"
            "    open(os.path.join(%r, 'checkpoint.' + os.environ['RANK']), 'w').close()\n"
            "    sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, on_term)\n"
            "print('rank', os.environ['RANK'], 'ready', flush=True)\n"
            "time.sleep(300)\n" % work)
for attempt in range(2):
    for name in os.listdir(work):
        if name.startswith("checkpoint."):
            os.unlink(os.path.join(work, name))
    p = tl.start(["--launcher", "local", "-N", "2", "-p", "2", "--kill-timeout", "20", "--", tl.PYTHON, ckpt], env=env)
    asker = None
    try:
        wait_ready(p, 4, timeout=120)
        asker = subprocess.Popen([tl.TLAUNCH, "stacks"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=env)
        time.sleep(0.15)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        done = sorted(n for n in os.listdir(work) if n.startswith("checkpoint."))
        tl.check(p.returncode == 143 and done == [f"checkpoint.{r}" for r in range(4)],
                 f"SIGTERM while gdb held the ranks: exit {p.returncode}, checkpoints {done}: {err}")
        said, said_err = asker.communicate(timeout=60)
        tl.check("gdb showed no frames" not in said, f"tlaunch stacks during the teardown: {said!r} {said_err!r}")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate(timeout=60)
        if asker and asker.poll() is None:
            asker.kill()
            asker.communicate(timeout=60)

# A rank of thousands of threads, whose gdb output passes the daemon's 4 MiB cap: the main thread
# (gdb printed it last, and the cut took it) is still the one shown first, and the report says
# the rest was cut.
many = ("import threading, time\n"
        "def deep(n):\n    return deep(n - 1) if n else time.sleep(300)\n"
        "for i in range(7000): threading.Thread(target=deep, args=(40,), daemon=True).start()\n"
        "print('ready', flush=True)\ntime.sleep(300)\n")
p = tl.start(["--launcher", "local", "-N", "1", "-p", "1", "--", tl.PYTHON, "-c", many], env=env)
with tl.ending(p):
    tl.check(b"ready" in tl.read_until(p, b"ready", timeout=120), "7000 threads started")
    report = ask("stacks")
    lines = report.splitlines()
    first = lines[lines.index("rank 0:") + 1] if "rank 0:" in lines else ""
    tl.check(("Py_BytesMain" in first or "<module>" in first) and "threads:" not in first and
             "gdb's output passed 4 MiB" in report,
             f"a rank of 7000 threads: the main thread first, the cut said: {report}")
    os.killpg(p.pid, signal.SIGINT)
    p.communicate(timeout=60)

# A rank traced already (strace, a debugger left attached): that is the reason gdb cannot attach,
# not a container's missing capability.
mark = f"tl-traced-{os.getpid()}"
p = tl.start(["--launcher", "local", "-N", "1", "-p", "2", "--", tl.PYTHON, "-c",
              f"import time; print('up', flush=True); time.sleep(120)  # {mark}"], env=env)
with tl.ending(p):
    out = tl.read_until(p, b"up", timeout=60)
    out += b"" if out.count(b"up") > 1 else tl.read_until(p, b"up", timeout=60)
    def rank1():
        return [q for q in set(tl.processes_with_env("RANK", "1")) & set(tl.processes_matching(mark)) if q != p.pid]
    tl.check(tl.wait_until(lambda: len(rank1()) == 1, 30), f"rank 1 runs: {out!r}")
    traced = rank1()[0]
    holder = subprocess.Popen([tl.PYTHON, tl.program("ptrace_hold.py"), str(traced)], stdout=subprocess.PIPE, text=True)
    try:
        tl.check(holder.stdout.readline().strip() == "traced", "the holder traces rank 1")
        report = ask("stacks")
        tl.check(re.search(r"rank 1: no stacks: .*traced already, by PID %d \(python3\)" % holder.pid, report) and
                 "container" not in report.split("rank 1:")[1], f"a rank traced already: {report}")
    finally:
        holder.kill()
        holder.wait()
    os.killpg(p.pid, signal.SIGINT)
    p.communicate(timeout=60)

# Ctrl-\ while the job is ending (its ranks ignore SIGTERM for their checkpoint): refused with the
# reason, not "the job goes on" and "the job ended".
p = tl.start(["--launcher", "local", "-N", "1", "-p", "2", "--kill-timeout", "6", "--", "bash", "-c",
              'trap "" TERM; echo up; [ $RANK = 1 ] && { sleep 1; exit 4; }; while :; do sleep 0.2; done'], env=env)
with tl.ending(p):
    tl.read_until(p, b"ending the job", timeout=60, stream=p.stderr)
    p.send_signal(signal.SIGQUIT)
    _, err = tl.communicate_or_fail(p, 60, "after Ctrl-\\ during its teardown")
    tl.check(p.returncode == 4 and "got SIGQUIT: the job is ending" in err and "the job goes on" not in err,
             f"Ctrl-\\ during the teardown: exit {p.returncode}: {err}")

# A node whose daemon has not connected yet is "starting" in `tlaunch status`, not "gone" since
# the host booted (its last word was never heard: it printed the host's uptime).
slow = os.path.join(tempfile.mkdtemp(prefix="tl-slowd-"), "tlaunchd")
with open(slow, "w") as f:
    f.write('#!/bin/sh\ncase " $* " in *" local1 "*) sleep 6;; esac\n'
            f'exec {os.path.join(os.path.dirname(tl.TLAUNCH), "tlaunchd")} "$@"\n')
os.chmod(slow, 0o755)
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--daemon-path", slow, "--", "sleep", "30"], env=env)
with tl.ending(p):
    time.sleep(2)
    status = ask("status")
    tl.check(re.search(r"^local1\s+starting\s+-$", status, re.M) and
             re.search(r"^local0\s+connected\s+[\d.]+ s ago$", status, re.M),
             f"a daemon still starting: {status}")
    os.killpg(p.pid, signal.SIGINT)
    p.communicate(timeout=60)
shutil.rmtree(os.path.dirname(slow), ignore_errors=True)

# The control sockets went with their jobs.
left = [f for f in os.listdir(os.path.join(env["XDG_RUNTIME_DIR"], "tlaunch")) if f.endswith(".sock")]
tl.check(not left, f"sockets left behind: {left}")
shutil.rmtree(env["XDG_RUNTIME_DIR"], ignore_errors=True)
print("ok")
