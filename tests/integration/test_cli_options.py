"""The options users bring from torchrun, mpirun and srun, bounded numbers, one plan for
--dry-run --offline and the real run, the user's MASTER_ADDR, plain-Ethernet clusters and
--summary-json — with the real binary and the local launcher (issue 11 item 8, issue 12)."""
import json
import os
import re
import socket
import stat
import subprocess

import tl

tmp = tl.tempdir()


def expect(args, code, text):
    r = tl.run(args, timeout=60)
    tl.check(r.returncode == code, f"{args}: exit {r.returncode}, expected {code}; stderr: {r.stderr}")
    tl.check(text in r.stderr, f"{args}: message {text!r} not in {r.stderr!r}")
    tl.check("terminate called" not in r.stderr and "bad_alloc" not in r.stderr, f"{args}: crash: {r.stderr}")
    return r


def ranks_of(stdout):
    """{rank: line} from --tag-output rank / -l output."""
    out = {}
    for line in stdout.splitlines():
        m = re.match(r"^\[(\d+)\] (.*)$", line)
        tl.check(m is not None, f"untagged line {line!r}")
        out[int(m.group(1))] = m.group(2)
    return out


# Numbers: bounded, exit 64, the bound named (these aborted, overflowed or ran out of memory).
expect(["--stdin", "99999999999", "-p", "1", "--", "true"], 64, "--stdin 99999999999: must be a whole number from 0 to")
expect(["--heartbeat-timeout", "3000000", "-p", "1", "--", "true"], 64, "from 3 to 86400")
expect(["-p", "100000000", "--", "true"], 64, "from 1 to 4096")
expect(["--launcher", "local", "-N", "1000", "-p", "4096", "--", "true"], 64, "more than 1000000")
expect(["--launcher", "local", "-N", "5000", "-p", "1", "--", "true"], 64, "simulates at most 1024 nodes")
expect(["--launcher", "local", "--hosts", "n[1-1100]", "-p", "1", "--", "true"], 64, "1100 nodes: --launcher local simulates at most 1024")
# A flag given twice: named, in words (CLI11 said "--nodes: At Most 1 required but received 2").
expect(["-N", "2", "-N", "3", "--", "true"], 64, "--nodes was given 2 times: give it once")
expect(["--launcher", "local", "--dry-run", "--hosts", "n[1-100001]", "--", "true"], 64, "expands to more than 100000 names")

# Two names of one setting (ours, torchrun's, srun's, mpirun's) given together: refused, rather
# than one of them silently counting.
expect(["--launcher", "local", "-p", "2", "--npernode", "3", "--", "true"], 64,
       "--procs-per-node and --npernode set the same thing: give one of them")
expect(["--launcher", "local", "-N", "2", "--nnodes", "3", "--", "true"], 64, "--nodes and --nnodes set the same thing")
expect(["--launcher", "local", "-l", "--tag-output", "full", "--", "true"], 64, "set the same thing")

# Typos are refused with the bad value and the valid ones, in the job and in preflight.
expect(["preflight", "--launcher", "sssh", "--hosts", "a,b"], 64, "sssh not in {auto,local,ssh,slurm}")
expect(["preflight", "--launcher", "local", "--hosts", "a", "--preflight-skip", "memlok"], 64,
       "unknown check 'memlok'; the checks are: rdma_devices")
expect(["-p", "1", "--preflight-skip", "memlock,gpudirekt", "--", "true"], 64, "unknown check 'gpudirekt'")
expect(["--nproc-per-node", "gpus", "--", "true"], 64, "must be gpu, auto, cpu or a whole number")
expect(["--launcher", "local", "-n", "3", "-N", "4", "--", "true"], 64, "leaves 1 node(s) without a rank")
# -n 9 -N 4 is spread as srun spreads it: 3, 2, 2, 2.
spread = tl.run(["--launcher", "local", "-n", "9", "-N", "4", "--dry-run", "--", "true"])
tl.check(spread.returncode == 0 and "4 node(s), 9 ranks (3, 2, 2, 2)" in spread.stdout and
         "node local1: ranks 3-4" in spread.stdout, f"-n 9 -N 4: {spread.stdout[:400]!r} {spread.stderr!r}")
