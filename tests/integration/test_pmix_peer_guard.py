"""Another local user (here `nobody`) connecting to a job's PMIx server on 127.0.0.1 as the
job's owner: libpmix's "native" security over TCP believes the uid a client writes in its
handshake, so such a client was let in as root, and its PMIx_Spawn ran a command as the job's
owner; a refused handshake also wedged the node's PMIx server (the ranks' next PMIx call hung).
The daemon now checks the real owner of each connection before libpmix reads it: the intruder is
refused, nothing it asked for runs, and the ranks' PMIx (a fence, after the attempt) goes on."""
import os
import shutil
import signal
import subprocess

import tl

SPOOF = os.environ.get("PMIX_SPOOF", "")
BARRIER = os.environ.get("PMIX_BARRIER", "")
if not (SPOOF and BARRIER and os.path.exists(SPOOF)):
    tl.skip("pmix_spoof / pmix_barrier were not built")
if os.geteuid() != 0 or not shutil.which("setpriv"):
    tl.skip("needs root and setpriv to act as another user")

d = tl.tempdir()
os.chmod(d, 0o755)  # nobody runs its copy of the client from here
spoof = os.path.join(d, "pmix_spoof")
shutil.copy(SPOOF, spoof)
os.chmod(spoof, 0o755)
go = os.path.join(d, "go")
marker = os.path.join(d, "spawned-by-intruder")
p = tl.start(["--launcher", "local", "-N", "1", "-p", "1", "--", "sh", "-c",
              f'echo "ready $TLAUNCH_JOB_ID"; while [ ! -e {go} ]; do sleep 0.1; done; exec {BARRIER} 0'])
with tl.ending(p):
    line = tl.read_until(p, b"\n").decode()
    tl.check(line.startswith("[local0:0] ready tl-"), f"the rank did not start: {line!r}")
    job = line.split()[-1]
    ranks = [pid for pid in tl.processes_with_env("TLAUNCH_JOB_ID", job)]
    tl.check(ranks, "the rank's process was not found")
    with open(f"/proc/{ranks[0]}/environ", "rb") as f:
        pmix_env = [kv.decode() for kv in f.read().split(b"\0") if kv.startswith(b"PMIX_")]
    tl.check(any(kv.startswith("PMIX_SERVER_URI") for kv in pmix_env), f"no PMIx server address: {pmix_env}")
    intruder = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "env", "-i"] + pmix_env +
                              ["SPOOF_UID=0", "SPOOF_GID=0", "ASAN_OPTIONS=detect_leaks=0", spoof, marker],
                              capture_output=True, text=True, timeout=60)
    tl.check(intruder.returncode == 0 and "init refused" in intruder.stdout,
             f"another user got into the job's PMIx server: {intruder.returncode} {intruder.stdout} {intruder.stderr}")
    with open(go, "w"):
        pass
    out, err = tl.communicate_or_fail(p, 60, "after another user's connection to its PMIx server")
tl.check(p.returncode == 0, f"the rank's PMIx fence after the intrusion: exit {p.returncode}: {err}")
tl.check(not os.path.exists(marker), "the intruder's PMIx_Spawn ran its command as the job's owner")
print("PASS")
