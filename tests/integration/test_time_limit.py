"""--time-limit as a user sees it: a job still running when the limit runs out ends like a
failure (every rank gets SIGTERM, exit 124, one line naming the limit, --summary-json says it
was tlaunch's), nothing of it remains; a job that ends in time is not touched; a bad value is
refused with exit 64 before anything starts."""
import atexit
import json
import os
import re
import shutil
import time

import tl

WAIT = tl.program("wait_for_signals.py")
tmp = tl.tempdir()
atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # also when a check fails (sys.exit)
summary = os.path.join(tmp, "summary.json")

# 1. Ranks that never end: the limit ends the job (8 s: the limit counts from the start, and
#    every rank must have its SIGTERM handler in place by then, also on a loaded machine).
t0 = time.monotonic()
r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "--time-limit", "8s", "--kill-timeout", "5",
            "--summary-json", summary, "--", tl.PYTHON, WAIT])
elapsed = time.monotonic() - t0
print(r.stdout, r.stderr)
tl.check(r.returncode == 124, f"exit status {r.returncode}, expected 124")
tl.check("time limit of 8s reached" in r.stderr, f"summary names the limit: {r.stderr!r}")
for rank in range(4):
    tl.check(f"rank {rank} got SIGTERM" in r.stdout, f"rank {rank} was sent SIGTERM")
tl.check(8 <= elapsed < 60, f"took {elapsed:.1f} s")
s = json.load(open(summary))
tl.check(s["exit_status"] == 124 and s["origin"] == "tlaunch", f"summary-json: {s}")
tl.check(s["meaning"] == "--time-limit reached" and "time limit of 8s" in s["reason"], f"summary-json: {s}")
tl.check(s["failed_rank"] is None, f"no rank failed: {s}")
job = re.search(r"job (tl-[0-9a-f]+)", r.stderr)
tl.check(job is not None, "banner names the job")
tl.check(tl.wait_until(lambda: not tl.processes_with_env("TLAUNCH_JOB_ID", job.group(1)), 10),
         "no process of the job remains")

# 2. A job that ends in time is not touched by its limit.
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--time-limit", "1:00:00", "--", "true"])
tl.check(r.returncode == 0, f"a job within its limit: exit {r.returncode}: {r.stderr}")

# 2b. With --max-restarts the limit still counts from tlaunch's start, not each attempt's: a
#     rank that fails after 1.5 s with 5 restarts allowed would run ~6 attempts (~10 s) if each
#     restart began a new limit; the 4 s limit ends the job with 124 long before.
t0 = time.monotonic()
r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "--time-limit", "4s", "--max-restarts", "5",
            "--summary-json", summary, "--", tl.PYTHON, "-c", "import sys, time; time.sleep(1.5); sys.exit(5)"])
elapsed = time.monotonic() - t0
tl.check(r.returncode == 124, f"--time-limit with restarts: exit {r.returncode}, want 124\n{r.stderr}")
tl.check("time limit of 4s reached" in r.stderr and "restart 5 of 5" not in r.stderr,
         f"--time-limit with restarts: the limit was not said, or every restart ran: {r.stderr}")
tl.check(elapsed < 30, f"--time-limit with restarts took {elapsed:.1f} s")
s = json.load(open(summary))
tl.check(s["exit_status"] == 124 and s["origin"] == "tlaunch" and "time limit of 4s" in s["reason"], f"summary-json: {s}")

# 2c. The limit runs out while a failed attempt is torn down (its ranks ignore SIGTERM and are
#     killed at --kill-timeout): the summary keeps that attempt's facts, which the printed lines
#     state (each rank's status, 3 killed at --kill-timeout); the status is tlaunch's.
r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "--max-restarts", "2", "--kill-timeout", "3", "--time-limit",
            "2s", "--summary-json", summary, "--", "bash", "-c",
            'trap "" TERM; echo x; sleep 0.5; [ $RANK = 1 ] && exit 3; while :; do sleep 0.2; done'], timeout=120)
s = json.load(open(summary))
tl.check(r.returncode == 124 and "before the job could restart" in r.stderr, f"limit during the teardown: {r.stderr}")
tl.check(s["exit_status"] == 124 and s["origin"] == "tlaunch" and s["failed_rank"] is None and
         s["rank_exit_codes"] == [-1, 3, -1, -1] and s["killed_at_kill_timeout"] == 3,
         f"limit during the teardown: the summary keeps the attempt's facts: {s}")

# 3. Values: a unit is required (srun reads minutes, mpirun seconds), and the range is checked.
for bad, says in [("30", "a unit is missing"), ("0s", "from 1s to 365d"), ("10x", "unknown unit"),
                  ("1:75", "go up to 59"), ("", "empty")]:
    r = tl.run(["--time-limit", bad, "-p", "1", "--", "true"])
    tl.check(r.returncode == 64, f"--time-limit {bad!r}: exit {r.returncode}")
    tl.check(f"--time-limit {bad}: " in r.stderr and says in r.stderr, f"--time-limit {bad!r}: {r.stderr!r}")
print("PASS")
