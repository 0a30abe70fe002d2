"""Containment and process hygiene as a user sees them: whatever a rank starts (setsid, a double
fork, a child deaf to SIGTERM) ends with the job, on success and on failure, with the per-job
cgroup and with the subreaper fallback, also when the daemon or tlaunch is killed -9 (with a
per-job cgroup: test_containment_alone.py); orphans' zombies are reaped while the job runs; a
rank that ignores SIGTERM is killed after --kill-timeout; ranks get the user's RLIMIT_NOFILE soft
limit while the daemon runs at the hard limit; tlaunch and tlaunchd are not dumpable, ranks are."""
import os
import re
import resource
import select
import subprocess
import time
import uuid

import tl
from containment_lib import LEAVE, cmdline, containment_notes, run_leaving, survivors

LIMITS = tl.program("limits_and_dumpable.py")
WAIT = tl.program("wait_for_signals.py")


# 1. Success and failure, with whichever mechanism the daemon picks and with the fallback forced.
for label, env_extra in (("default", {}), ("subreaper", {"TLAUNCH_CONTAINMENT": "subreaper"})):
    for code in (0, 3):
        r, elapsed, left = run_leaving(code, env_extra)
        tl.check(r.returncode == code, f"{label}: exit status {r.returncode}, expected {code}")
        tl.check(r.stdout.count("ready") == 2, f"{label}: both ranks started their children")
        tl.check(not left, f"{label}, exit {code}: {len(left)} process(es) the ranks started outlived the job: {left}")
        tl.check(elapsed < 30, f"{label}, exit {code}: took {elapsed:.1f} s")
        notes = containment_notes(r.stderr)
        tl.check(len(notes) == 2, f"{label}: -v names the containment mechanism of each node: {r.stderr}")
        if label == "subreaper":
            tl.check(all("child subreaper" in n[1] for n in notes), f"forced fallback in force: {notes}")
        for _, note in notes:
            m = re.match(r"cgroup v2 (\S+)", note)
            tl.check(not m or not os.path.exists(m.group(1)), f"the job's cgroup was removed: {note}")

# Without a per-job cgroup (the subreaper fallback) a daemon killed -9 took its subreaper with
# it, and what its ranks had detached ran on under init. Its watcher now finds them by the marks
# they carry (TLAUNCH_JOB_ID, TLAUNCH_NODE_RANK), and only them: local0's ranks on this same
# host are ended by their own daemon's teardown, and the job fails naming the lost node.
marker = "tlaunch-contain-" + uuid.uuid4().hex
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "-v", "--", tl.PYTHON, LEAVE, marker, "0", "60"],
             env=dict(os.environ, TLAUNCH_CONTAINMENT="subreaper"))
with tl.ending(p):
    seen = tl.read_until(p, b"ready")
    if seen.count(b"ready") < 2:
        seen += tl.read_until(p, b"ready")
    tl.check(seen.count(b"ready") == 2, f"the ranks started (subreaper): {seen!r}")
    daemons = [d for d in tl.children_of(p.pid) if b"local1" in cmdline(d)]
    watchers = [w for d in daemons for w in tl.children_of(d) if b"--watch-mark" in cmdline(w)]
    tl.check(len(daemons) == 1 and len(watchers) == 1, f"local1's daemon with one job watcher: {daemons} {watchers}")
    tl.check(survivors(marker), "the ranks' detached children run (else this tests nothing)")
    os.kill(daemons[0], 9)
    t0 = time.monotonic()
    _, killed_err = p.communicate(timeout=60)
gone = tl.wait_until(lambda: not survivors(marker), 10)
left = survivors(marker)
tl.kill_leftovers(marker)
tl.check(gone, f"subreaper, kill -9 of a daemon: what the ranks left still runs after 10 s: {left}")
print(f"subreaper: what the ranks left ended {time.monotonic() - t0:.1f} s after the daemon was killed")
tl.check("lost node local1" in killed_err and "on node local0 was killed" not in killed_err,
         f"the lost node is named, local0's ranks were not the watcher's: {killed_err[-600:]}")
tl.check(tl.wait_until(lambda: not any(cmdline(w) for w in watchers), 10), "the job watcher exited afterwards")

