#!/usr/bin/python3
"""tlaunch's preflight checks (issue 7) on a 4-node virtual cluster (contrib/vcluster), each daemon
reading a real sysfs capture (mlx4_0 FDR or qib0 QDR, IPoIB ib0), the frontend inside node1:

- all nodes healthy: `tlaunch preflight` exits 0 and prints a table per node; --json parses, one
  item per finding, each with its node;
- ib0 down on node3: `tlaunch preflight` fails with node3 (and only node3) failed in the table; a job
  refuses to start within 10 s naming node3 and ib0;
- FDR on node1,node2 and QDR on node3,node4 (per-node captures via --sysfs-root DIR/{node}): a
  cross-node rate warning naming both groups; the job still runs (and says so), --preflight-strict
  refuses it;
- RLIMIT_MEMLOCK below 1 GiB (memlock not skipped): preflight fails naming the fix, a job is refused;
- NCCL_IB_DISABLE=1 in the environment: a warning naming its source, "environment" (and "-x" for -x);
- full level: every node probes every other node's fabric address (one reachability row per node),
  and the cross-node RDMA write test says it is skipped on a capture; with node3 refusing traffic to
  node1's fabric address only (a prohibit route), the ring of the quick level passes, while the full
  level fails naming node1 -> node3, and a job with --preflight=full is refused naming both nodes.

Needs root (exits 77, skipped, where a virtual cluster cannot be built). One cluster for all checks;
it waits while another test holds this machine's one cluster.
"""
import json
import re
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vcluster import skip_unless_possible  # noqa: E402
import cluster_jobs as cj  # noqa: E402
import test_fabric_common as fc  # noqa: E402

# Every check but the memlock one skips memlock: RDMA wants RLIMIT_MEMLOCK >= 1 GiB, and the sandbox
# these tests grew up in cannot raise it (8 MiB, no CAP_SYS_RESOURCE). memlock_refused() checks it.
SKIP_MEMLOCK = ["--preflight-skip", "memlock"]
MEMLOCK_FOR_NODES = 64 << 20  # below tlaunch's 1 GiB minimum, on any machine (see main)
memlock_mib = None
check = cj.Checks()


def hosts(vc):
    return ",".join(vc.nodes)


def healthy(tl, vc, sysfs):
    r = tl.run(["preflight", "--hosts", hosts(vc), "--sysfs-root", sysfs, *SKIP_MEMLOCK])
    table = fc.PreflightTable(r.stdout)
    netdevs_ok = all(
        any(row["device"] == "ib0" and vc.fabric_ip(n) in row["found"] for row in table.rows(n, "netdev", "pass"))
        for n in vc.nodes)
    check(r.returncode == 0 and all(n in table.sections for n in vc.nodes) and not table.failing_sections()
          and netdevs_ok and "preflight: " in r.stdout,
          "all nodes healthy: `tlaunch preflight` exits 0, a table per node, ib0 with each node's fabric address passes",
          f"sections {sorted(table.sections)}, failing {table.failing_sections()}\n     {cj.describe(r)}")

    j = tl.run(["preflight", "--hosts", hosts(vc), "--sysfs-root", sysfs, *SKIP_MEMLOCK, "--json"])
    try:
        items = json.loads(j.stdout)
    except ValueError as e:
        check(False, "`tlaunch preflight --json` parses as JSON", f"{e}\n     {cj.describe(j)}")
        return
    well_formed = isinstance(items, list) and items and all(
        isinstance(i, dict) and isinstance(i.get("node"), str) and {"check", "status"} <= set(i) for i in items)
    check(j.returncode == 0 and well_formed, "`tlaunch preflight --json` parses: a list of items, each with a node field",
          cj.describe(j))
    if not well_formed:
        return
    nodes = {i["node"] for i in items if i["node"]}
    netdev = {i["node"]: i for i in items if i["check"] == "netdev"}
    check(nodes == set(vc.nodes) and all(netdev.get(n, {}).get("status") == "pass" and
                                         netdev[n].get("device") == "ib0" for n in vc.nodes),
          "--json: the node-local items name node1..node4, each with a passing netdev ib0",
          f"nodes {sorted(nodes)}; netdev items {list(netdev.values())}")


