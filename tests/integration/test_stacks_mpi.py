"""`tlaunch stacks` on a 4x2 Open MPI job (direct launch): rank 5 sleeps in a uniquely named
function while the other seven wait for it in MPI_Barrier. The merged report has exactly two
classes: ranks 0-4, 6-7 in MPI_Barrier, and rank 5 in its function; the job is not disturbed."""
import os
import re
import shutil
import signal
import tempfile

import tl
from test_stacks_lib import classes, wait_ready

STUCK = os.environ.get("PMIX_MPI_STUCK")
if not (STUCK and os.path.exists(STUCK)):
    tl.skip("the MPI test programs were not built (mpicc / libpmix-dev missing)")
if not shutil.which("gdb"):
    tl.skip("gdb is not installed (contrib/install-deps.sh installs it)")

env = dict(os.environ, XDG_RUNTIME_DIR=tempfile.mkdtemp(prefix="tl-stacks-mpi-"))
p = tl.start(["--launcher", "local", "-N", "4", "-p", "2", "--", STUCK, "5", "300"], env=env)
try:
    wait_ready(p, 8, timeout=180)
    r = tl.run(["stacks"], timeout=180, env=env)
    print(r.stdout, r.stderr)
    tl.check(r.returncode == 0, f"tlaunch stacks: exit {r.returncode}")
    tl.check(re.search(r"stacks of 8 rank\(s\): 2 classes", r.stdout), f"not two classes: {r.stdout}")
    c = classes(r.stdout)
    tl.check(set(c) == {"ranks 0-4, 6-7", "rank 5"}, f"classes: {sorted(c)}")
    tl.check("MPI_Barrier" in c["ranks 0-4, 6-7"], f"barrier: {c}")
    tl.check("tlaunch_test_rank_sleeps_here" in c["rank 5"] and "MPI_Barrier" not in c["rank 5"], f"rank 5: {c}")
    tl.check(p.poll() is None, "the job ended after tlaunch stacks")
finally:
    os.killpg(p.pid, signal.SIGINT)
    p.communicate(timeout=60)
shutil.rmtree(env["XDG_RUNTIME_DIR"], ignore_errors=True)
print("ok")
