"""Containment, the cases that run alone (tests/integration/CMakeLists.txt says why): a daemon
killed -9 while its job runs in a per-job cgroup leaves nothing, by its watcher or, with the
watcher killed too, by the next job's daemon; and once tlaunch returns, not even a zombie
tlaunchd is left."""
import os
import time
import uuid

import tl
from containment_lib import LEAVE, cmdline, containment_notes, run_leaving, survivors

# 1b. With a per-job cgroup, even a daemon killed with -9 (the OOM killer) leaves nothing: its
# watcher (`tlaunchd --watch-cgroup`, a child with no death signal) ends the job's cgroup as soon
# as the daemon is gone. Should the watcher be killed too, the next job's daemon on the node ends
# what is left in the dead daemon's cgroup and removes it.
for kill_watcher in (False, True):
    marker = "tlaunch-contain-" + uuid.uuid4().hex
    p = tl.start(["--launcher", "local", "-N", "1", "-p", "1", "-v", "--", tl.PYTHON, LEAVE, marker, "0", "60"])
    with tl.ending(p):
        tl.check(b"ready" in tl.read_until(p, b"ready"), "the rank started")
        daemons = tl.children_of(p.pid)
        tl.check(daemons, "found the job's tlaunchd")
        watchers = [w for d in daemons for w in tl.children_of(d) if b"--watch-cgroup" in cmdline(w)]
        if kill_watcher:
            for w in watchers:
                os.kill(w, 9)
        for d in daemons:
            os.kill(d, 9)
        t0 = time.monotonic()
        _, killed_err = p.communicate(timeout=30)
    killed_in_cgroup = any("cgroup v2" in n for _, n in containment_notes(killed_err))
    print("daemon killed -9 while its job ran in a cgroup:", killed_in_cgroup, "its watcher killed too:", kill_watcher)
    if not killed_in_cgroup:
        print("no per-job cgroup here: the cgroup cases are skipped (the subreaper case is in test_containment.py)")
        tl.kill_leftovers(marker)
        break
    tl.check(len(watchers) == 1, f"the daemon has one cgroup watcher: {watchers}")
    if not kill_watcher:
        gone = tl.wait_until(lambda: not survivors(marker), 10)
        tl.check(gone, f"kill -9 of the daemon: its watcher ended what the ranks left, within 10 s: {survivors(marker)}")
        print(f"what the ranks left ended {time.monotonic() - t0:.1f} s after the daemon was killed")
        tl.check(tl.wait_until(lambda: not any(cmdline(w) for w in watchers), 10), "the watcher exited afterwards")
    else:
        tl.check(survivors(marker), "kill -9 of daemon and watcher leaves the ranks' detached children (else this tests nothing)")
        r, _, left = run_leaving(0, {})
        tl.check(r.returncode == 0 and not left, f"the next job: {r.stderr}")
        tl.check(tl.wait_until(lambda: not survivors(marker), 10),
                 f"what the ranks of a daemon killed -9 left in its cgroup ended with the next job: {survivors(marker)}")
    tl.kill_leftovers(marker)


# Nothing of a job is left once tlaunch returns, not even a zombie: each daemon reaps its cgroup
# watcher (left to init, it showed as "[tlaunchd] <defunct>" for ~2 s after the job).
def tlaunchd_zombies():
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if comm == "tlaunchd" and rest[0] == "Z":
            found.append(int(entry))
    return found


before = set(tlaunchd_zombies())
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "-q", "--", "true"], cwd="/tmp")
tl.check(r.returncode == 0, f"job: {r.stderr}")
left = set(tlaunchd_zombies()) - before
tl.check(not left, f"tlaunchd zombies left after the job: {sorted(left)}")
print("PASS")