def link_down(tl, vc, sysfs, ws):
    down = vc.exec("node3", ["ip", "link", "set", "ib0", "down"], capture_output=True, text=True)
    check(down.returncode == 0, "ip link set ib0 down inside node3", down.stderr)
    try:
        p = tl.run(["preflight", "--hosts", hosts(vc), "--sysfs-root", sysfs, *SKIP_MEMLOCK], timeout=60)
        j = tl.run(["--hosts", hosts(vc), "-p", "1", "--sysfs-root", sysfs, *SKIP_MEMLOCK, "--",
                    cj.PYTHON, ws.program("print_env.py"), "RANK"], timeout=60)
    finally:
        up = vc.exec("node3", ["ip", "link", "set", "ib0", "up"], capture_output=True, text=True)
        check(up.returncode == 0, "ip link set ib0 up again inside node3", up.stderr)
    table = fc.PreflightTable(p.stdout)
    failed = table.rows("node3", "netdev", "fail")
    check(p.returncode == 78 and table.failing_sections() == ["node3"] and failed and failed[0]["device"] == "ib0",
          "ib0 down on node3: `tlaunch preflight` exits 78, only node3 failed, on netdev ib0",
          f"failing {table.failing_sections()}\n     {cj.describe(p)}")
    fixes = [f for f in table.fixes("node3") if f.startswith("netdev")]
    check(fixes and "ip link set ib0 up" in fixes[0], "ib0 down on node3: the fix says how to bring ib0 up", str(fixes))

    jt = fc.PreflightTable(j.stderr)
    check(j.returncode == 78 and fc.refused_on(j.stderr) == "node3" and jt.rows("node3", "netdev", "fail")
          and jt.rows("node3", "netdev", "fail")[0]["device"] == "ib0" and j.stdout == "" and j.elapsed < 10,
          f"ib0 down on node3: the job refuses to start (exit 78, no rank output) in {j.elapsed:.1f} s < 10 s, "
          "naming node3 and ib0", cj.describe(j))
    fc.nothing_left(check, "ib0 down on node3", j.job)


def mixed_rates(tl, vc, caps):
    fdr, qdr = ["node1", "node2"], ["node3", "node4"]
    sysfs = caps.per_node({**{n: fc.MLX4_CAPTURE for n in fdr}, **{n: fc.QIB_CAPTURE for n in qdr}})
    fdr_rate = caps.rate_of(fc.MLX4_CAPTURE, caps.hca_port_of(fc.MLX4_CAPTURE, "ib0"))
    qdr_rate = caps.rate_of(fc.QIB_CAPTURE, caps.hca_port_of(fc.QIB_CAPTURE, "ib0"))
    groups = [f"{','.join(fdr)}: {fdr_rate}", f"{','.join(qdr)}: {qdr_rate}"]

    def rate_warning(table):
        return [row for sec in table.sections for row in table.rows(sec, "cross_rate", "warn")
                if all(g in row["found"] for g in groups)]

    p = tl.run(["preflight", "--hosts", hosts(vc), "--sysfs-root", sysfs, *SKIP_MEMLOCK])
    t = fc.PreflightTable(p.stdout)
    per_node = all(t.rows(n, "rate", "pass") and (fdr_rate if n in fdr else qdr_rate) in t.rows(n, "rate")[0]["found"]
                   for n in vc.nodes)
    check(p.returncode == 0 and per_node and rate_warning(t),
          f"FDR on node1,node2, QDR on node3,node4: `tlaunch preflight` exits 0 with a cross_rate warning naming "
          f"both groups ({'; '.join(groups)})", cj.describe(p))

    ps = tl.run(["preflight", "--hosts", hosts(vc), "--sysfs-root", sysfs, *SKIP_MEMLOCK, "--preflight-strict"])
    check(ps.returncode == 78 and rate_warning(fc.PreflightTable(ps.stdout)),
          "mixed rates: `tlaunch preflight --preflight-strict` exits 78 on the warning", cj.describe(ps))

    r = tl.run(["--hosts", hosts(vc), "-p", "1", "--sysfs-root", sysfs, *SKIP_MEMLOCK, "--", "/bin/hostname"])
    check(r.returncode == 0 and sorted(cj.rank_hosts(r.stdout)) == [0, 1, 2, 3],
          "mixed rates: the job still runs (a warning is not a failure)", cj.describe(r))
    check("cross_rate" in r.stderr and all(g in r.stderr for g in groups),
          "mixed rates: the running job warns on stderr about the rates, naming both groups", cj.describe(r))

    s = tl.run(["--hosts", hosts(vc), "-p", "1", "--sysfs-root", sysfs, *SKIP_MEMLOCK, "--preflight-strict", "--",
                "/bin/hostname"])
    check(s.returncode == 78 and fc.refused_on(s.stderr) is not None and rate_warning(fc.PreflightTable(s.stderr))
          and s.stdout == "",
          "mixed rates with --preflight-strict: the job is refused (exit 78, no rank output), the table names both groups",
          cj.describe(s))


