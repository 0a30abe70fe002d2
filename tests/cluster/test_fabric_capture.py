#!/usr/bin/python3
"""tlaunch keeps a job on the fabric (issue 5), on a 4-node virtual cluster (contrib/vcluster) whose
daemons read the real mlx4_0 (FDR, IPoIB ib0) sysfs capture and whose frontend runs inside node1:

- a torch Gloo job of a few hundred 1 MiB all-reduces: with tcpdump on both of the switch's bridges,
  the management bridge carries no TCP payload but SSH, the fabric bridge carries the job's bytes;
  the negative control `--net tcp --net-if eth0` moves those bytes onto the management bridge,
  which proves the capture would have seen them;
- every rank's fabric variables, exactly: MASTER_ADDR is node1's fabric address,
  NCCL_SOCKET_IFNAME==ib0, NCCL_IB_HCA==mlx4_0:1, GLOO_SOCKET_IFNAME=ib0, the Open MPI/PMIx subnets;
- `-x NCCL_SOCKET_IFNAME=eth0` reaches the ranks, and --dry-run shows both values;
- `--nccl-check strict`: NCCL on sockets (a replayed real log) ends the job with 78; NET/IB passes;
- ib0 down on node3: the job refuses to start within 10 s, naming node3 and ib0.

Needs root (exits 77, skipped, where a virtual cluster cannot be built). One cluster for all checks;
it waits while another test holds this machine's one cluster.
"""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vcluster import skip_unless_possible  # noqa: E402
import cluster_jobs as cj  # noqa: E402
import test_fabric_common as fc  # noqa: E402

ITERATIONS = 200
FLOATS = 262144  # 1 MiB of float32 per all-reduce
# The sandbox these tests grew up in cannot raise RLIMIT_MEMLOCK (8 MiB, no CAP_SYS_RESOURCE), so the
# memlock check would refuse every job; test_preflight_cluster.py shows that refusal. Here it is skipped.
SKIP_MEMLOCK = ["--preflight-skip", "memlock"]
FABRIC_KEYS = ["MASTER_ADDR", "MASTER_PORT", "NCCL_SOCKET_IFNAME", "NCCL_SOCKET_FAMILY", "NCCL_IB_DISABLE", "NCCL_NET",
               "NCCL_IB_HCA", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "UCX_NET_DEVICES",
               "OMPI_MCA_btl_tcp_if_include", "OMPI_MCA_oob_tcp_if_include", "PRTE_MCA_prte_if_include",
               "PMIX_MCA_ptl_tcp_if_include", "RANK"]
check = cj.Checks()


def hosts(vc):
    return ",".join(vc.nodes)


def rank_json(stdout):
    """{rank: dict} from print_env.py lines '[node:rank] {...}'; None if a line is something else."""
    out = {}
    for line in stdout.splitlines():
        m = re.fullmatch(r"\[([\w.-]+):(\d+)\] (\{.*\})", line)
        if not m:
            return None
        out[int(m.group(2))] = (m.group(1), json.loads(m.group(3)))
    return out


def traffic(tl, vc, ws, sysfs, net_args, what):
    """Runs the Gloo job with tcpdump on both bridges; returns (job result, {bridge: packets})."""
    packets = {}
    captures = {b: fc.BridgeCapture(b, ws.path(f"{b}-{len(tl.jobs)}.pcap")) for b in (fc.MGMT_BRIDGE, fc.FABRIC_BRIDGE)}
    with captures[fc.MGMT_BRIDGE], captures[fc.FABRIC_BRIDGE]:
        r = tl.run(["--hosts", hosts(vc), "-p", "1", "--sysfs-root", sysfs, *SKIP_MEMLOCK, *net_args, "--",
                    cj.PYTHON, ws.program("gloo_allreduce.py"), str(ITERATIONS), str(FLOATS)])
    for bridge, cap in captures.items():
        dropped = re.search(r"(\d+) packets dropped by kernel", cap.stderr)
        check(dropped is not None and dropped.group(1) == "0", f"{what}: tcpdump on {bridge} dropped no packet",
              cap.stderr.strip())
        packets[bridge] = fc.tcp_payload_packets(cap.path)
        os.unlink(cap.path)
    wrong = cj.gloo_lines_ok(r.stdout, vc.nodes, 1)
    check(r.returncode == 0 and wrong is None,
          f"{what}: Gloo job, {ITERATIONS} all-reduces of 1 MiB on 4 nodes, every rank OK ({r.elapsed:.1f} s)",
          f"{wrong}\n     {cj.describe(r)}")
    return r, packets