expect(["-p", "1", "-x", "RANK=3", "--", "true"], 64, "RANK differs per rank")
expect(["-p", "1", "-x", "MASTER_ADDR=node 1", "--", "true"], 64, "'node 1' is neither an IPv4 or IPv6 address nor a host name")
expect(["-p", "1", "-x", "MASTER_PORT=http", "--", "true"], 64, "MASTER_PORT must be a port from 1 to 65535")

# -n: total ranks; -l: srun's rank labels; -D: the working directory; --mca: OMPI_MCA_*.
r = tl.run(["-n", "4", "-l", "-D", tmp, "--mca", "btl_tcp_if_include", "lo", "--", "sh", "-c",
            'echo "$RANK/$WORLD_SIZE $LOCAL_RANK $(pwd) $OMPI_MCA_btl_tcp_if_include"'])
tl.check(r.returncode == 0, f"-n 4: {r.returncode} {r.stderr}")
got = ranks_of(r.stdout)
tl.check(sorted(got) == [0, 1, 2, 3], f"-n 4 ranks: {got}")
for rank, line in got.items():
    tl.check(line == f"{rank}/4 {rank} {os.path.realpath(tmp)} lo", f"rank {rank}: {line!r}")
r = tl.run(["--launcher", "local", "--nnodes", "2", "--nproc-per-node", "2", "--tag-output", "rank", "--", "sh", "-c",
            'echo "$GROUP_RANK $WORLD_SIZE"'])
tl.check(r.returncode == 0 and sorted(ranks_of(r.stdout).values()) == ["0 4", "0 4", "1 4", "1 4"],
         f"--nnodes 2 --nproc-per-node 2: {r.stdout!r} {r.stderr!r}")
# mpirun's --tag-output is a bare switch: a copied `mpirun --tag-output prog` line tags fully;
# the program's own --tag-output is its own.
r = tl.run(["-p", "1", "--tag-output", "echo", "--tag-output", "x"])
tl.check(r.returncode == 0 and r.stdout == "[local0:0] --tag-output x\n", f"bare --tag-output: {r.stdout!r} {r.stderr!r}")
r = tl.run(["-p", "1", "--tag-output", "--", "echo", "y"])
tl.check(r.returncode == 0 and r.stdout == "[local0:0] y\n", f"bare --tag-output before --: {r.stdout!r} {r.stderr!r}")
# A mistyped value is no program: refused as a value, not run on every node.
expect(["-p", "1", "--tag-output", "all", "echo", "z"], 64, "--tag-output: all not in {none,rank,full}")

# -n with an uneven last node, as with mpirun: 4 + 2 ranks, each node its own LOCAL_WORLD_SIZE.
r = tl.run(["--launcher", "local", "-n", "6", "-p", "4", "-l", "--", "sh", "-c",
            'echo "$GROUP_RANK $LOCAL_RANK/$LOCAL_WORLD_SIZE $WORLD_SIZE"'])
tl.check(r.returncode == 0, f"-n 6 -p 4: {r.returncode} {r.stderr}")
got = ranks_of(r.stdout)
want = {0: "0 0/4 6", 1: "0 1/4 6", 2: "0 2/4 6", 3: "0 3/4 6", 4: "1 0/2 6", 5: "1 1/2 6"}
tl.check(got == want, f"-n 6 -p 4: {got}")

# The user's MASTER_ADDR/MASTER_PORT win in the run exactly as --dry-run shows.
args = ["--launcher", "local", "-N", "2", "-p", "1", "-x", "MASTER_ADDR=127.0.0.2", "--master-port", "23456"]
r = tl.run(args + ["-l", "--", "sh", "-c", 'echo "$MASTER_ADDR:$MASTER_PORT"'])
tl.check(r.returncode == 0 and set(ranks_of(r.stdout).values()) == {"127.0.0.2:23456"},
         f"-x MASTER_ADDR: {r.stdout!r} {r.stderr!r}")
