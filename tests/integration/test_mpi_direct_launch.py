"""MPI programs direct-launch under tlaunch (each daemon is a PMIx server, like srun
--mpi=pmix): Open MPI C programs and mpi4py on 1 and several simulated nodes, a raw PMIx
client across nodes (fence + direct modex), Open MPI's settings as the ranks see them (yield on an
oversubscribed node, the PML), MPI_Abort's status, a rank dying in MPI_Init, and no PMIx/Open MPI
files left behind."""
import glob
import os
import re
import signal
import socket
import subprocess
import time

import tl

HELLO = os.environ.get("PMIX_MPI_HELLO")
CLIENT = os.environ.get("PMIX_CLIENT")
ABORT = os.environ.get("PMIX_MPI_ABORT")
BARRIER = os.environ.get("PMIX_BARRIER")
SETTINGS = os.environ.get("PMIX_MPI_SETTINGS")
if not (HELLO and CLIENT and ABORT and BARRIER and SETTINGS and os.path.exists(HELLO)):
    tl.skip("MPI test programs were not built (mpicc / libpmix-dev missing)")


def leftover_files():
    return sorted(glob.glob("/tmp/tlaunch.tl-*") + glob.glob("/dev/shm/tlaunch.*") + glob.glob("/dev/shm/vader_segment.*"))


before = set(leftover_files())


def hello(args, size, ppn):
    r = tl.run(args + ["--", HELLO, str(size), str(ppn)], timeout=120)
    print(r.stdout, r.stderr)
    tl.check(r.returncode == 0, f"{args}: exit {r.returncode}")
    oks = [l for l in r.stdout.splitlines() if re.search(r"mpi_hello rank \d+/%d .* ok$" % size, l)]
    tl.check(len(oks) == size, f"{args}: {len(oks)} ranks ok of {size}")


hello(["-p", "4"], 4, 4)
hello(["--launcher", "local", "-N", "3", "-p", "2"], 6, 2)

# mpi4py 2x2: the communicator spans both simulated nodes.
r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "--tag-output=rank", "--", tl.PYTHON, "-c",
            "from mpi4py import MPI; c = MPI.COMM_WORLD; print(c.Get_rank(), c.Get_size(), c.allreduce(c.Get_rank()))"],
           timeout=120)
tl.check(r.returncode == 0, f"mpi4py: {r.returncode} {r.stderr}")
tl.check(sorted(r.stdout.splitlines()) == [f"[{i}] {i} 4 6" for i in range(4)], f"mpi4py: {r.stdout!r}")

# Nodes of different sizes (-n 5 -N 2: 3 and 2, as srun spreads them): each rank's node-local
# communicator is its own node's ranks, from the PMIx node and process maps.
r = tl.run(["--launcher", "local", "-n", "5", "-N", "2", "--tag-output=rank", "--", tl.PYTHON, "-c",
            "from mpi4py import MPI; c = MPI.COMM_WORLD; s = c.Split_type(MPI.COMM_TYPE_SHARED); "
            "print(c.Get_rank(), c.Get_size(), s.Get_rank(), s.Get_size(), c.allreduce(c.Get_rank()))"],
           timeout=120)
tl.check(r.returncode == 0, f"mpi4py 3 + 2: {r.returncode} {r.stderr}")
tl.check(sorted(r.stdout.splitlines()) == ["[0] 0 5 0 3 10", "[1] 1 5 1 3 10", "[2] 2 5 2 3 10", "[3] 3 5 0 2 10",
                                          "[4] 4 5 1 2 10"], f"mpi4py 3 + 2: {r.stdout!r}")

# Raw PMIx client across two nodes named as it expects: job size, local/node ranks, peers,
# host names, the node's topology as hwloc XML (what Open MPI loads instead of reading sysfs
# in every rank), and a value put on one node and read on the other (after a fence, and by
# direct modex).
for extra in (["topology"], ["direct"]):
    r = tl.run(["--launcher", "local", "--hosts", "nodeA,nodeB", "-p", "2", "--", CLIENT, "2", "2"] + extra, timeout=60)
    print(r.stdout, r.stderr)
    tl.check(r.returncode == 0, f"pmix client {extra}: exit {r.returncode}")

