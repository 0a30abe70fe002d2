"""--nccl-check in a job (local launcher, 2 simulated nodes): tests/integration/programs/
fake_nccl_rank.py replays one process of a real NCCL log (tests/fixtures/nccl-logs) into the
NCCL_DEBUG_FILE tlaunch set, or to stderr with the user's NCCL_DEBUG. A local job runs on
loopback and expects no RDMA: strict's exit 78 is covered by tests/unit/nccl_check_test.cc."""
import glob
import json
import os
import shutil
import sys

import tl

LOGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../fixtures/nccl-logs")
JOB = ["--launcher", "local", "-N", "2", "-p", "1"]


def fixture(number):
    found = glob.glob(os.path.join(LOGS, number + "-*.log"))
    tl.check(len(found) == 1, f"missing NCCL log fixture {number}-*.log in {LOGS}")
    return found[0]


def fake(number):
    return [sys.executable, tl.program("fake_nccl_rank.py"), fixture(number)]


def report_lines(stderr):
    return [l for l in stderr.splitlines() if "nccl-check: " in l]


# Default (warn): one report line, the verdict on both ranks' logs (01: NET/IB, bootstrap ib0).
d = tl.tempdir()
summary = os.path.join(d, "summary.json")
r = tl.run(JOB + ["--summary-json", summary, "--"] + fake("01"))
tl.check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
lines = report_lines(r.stderr)
tl.check(len(lines) == 1, f"want one report line: {r.stderr}")
tl.check("NCCL: 2 ranks on 2 hosts; between nodes NET/IB on mlx4_0" in lines[0], lines[0])
tl.check("NCCL" not in r.stdout and "NCCL INFO" not in r.stderr, f"NCCL's log leaked into the output: {r.stderr}")
with open(summary) as f:
    nccl = json.load(f)["nccl"]
tl.check(nccl["complete"] and nccl["mode"] == "warn" and nccl["transport"] == "IB", f"summary: {nccl}")
tl.check(nccl["action"] == "none" and nccl["rdma_expected"] is False, f"summary: {nccl}")
shutil.rmtree(d)

# A socket fallback on a loopback job (no RDMA planned): the report says so; strict does not end it.
r = tl.run(JOB + ["--nccl-check", "strict", "--"] + fake("02"))
tl.check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
lines = report_lines(r.stderr)
tl.check(len(lines) == 1 and "NET/Socket" in lines[0], f"report: {r.stderr}")

# off: no NCCL variables, no report.
r = tl.run(JOB + ["--nccl-check", "off", "--", sys.executable, tl.program("print_env.py"), "NCCL_DEBUG",
                  "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS"])
tl.check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
for line in r.stdout.splitlines():
    env = json.loads(line[line.index("{"):])
    tl.check(env == {"NCCL_DEBUG": None, "NCCL_DEBUG_FILE": None, "NCCL_DEBUG_SUBSYS": None}, f"off: {env}")
tl.check(not report_lines(r.stderr), f"off printed a report: {r.stderr}")

# warn: INFO, the subsystems and a per-rank file.
r = tl.run(JOB + ["--", sys.executable, tl.program("print_env.py"), "NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS"])
tl.check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
envs = [json.loads(l[l.index("{"):]) for l in r.stdout.splitlines()]
tl.check(len(envs) == 2, r.stdout)
for env in envs:
    tl.check(env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_SUBSYS"] == "INIT,BOOTSTRAP,NET,ENV", f"warn: {env}")
    tl.check(".nccl/nccl.rank" in env["NCCL_DEBUG_FILE"] and env["NCCL_DEBUG_FILE"].endswith(".%h.%p.log"), f"warn: {env}")

# The user's NCCL_DEBUG=INFO: respected (no file), its stderr lines parsed.
r = tl.run(JOB + ["-x", "NCCL_DEBUG=INFO", "--", sys.executable, tl.program("print_env.py"), "NCCL_DEBUG_FILE"])
tl.check(r.returncode == 0 and '"NCCL_DEBUG_FILE": null' in r.stdout, f"user NCCL_DEBUG: {r.stdout} {r.stderr}")
r = tl.run(JOB + ["-x", "NCCL_DEBUG=INFO", "--"] + fake("02"))
tl.check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
tl.check("NCCL INFO" in r.stderr, f"the user's NCCL output must stay on stderr: {r.stderr}")
lines = report_lines(r.stderr)
tl.check(len(lines) == 1 and "NET/Socket" in lines[0], f"report from stderr: {lines}")
print("PASS")