d = tl.run(args + ["--dry-run", "--", "true"])
tl.check(d.returncode == 0 and "MASTER_ADDR=127.0.0.2 MASTER_PORT=23456" in d.stdout, f"--dry-run: {d.stdout!r}")
tl.check("MASTER_ADDR=127.0.0.2  (-x)" in d.stdout and "MASTER_PORT=23456  (--master-port)" in d.stdout,
         f"--dry-run names the flag each value came from: {d.stdout!r}")
# tlaunch's own defaults are shown with the values rank 0 gets.
tl.check(re.search(r"and defaults \(rank 0's values; yours win\): OMP_NUM_THREADS(=\d+| unset) PYTHONUNBUFFERED=\S+ "
                   r"TORCH_NCCL_ASYNC_ERROR_HANDLING=1", d.stdout) is not None, f"--dry-run's defaults: {d.stdout!r}")

# One plan, one path: a hostfile of slots=8 plans 8 ranks per node offline as online.
hostfile = os.path.join(tmp, "hosts")
with open(hostfile, "w") as f:
    f.write("n1 slots=8\nn2 slots=8\n")
topo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../fixtures/topologies",
                    "jsc-jureca-booster-jrc5001_XeonPhi7250F_2xhfi1-OPA_no-gpu_hwloc1.11-v1fmt.xml")
off = tl.run(["--dry-run", "--offline", "--topology-xml", topo, "--hostfile", hostfile, "--", "true"])
on = tl.run(["--dry-run", "--launcher", "local", "--hostfile", hostfile, "--", "true"])
for name, res in (("offline", off), ("online", on)):
    tl.check(res.returncode == 0, f"{name}: {res.returncode} {res.stderr}")
    tl.check("2 node(s) x 8 rank(s), world size 16" in res.stdout, f"{name}: {res.stdout[:300]!r}")
    tl.check("ranks per node: 8 (slots=8 in --hostfile)" in res.stdout, f"{name}: {res.stdout[:300]!r}")
# A --dry-run's warnings are in its plan, once: they came on stderr as well.
said = (off.stdout + off.stderr).count("the topology comes from")
tl.check(said == 1 and "the topology comes from" in off.stdout, f"offline dry-run: its warning said {said} times")

# The offline plan says what a real run says before it: here, that a heterogeneous Slurm job
# runs on its first component.
het = {**os.environ, "SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": "a[1-2]", "SLURM_JOB_NODELIST_HET_GROUP_0": "a[1-2]",
       "SLURM_JOB_NODELIST_HET_GROUP_1": "b1"}
r = tl.run(["--dry-run", "--offline", "--topology-xml", topo, "--launcher", "slurm", "-p", "1", "--", "true"], env=het)
tl.check(r.returncode == 0 and "this Slurm job is heterogeneous (a[1-2] + b1): tlaunch runs on its first component"
         in r.stderr and "2 node(s) x 1 rank(s)" in r.stdout, f"offline plan of a heterogeneous job: {r.stderr}")

# Plain-Ethernet cluster: no RDMA device on any node (an empty sysfs) runs over TCP, says so
# once, and preflight skips the RDMA checks; --net ib still requires the fabric.
nordma = os.path.join(tmp, "nordma")
os.makedirs(os.path.join(nordma, "sys/class/infiniband"))
os.makedirs(os.path.join(nordma, "sys/class/net"))
has_ethernet = any(name != "lo" for _, name in socket.if_nameindex())
if has_ethernet:
    r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--sysfs-root", nordma, "--", "true"])
    tl.check(r.returncode == 0, f"plain Ethernet job: {r.returncode} {r.stderr}")
    tl.check(r.stderr.count("no RDMA device on any node: the job runs over TCP") == 1, f"banner: {r.stderr!r}")
    p = tl.run(["preflight", "--launcher", "local", "--hosts", "a,b", "--sysfs-root", nordma, "--json"])
    tl.check(p.returncode == 0, f"preflight without RDMA: {p.returncode} {p.stdout[-500:]} {p.stderr}")
    rows = [i for i in json.loads(p.stdout) if i["check"] == "rdma_devices"]
    tl.check(rows and all(i["status"] == "skip" and i["found"] == "no RDMA on any node" for i in rows),
             f"rdma_devices rows: {rows}")
    expect(["--launcher", "local", "-N", "2", "-p", "1", "--net", "ib", "--sysfs-root", nordma, "--", "true"], 78,
           "rdma_devices")