def summary(packets, limit=8):
    flows = {}
    for src, sport, dst, dport, size in packets:
        key = f"{src}:{sport} > {dst}:{dport}"
        flows[key] = flows.get(key, 0) + size
    top = sorted(flows.items(), key=lambda kv: -kv[1])[:limit]
    return ", ".join(f"{k} {v} B" for k, v in top) or "none"


def job_stays_on_fabric(tl, vc, ws, sysfs):
    r, packets = traffic(tl, vc, ws, sysfs, [], "on the fabric")
    if r.returncode != 0:
        return
    job_bytes = ITERATIONS * FLOATS * 4  # a ring all-reduce moves about 6x this in all between 4 ranks
    mgmt = packets[fc.MGMT_BRIDGE]
    not_ssh = [p for p in mgmt if 22 not in (p[1], p[3])]
    check(not not_ssh, f"management bridge: no TCP payload but SSH (port 22) during the job "
                       f"({len(mgmt)} SSH packets with payload)", summary(not_ssh))
    fabric = packets[fc.FABRIC_BRIDGE]
    fabric_ips = {vc.fabric_ip(n) for n in vc.nodes}
    between_nodes = [p for p in fabric if p[0] in fabric_ips and p[2] in fabric_ips]
    sent = sum(p[4] for p in between_nodes)
    senders = {p[0] for p in between_nodes}
    check(sent >= job_bytes and len(between_nodes) >= 1000 and senders == fabric_ips,
          f"fabric bridge: the job's bytes between the nodes' fabric addresses "
          f"({sent / 2**20:.0f} MiB in {len(between_nodes)} packets, >= {job_bytes / 2**20:.0f} MiB, from every node)",
          f"senders {sorted(senders)}; {summary(fabric)}")


def negative_control(tl, vc, ws, sysfs):
    r, packets = traffic(tl, vc, ws, sysfs, ["--net", "tcp", "--net-if", "eth0"], "--net tcp --net-if eth0")
    if r.returncode != 0:
        return
    job_bytes = ITERATIONS * FLOATS * 4
    mgmt_ips = {vc.mgmt_ip(n) for n in vc.nodes}
    on_mgmt = [p for p in packets[fc.MGMT_BRIDGE] if 22 not in (p[1], p[3]) and p[0] in mgmt_ips and p[2] in mgmt_ips]
    moved = sum(p[4] for p in on_mgmt)
    check(moved >= job_bytes, f"negative control: with --net tcp --net-if eth0 the capture on the management bridge "
                              f"sees the job ({moved / 2**20:.0f} MiB, >= {job_bytes / 2**20:.0f} MiB)",
          summary(packets[fc.MGMT_BRIDGE]))


def rank_environment(tl, vc, ws, sysfs, caps):
    hca = caps.hca_port_of(fc.MLX4_CAPTURE, "ib0")
    cidr = fc.fabric_cidr(vc)
    expected = {"MASTER_ADDR": vc.fabric_ip("node1"), "NCCL_SOCKET_IFNAME": "=ib0", "NCCL_SOCKET_FAMILY": "AF_INET",
                "NCCL_IB_DISABLE": "0", "NCCL_NET": "IB", "NCCL_IB_HCA": f"={hca}", "GLOO_SOCKET_IFNAME": "ib0",
                "TP_SOCKET_IFNAME": "ib0", "UCX_NET_DEVICES": hca, "OMPI_MCA_btl_tcp_if_include": cidr,
                "OMPI_MCA_oob_tcp_if_include": cidr, "PRTE_MCA_prte_if_include": cidr,
                "PMIX_MCA_ptl_tcp_if_include": cidr}
    r = tl.run(["--hosts", hosts(vc), "-p", "2", "--sysfs-root", sysfs, *SKIP_MEMLOCK, "--",
                cj.PYTHON, ws.program("print_env.py"), *FABRIC_KEYS])
    got = rank_json(r.stdout)
    ok = r.returncode == 0 and got is not None and sorted(got) == list(range(8))
    check(ok, "fabric variables: 8 ranks on 4 nodes printed their environment", cj.describe(r))
    if not ok:
        return
    wrong = []
    ports = {env["MASTER_PORT"] for _, env in got.values()}
    for rank, (node, env) in sorted(got.items()):
        differ = {k: (env.get(k), v) for k, v in expected.items() if env.get(k) != v}
        if differ or env["RANK"] != str(rank):
            wrong.append(f"rank {rank} on {node}: (got, expected) {differ}")
    check(not wrong, f"fabric variables of every rank, exactly: MASTER_ADDR={expected['MASTER_ADDR']} (node1's "
                     f"fabric address), NCCL_SOCKET_IFNAME==ib0, NCCL_IB_HCA=={hca}, GLOO_SOCKET_IFNAME=ib0, "
                     f"*_if_include={cidr}", "\n     ".join(wrong))
    port = next(iter(ports))
    check(len(ports) == 1 and port.isdigit() and 0 < int(port) < 65536, "one MASTER_PORT for every rank", str(ports))


