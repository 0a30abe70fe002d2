"""The plan is the whole environment (issue 13 item 3): rank 0's /proc/<pid>/environ in a real
local job equals what `--dry-run --json` says for rank 0 — the node's base_env (the inherited
environment and -x) with the rank's env over it — except the variables the daemon adds at fork
time (env_added_at_fork: PMIX_*, the vader backing directory, --nccl-check's NCCL_DEBUG*).

Two runs differ only in what is drawn per run: the job id (and the values holding it) and
MASTER_PORT (a free port rank 0's node picks). The test compares the rest byte for byte, and
those two by form. The inherited environment is the test's own (with a marker and a -x export),
so it is compared too: it must arrive unchanged, minus what tlaunch never forwards."""
import atexit
import json
import os
import shutil

import tl

tmp = tl.tempdir()
atexit.register(shutil.rmtree, tmp, True)
dump = os.path.join(tmp, "environ")
env = dict(os.environ, TL_ENVIRON_MARKER="inherited value with spaces")
common = ["--launcher", "local", "-N", "1", "-p", "1", "-x", "TL_EXPORTED=from -x"]
program = ["/bin/sh", "-c", f'cat /proc/$$/environ > "{dump}"']  # the rank is this sh: its own environ

r = tl.run(common + ["--dry-run", "--json", "--"] + program, env=env)
tl.check(r.returncode == 0, f"dry run: {r.stderr}")
plan = json.loads(r.stdout)
node = plan["nodes"][0]
planned = dict(node["base_env"])
planned.update(node["ranks"][0]["env"])
added = [a["name"] for a in plan["env_added_at_fork"]]
tl.check("PMIX_*" in added and "OMPI_MCA_btl_vader_backing_directory" in added, f"env_added_at_fork: {added}")
tl.check(planned.get("OMPI_MCA_schizo") == "^orte", "Open MPI's settings are planned, not added at fork")
tl.check(planned.get("OMPI_MCA_btl_tcp_if_include") == "lo", "simulated nodes: Open MPI's TCP over lo")
tl.check(planned.get("TL_ENVIRON_MARKER") == env["TL_ENVIRON_MARKER"], "the inherited environment is in base_env")
tl.check(planned.get("TL_EXPORTED") == "from -x", "-x is in base_env")

r = tl.run(common + ["--"] + program, env=env)
tl.check(r.returncode == 0, f"job: {r.returncode} {r.stderr}")
with open(dump, "rb") as f:
    entries = [e.decode() for e in f.read().split(b"\0") if e]
actual = dict(e.split("=", 1) for e in entries)
tl.check(len(actual) == len(entries), "no variable twice in the rank's environment")


def added_at_fork(name):
    return any(name.startswith(a[:-1]) if a.endswith("*") else name == a for a in added)


job_id = actual.get("TLAUNCH_JOB_ID", "")
tl.check(job_id.startswith("tl-"), f"TLAUNCH_JOB_ID {job_id!r}")
dry_id = planned["TLAUNCH_JOB_ID"]
diffs = []
for name in sorted(set(planned) | set(actual)):
    if added_at_fork(name):
        continue
    want, got = planned.get(name), actual.get(name)
    if name == "MASTER_PORT":
        tl.check(want and got and int(want) > 0 and int(got) > 0, f"MASTER_PORT {want!r} / {got!r}")
        continue
    if want is not None:
        want = want.replace(dry_id, job_id)
    if want != got:
        diffs.append(f"{name}: planned {want!r}, rank got {got!r}")
tl.check(not diffs, "rank 0's environment differs from the plan:\n  " + "\n  ".join(diffs))
tl.check(any(n.startswith("PMIX_") for n in actual), "the daemon added PMIx's variables")
print("PASS")