# --summary-json: whose status it is, the failed rank and node, the signal.
summary = os.path.join(tmp, "summary.json")


def summary_of(args):
    if os.path.exists(summary):
        os.remove(summary)
    r = tl.run(["--summary-json", summary] + args)
    tl.check(os.path.exists(summary), f"{args}: no summary written; {r.stderr}")
    with open(summary) as f:
        return r, json.load(f)


r, s = summary_of(["--launcher", "local", "-N", "2", "-p", "1", "--", "sh", "-c", 'test "$RANK" = 1 && exit 3; sleep 5'])
tl.check(r.returncode == 3 and s["exit_status"] == 3 and s["origin"] == "rank" and s["failed_rank"] == 1
         and s["failed_node"] == "local1" and s["signal"] is None, f"rank exit 3: {s}")
# Rank 0 was ended by the teardown: -1, not the 143 of our SIGTERM (it looked like its own death).
tl.check(s["rank_exit_codes"] == [-1, 3], f"rank exit codes: {s['rank_exit_codes']}")
r, s = summary_of(["-p", "1", "--", "sh", "-c", "kill -9 $$"])
tl.check(r.returncode == 137 and s["origin"] == "rank" and s["signal"] == 9, f"killed: {s}")
r, s = summary_of(["-p", "1", "-x", "NOT_SET_ANYWHERE_XYZ", "--", "true"])
tl.check(r.returncode == 64 and s["origin"] == "tlaunch" and s["meaning"] == "usage", f"usage: {s}")
r, s = summary_of(["--launcher", "local", "-N", "1", "-p", "1", "--", "no-such-program-xyz"])
tl.check(r.returncode == 127 and s["origin"] == "tlaunch" and s["failed_node"] == "local0", f"missing program: {s}")
r, s = summary_of(["-p", "1", "--", "true"])
tl.check(r.returncode == 0 and s["origin"] == "none" and s["exit_status"] == 0, f"success: {s}")
expect(["--summary-json", "/nonexistent-dir/s.json", "-p", "1", "--", "true"], 64, "/nonexistent-dir")
# A directory, or a path under a file, is refused before the job runs (it ran, then exited 0
# without a summary).
expect(["--summary-json", tmp, "-p", "1", "--", "true"], 64, "is a directory")
expect(["--summary-json", os.path.join(summary, "x.json"), "-p", "1", "--", "true"], 64, "is not a directory")
# A rank's stderr that is not UTF-8 reaches the summary (bad bytes replaced): dumping it aborted.
r, s = summary_of(["-p", "1", "--", "sh", "-c", "printf 'bad \\377 byte\\n' >&2; exit 3"])
tl.check(r.returncode == 3 and s["exit_status"] == 3 and any("bad \ufffd byte" in l for l in s["stderr_tail"]),
         f"non-UTF-8 stderr: exit {r.returncode}: {s} {r.stderr[-300:]}")
# A command line the parser refuses still gets its summary (the README promises it): usage, exit 64.
for bad in (["--bogus"], ["--stdin", "abc"], ["--time-limit", "5"]):
    r, s = summary_of(bad + ["--", "true"])
    tl.check(r.returncode == 64 and s["exit_status"] == 64 and s["meaning"] == "usage" and s["reason"]
             and s["job_id"] is None, f"{bad}: exit {r.returncode}: {s}")
# What is not a regular file is written where it is, as `>` would, never replaced by a plain file;
# a file of the summary's name plus ".tmp" (a link someone planted) is neither followed nor used.
special = os.path.join(tmp, "special")
os.makedirs(special)
victim = os.path.join(special, "victim")
with open(victim, "w") as f:
    f.write("precious\n")
