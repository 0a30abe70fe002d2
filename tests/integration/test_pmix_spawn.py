"""PMIx_Spawn under tlaunch on simulated nodes (--launcher local): MPI_Comm_spawn from C (Open
MPI 4.1) across nodes and onto a named host, the children's output tagged, binding, intercommunicator
traffic and MPI_Comm_disconnect; MPI_Comm_spawn_multiple; mpi4py.futures' MPIPoolExecutor; a host outside the job and a
missing program failing the spawn at once with a message (nothing started); a job spawning in
a loop not growing its node's daemon by every namespace; 24 spawns at once; a spawned process
that fails ending the job with its name, or with --keep-going not failing the job's fences; and Ctrl-C ending spawned processes with the job."""
import os
import re
import signal
import subprocess
import time

import tl

SPAWN = os.environ.get("PMIX_MPI_SPAWN")
if not SPAWN or not os.path.exists(SPAWN):
    tl.skip("pmix_mpi_spawn was not built (mpicc missing)")
PY = "/usr/bin/python3"
MPI4PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pmix", "mpi4py_spawn.py")
TWO_NODES = ["--launcher", "local", "-N", "2", "-p", "2"]


def children(stdout):
    """(tag, rank, size, token, sum, merged) of every child line."""
    return re.findall(r"^\[(\S+)\] mpi_spawn child (\d+) of (\d+) token (\d+) sum (\d+) merged (\d+)", stdout, re.M)


# 2 nodes x 2 ranks spawn 3 children: round robin over both nodes, each tagged with its node and
# its name in the spawned namespace; every parent and child sees the merged 7 processes.
r = tl.run(TWO_NODES + ["-v", "--", SPAWN, "3"], timeout=120)
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"MPI_Comm_spawn 3: exit {r.returncode}")
kids = children(r.stdout)
tl.check(sorted(k[0] for k in kids) == ["local0:spawn1:0", "local0:spawn1:2", "local1:spawn1:1"],
         f"children placed round robin and tagged: {kids}")
tl.check(all(k[2:] == ("3", "4242", "3", "7") for k in kids), f"children's view: {kids}")
parents = re.findall(r"mpi_spawn parent (\d) ok merged 7$", r.stdout, re.M)
tl.check(sorted(parents) == ["0", "1", "2", "3"], f"every parent merged with the children: {parents}")
tl.check("rank 0 spawned 3 processes (namespace tlaunch." in r.stderr, "-v says who spawned what, where")

# "host" info: all children on local1; with --output-dir their output has files of its own.
out_dir = os.path.join(tl.tempdir(), "out")
r = tl.run(TWO_NODES + ["--output-dir", out_dir, "--", SPAWN, "2", "local1"], timeout=120)
print(r.stdout, r.stderr)
kids = children(r.stdout)
tl.check(r.returncode == 0 and sorted(k[0] for k in kids) == ["local1:spawn1:0", "local1:spawn1:1"],
         f"MPI_Comm_spawn onto host local1: exit {r.returncode}, {kids}")
for i in range(2):
    with open(os.path.join(out_dir, f"spawn1.rank.{i}.out")) as f:
        text = f.read()
    tl.check(text.startswith(f"mpi_spawn child {i} of 2 token 4242"), f"--output-dir spawn1.rank.{i}.out: {text!r}")

# A host outside the job: refused at once, said by tlaunch; Open MPI then aborts (its default).
t0 = time.monotonic()
r = tl.run(TWO_NODES + ["--", SPAWN, "2", "elsewhere"], timeout=120)
print(r.stdout, r.stderr)
tl.check(r.returncode != 0 and "host 'elsewhere' is not a node of this job" in r.stderr and
         "MPI_ERR_SPAWN" in r.stderr and time.monotonic() - t0 < 60,
         f"a host outside the job: exit {r.returncode}, a message, within 60 s")
tl.check(not children(r.stdout), "nothing was spawned")

# A program that does not exist: the spawn fails (MPI_ERR_SPAWN, no hang), the job goes on.
r = tl.run(TWO_NODES + ["--", PY, MPI4PY, "missing"], timeout=120)
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"missing program: exit {r.returncode}")
tl.check(r.stdout.count("spawn failed: MPI_ERR_SPAWN") == 4, f"every rank's spawn failed: {r.stdout!r}")
tl.check("program '/no/such/tlaunch-test-program' does not exist on node" in r.stderr, "the reason is said")

