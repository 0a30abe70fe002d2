"""Events about a failed rank, on 2 simulated nodes x 2 ranks, with a raw PMIx client
(tests/pmix/pmix_events.c): when rank 1 calls abort(), exits 3 or calls PMIx_Abort, ranks 0, 2
and 3 get PMIX_ERR_PROC_ABORTED / PMIX_PROC_TERMINATED for it in their registered handlers
before teardown; with --keep-going they run to their end, their fences over a job with a failed
rank fail at once instead of hanging (through the control tree too), and tlaunch exits with rank
1's status. --event-grace and
--keep-going are checked like every flag."""
import os
import re
import time

import tl

EVENTS = os.environ.get("PMIX_EVENTS")
if not EVENTS or not os.path.exists(EVENTS):
    tl.skip("the PMIx events client was not built (libpmix-dev missing)")

TWO_NODES = ["--launcher", "local", "-N", "2", "-p", "2"]
SURVIVORS = [0, 2, 3]


def events(stdout):
    """rank -> (event name, affected rank, exit code) from the survivors' lines."""
    return {int(m[0]): (m[1], int(m[2]), int(m[3]))
            for m in re.findall(r"rank (\d+) event (\S+) for rank (-?\d+) exit code (-?\d+)", stdout)}


def run(args, expect_exit, what):
    try:
        r = tl.run(args + ["--", EVENTS] + what, timeout=120)
    finally:
        tl.kill_leftovers(EVENTS)
    print(r.stdout, r.stderr)
    tl.check(r.returncode == expect_exit, f"{what}: exit {r.returncode}, expected {expect_exit}")
    tl.check("got no event" not in r.stdout, f"{what}: a rank got no event: {r.stdout!r}")
    return r


def check_fences_failed_at_once(r, what):
    """Every survivor's two fences ended, neither completed nor timed out, well within 10 s."""
    fences = re.findall(r"rank (\d+) fence (all|listed) -> (\S+) in (\d+) ms", r.stdout)
    tl.check(sorted((int(f[0]), f[1]) for f in fences) == sorted((s, k) for s in SURVIVORS for k in ("all", "listed")),
             f"{what}: fences {fences}")
    for rank, kind, status, ms in fences:
        tl.check(status not in ("SUCCESS", "TIMEOUT"), f"{what}: rank {rank} fence {kind} -> {status}")
        tl.check(int(ms) < 10000, f"{what}: rank {rank} fence {kind} took {ms} ms")


# The survivors print the event and exit on their own: a long grace keeps the default 1 s from
# ending them (SIGTERM) before a loaded machine has carried the event to them and let them print.
GRACE = ["--event-grace", "30s"]

# abort(): the survivors hear PROC-ABORTED for rank 1 (killed by SIGABRT: 134), then the job ends.
r = run(TWO_NODES + GRACE, 134, ["abort"])
got = events(r.stdout)
tl.check(got == {s: ("PROC-ABORTED", 1, 134) for s in SURVIVORS}, f"abort: events {got}")
tl.check("rank 1 on node local0 was killed by signal 6" in r.stderr, f"abort: summary {r.stderr!r}")

# exit(3): PROC-TERMINATED with exit code 3; tlaunch exits 3.
r = run(TWO_NODES + GRACE, 3, ["exit"])
got = events(r.stdout)
tl.check(got == {s: ("PROC-TERMINATED", 1, 3) for s in SURVIVORS}, f"exit: events {got}")
tl.check("rank 1 on node local0 exited with status 3" in r.stderr, f"exit: summary {r.stderr!r}")

# A long grace does not hold the job once every rank has ended.
t0 = time.monotonic()
r = run(TWO_NODES + ["--event-grace", "60s"], 3, ["exit"])
tl.check(time.monotonic() - t0 < 45, "--event-grace 60s held a job whose ranks had all ended")

# --keep-going: the survivors go on; a fence of the whole job and one over ranks 0..3 named one
# by one fail at once (not by their 20 s PMIX_TIMEOUT), and the job exits with rank 1's status.
r = run(TWO_NODES + ["--keep-going"], 3, ["exit", "fences"])
got = events(r.stdout)
tl.check(got == {s: ("PROC-TERMINATED", 1, 3) for s in SURVIVORS}, f"keep-going: events {got}")
check_fences_failed_at_once(r, "keep-going")
tl.check("rank 1 on node local0 exited with status 3" in r.stderr and "--keep-going" in r.stderr,
         f"keep-going: summary {r.stderr!r}")

# The same through the control tree: 4 nodes x 1 rank as a chain (radix 1), so rank 1's node is
# an interior daemon whose own share of a fence never comes once its only rank is gone. Its
# parent and it used to wait for that share for ever (ranks 2 and 3 hung until the client's 90 s
# watchdog killed them).
r = run(["--launcher", "local", "-N", "4", "-p", "1", "--tree-radix", "1", "--keep-going"], 3, ["exit", "fences"])
check_fences_failed_at_once(r, "keep-going, tree")

# PMIx_Abort ends the job even with --keep-going, after the survivors heard PROC-ABORTED.
r = run(TWO_NODES + GRACE + ["--keep-going"], 5, ["pmix-abort"])
got = events(r.stdout)
tl.check(got == {s: ("PROC-ABORTED", 1, 5) for s in SURVIVORS}, f"pmix-abort: events {got}")
tl.check("rank 1 on node local0 called MPI_Abort with status 5" in r.stderr, f"pmix-abort: summary {r.stderr!r}")

# The flags' values are checked; --keep-going and --max-restarts exclude each other.
for bad in ["soon", "-1", "2h", "61s", "1.5s", ""]:
    r = tl.run(TWO_NODES + ["--event-grace", bad, "--", "true"], timeout=30)
    tl.check(r.returncode == 64 and "--event-grace" in r.stderr, f"--event-grace {bad!r}: {r.returncode} {r.stderr!r}")
r = tl.run(TWO_NODES + ["--event-grace", "0", "--", "true"], timeout=60)
tl.check(r.returncode == 0, f"--event-grace 0: exit {r.returncode} {r.stderr!r}")
if "--max-restarts" in tl.run(["--help"], timeout=30).stdout:
    r = tl.run(TWO_NODES + ["--keep-going", "--max-restarts", "2", "--", "true"], timeout=30)
    tl.check(r.returncode == 64 and "--keep-going and --max-restarts" in r.stderr, f"--max-restarts: {r.stderr!r}")
print("PASS")
