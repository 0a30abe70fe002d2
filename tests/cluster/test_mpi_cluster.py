#!/usr/bin/python3
"""MPI programs direct-launched by tlaunch (issue 6: every tlaunchd is a PMIx server for its ranks,
no mpirun) on a 4-node virtual cluster (contrib/vcluster) with sshd and Slurm, as a user sees it:

- the C MPI hello (Init, local communicator, Allreduce, ring, Barrier), 4 nodes x 2 ranks over ssh,
  frontend on the host and inside node1: every rank ok, on the node its tag names;
- mpi4py 4 x 2: allreduce of the ranks is 28 on every rank, and Open MPI's TCP BTL is confined to
  the job's network (OMPI_MCA_btl_tcp_if_include = the ib0 subnet);
- the same C hello inside `salloc -N 4` with no launcher flag (tlaunch picks Slurm by itself);
- MPI_Abort(7) in rank 1: tlaunch exits 7 and its summary names rank 1 and node1;
- MPI_Comm_spawn (issue 15) over ssh on 4 and on 2 nodes (onto a named host), inside salloc, and
  mpi4py.futures' pool: children placed round robin or where asked, talking to their parents;
- MPI traffic stays off the management network: daemons read the real mlx4_0 sysfs capture
  (--sysfs-root DIR/{node}), frontend inside node1, 20 MPI all-reduces of 1 MiB with tcpdump on both
  of the switch's bridges: the management bridge carries no TCP payload but SSH (and Slurm's own
  control messages), the fabric bridge carries the MPI bytes, sent by every node.

After each job: no process of the job on any node, no /tmp/tlaunch.* in any node's /tmp, no
tlaunch.*, vader_segment.* (Open MPI shared memory) or other MPI/PMIx files in the nodes' /tmp and
/dev/shm. Needs root (exits 77, skipped, where a virtual cluster cannot be built) and the MPI test
programs of tests/pmix (PMIX_MPI_HELLO, PMIX_MPI_ABORT). One cluster for all checks; it first waits
while another process's cluster holds this machine.
"""
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vcluster import VClusterError, skip_unless_possible  # noqa: E402
import cluster_jobs as cj  # noqa: E402
import test_fabric_common as fc  # noqa: E402

TIMEOUT = 120
WAIT_FOR_CLUSTER_S = 420
RANKS_PER_NODE = 2
SKIP_MEMLOCK = ["--preflight-skip", "memlock"]  # see test_fabric_capture.py: RLIMIT_MEMLOCK is fixed here
TRAFFIC_ITERATIONS = 20
TRAFFIC_DOUBLES = 131072  # 1 MiB per all-reduce
SLURM_PORTS = (16817, 6818)  # slurmctld and slurmd (contrib/vcluster's slurm.conf): the cluster's own chatter
LEFTOVER_PREFIXES = ("tlaunch.", "vader_segment.", "ompi.", "pmix", "openmpi-sessions", "sm_segment.")
# What the caller's environment must not slip into the jobs.
CLEAN_ENV_PREFIXES = (*fc.FABRIC_ENV_PREFIXES, "OMPI_", "PMIX_", "PRTE_")

MPI4PY_ALLREDUCE = ("import os; from mpi4py import MPI; c = MPI.COMM_WORLD; "
                    "print(c.Get_rank(), c.Get_size(), c.allreduce(c.Get_rank()), "
                    "os.environ.get('OMPI_MCA_btl_tcp_if_include'))")
# Moves real data between the nodes: ITERATIONS all-reduces of DOUBLES float64 each.
MPI_TRAFFIC = """\
import os, sys
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
iterations, n = int(sys.argv[1]), int(sys.argv[2])
mine = np.full(n, c.Get_rank() + 1, dtype=np.float64)
total = np.empty_like(mine)
for _ in range(iterations):
    c.Allreduce(mine, total, op=MPI.SUM)
want = c.Get_size() * (c.Get_size() + 1) // 2
print(f"rank {c.Get_rank()}/{c.Get_size()} allreduce={total[0]:.0f} expected={want} "
      f"btl_tcp_if_include={os.environ.get('OMPI_MCA_btl_tcp_if_include')} "
      f"{'OK' if np.all(total == want) else 'WRONG'}")
"""