def memlock_refused(tl, vc, sysfs):
    p = tl.run(["preflight", "--hosts", hosts(vc), "--sysfs-root", sysfs])
    t = fc.PreflightTable(p.stdout)
    fixes = {n: [f for f in t.fixes(n) if f.startswith("memlock")] for n in vc.nodes}
    check(p.returncode == 78 and all(t.rows(n, "memlock", "fail") for n in vc.nodes)
          and all(f and "memlock unlimited" in f[0] and "/etc/security/limits.conf" in f[0] for f in fixes.values()),
          f"RLIMIT_MEMLOCK {memlock_mib} MiB, memlock not skipped: `tlaunch preflight` exits 78, memlock fails on "
          "every node, the fix names limits.conf", f"{fixes}\n     {cj.describe(p)}")

    j = tl.run(["--hosts", hosts(vc), "-p", "1", "--sysfs-root", sysfs, "--", "/bin/hostname"])
    jt = fc.PreflightTable(j.stderr)
    check(j.returncode == 78 and fc.refused_on(j.stderr) is not None and j.stdout == ""
          and all(jt.rows(n, "memlock", "fail") for n in vc.nodes)
          and "memlock unlimited" in j.stderr and "/etc/security/limits.conf" in j.stderr,
          "memlock not skipped: the job is refused (exit 78, no rank output) with the memlock fix", cj.describe(j))


def nccl_ib_disabled(tl, vc, sysfs):
    p = tl.run(["preflight", "--hosts", hosts(vc), "--sysfs-root", sysfs, *SKIP_MEMLOCK], env={"NCCL_IB_DISABLE": "1"})
    t = fc.PreflightTable(p.stdout)
    warned = {n: t.rows(n, "nccl_env", "warn") for n in vc.nodes}
    check(p.returncode == 0 and all(w and "NCCL_IB_DISABLE=1" in w[0]["found"] and "(environment)" in w[0]["found"]
                                    for w in warned.values()),
          "NCCL_IB_DISABLE=1 in the environment: `tlaunch preflight` warns on every node, naming the source "
          "'environment' (exit 0)", f"{warned}\n     {cj.describe(p)}")

    base = ["--hosts", hosts(vc), "-p", "1", "--sysfs-root", sysfs, *SKIP_MEMLOCK, "--dry-run"]
    e = tl.run([*base, "--", "/bin/true"], env={"NCCL_IB_DISABLE": "1"})
    x = tl.run([*base, "-x", "NCCL_IB_DISABLE=1", "--", "/bin/true"])
    for r, source in ((e, "environment"), (x, "-x")):
        t = fc.PreflightTable(r.stdout)
        rows = {n: t.rows(n, "nccl_env", "warn") for n in vc.nodes}
        check(r.returncode == 0 and all(w and f"NCCL_IB_DISABLE=1 ({source})" in w[0]["found"] for w in rows.values())
              and r.stdout.count(f"yours wins: 1 from {source}") == len(vc.nodes),
              f"NCCL_IB_DISABLE=1 from {source}: --dry-run warns on every node naming '{source}'", cj.describe(r))


def full_level(tl, vc, sysfs):
    base = ["preflight", "--hosts", hosts(vc), "--sysfs-root", sysfs, *SKIP_MEMLOCK]
    p = tl.run([*base, "--level", "full"], timeout=60)
    t = fc.PreflightTable(p.stdout)
    reached = {n: t.rows(n, "reachability", "pass") for n in vc.nodes}
    all_pairs = all(r and all(o in r[0]["found"] for o in vc.nodes if o != n) for n, r in reached.items())
    check(p.returncode == 0 and all_pairs,
          "--level full: exit 0, and each node reached every other node on the fabric (all pairs)",
          f"{reached}\n     {cj.describe(p)}")
    j = tl.run([*base, "--level", "full", "--json"], timeout=60)
    try:
        pairs = [i for i in json.loads(j.stdout) if i["check"] == "rdma_pair"]
    except (ValueError, KeyError, TypeError) as e:
        check(False, "--level full --json parses", f"{e}\n     {cj.describe(j)}")
        return
    check(j.returncode == 0 and len(pairs) == 1 and pairs[0]["status"] == "skip" and "capture" in pairs[0]["found"],
          "--level full on captured sysfs: the cross-node RDMA write test is one skipped item saying why (a capture)",
          str(pairs))