# 1c. tlaunch itself killed with -9: its daemons end, and with them everything of the job.
for env_extra in ({}, {"TLAUNCH_CONTAINMENT": "subreaper"}):
    marker = "tlaunch-contain-" + uuid.uuid4().hex
    p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--", tl.PYTHON, LEAVE, marker, "0", "60"],
                 env=dict(os.environ, **env_extra))
    deadline = time.monotonic() + 60
    out = b""
    while out.count(b"ready") < 2 and time.monotonic() < deadline:
        if select.select([p.stdout], [], [], 1)[0]:
            out += os.read(p.stdout.fileno(), 4096)
    tl.check(out.count(b"ready") == 2, "both ranks started")
    tl.check(survivors(marker), "the ranks' detached children run")
    os.kill(p.pid, 9)
    p.wait()
    gone = tl.wait_until(lambda: not survivors(marker), 10)
    left = survivors(marker)
    tl.kill_leftovers(marker)
    tl.check(gone, f"{env_extra}: 10 s after kill -9 of tlaunch, processes the ranks started still run: {left}")

# 2. Zombies of orphans that re-parented to the daemon are reaped while the job runs.
marker = "tlaunch-contain-" + uuid.uuid4().hex
p = tl.start(["--launcher", "local", "-N", "1", "-p", "1", "--", tl.PYTHON, LEAVE, marker, "0", "8"])


def zombies_of_daemons():
    stats = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            stats[int(d)] = (fields[0], int(fields[1]))
        except OSError:
            continue
    daemons = [pid for pid, (_, ppid) in stats.items() if ppid == p.pid]  # the local launcher forks them
    tl.check(daemons, "found this job's tlaunchd")
    return [pid for pid, (state, ppid) in stats.items() if state == "Z" and ppid in daemons]


try:
    tl.check(b"ready" in tl.read_until(p, b"ready"), "the rank started")
    # The short-lived orphan (0.3 s) was started before "ready"; once it no longer runs (a
    # zombie's command line is empty), its zombie must be reaped within moments.
    short = marker + "\0short"
    tl.check(tl.wait_until(lambda: not tl.processes_matching(short), 8), "the short-lived orphan did not end")
    tl.check(tl.wait_until(lambda: not zombies_of_daemons(), 3),
             f"zombie children of tlaunchd while the job runs: {zombies_of_daemons()}")
    p.communicate(timeout=60)
    tl.check(p.returncode == 0, f"exit status {p.returncode}")
finally:
    if p.poll() is None:
        os.killpg(p.pid, 9)
    tl.kill_leftovers(marker)
tl.check(not survivors(marker), "nothing left after the job")

# 3. A rank that ignores SIGTERM is killed after --kill-timeout: the job ends within ~10 s.
marker = "tlaunch-contain-" + uuid.uuid4().hex
# Rank 1 fails only once rank 0 is deaf (its file in a directory both see).
script = ("import os, signal, sys, time\n"
          "deaf = os.path.join(sys.argv[2], 'deaf')\n"
          "if os.environ['RANK'] == '0':\n"
          "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
          "    open(deaf, 'w').close()\n"
          "    print('deaf rank ready', flush=True)\n"
          "    time.sleep(1000)\n"
          "until = time.monotonic() + 60\n"
          "while not os.path.exists(deaf) and time.monotonic() < until:\n"
          "    time.sleep(0.01)\n"
          "time.sleep(1)\n"
          "sys.exit(5)\n")
t0 = time.monotonic()
r = tl.run(["--launcher", "local", "-N", "1", "-p", "2", "--kill-timeout", "2", "--", tl.PYTHON, "-c", script, marker,
            tl.tempdir()], timeout=60)
elapsed = time.monotonic() - t0
tl.kill_leftovers(marker)
print(r.stdout, r.stderr)
tl.check(r.returncode == 5, f"exit status {r.returncode}, expected 5")
tl.check(elapsed < 12, f"the job took {elapsed:.1f} s to end with a rank deaf to SIGTERM (--kill-timeout 2)")
tl.check(elapsed > 2, f"the deaf rank was given its grace ({elapsed:.1f} s)")

# 4. Limits and dumpability: ranks get the user's RLIMIT_NOFILE soft limit, the daemon its hard
# limit; ranks stay dumpable with a readable /proc/<pid>/environ; the daemon is not dumpable
# (its /proc files belong to root, unreadable to the job's user). As another user when we are
# root, since root reads everything anyway.
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = min(1000, hard)


def lower_nofile():
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


