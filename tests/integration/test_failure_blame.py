"""Which failure tlaunch names when one failure causes others (launcher/failure_blame.h):
1. the rank that failed first is named, also when its node reports it after a peer that failed
   of it (its report waits behind its output): the cause's status is tlaunch's, the others are
   counted after it, and --summary-json names the same rank;
2. a lost node is the reason, not the ranks on healthy nodes that lose their connections to it
   a moment before tlaunch decides the node is lost: --summary-json lists it in lost_nodes, and
   --max-restarts drops it (the healthy node stays);
3. a rank the kernel's OOM killer ends (its memory cgroup's limit, here a cgroup the test makes
   and the rank moves itself into) is said to have most likely run out of memory, not only
   "killed by signal 9"."""
import json
import os
import re
import signal
import time

import tl

# 1. Rank 0 crashes; rank 1 (another node) fails of it and is reported first. Three times: the
#    old frontend named rank 1 every time.
for attempt in range(3):
    markers = tl.tempdir()
    summary = os.path.join(markers, "summary.json")
    r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--summary-json", summary, "--", tl.PYTHON,
                tl.program("late_root_cause.py"), markers])
    tl.check(r.returncode == 139, f"run {attempt}: exit {r.returncode}, want rank 0's 139 (SIGSEGV)\n{r.stderr}")
    reason = r.stderr.split("failed: ", 1)[-1]
    tl.check(reason.startswith("rank 0 on node local0 was killed by signal 11"), f"run {attempt}: {r.stderr}")
    tl.check(re.search(r"1 other rank failed after it \(first: rank 1 on node local1, \+[0-9.]+ ms\)", reason),
             f"run {attempt}: rank 1 is counted after rank 0: {r.stderr}")
    tl.check("rank 0 is the root cause" in reason, f"run {attempt}: the cause's stderr is quoted: {r.stderr}")
    with open(summary) as f:
        s = json.load(f)
    tl.check(s["failed_rank"] == 0 and s["failed_node"] == "local0" and s["exit_status"] == 139,
             f"run {attempt}: --summary-json names the same rank: {s}")

# 2. kill -9 of local1's tlaunchd: the hub rank goes with it, local0's ranks exit 1 at once.
markers = tl.tempdir()
summary = os.path.join(markers, "summary.json")
p = tl.start(["--launcher", "local", "--hosts", "local0,local1,local2", "-N", "2", "-p", "2", "--max-restarts", "1",
              "--summary-json", summary, "--", tl.PYTHON, tl.program("lost_hub.py"), markers])
with tl.ending(p):
    out = tl.read_until(p, b"ready")
    m = re.search(rb"hub pid (\d+) ready", out)
    tl.check(m, f"the hub did not say ready: {out!r}")
    job = tl.job_of_rank(int(m.group(1)))
    tl.signal_daemon(job, "local1", signal.SIGKILL, p.pid)
    rest, err = tl.communicate_or_fail(p, 120, "after its node local1 was lost")
tl.check(p.returncode == 0, f"the restart without local1 ends 0: exit {p.returncode}\n{err}")
restart = [l for l in err.splitlines() if "restart 1 of 1 after" in l]
tl.check(len(restart) == 1 and "lost node local1" in restart[0], f"the restart names the lost node: {err}")
tl.check("2 ranks on other nodes failed after it (first: rank " in restart[0]
         and "on node local0)" in restart[0], f"local0's ranks are its consequences: {err}")
tl.check("local1 dropped (its daemon was lost)" in restart[0], f"the lost node is dropped, not local0: {err}")
tl.check("local0 dropped" not in err, f"the healthy node was dropped: {err}")
with open(summary) as f:
    s = json.load(f)
history = s["restart_history"]
tl.check(len(history) == 1 and "lost node local1" in history[0]["cause"], f"summary: {s}")

# 3. Out of memory: a memory cgroup of 64 MiB (v2 or v1, whichever this host has writable), the
#    rank moves itself in and allocates 300 MiB.
def memory_cgroup(name):
    """A new memory cgroup of 64 MiB without swap (v2, else v1), or None where none can be made."""
    places = []
    try:
        with open("/sys/fs/cgroup/cgroup.controllers") as f:
            if "memory" in f.read().split():
                places.append(("/sys/fs/cgroup", "memory.max"))
    except OSError:
        pass
    if os.path.exists("/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        places.append(("/sys/fs/cgroup/memory", "memory.limit_in_bytes"))
    for root, limit in places:
        d = os.path.join(root, name)
        try:
            os.mkdir(d)
            with open(os.path.join(d, limit), "w") as f:
                f.write(str(64 << 20))
            if os.path.exists(os.path.join(d, "memory.swap.max")):
                with open(os.path.join(d, "memory.swap.max"), "w") as f:
                    f.write("0")
            return d
        except OSError:
            if os.path.isdir(d):
                os.rmdir(d)
    return None


cgroup = memory_cgroup(f"tlaunch-oom-test-{os.getpid()}")
if cgroup is None:
    print("no writable memory cgroup here: the OOM case is not run")
else:
    try:
        r = tl.run(["--launcher", "local", "-p", "1", "--", "sh", "-c",
                    f'echo $$ > {cgroup}/cgroup.procs && exec {tl.PYTHON} -c "x = bytearray(300 << 20)"'], timeout=120)
        tl.check(r.returncode == 137, f"out of memory: exit {r.returncode}, want 137 (SIGKILL)\n{r.stderr}")
        tl.check("was killed by signal 9 (Killed), and the kernel's OOM killer ran on local0 meanwhile: most likely out "
                 "of memory" in r.stderr, f"the OOM killer is named: {r.stderr}")
    finally:
        for _ in range(50):  # the killed rank leaves the cgroup a moment after its end
            try:
                os.rmdir(cgroup)
                break
            except OSError:
                time.sleep(0.1)

# 4. torch's @record: rank 0 raises, closes its process group in `finally:` (its peers fail with
#    "Connection closed by peer" and end first) and ends last. The peer blamed first only lost
#    its peer; the rank whose TORCHELASTIC_ERROR_FILE holds an exception of its own is named,
#    with that exception. Three times: before, tlaunch named a peer and quoted its gloo error.
for attempt in range(3):
    summary = os.path.join(tl.tempdir(), "summary.json")
    r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "--summary-json", summary, "--", tl.PYTHON,
                tl.program("recorded_root_cause.py")], timeout=120)
    with open(summary) as f:
        s = json.load(f)
    tl.check(r.returncode != 0 and "rank 0 on node local0 raised ValueError: NaN loss at step 3" in r.stderr and
             s["failed_rank"] == 0 and s["stderr_tail"][-1:] == ["ValueError: NaN loss at step 3"],
             f"run {attempt}: the @record'ed cause: exit {r.returncode}, {s['failed_rank']}, {r.stderr[-1500:]}")

# 5. A rank that ends with status 0 early: the others fail of its closed connections, and the
#    summary named only one of them ("Connection closed by peer"); it now names the rank that left.
r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "--", tl.PYTHON, tl.program("early_clean_exit.py")],
           timeout=120)
tl.check(r.returncode == 1 and "rank 1 on node local0 had ended with status 0 before it" in r.stderr,
         f"a rank that left early is named: exit {r.returncode}, {r.stderr[-1500:]}")
print("ok")
