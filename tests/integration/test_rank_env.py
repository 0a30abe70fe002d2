"""Each rank gets exactly torchrun's environment, Open MPI's OMPI_COMM_WORLD_* and tlaunch's
own, numbered node-major; -x exports reach every rank; MASTER_ADDR is an IP and MASTER_PORT
a port that was free."""
import ipaddress
import json
import os
import re

import tl

keys = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK", "ROLE_RANK",
        "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
        "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "OMP_NUM_THREADS", "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
        "OMPI_COMM_WORLD_NODE_RANK", "TLAUNCH_JOB_ID", "FOO", "BAR", "SHOULD_FORWARD"]
env = dict(os.environ, BAR="from-env", SHOULD_FORWARD="yes")
env.pop("OMP_NUM_THREADS", None)
r = tl.run(["--launcher", "local", "-N", "3", "-p", "2", "--tag-output=rank", "-x", "FOO=a b=c", "-x", "BAR", "--",
            tl.PYTHON, tl.program("print_env.py")] + keys, env=env)
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"job failed: {r.returncode}")
seen = {}
for line in r.stdout.splitlines():
    m = re.match(r"^\[(\d+)\] (\{.*\})$", line)
    tl.check(m is not None, f"bad line {line!r}")
    seen[int(m.group(1))] = json.loads(m.group(2))
tl.check(sorted(seen) == list(range(6)), f"ranks seen: {sorted(seen)}")
job_ids = {e["TLAUNCH_JOB_ID"] for e in seen.values()}
tl.check(len(job_ids) == 1 and list(job_ids)[0], "one job id for all ranks")
masters = {(e["MASTER_ADDR"], e["MASTER_PORT"]) for e in seen.values()}
tl.check(len(masters) == 1, f"all ranks agree on the master: {masters}")
addr, port = masters.pop()
ipaddress.ip_address(addr)  # raises if it is a host name
tl.check(0 < int(port) < 65536, f"MASTER_PORT {port}")
for rank, e in seen.items():
    node, local = divmod(rank, 2)
    expect = {"RANK": rank, "LOCAL_RANK": local, "WORLD_SIZE": 6, "LOCAL_WORLD_SIZE": 2, "GROUP_RANK": node,
              "NODE_RANK": node, "ROLE_RANK": rank, "ROLE_WORLD_SIZE": 6, "ROLE_NAME": "default",
              "TORCHELASTIC_RUN_ID": list(job_ids)[0], "TORCHELASTIC_RESTART_COUNT": 0,
              "TORCHELASTIC_MAX_RESTARTS": 0, "OMP_NUM_THREADS": 1, "OMPI_COMM_WORLD_RANK": rank,
              "OMPI_COMM_WORLD_SIZE": 6, "OMPI_COMM_WORLD_LOCAL_RANK": local, "OMPI_COMM_WORLD_LOCAL_SIZE": 2,
              "OMPI_COMM_WORLD_NODE_RANK": local, "FOO": "a b=c", "BAR": "from-env", "SHOULD_FORWARD": "yes"}
    for k, v in expect.items():
        tl.check(e[k] == str(v), f"rank {rank}: {k}={e[k]!r}, expected {v!r}")

# The user's OMP_NUM_THREADS wins over our default.
# PWD is the rank's own directory (-D), as under srun and mpirun: tlaunch's shell's PWD is not
# passed on, and Python's os.environ["PWD"] raised KeyError.
r = tl.run(["-p", "1", "-D", "/var/tmp", "--", tl.PYTHON, tl.program("print_env.py"), "PWD"], cwd="/tmp",
           env=dict(os.environ, PWD="/tmp"))
tl.check('"PWD": "/var/tmp"' in r.stdout, f"PWD of the rank: {r.stdout!r} {r.stderr!r}")
r = tl.run(["-p", "1", "-x", "OMP_NUM_THREADS=7", "--", tl.PYTHON, tl.program("print_env.py"), "OMP_NUM_THREADS"])
tl.check('"OMP_NUM_THREADS": "7"' in r.stdout, f"user OMP_NUM_THREADS: {r.stdout!r}")
print("PASS")

# A MASTER_ADDR / MASTER_PORT merely present in tlaunch's environment (a batch script's, for
# torchrun) is not taken, and a warning says so and how to pass it; -x passes it on.
stale = dict(os.environ, MASTER_ADDR="127.0.0.2", MASTER_PORT="29999")
r = tl.run(["--launcher", "local", "-p", "1", "--", "sh", "-c", "echo $MASTER_ADDR:$MASTER_PORT"], env=stale)
tl.check(r.returncode == 0 and "127.0.0.2" not in r.stdout and ":29999" not in r.stdout, f"stale master: {r.stdout!r}")
tl.check("MASTER_ADDR=127.0.0.2, MASTER_PORT=29999 in tlaunch's environment not used" in r.stderr and "-x MASTER_ADDR" in r.stderr,
         f"the unused environment is not said: {r.stderr!r}")
r = tl.run(["--launcher", "local", "-p", "1", "-x", "MASTER_PORT", "--", "sh", "-c", "echo $MASTER_PORT"], env=stale)
tl.check(r.returncode == 0 and r.stdout.strip().endswith("29999") and "MASTER_PORT=29999" not in r.stderr,
         f"-x MASTER_PORT: {r.stdout!r} {r.stderr!r}")
# NCCL_COMM_ID (NCCL's bootstrap root) left from another job's script: NCCL would rendezvous
# there instead of through the job's network. Not taken, and said; -x passes it on.
stale_nccl = dict(os.environ, NCCL_COMM_ID="127.0.0.2:6000")
r = tl.run(["--launcher", "local", "-p", "1", "--", "sh", "-c", 'echo "id=$NCCL_COMM_ID"'], env=stale_nccl)
tl.check(r.returncode == 0 and "id=\n" in r.stdout + "\n" and "NCCL_COMM_ID=127.0.0.2:6000 in tlaunch's environment not used"
         in r.stderr, f"stale NCCL_COMM_ID: {r.stdout!r} {r.stderr!r}")
r = tl.run(["--launcher", "local", "-p", "1", "-x", "NCCL_COMM_ID", "--", "sh", "-c", 'echo "id=$NCCL_COMM_ID"'],
           env=stale_nccl)
tl.check(r.returncode == 0 and "id=127.0.0.2:6000" in r.stdout, f"-x NCCL_COMM_ID: {r.stdout!r} {r.stderr!r}")
print("PASS: the environment's MASTER_ADDR/MASTER_PORT/NCCL_COMM_ID are said and not taken; -x takes them")

# Two values for one variable (a wrapper script's -x, then the user's; --master-port, which wins
# over -x wherever it stands): the rank gets the winner, and tlaunch says which value it dropped.
r = tl.run(["--launcher", "local", "-p", "1", "-x", "FOO=wrapper", "--master-port", "23457", "-x", "FOO=user",
            "-x", "MASTER_PORT=23456", "--", "sh", "-c", "echo $FOO:$MASTER_PORT"])
tl.check(r.returncode == 0 and r.stdout.strip().endswith("user:23457"), f"the winning values reach the rank: {r.stdout!r} {r.stderr!r}")
tl.check("FOO=wrapper is replaced by FOO=user" in r.stderr and
         "MASTER_PORT=23456 is replaced by MASTER_PORT=23457" in r.stderr, f"both overrides are said: {r.stderr!r}")
print("PASS: an export given twice: the winning value, said")