# A rank asked for its data by another node's rank (direct modex) dies before it commits any:
# with --keep-going the asking rank's PMIx_Get fails (it would otherwise wait forever).
# On a hang, the ranks that did answer are printed (seen once in ~25 runs, not understood yet).
p = tl.start(["-v", "--launcher", "local", "--hosts", "nodeA,nodeB", "-p", "2", "--keep-going", "--",
              CLIENT, "2", "2", "getdead"])
try:
    out, err = p.communicate(timeout=60)
except subprocess.TimeoutExpired:
    os.killpg(p.pid, signal.SIGKILL)
    out, err = p.communicate()
    tl.fail(f"get of a dead rank: hung; the ranks that answered:\n{out}\n{err[-3000:]}")
print(out, err)
tl.check(p.returncode == 3, f"get of a dead rank: exit {p.returncode}, want rank 0's 3")
tl.check(out.count("get of rank 0, which died: failed as it must") == 3, f"get of a dead rank: {out!r}")

# --keep-going with a plain MPI program: Open MPI 4.1 does not end the survivors of a failed rank,
# which wait for it for ever (in their next collective, or in MPI_Init's fence when it failed
# before MPI_Init, also on its own node): the job ends as without --keep-going, saying why. Both
# hung until killed. (Fault-aware programs on PMIx alone go on: test_pmix_events.py.)
# Which of the two ways says it depends on whether another rank called MPI_Init before rank 1
# failed; either way the job ends with rank 1's status.
before_init = "import os, sys\nif os.environ['RANK'] == '1': sys.exit(3)\nfrom mpi4py import MPI\nMPI.COMM_WORLD.Barrier()"
said = "--keep-going cannot keep an MPI program going"
kept = [
    (before_init, ["-N", "1", "-p", "2"], 3, said),
    (before_init, ["-N", "2", "-p", "2"], 3, said),
    ("import os, time\nfrom mpi4py import MPI\nc = MPI.COMM_WORLD\nc.Barrier()\n"
     "if c.rank == 1: os._exit(7)\ntime.sleep(1)\nc.Barrier()",
     ["-N", "2", "-p", "2"], 7, "rank 1 on node local0 exited with status 7; " + said),
    ("import os, time\nfrom mpi4py import MPI\nc = MPI.COMM_WORLD\nc.Barrier()\n"  # status 0, no MPI_Finalize
     "if c.rank == 1: os._exit(0)\ntime.sleep(1)\nc.Barrier()",
     ["-N", "2", "-p", "2"], 1, "without calling MPI_Finalize"),
]
for program, layout, status, said in kept:
    started = time.monotonic()
    r = tl.run(["--launcher", "local", *layout, "--keep-going", "--", tl.PYTHON, "-c", program], timeout=120)
    tl.check(r.returncode == status and said in r.stderr, f"--keep-going MPI {layout}: exit {r.returncode}: {r.stderr}")
    tl.check(time.monotonic() - started < 60, f"--keep-going MPI: the job took {time.monotonic() - started:.0f} s")