def user_override(tl, vc, ws, sysfs):
    base = ["--hosts", hosts(vc), "-p", "1", "--sysfs-root", sysfs, *SKIP_MEMLOCK, "-x", "NCCL_SOCKET_IFNAME=eth0"]
    r = tl.run([*base, "--", cj.PYTHON, ws.program("print_env.py"), "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"])
    got = rank_json(r.stdout)
    check(r.returncode == 0 and got is not None and sorted(got) == [0, 1, 2, 3] and
          all(env == {"NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "ib0"} for _, env in got.values()),
          "-x NCCL_SOCKET_IFNAME=eth0 wins: every rank has eth0 (and the planned GLOO_SOCKET_IFNAME=ib0)",
          cj.describe(r))

    d = tl.run([*base, "--dry-run", "--", "/bin/true"])
    # The per-node network lines (the "exported to every rank" list shows the -x value once more, as "(-x)").
    lines = [line.strip() for line in d.stdout.splitlines()
             if line.strip().startswith("NCCL_SOCKET_IFNAME") and not line.strip().endswith("(-x)")]
    both = [line for line in lines if line.startswith("NCCL_SOCKET_IFNAME==ib0") and "eth0 from -x" in line]
    check(d.returncode == 0 and len(lines) == 4 and len(both) == 4,
          "--dry-run shows, for each node, the planned NCCL_SOCKET_IFNAME==ib0 and the user's eth0 from -x",
          f"lines {lines}\n     {cj.describe(d)}")

    j = tl.run([*base, "--dry-run", "--json", "--", "/bin/true"])
    try:
        plan = json.loads(j.stdout)
        entries = [e for node in plan["network"]["env"] for e in node["env"] if e["name"] == "NCCL_SOCKET_IFNAME"]
    except (ValueError, KeyError, TypeError) as e:
        check(False, "--dry-run --json parses, with network.env per node", f"{e}\n     {cj.describe(j)}")
        return
    check(len(entries) == 4 and all(e["value"] == "=ib0" and e["user_value"] == "eth0" and e["effective"] == "eth0"
                                    and e["user_source"] == "-x" for e in entries),
          "--dry-run --json: NCCL_SOCKET_IFNAME value '=ib0', user_value 'eth0' from -x, effective 'eth0' on each node",
          json.dumps(entries))


def nccl_check_strict(tl, vc, ws, sysfs):
    """--nccl-check strict on a job planned on RDMA (the mlx4_0 capture, ib0): a fake rank replaying a
    real NCCL log that fell back to sockets ends the job with 78 naming the fallback; one replaying
    NET/IB with its bootstrap on ib0 passes with one report line."""
    logs = Path(__file__).resolve().parents[1] / "fixtures" / "nccl-logs"
    found = {n: sorted(logs.glob(f"{n}-*.log")) for n in ("01", "02")}
    check(all(len(v) == 1 for v in found.values()), f"NCCL log fixtures 01 and 02 in {logs}", str(found))
    if not all(len(v) == 1 for v in found.values()):
        return
    copies = {}
    for n, (log,) in found.items():  # where every node sees them, whatever the clone's path
        copies[n] = ws.path(log.name)
        Path(copies[n]).write_bytes(log.read_bytes())
    base = ["--hosts", "node1,node2", "-p", "1", "--sysfs-root", sysfs, *SKIP_MEMLOCK, "--nccl-check", "strict", "--",
            cj.PYTHON, ws.program("fake_nccl_rank.py")]
    bad = tl.run([*base, copies["02"], "5"], timeout=120)
    report = [line for line in bad.stderr.splitlines() if "nccl-check" in line]
    check(bad.returncode == 78 and any("NET/Socket" in line for line in report)
          and "--nccl-check strict:" in bad.stderr and bad.elapsed < 30,
          f"--nccl-check strict, NCCL on sockets on a job planned on RDMA: exit 78 naming NET/Socket "
          f"({bad.elapsed:.1f} s)", cj.describe(bad))
    fc.nothing_left(check, "--nccl-check strict ended the job", bad.job)
    good = tl.run([*base, copies["01"]], timeout=120)
    report = [line for line in good.stderr.splitlines() if "nccl-check: " in line]
    check(good.returncode == 0 and len(report) == 1 and "NET/IB" in report[0] and "WARNING" not in report[0],
          "--nccl-check strict, NCCL on NET/IB bootstrapping on ib0: the job passes with one report line",
          cj.describe(good))


def fabric_link_down(tl, vc, ws, sysfs):
    down = vc.exec("node3", ["ip", "link", "set", "ib0", "down"], capture_output=True, text=True)
    check(down.returncode == 0, "ip link set ib0 down inside node3", down.stderr)
    try:
        r = tl.run(["--hosts", hosts(vc), "-p", "1", "--sysfs-root", sysfs, *SKIP_MEMLOCK, "--",
                    cj.PYTHON, ws.program("print_env.py"), "RANK"], timeout=60)
    finally:
        up = vc.exec("node3", ["ip", "link", "set", "ib0", "up"], capture_output=True, text=True)
        check(up.returncode == 0, "ip link set ib0 up again inside node3", up.stderr)
    refused = fc.refused_on(r.stderr)
    table = fc.PreflightTable(r.stderr)
    check(r.returncode == 78 and refused == "node3" and table.rows("node3", "netdev", "fail")
          and table.rows("node3", "netdev", "fail")[0]["device"] == "ib0" and r.stdout == "" and r.elapsed < 10,
          f"ib0 down on node3: the job refuses to start (exit 78, no rank output) in {r.elapsed:.1f} s < 10 s, "
          "naming node3 and ib0", cj.describe(r))
    fc.nothing_left(check, "ib0 down on node3", r.job)
    # With the link back, the same job starts again.
    again = tl.run(["--hosts", hosts(vc), "-p", "1", "--sysfs-root", sysfs, *SKIP_MEMLOCK, "--", "/bin/hostname"])
    check(again.returncode == 0 and sorted(cj.rank_hosts(again.stdout)) == [0, 1, 2, 3],
          "ib0 up again on node3: the job runs", cj.describe(again))


def main():
    skip_unless_possible(slurm=False)
    cj.require_tlaunch()
    torch = cj.have_torch()
    tcpdump = subprocess.run(["sh", "-c", "command -v tcpdump"], capture_output=True).returncode == 0
    t_start = time.monotonic()
    caps = fc.SysfsCaptures(fc.MLX4_CAPTURE)
    with caps, cj.Workspace() as ws:
        vc = fc.SharedCluster(n=4, slurm=False)
        with vc:
            print(f"cluster up in {vc.up_seconds:.1f} s", flush=True)
            tl = fc.Tlaunch(vc, ws)
            sysfs = caps.root(fc.MLX4_CAPTURE)
            steps = []
            if torch and tcpdump:
                steps += [("traffic on the fabric", lambda: job_stays_on_fabric(tl, vc, ws, sysfs)),
                          ("negative control", lambda: negative_control(tl, vc, ws, sysfs))]
            else:
                print(f"note: {'python3-torch' if not torch else 'tcpdump'} is missing: the packet captures "
                      "are not checked", flush=True)
            steps += [("rank environment", lambda: rank_environment(tl, vc, ws, sysfs, caps)),
                      ("-x override", lambda: user_override(tl, vc, ws, sysfs)),
                      ("--nccl-check strict", lambda: nccl_check_strict(tl, vc, ws, sysfs)),
                      ("ib0 down", lambda: fabric_link_down(tl, vc, ws, sysfs))]
            vc.run_steps(check, steps)
        print(f"cluster down in {vc.down_seconds:.1f} s", flush=True)
        fc.no_processes_left(check, tl)
    fc.machine_left_clean(check, vc, caps.dir, ws.dir)
    print(f"total {time.monotonic() - t_start:.1f} s", flush=True)
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