def one_pair_unreachable(tl, vc, sysfs, ws):
    target = vc.fabric_ip("node1")
    add = vc.exec("node3", ["ip", "route", "add", "prohibit", f"{target}/32"], capture_output=True, text=True)
    check(add.returncode == 0, f"inside node3: ip route add prohibit {target}/32", add.stderr)
    try:
        base = ["preflight", "--hosts", hosts(vc), "--sysfs-root", sysfs, *SKIP_MEMLOCK]
        ring = tl.run(base, timeout=60)
        full = tl.run([*base, "--level", "full"], timeout=60)
        job = tl.run(["--hosts", hosts(vc), "-p", "1", "--sysfs-root", sysfs, *SKIP_MEMLOCK, "--preflight=full", "--",
                      "/bin/hostname"], timeout=60)
    finally:
        vc.exec("node3", ["ip", "route", "del", "prohibit", f"{target}/32"], capture_output=True, text=True)
    rt = fc.PreflightTable(ring.stdout)
    check(ring.returncode == 0 and all(rt.rows(n, "reachability", "pass") for n in vc.nodes),
          "node3 cannot answer node1 on the fabric: the quick level's ring (1->2->3->4->1) still passes", cj.describe(ring))
    ft = fc.PreflightTable(full.stdout)
    n1 = ft.rows("node1", "reachability", "fail")
    n3 = ft.rows("node3", "reachability", "fail")
    check(full.returncode == 78 and n1 and "node3" in n1[0]["found"] and n3 and "node1" in n3[0]["found"]
          and sorted(ft.failing_sections()) == ["node1", "node3"],
          "--level full: exit 78, reachability fails on node1 (naming node3) and node3 (naming node1), nothing else",
          f"failing {ft.failing_sections()}\n     {cj.describe(full)}")
    named = re.search(r"node (node1 cannot reach node node3|node3 cannot reach node node1) at ", job.stderr)
    check(job.returncode == 78 and named and job.stdout == "",
          "a job with --preflight=full is refused before any rank starts, naming node1 and node3", cj.describe(job))
    fc.nothing_left(check, "one pair unreachable", job.job)


def main():
    skip_unless_possible(slurm=False)
    cj.require_tlaunch()
    # The nodes' sshd (UsePAM no) and everything it starts inherit this process's limits: a memlock
    # limit below 1 GiB makes the memlock failure the same on every machine, whatever its limits.
    global memlock_mib
    cap = lambda v: MEMLOCK_FOR_NODES if v == resource.RLIM_INFINITY else min(v, MEMLOCK_FOR_NODES)  # noqa: E731
    soft, hard = map(cap, resource.getrlimit(resource.RLIMIT_MEMLOCK))
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (soft, hard))
    memlock_mib = soft >> 20
    t_start = time.monotonic()
    caps = fc.SysfsCaptures(fc.MLX4_CAPTURE, fc.QIB_CAPTURE)
    with caps, cj.Workspace() as ws:
        vc = fc.SharedCluster(n=4, slurm=False)
        with vc:
            print(f"cluster up in {vc.up_seconds:.1f} s", flush=True)
            tl = fc.Tlaunch(vc, ws)
            mlx4 = caps.root(fc.MLX4_CAPTURE)
            vc.run_steps(check, [("healthy", lambda: healthy(tl, vc, mlx4)),
                                 ("ib0 down", lambda: link_down(tl, vc, mlx4, ws)),
                                 ("mixed rates", lambda: mixed_rates(tl, vc, caps)),
                                 ("memlock", lambda: memlock_refused(tl, vc, mlx4)),
                                 ("NCCL_IB_DISABLE", lambda: nccl_ib_disabled(tl, vc, mlx4)),
                                 ("full level", lambda: full_level(tl, vc, mlx4)),
                                 ("one pair unreachable", lambda: one_pair_unreachable(tl, vc, mlx4, ws))])
        print(f"cluster down in {vc.down_seconds:.1f} s", flush=True)
        fc.no_processes_left(check, tl)
    fc.machine_left_clean(check, vc, caps.dir, ws.dir)
    print(f"total {time.monotonic() - t_start:.1f} s", flush=True)
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