# A rank that ends with status 0 improperly, as mpirun counts it, ends the job with status 1
# naming it: after MPI_Init without MPI_Finalize (os._exit(0)), while the others are in
# MPI_Finalize or wait for it in a barrier (for ever, before); before MPI_Init while the others
# call it (their MPI_Init's fence waited for it for ever).
improper = [
    ("os._exit(0) if r == 3 else time.sleep(2); MPI.Finalize()", "without calling MPI_Finalize"),
    ("os._exit(0) if r == 3 else time.sleep(1); c.Barrier(); MPI.Finalize()", "without calling MPI_Finalize"),
]
for program, said in improper:
    started = time.monotonic()
    r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "--", tl.PYTHON, "-c",
                "import os, sys, time; from mpi4py import MPI; c = MPI.COMM_WORLD; r = c.rank; c.Barrier(); " + program],
               timeout=120)
    tl.check(r.returncode == 1 and f"rank 3 on node local1 exited with status 0 {said}" in r.stderr,
             f"{program}: exit {r.returncode}: {r.stdout!r} {r.stderr}")
    tl.check(time.monotonic() - started < 60, f"{program}: the job took {time.monotonic() - started:.0f} s to end")
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--", tl.PYTHON, "-c",
            "import os, sys\nif os.environ['RANK'] == '1': sys.exit(0)\n"
            "import time; time.sleep(1); from mpi4py import MPI; MPI.COMM_WORLD.Barrier()"], timeout=120)
tl.check(r.returncode == 1 and "rank 1 on node local1 exited with status 0 before calling MPI_Init" in r.stderr,
         f"a rank that left before MPI_Init: exit {r.returncode}: {r.stderr}")

# A fence without data (Open MPI's barrier at the end of MPI_Init and in MPI_Finalize) is a
# barrier of the whole job: rank 0 enters each of 3 fences 1 s late, and the ranks on the other
# node wait for it too (under srun --mpi=pmix of Slurm 22.05 they do not: tests/bench). A rank
# released late from the fence before (a loaded machine) waits that much less: half the delay
# is the margin.
r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "--tag-output", "none", "--", BARRIER, "1000", "3"], timeout=60)
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"empty fence: exit {r.returncode}: {r.stderr}")
waits = [(int(m[0]), float(m[1])) for m in re.findall(r"^pmix_barrier rank (\d+) host \S+ fence \d waited_ms ([\d.]+)$",
                                                        r.stdout, re.M)]
tl.check(len(waits) == 12, f"empty fence: {len(waits)} fence lines of 12")
# Ranks 2 and 3 run on the second node (-p 2 places ranks in blocks); half the delay, as the program checks.
tl.check(all(w >= 500 for rank, w in waits if rank >= 2), f"ranks on the other node did not wait for rank 0: {waits}")

# What Open MPI takes from the plan, read back in each rank (MPI_T) and from the PMIx server.
# A node of two CPUs (an hwloc synthetic topology) running 3 ranks is oversubscribed: waiting
# ranks yield the CPU (mpirun sets the same there) and PMIx says so (Open MPI 5 reads that); CPU
# ranks without RDMA run ob1 (no UCX start-up in MPI_Init). 1 rank there: no yield; the user's
# own PML wins.
tiny = os.path.join(tl.tempdir(), "two-cpus.xml")
made = subprocess.run(["lstopo-no-graphics", "--of", "xml", "-i", "pack:1 core:2 pu:1", tiny],
                      capture_output=True, text=True)
tl.check(made.returncode == 0, f"lstopo-no-graphics (Debian's hwloc) made no topology: {made.stderr}")
for ranks, extra, want in ((3, [], "yield=1 pml=ob1 oversubscribed=1"),
                           (1, ["-x", "OMPI_MCA_pml=^ucx"], "yield=0 pml=^ucx oversubscribed=0")):
    r = tl.run(["--launcher", "local", "-p", str(ranks), "--topology-xml", tiny, "--tag-output", "none", *extra, "--",
                SETTINGS], timeout=120)
    lines = sorted(r.stdout.splitlines())
    tl.check(r.returncode == 0 and lines == [f"mpi_settings rank {i} {want}" for i in range(ranks)],
             f"Open MPI's settings, {ranks} rank(s) on 2 CPUs {extra}: exit {r.returncode}: {r.stdout!r} {r.stderr}")

# Without the PMIx server the same program sees singletons: the server is what makes it work.
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--pmix=off", "--", HELLO, "2", "1"], timeout=120)
tl.check(r.returncode != 0, "--pmix=off: MPI ranks cannot form the job")