prefix = []
if os.geteuid() == 0:
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
cmd = prefix + [tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "1", "--", tl.PYTHON, LIMITS]
r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, preexec_fn=lower_nofile, cwd="/tmp",
                   env=dict(os.environ, TMPDIR="/tmp"))
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"exit status {r.returncode}: {r.stderr}")
tl.check(f"rank nofile {want} {hard}" in r.stdout, f"the rank got the user's soft limit {want}: {r.stdout}")
tl.check(f"daemon nofile {hard} {hard}" in r.stdout or (hard == resource.RLIM_INFINITY and "daemon nofile unlimited" in r.stdout),
         f"the daemon raised its soft limit to the hard limit {hard}: {r.stdout}")
tl.check("rank inherited fds 0 1 2\n" in r.stdout, f"nothing of the daemon's leaks into a rank: {r.stdout}")
tl.check("rank dumpable 1" in r.stdout, f"ranks are dumpable (core dumps, ptrace) as usual: {r.stdout}")
m = re.search(r"rank environ readable (\w+) owner (\d+) uid (\d+)", r.stdout)
tl.check(m and m.group(1) == "True" and m.group(2) == m.group(3), f"a rank's /proc/<pid>/environ is its user's: {r.stdout}")
if prefix:
    tl.check("daemon environ readable False owner 0" in r.stdout,
             f"tlaunchd is not dumpable (its /proc files belong to root): {r.stdout}")

# The frontend too: while a job runs, its /proc files belong to root.
if prefix:
    p = subprocess.Popen(prefix + [tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "1", "--", tl.PYTHON, WAIT],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/tmp", start_new_session=True)
    try:
        tl.check(b"ready" in tl.read_until(p, b"ready"), "the job started")
        tl.check(os.stat(f"/proc/{p.pid}/environ").st_uid == 0, "tlaunch is not dumpable")
    finally:
        os.killpg(p.pid, 2)
        p.communicate(timeout=30)


# A rank a debugger holds (gdb -p, a tracer that is not its parent) when tlaunch is killed -9:
# SIGKILL leaves it a zombie only the debugger may reap. Its daemon waited on its pidfd in a
# loop at 100% of a core, and for the rank's end for as long as the debugger stayed: a daemon
# outliving its job. It now polls, and exits within a bound after SIGKILL.
HOLD = tl.program("ptrace_hold.py")


def cpu_and_state(pid):
    """(user+system CPU ticks, state letter) of pid, or (0, "gone")."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12]), fields[0]
    except OSError:
        return 0, "gone"


p = tl.start(["--launcher", "local", "-N", "1", "-p", "1", "--", tl.PYTHON, "-c",
              "import os, time; print('rankpid', os.getpid(), flush=True); time.sleep(300)"])
tracer = None
try:
    with tl.ending(p):
        m = re.search(rb"rankpid (\d+)", tl.read_until(p, b"\n"))
        tl.check(m, "the rank said its pid")
        rank = int(m.group(1))
        daemons = [d for d in tl.children_of(p.pid) if b"local0" in cmdline(d)]
        tl.check(len(daemons) == 1, f"one daemon: {daemons}")
        tracer = subprocess.Popen([tl.PYTHON, HOLD, str(rank)], stdout=subprocess.PIPE, text=True)
        held = tracer.stdout.readline()
        tl.check(held.startswith("traced"), f"the debugger holds the rank: {held!r}")
        os.kill(p.pid, 9)
        p.wait()
        t0 = time.monotonic()
        before, _ = cpu_and_state(daemons[0])
        time.sleep(4)  # past the grace: the rank is SIGKILLed, its zombie the debugger's
        used = (cpu_and_state(daemons[0])[0] - before) / os.sysconf("SC_CLK_TCK")
        tl.check(used < 1.0, f"the daemon used {used:.1f} s of CPU in 4 s waiting for the rank")
        gone = tl.wait_until(lambda: cpu_and_state(daemons[0])[1] in ("gone", "Z"), 30)
        print(f"ptrace-held rank: the daemon ended {time.monotonic() - t0:.1f} s after tlaunch was killed")
        tl.check(gone, "the daemon still runs 34 s after tlaunch was killed, waiting for a rank a debugger holds")
finally:
    if tracer:
        tracer.kill()
        tracer.wait()
tl.check(tl.wait_until(lambda: cpu_and_state(rank)[1] in ("gone", "Z"), 10), "the rank ended once the debugger let go")

print("PASS")
