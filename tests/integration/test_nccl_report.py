"""`tlaunch nccl-report` as a user runs it: on NCCL log files, on stdin, with --json, and with a
bad flag or an unreadable file (exit 64, naming it). The logs are the real NCCL logs in
tests/fixtures/nccl-logs; a missing one fails the test."""
import glob
import json
import os
import subprocess

import tl

LOGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../fixtures/nccl-logs")


def fixture(number):
    found = glob.glob(os.path.join(LOGS, number + "-*.log"))
    tl.check(len(found) == 1, f"missing NCCL log fixture {number}-*.log in {LOGS}")
    return found[0]


# A file: the per-rank table, then the verdict (01: 2 nodes on NET/IB, bootstrap on ib0).
r = tl.run(["nccl-report", fixture("01")])
tl.check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
lines = r.stdout.splitlines()
tl.check(lines[0].split()[:3] == ["RANK", "HOST", "PID"], f"no table header: {r.stdout}")
tl.check(any(l.split()[:2] == ["0", "node01"] for l in lines), f"no row for rank 0 on node01: {r.stdout}")
tl.check(lines[-1] == "NCCL: 2 ranks on 2 hosts; between nodes NET/IB on mlx4_0 without GPUDirect RDMA; bootstrap on ib0",
         f"verdict: {lines[-1]}")

# Two files at once, --json: one object covering both logs' processes.
r = tl.run(["nccl-report", "--json", fixture("02"), fixture("16")])
tl.check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
report = json.loads(r.stdout)
tl.check(report["level"] == "error", f"level {report['level']}")
transports = sorted((rank["host"], rank["transport"]) for rank in report["ranks"])
tl.check(transports == [("node01", "Socket"), ("node02", "Socket"), ("spark01", "RoCE")], f"ranks: {transports}")
tl.check(report["verdict"].startswith("ERROR: "), report["verdict"])

# stdin, when no LOG is given and as "-".
with open(fixture("14"), "rb") as f:
    data = f.read()
for args in (["nccl-report"], ["nccl-report", "--json", "-"]):
    r = tl.run(args, input=data.decode("utf-8", "replace"))
    tl.check(r.returncode == 0, f"{args}: exit {r.returncode}: {r.stderr}")
    verdict = json.loads(r.stdout)["verdict"] if "--json" in args else r.stdout.splitlines()[-1]
    tl.check(verdict.startswith("WARNING: ") and "NET/Socket over eth0 (NET/IB: No device found)" in verdict,
             f"{args}: verdict {verdict}")

# An unreadable file and a bad flag: exit 64 with one message naming it, nothing on stdout.
missing = os.path.join(LOGS, "no-such-log.log")
r = tl.run(["nccl-report", fixture("01"), missing])
tl.check(r.returncode == 64, f"missing file: exit {r.returncode}")
tl.check(missing in r.stderr and r.stdout == "", f"missing file: stdout {r.stdout!r} stderr {r.stderr!r}")
r = tl.run(["nccl-report", LOGS])
tl.check(r.returncode == 64 and LOGS in r.stderr, f"directory: exit {r.returncode}, {r.stderr!r}")
# Input without NCCL's INFO lines (the wrong file, a job run without NCCL_DEBUG=INFO): the report
# says so, and the exit status (65) lets a script tell it from a clean report.
for args, given in ((["nccl-report", "/etc/hostname"], None), (["nccl-report", "--json"], "no nccl here\n")):
    r = tl.run(args, input=given) if given else tl.run(args, stdin=subprocess.DEVNULL)
    tl.check(r.returncode == 65 and "no NCCL_DEBUG=INFO output" in r.stderr and "NCCL_DEBUG=INFO" in r.stderr,
             f"{args}: exit {r.returncode}, {r.stderr!r}")
r = tl.run(["nccl-report", "--bogus", fixture("01")])
tl.check(r.returncode == 64 and "--bogus" in r.stderr, f"bad flag: exit {r.returncode}, {r.stderr!r}")
print("ok")