# mpi4py.futures: a pool of 3 workers started by MPI_Comm_spawn, spread over both nodes.
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--", PY, MPI4PY, "futures", "3"], timeout=180)
print(r.stdout, r.stderr)
tl.check(r.returncode == 0 and "futures squares [0, 1, 4, 9, 16, 25, 36, 49, 64, 81] workers [0, 1, 2]" in r.stdout,
         f"mpi4py.futures with 3 workers: exit {r.returncode}")

# A job that spawns again and again (workers restarted per epoch): each ended spawn's namespace
# is forgotten on its node, so the node's tlaunchd does not grow with every spawn. It kept
# libpmix's store of each (two 4 MiB segments): 40 spawns grew it by ~330 MB.
# With --output-dir, tlaunch closes an ended process's two files instead of keeping them all.
loop_dir = os.path.join(tl.tempdir(), "loop")
r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "--output-dir", loop_dir, "--",
            PY, MPI4PY, "loop", "40"], timeout=180)
print(r.stdout, r.stderr)
m = re.search(r"loop parent (\S+) grew (-?\d+) KiB over 40 spawns", r.stdout)
tl.check(r.returncode == 0 and m and m.group(1) == "tlaunchd", f"40 spawns in a loop: exit {r.returncode}, {m}")
# Under 4 MiB a spawn, half of one namespace's store: ASan's quarantine keeps freed memory too.
tl.check(int(m.group(2)) < 40 * 4096, f"tlaunchd grew {m.group(2)} KiB over 40 spawns (under 4 MiB each)")
fds = re.search(r"loop frontend holds (-?\d+) more descriptors", r.stdout)
tl.check(fds and int(fds.group(1)) < 20, f"tlaunch's descriptors after 40 spawns with --output-dir: {fds and fds.group(1)}")
with open(os.path.join(loop_dir, "spawn45.rank.0.out")) as f:
    tl.check(f.read() == "", "the last spawn's output file is there")

# MPI_Comm_spawn_multiple: two apps in one namespace, each child knowing its app (MPI_APPNUM).
# On one CPU (taskset), whatever this machine has: every node is crowded by its children.
r = subprocess.run(["taskset", "-c", "0", tl.TLAUNCH, "--launcher", "local", "-N", "2", "-p", "1", "--", PY, MPI4PY,
                    "multiple"], capture_output=True, text=True, timeout=120)
print(r.stdout, r.stderr)
rows = sorted(re.findall(r"^\[(\S+)\] multiple child (\d) of 3 app (\d) arg (\w) yield (\w+)$", r.stdout, re.M))
tl.check(r.returncode == 0 and [row[:4] for row in rows] == [("local0:spawn1:0", "0", "0", "a"),
                                                             ("local0:spawn1:2", "2", "1", "b"),
                                                             ("local1:spawn1:1", "1", "0", "a")],
         f"MPI_Comm_spawn_multiple: exit {r.returncode}, {rows}")
# Each node runs its rank and its children on the rank's one CPU: they yield while they wait, as an
# oversubscribed node's ranks do (spinning, 6 children of one rank on 2 CPUs took 19 s, 0.7 s yielding).
tl.check([row[4] for row in rows] == ["1", "1", "1"], f"children on a crowded node yield: {rows}")

# A spawned process that fails ends the job, named as what it is.
r = tl.run(TWO_NODES + ["--", SPAWN, "2", "-", "exit", "3"], timeout=120)
print(r.stdout, r.stderr)
tl.check(r.returncode == 3 and re.search(r"failed: rank 0 of spawned namespace tlaunch\.\S+\.spawn1 on node local0 "
                                         r"exited with status 3", r.stderr),
         f"a failed spawned process: exit {r.returncode}, named in the summary")

# --keep-going: a spawned process that fails while the job's ranks are in a fence of the whole
# job does not fail that fence or the next (it is not one of the job's ranks); the job goes on,
# exits with its status and counts it as a spawned process.
SPAWN_FENCE = os.environ.get("PMIX_SPAWN_FENCE")
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--keep-going", "--", SPAWN_FENCE], timeout=120)
print(r.stdout, r.stderr)
fences = sorted(re.findall(r"pmix_spawn_fence rank (\d) fence (\d) (.*)$", r.stdout, re.M))
tl.check(fences == [("0", "1", "ok"), ("0", "2", "ok"), ("1", "1", "ok"), ("1", "2", "ok")],
         f"both fences complete on both ranks after the spawned process failed: {fences}")