check = cj.Checks()
jobs_seen = []


class Job:
    """The MPI programs where every node sees them, and runs of tlaunch (on the host or inside a node)."""

    def __init__(self, vc, ws):
        self.vc = vc
        self.ws = ws
        self.hello = self._visible(os.environ["PMIX_MPI_HELLO"])
        self.abort = self._visible(os.environ["PMIX_MPI_ABORT"])
        accept_connect = os.environ.get("PMIX_MPI_ACCEPT_CONNECT")
        self.accept_connect = self._visible(accept_connect) if accept_connect else None
        group = os.environ.get("PMIX_GROUP")
        self.group = self._visible(group) if group else None
        spawn = os.environ.get("PMIX_MPI_SPAWN")
        self.spawn = self._visible(spawn) if spawn else None
        self.spawn_py = self._visible(str(Path(__file__).resolve().parent.parent / "pmix" / "mpi4py_spawn.py"))
        self.traffic = ws.path("mpi_traffic.py")
        Path(self.traffic).write_text(MPI_TRAFFIC)
        self.env = {k: v for k, v in vc.environ().items() if not k.startswith(CLEAN_ENV_PREFIXES)}

    def _visible(self, program):
        """The program itself, or a copy in the workspace if it lives in a node-private directory."""
        if str(Path(program).resolve()).startswith(cj.NODE_PRIVATE):
            return shutil.copy2(program, self.ws.dir)
        return program

    def run(self, argv, node=None, timeout=TIMEOUT):
        """CompletedProcess of argv (on the host, or inside `node`) with .elapsed and .job (tlaunch's
        job id from its banner, or None)."""
        if node is not None:
            argv = self.vc.exec_argv(node, argv)
        t0 = time.monotonic()
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                           timeout=timeout, cwd=self.ws.dir, env=self.env)
        r.elapsed = time.monotonic() - t0
        r.job = cj.job_id_in(r.stderr)
        if r.job:
            jobs_seen.append(r.job)
        return r

    def tlaunch(self, args, node=None, net=cj.NET, timeout=TIMEOUT):
        return self.run([self.ws.tlaunch, *net, "--hosts", ",".join(self.vc.nodes), "-p", str(RANKS_PER_NODE),
                         *args], node, timeout)