planted = os.path.join(special, "s.json")
os.symlink(victim, planted + ".tmp")
r = tl.run(["--summary-json", planted, "-p", "1", "--", "false"])
with open(victim) as f:
    tl.check(f.read() == "precious\n", "the summary went through a planted FILE.tmp link")
tl.check(os.path.islink(planted + ".tmp") and not os.path.islink(planted) and json.load(open(planted))["exit_status"] == 1,
         f"summary next to a planted link: exit {r.returncode} {r.stderr}")
link = os.path.join(special, "link.json")
os.symlink(victim, link)
r = tl.run(["--summary-json", link, "-p", "1", "--", "true"])
tl.check(os.path.islink(link) and json.load(open(victim))["exit_status"] == 0, f"through a symlink: {r.stderr}")
fifo = os.path.join(special, "fifo")
os.mkfifo(fifo)
reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE)
r = tl.run(["--summary-json", fifo, "-p", "1", "--", "true"])
got, _ = reader.communicate(timeout=30)
tl.check(r.returncode == 0 and json.loads(got)["exit_status"] == 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode),
         f"into a FIFO: exit {r.returncode}, read {got[:200]!r}, {r.stderr}")
# As /dev/stdout is (a private copy of it: a regression must not replace the machine's own).
stdout_link = os.path.join(special, "stdout")
os.symlink("/proc/self/fd/1", stdout_link)
r = tl.run(["--summary-json", stdout_link, "-q", "-p", "1", "--", "true"])
tl.check(r.returncode == 0 and '"exit_status": 0' in r.stdout and os.path.islink(stdout_link),
         f"into a link to /proc/self/fd/1: exit {r.returncode}: {r.stdout!r} {r.stderr}")
# ... while tlaunch's stdout is a log file (sbatch's slurm-%j.out, `> run.log`): the summary comes
# after the job's output; opened again with O_TRUNC it had emptied the log.
log = os.path.join(special, "run.log")
with open(log, "w") as f:
    r = subprocess.run([tl.TLAUNCH, "--summary-json", stdout_link, "-q", "-p", "1", "--", "echo", "rank-output"],
                       stdout=f, stderr=subprocess.PIPE, text=True, timeout=60)
with open(log) as f:
    text = f.read()
tl.check(r.returncode == 0 and "rank-output" in text and text.index("rank-output") < text.index('"exit_status": 0'),
         f"summary into tlaunch's own stdout, a file: exit {r.returncode}: {text!r} {r.stderr}")
# A link someone else owns is not followed (it could aim the summary at any file of ours).
foreign = os.path.join(special, "foreign.json")
os.symlink(victim, foreign)
os.lchown(foreign, 65534, 65534)
expect(["--summary-json", foreign, "-p", "1", "--", "true"], 64, "is a symbolic link of another user's (uid 65534)")
# Nor another user's FIFO or file planted at the name (the summary holds the ranks' last stderr
# lines; a FIFO's reader got them, and a sticky /tmp refused the replacement after the job).
planted_fifo = os.path.join(special, "planted-fifo.json")
os.mkfifo(planted_fifo)
os.chown(planted_fifo, 65534, 65534)
expect(["--summary-json", planted_fifo, "-p", "1", "--", "true"], 64, "it is another user's FIFO (uid 65534)")
planted_file = os.path.join(special, "planted-file.json")
with open(planted_file, "w") as f:
    f.write("{}")
os.chown(planted_file, 65534, 65534)
expect(["--summary-json", planted_file, "-p", "1", "--", "true"], 64, "it is another user's file (uid 65534)")

# --keep-daemons for a node that is this host (--hosts $(hostname)): its daemon is forked, nothing
# is kept, and the user hears so; it was dropped without a word, and -v said "via ssh".
r = tl.run(["--hosts", socket.gethostname(), "-p", "1", "-v", "--keep-daemons", "5m", "--", "true"])
tl.check(r.returncode == 0 and "is this host: its daemon is started directly each time, nothing is kept" in r.stderr
         and "via ssh" not in r.stderr, f"--keep-daemons on this host: {r.returncode} {r.stderr}")
print("PASS")