tl.check(r.returncode == 1 and "spawned namespace" in r.stderr and "--keep-going" in r.stderr,
         f"--keep-going: exit {r.returncode} (the spawned process's status), named")

# Many spawns at once (each rank starts 12 helpers with PMIx_Spawn_nb): past 8 in flight they
# wait their turn at the frontend, and each of the 24 is answered and succeeds.
SPAWN_MANY = os.environ.get("PMIX_SPAWN_MANY")
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "-v", "--", SPAWN_MANY, "12"], timeout=180)
print(r.stdout, r.stderr)
many = sorted(re.findall(r"spawn_many rank (\d) ok (\d+) failed (\d+)$", r.stdout, re.M))
tl.check(r.returncode == 0 and many == [("0", "12", "0"), ("1", "12", "0")],
         f"24 spawns at once: exit {r.returncode}, {many}")
tl.check("more wait their turn" in r.stderr, "-v says that spawns waited")

# A node whose ranks have all ended goes away while a spawn waits for its answer (a daemon that
# crashed in its cleanup; a node powered off once its part was done). tlaunch is stopped
# meanwhile, so that it reads the spawn request before the node's end and asks that node: the
# spawn goes on without it (it used to wait for that answer for ever), and so does the job.
gate = tl.tempdir()
script = (f'echo ready; while [ ! -e {gate}/go$RANK ]; do sleep 0.05; done; '
          f'if [ "$RANK" = 0 ]; then exec {SPAWN_MANY} 1; fi; exec {SPAWN_MANY} 0')  # rank 1: init, finalize
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--", "sh", "-c", script])


def ranks_waiting():
    return [q for q in tl.processes_matching(f"sh\0-c\0echo ready; while [ ! -e {gate}/go") if q != p.pid]


with tl.ending(p):
    out = b""
    for _ in range(2):
        out += tl.read_until(p, b"ready\n", timeout=60)
    tl.check(out.count(b"ready") == 2, f"both ranks ready: {out!r}")
    job = tl.job_of_rank(ranks_waiting()[0])
    os.kill(p.pid, signal.SIGSTOP)
    try:
        open(f"{gate}/go0", "w").close()  # rank 0 asks for its spawn; tlaunch reads it first
        tl.check(tl.wait_until(lambda: tl.processes_matching(SPAWN_MANY + "\0" + "1\0"), 30),
                 "rank 0 runs pmix_spawn_many")
        time.sleep(0.5)
        open(f"{gate}/go1", "w").close()  # rank 1 ends; then its node goes away
        tl.check(tl.wait_until(lambda: not ranks_waiting() and not tl.processes_matching(SPAWN_MANY + "\0" + "0\0"),
                               30), "rank 1 ended")
        time.sleep(0.5)
        tl.signal_daemon(job, "local1", signal.SIGKILL, p.pid)
        time.sleep(0.5)
    finally:
        os.kill(p.pid, signal.SIGCONT)
    out, err = tl.communicate_or_fail(p, 50, "after a node went away during a spawn")
    print(out, err)
    tl.check(p.returncode == 0 and "spawn_many rank 0 ok 1 failed 0" in out,
             f"a spawn while a finished node goes away: answered and done, exit {p.returncode}")
    tl.check("node local1: its tlaunchd went away after all its ranks had ended" in err, "the node's end is said")

# Ctrl-C while a spawned process runs: it ends with the job.
mark = str(4000 + os.getpid() % 1000) + ".25"
p = tl.start(TWO_NODES + ["-v", "--", PY, MPI4PY, "sleeper", mark])
try:
    out = tl.read_until(p, b"spawning", timeout=60)
    tl.check(b"spawning" in out, f"the sleeper job started: {out!r}")
    tl.check(tl.wait_until(lambda: tl.processes_matching("sleep\0" + mark), 30), "the spawned sleep runs")
    t0 = time.monotonic()
    os.kill(p.pid, signal.SIGINT)
    _, err = tl.communicate_or_fail(p, 30, "tlaunch after Ctrl-C")
    print(err)
    tl.check(p.returncode == 130, f"Ctrl-C: exit {p.returncode}")
    tl.check(tl.wait_until(lambda: not tl.processes_matching("sleep\0" + mark), 10),
             "the spawned process ended with the job")
    tl.check(time.monotonic() - t0 < 20, "teardown within 20 s")
finally:
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
    tl.kill_leftovers("sleep\0" + mark)
print("PASS")