def hello_wrong(stdout, nodes):
    """None if stdout is one ok line of pmix_mpi_hello per rank, each on the node its tag names
    (ranks placed in blocks of RANKS_PER_NODE); otherwise what is wrong."""
    world = len(nodes) * RANKS_PER_NODE
    seen = set()
    for line in stdout.splitlines():
        m = re.fullmatch(rf"\[([\w.-]+):(\d+)\] mpi_hello rank (\d+)/{world} on (\S+): local={RANKS_PER_NODE} "
                         rf"sum={world * (world - 1) // 2} ring=(\d+) ok", line)
        if not m:
            return f"unexpected line {line!r}"
        tag_node, tag_rank, rank, host = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        node = nodes[rank // RANKS_PER_NODE]
        if tag_rank != rank or tag_node != node or host != node:
            return f"rank {rank} should run on {node}: {line!r}"
        seen.add(rank)
    if seen != set(range(world)):
        return f"ranks that printed ok: {sorted(seen)}, expected 0..{world - 1}"
    return None


def node_leftovers(vc):
    """{node: [path]} of tlaunch/MPI/PMIx files in the nodes' private /tmp and /dev/shm."""
    found = {}
    for node in vc.nodes:
        listing = vc.exec(node, ["/bin/sh", "-c", "cd /tmp && ls -A; echo ::; cd /dev/shm && ls -A"],
                          capture_output=True, text=True, timeout=60).stdout
        tmp, _, shm = listing.partition("::\n")
        left = [f"/tmp/{n}" for n in tmp.split() if n.startswith(LEFTOVER_PREFIXES)]
        left += [f"/dev/shm/{n}" for n in shm.split() if n.startswith(LEFTOVER_PREFIXES)]
        if left:
            found[node] = left
    return found


def host_leftovers(job):
    """The job's files in the host's /tmp and /dev/shm (a frontend on the host makes none; others'
    jobs may have theirs there)."""
    return [str(p) for d in ("/tmp", "/dev/shm") for p in Path(d).glob(f"tlaunch.{job}*")]


def nothing_left(what, vc, job, within=10):
    """Checks that, within `within` s, no process of the job lives on any node and no node (nor the
    host) holds its files."""
    if not job:
        check(False, f"{what}: tlaunch printed its job id", "no 'job tl-...' in its messages")
        return
    state = {}

    def clean():
        state["procs"] = cj.job_processes(job)
        state["nodes"] = node_leftovers(vc)
        state["host"] = host_leftovers(job)
        return not (state["procs"] or state["nodes"] or state["host"])

    t0 = time.monotonic()
    ok = cj.tl.wait_until(clean, within, interval=0.2)
    check(ok, f"{what}: nothing of job {job} left: no process on any node, no tlaunch/MPI file in the nodes' "
              f"/tmp and /dev/shm ({time.monotonic() - t0:.1f} s)",
          f"processes: {state['procs']}\n     node files: {state['nodes']}\n     host files: {state['host']}")


def c_hello(job, vc):
    for where in (None, "node1"):
        who = "the host" if where is None else where
        r = job.tlaunch(["--", job.hello, str(len(vc.nodes) * RANKS_PER_NODE), str(RANKS_PER_NODE)], node=where)
        wrong = hello_wrong(r.stdout, vc.nodes)
        check(r.returncode == 0 and wrong is None,
              f"C MPI hello 4 nodes x 2 ranks over ssh, frontend on {who}: every rank ok ({r.elapsed:.1f} s)",
              f"{wrong}\n     {cj.describe(r)}")
        nothing_left(f"C MPI hello from {who}", vc, r.job)


def mpi4py_allreduce(job, vc):
    r = job.tlaunch(["--", cj.PYTHON, "-c", MPI4PY_ALLREDUCE], node="node1")
    cidr = fc.fabric_cidr(vc)
    world = len(vc.nodes) * RANKS_PER_NODE
    expected = {f"[{vc.nodes[rank // RANKS_PER_NODE]}:{rank}] {rank} {world} {world * (world - 1) // 2} {cidr}"
                for rank in range(world)}
    got = r.stdout.splitlines()
    check(r.returncode == 0 and sorted(got) == sorted(expected),
          f"mpi4py 4 x 2: every rank's allreduce is {world * (world - 1) // 2}, btl_tcp_if_include={cidr} "
          f"({r.elapsed:.1f} s)", f"missing {sorted(expected - set(got))}\n     {cj.describe(r)}")
    nothing_left("mpi4py", vc, r.job)


def accept_connect(job, vc):
    """Issue 15: MPI_Publish_name / MPI_Lookup_name and MPI_Comm_accept / MPI_Comm_connect between
    rank 0 (node1) and the last rank (the last node), the name service at the frontend."""
    r = job.tlaunch(["--", job.accept_connect])
    world = len(vc.nodes) * RANKS_PER_NODE
    oks = [l for l in r.stdout.splitlines() if re.search(r"mpi_accept_connect rank \d+ ok$", l)]
    check(r.returncode == 0 and len(oks) == world,
          f"MPI_Publish_name + MPI_Comm_accept/connect between node1 and {vc.nodes[-1]} over ssh, "
          f"{len(vc.nodes)} x {RANKS_PER_NODE}: every rank ok ({r.elapsed:.1f} s)", cj.describe(r))
    nothing_left("MPI accept/connect", vc, r.job)


def pmix_groups(job, vc):
    """Issue 15: PMIx_Group_construct/destruct with a raw PMIx client, over ssh and inside salloc:
    a group of the whole job and one of rank 0 (node1) and the last rank (the last node), each
    with one context id on every member and a different one per group."""
    world = len(vc.nodes) * RANKS_PER_NODE
    last = str(world - 1)
    for how, run in (("over ssh", lambda: job.tlaunch(["--", job.group])),
                     ("inside salloc", lambda: job.run(["salloc", "-N", str(len(vc.nodes)), "-J", "tlc-pmix-group",
                                                        job.ws.tlaunch, *cj.NET, "-p", str(RANKS_PER_NODE), "--",
                                                        job.group]))):
        r = run()
        rows = dict(re.findall(r"pmix_group rank (\d+) (all \d+ pair \S+)$", r.stdout, re.M))
        all_ids = {row.split()[1] for row in rows.values()}
        pair_ids = {rows[k].split()[3] for k in ("0", last) if k in rows}
        check(r.returncode == 0 and len(rows) == world and len(all_ids) == 1 and len(pair_ids) == 1
              and all_ids != pair_ids,
              f"PMIx groups {how}, {len(vc.nodes)} x {RANKS_PER_NODE}: the whole job and ranks 0 + {last}, one "
              f"context id each on every member ({r.elapsed:.1f} s)", cj.describe(r))
        nothing_left(f"PMIx groups {how}", vc, r.job)


def spawned_children(stdout):
    """{tag: host} of every child line of tests/pmix/mpi_spawn.c whose view of the job is whole."""
    return dict(re.findall(r"^\[(\S+)\] mpi_spawn child \d+ of \d+ token 4242 sum \d+ merged \d+ host (\S+)$",
                           stdout, re.M))


def comm_spawn(job, vc):
    """Issue 15: MPI_Comm_spawn from C over ssh (4 nodes; 2 nodes onto a named host) and inside
    salloc, and mpi4py.futures' pool over ssh: each child runs on the node tlaunch placed it on
    (its tag and its own host name agree), talks to its parents, and nothing is left.

    One rank per node: Open MPI's waiting ranks busy-poll, and with 2 per node (8 on this 2-core
    machine) the children's start-up (Debian's libpsm2/libinfinipath constructors spin too) took
    10-20 s, sometimes minutes; with one per node it takes 2-3 s."""
    n = len(vc.nodes)
    round_robin = {f"{vc.nodes[i]}:spawn1:{i}": vc.nodes[i] for i in range(n)}
    two = vc.nodes[:2]
    onto = {f"{two[1]}:spawn1:{i}": two[1] for i in range(2)}
    runs = [(f"over ssh, {n} x 1 spawn {n}", round_robin, 2 * n,
             lambda: job.run([job.ws.tlaunch, *cj.NET, "--hosts", ",".join(vc.nodes), "-p", "1", "--", job.spawn,
                              str(n)])),
            (f"over ssh, 2 x 1 spawn 2 onto host {two[1]}", onto, 4,
             lambda: job.run([job.ws.tlaunch, *cj.NET, "--hosts", ",".join(two), "-p", "1", "--", job.spawn, "2",
                              two[1]])),
            (f"inside salloc -N {n}, {n} x 1 spawn {n}", round_robin, 2 * n,
             lambda: job.run(["salloc", "-N", str(n), "-J", "tlc-spawn", job.ws.tlaunch, *cj.NET, "-p", "1", "--",
                              job.spawn, str(n)]))]
    for how, want, merged, run in runs:
        r = run()
        got = spawned_children(r.stdout)
        parents = len(re.findall(rf"mpi_spawn parent \d+ ok merged {merged}$", r.stdout, re.M))
        check(r.returncode == 0 and got == want and parents == merged - len(want),
              f"MPI_Comm_spawn {how}: every child on its node, every parent merged with them ({r.elapsed:.1f} s)",
              f"children {got}, want {want}; {parents} parents ok\n     {cj.describe(r)}")
        nothing_left(f"MPI_Comm_spawn {how}", vc, r.job)
    r = job.run([job.ws.tlaunch, *cj.NET, "--hosts", ",".join(vc.nodes), "-p", "1", "--", cj.PYTHON, job.spawn_py,
                 "futures", "3"])
    want = f"workers [0, 1, 2] hosts {sorted(vc.nodes[:3])}"
    check(r.returncode == 0 and "futures squares [0, 1, 4, 9, 16, 25, 36, 49, 64, 81] " + want in r.stdout,
          f"mpi4py.futures over ssh: 3 workers spawned on {', '.join(vc.nodes[:3])} ({r.elapsed:.1f} s)",
          cj.describe(r))
    nothing_left("mpi4py.futures", vc, r.job)


def hello_inside_salloc(job, vc):
    world = len(vc.nodes) * RANKS_PER_NODE
    r = job.run(["salloc", "-N", str(len(vc.nodes)), "-J", "tlc-mpi-hello", job.ws.tlaunch, *cj.NET, "-v",
                 "-p", str(RANKS_PER_NODE), "--", job.hello, str(world), str(RANKS_PER_NODE)])
    wrong = hello_wrong(r.stdout, vc.nodes)
    check(r.returncode == 0 and wrong is None and "via slurm" in r.stderr,
          f"inside salloc -N 4, no launcher flag: tlaunch starts its daemons with Slurm, C MPI hello 4 x 2, "
          f"every rank ok ({r.elapsed:.1f} s)", f"{wrong}\n     {cj.describe(r)}")
    nothing_left("C MPI hello inside salloc", vc, r.job)


def mpi_abort(job, vc):
    r = job.tlaunch(["--", job.abort], node="node1", timeout=60)
    summary = f"job {r.job} failed: rank 1 on node node1 called MPI_Abort with status 7"
    check(r.returncode == 7 and summary in r.stderr and r.elapsed < 30,
          f"MPI_Abort(7) in rank 1: exit 7 within 30 s ({r.elapsed:.1f} s), the summary names rank 1 on node1",
          cj.describe(r))
    nothing_left("MPI_Abort", vc, r.job)


def flows(packets, limit=8):
    totals = {}
    for src, sport, dst, dport, size in packets:
        key = f"{src}:{sport} > {dst}:{dport}"
        totals[key] = totals.get(key, 0) + size
    return ", ".join(f"{k} {v} B" for k, v in sorted(totals.items(), key=lambda kv: -kv[1])[:limit]) or "none"


def traffic_on_fabric(job, vc, sysfs):
    captures = {b: fc.BridgeCapture(b, job.ws.path(f"{b}.pcap")) for b in (fc.MGMT_BRIDGE, fc.FABRIC_BRIDGE)}
    with captures[fc.MGMT_BRIDGE], captures[fc.FABRIC_BRIDGE]:
        r = job.tlaunch(["--sysfs-root", sysfs, *SKIP_MEMLOCK, "--", cj.PYTHON, job.traffic, str(TRAFFIC_ITERATIONS),
                         str(TRAFFIC_DOUBLES)], node="node1", net=[])
    packets = {}
    for bridge, cap in captures.items():
        dropped = re.search(r"(\d+) packets dropped by kernel", cap.stderr)
        check(dropped is not None and dropped.group(1) == "0", f"tcpdump on {bridge} dropped no packet",
              cap.stderr.strip())
        packets[bridge] = fc.tcp_payload_packets(cap.path)
        os.unlink(cap.path)
    world = len(vc.nodes) * RANKS_PER_NODE
    cidr = fc.fabric_cidr(vc)
    line = rf"\[[\w.-]+:(\d+)\] rank \1/{world} allreduce=(\d+) expected=\2 btl_tcp_if_include={re.escape(cidr)} OK"
    ok_ranks = {int(m.group(1)) for m in (re.fullmatch(line, x) for x in r.stdout.splitlines()) if m}
    check(r.returncode == 0 and ok_ranks == set(range(world)),
          f"mlx4_0 capture, frontend in node1: {TRAFFIC_ITERATIONS} MPI all-reduces of 1 MiB on 4 x 2 ranks, "
          f"every rank OK with btl_tcp_if_include={cidr} ({r.elapsed:.1f} s)", cj.describe(r))
    nothing_left("MPI traffic job", vc, r.job)
    if r.returncode != 0:
        return
    mgmt = packets[fc.MGMT_BRIDGE]
    slurm = [p for p in mgmt if p[1] in SLURM_PORTS or p[3] in SLURM_PORTS]
    ssh = [p for p in mgmt if 22 in (p[1], p[3])]
    not_ssh = [p for p in mgmt if p not in ssh and p not in slurm]
    check(not not_ssh, f"management bridge: no TCP payload but SSH (port 22) during the MPI job "
                       f"({len(ssh)} SSH packets with payload; {len(slurm)} of Slurm's own left aside)",
          flows(not_ssh))
    fabric_ips = {vc.fabric_ip(n) for n in vc.nodes}
    between = [p for p in packets[fc.FABRIC_BRIDGE] if p[0] in fabric_ips and p[2] in fabric_ips]
    moved = sum(p[4] for p in between)
    senders = {p[0] for p in between}
    least = TRAFFIC_ITERATIONS * TRAFFIC_DOUBLES * 8  # each all-reduce moves more than one buffer between nodes
    check(moved >= least and senders == fabric_ips,
          f"fabric bridge: the MPI bytes between the nodes' fabric addresses ({moved / 2**20:.0f} MiB in "
          f"{len(between)} packets, >= {least / 2**20:.0f} MiB, from every node)",
          f"senders {sorted(senders)}; {flows(packets[fc.FABRIC_BRIDGE])}")


def bring_up():
    """Our own cluster, after waiting for any other process's to go away (retried if one appears
    between the wait and `up`); at most WAIT_FOR_CLUSTER_S in all, within ctest's TIMEOUT 600."""
    deadline = time.monotonic() + WAIT_FOR_CLUSTER_S
    for attempt in range(3):
        cj.wait_for_free_cluster(timeout=max(1, int(deadline - time.monotonic())))
        vc = cj.OwnVirtualCluster(n=4, slurm=True)
        try:
            return vc.__enter__()
        except VClusterError:
            if attempt == 2 or cj.foreign_cluster() is None:
                raise
            print("another virtual cluster came up meanwhile: waiting again", flush=True)


def still_ours():
    p = subprocess.run([str(cj.SCRIPT), "status"], capture_output=True, text=True, timeout=60)
    first = (p.stdout.splitlines() or [""])[0]
    return p.returncode == 0 and f"owner pid {os.getpid()}" in first, first


def main():
    skip_unless_possible()
    cj.require_tlaunch()
    for var in ("PMIX_MPI_HELLO", "PMIX_MPI_ABORT"):
        if not os.access(os.environ.get(var, ""), os.X_OK):
            cj.tl.skip(f"{var} does not name a built MPI test program (tests/pmix needs mpicc and libpmix-dev)")
    if subprocess.run([cj.PYTHON, "-c", "import mpi4py, numpy"], capture_output=True).returncode != 0:
        cj.tl.skip(f"{cj.PYTHON} lacks mpi4py or numpy (Debian: python3-mpi4py, python3-numpy)")
    if not shutil.which("tcpdump"):
        cj.tl.skip("tcpdump is missing")
    t_start = time.monotonic()
    caps = fc.SysfsCaptures(fc.MLX4_CAPTURE)
    with caps, cj.Workspace() as ws:
        vc = bring_up()
        try:
            print(f"cluster up in {vc.up_seconds:.1f} s", flush=True)
            job = Job(vc, ws)
            sysfs = caps.per_node({node: fc.MLX4_CAPTURE for node in vc.nodes})
            steps = [("MPI traffic on the fabric", lambda: traffic_on_fabric(job, vc, sysfs)),
                     ("C MPI hello", lambda: c_hello(job, vc)),
                     ("mpi4py", lambda: mpi4py_allreduce(job, vc)),
                     ("C MPI hello inside salloc", lambda: hello_inside_salloc(job, vc)),
                     ("MPI_Abort", lambda: mpi_abort(job, vc))]
            if job.accept_connect:
                steps.append(("MPI accept/connect", lambda: accept_connect(job, vc)))
            if job.group:
                steps.append(("PMIx groups", lambda: pmix_groups(job, vc)))
            if job.spawn:
                steps.append(("MPI_Comm_spawn", lambda: comm_spawn(job, vc)))
            for name, step in steps:
                ours, status = still_ours()
                if not ours:
                    check(False, f"the cluster is still up and ours before '{name}'", status)
                    break
                step()
        finally:
            vc.__exit__(*sys.exc_info())
        print(f"cluster down in {vc.down_seconds:.1f} s", flush=True)
    left = [p for job_id in jobs_seen for p in cj.job_processes(job_id)] + fc.processes_in(ws.dir)
    check(not left, f"after down: no process of this test's {len(jobs_seen)} jobs, none in its workspace",
          "\n     ".join(left))
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    check("tlvc-" not in netns or cj.foreign_cluster() is not None, "after down: no network namespace of the cluster",
          netns)
    check(not os.path.exists(caps.dir) and not os.path.exists(ws.dir),
          "after the test: the extracted captures and the workspace are removed")
    print(f"total {time.monotonic() - t_start:.1f} s", flush=True)
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