# MPI_Abort(comm, 7) in rank 1: the job exits 7 and the summary names the rank.
t0 = time.monotonic()
r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "--", ABORT], timeout=60)
tl.check(r.returncode == 7, f"MPI_Abort: exit {r.returncode}, expected 7: {r.stderr}")
tl.check("rank 1 on node local0 called MPI_Abort with status 7" in r.stderr, f"summary: {r.stderr}")
# Its last stderr lines are quoted, as for any failed rank (they come with its exit, after the call).
quoted = r.stderr.partition("last lines of rank 1's stderr:")[2]
tl.check("| mpi_abort: rank 1 aborting with 7" in quoted, f"MPI_Abort's stderr tail: {r.stderr}")
tl.check(time.monotonic() - t0 < 50, "MPI_Abort ended the job quickly")
# A status whose low 8 bits are 0 is no success: MPI_Abort(256) exited 0 (a process's status).
r = tl.run(["--launcher", "local", "-N", "1", "-p", "2", "--", ABORT, "256"], timeout=60)
tl.check(r.returncode == 1, f"MPI_Abort(256): exit {r.returncode}, expected 1: {r.stderr}")
tl.check("called MPI_Abort with status 256" in r.stderr, f"summary: {r.stderr}")

# A stranger's idle connection to a node's PMIx port: libpmix 4.2.2 reads a new connection's
# handshake blocking, on the thread that serves every rank, and the ranks' MPI_Init waited for as
# long as the connection stayed open (59 s for 60 s). tlaunchd bounds that read (2 s).
marker = f"idle-pmix-{os.getpid()}"
p = tl.start(["--launcher", "local", "-N", "1", "-p", "2", "-q", "-x", f"MARK={marker}", "--", "sh", "-c",
              f"sleep 3; exec {HELLO} 2 2"])
idle = None
try:
    ranks = []
    tl.wait_until(lambda: bool(ranks.extend(tl.processes_with_env("MARK", marker)) or ranks), 30)
    tl.check(ranks, "idle PMIx connection: the ranks were not found")
    with open(f"/proc/{ranks[0]}/environ", "rb") as f:
        env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
    uri = re.search(rb"tcp4://127\.0\.0\.1:(\d+)", env.get(b"PMIX_SERVER_URI41", b""))
    tl.check(uri, f"idle PMIx connection: no PMIx server URI in the ranks' environment: {env.get(b'PMIX_SERVER_URI41')}")
    idle = socket.create_connection(("127.0.0.1", int(uri.group(1))))  # and it says nothing
    t0 = time.monotonic()
    try:
        out, err = p.communicate(timeout=45)
    except subprocess.TimeoutExpired:
        tl.fail("idle PMIx connection: the MPI job did not end while a stranger held a connection to its PMIx port")
    tl.check(p.returncode == 0, f"idle PMIx connection: exit {p.returncode}: {err[-600:]}")
    print(f"PASS: an idle connection to the PMIx port held the MPI job {time.monotonic() - t0:.1f} s, not for ever")
finally:
    if idle:
        idle.close()
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()

# A rank killed during MPI_Init: the job ends, nothing remains.
r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "--kill-timeout", "2", "--",
            tl.program("mpi_rank_dies_in_init.sh"), HELLO, "4", "2"], timeout=60)
tl.check(r.returncode == 137, f"rank killed in MPI_Init: exit {r.returncode}: {r.stderr}")
tl.check("rank 1 on node local0 was killed by signal 9" in r.stderr, f"summary: {r.stderr}")
job = re.search(r"job (tl-[0-9a-f]+)", r.stderr).group(1)
tl.check(tl.wait_until(lambda: not tl.processes_with_env("TLAUNCH_JOB_ID", job), 10), "ranks left behind")

tl.check(tl.wait_until(lambda: set(leftover_files()) <= before, 5),
         f"stale PMIx/Open MPI files: {sorted(set(leftover_files()) - before)}")
print("PASS")
