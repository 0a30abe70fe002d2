#!/usr/bin/python3
"""tlaunch over ssh on a 4-node virtual cluster (contrib/vcluster), as a user sees it:

- 4 nodes x 2 ranks run a torch Gloo all-reduce, from the host and from inside node1; every rank
  prints OK and its output tag names the node it ran on;
- program arguments with spaces, quotes, $, ;, newlines... reach the ranks unchanged through ssh;
- Open MPI (`slots=`) and MPICH (`host:2`) hostfiles and hostlist expressions give the node order
  they were written in;
- an unreachable node fails the job quickly, naming the node (`tlaunch preflight` names it and checks the
  others, also when it is listed first and does not resolve); tlaunch on node1 whose /etc/hosts
  names it 127.0.1.1 (Debian's default) tells the other daemons a reachable address; a wrong
  --daemon-path names the node and the path;
- addresses that are /32 (cloud VMs): the job runs on the network the daemons reached the
  frontend over, or on the one --net-cidr names;
- kill -9 of one node's tlaunchd aborts the job naming that node, kill -9 of tlaunch itself: in
  both cases nothing of the job is left on any node within 10 s.

Needs root (exits 77, skipped, where a virtual cluster cannot be built). One cluster for all checks.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vcluster import skip_unless_possible  # noqa: E402
import cluster_jobs as cj  # noqa: E402

TIMEOUT = 300
UNUSED_ADDRESSES = ["198.18.0.99", "198.18.0.98"]  # inside the management subnet, no node has them
DEAD_NODES = ["tlc-deadnode", "tlc-deadnode2"]
check = cj.Checks()
jobs_seen = []


def tlaunch(ws, args, node=None, timeout=TIMEOUT):
    """Runs tlaunch (over the ib0 network) with args on the host, or inside `node` (its frontend
    then runs there)."""
    argv = [ws.tlaunch, *cj.NET, *args]
    if node is not None:
        argv = vc.exec_argv(node, argv)
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace",
                          timeout=timeout, cwd=ws.dir, env=vc.environ())


def start(ws, args):
    return subprocess.Popen([ws.tlaunch, *cj.NET, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", cwd=ws.dir, env=vc.environ(), start_new_session=True)


def nothing_left(job, within):
    ok = cj.tl.wait_until(lambda: not cj.job_processes(job), within, interval=0.1)
    return ok, "\n     ".join(cj.job_processes(job))


def gloo_allreduce(ws, nodes):
    hosts = ",".join(nodes)
    for where in (None, "node1"):
        who = "the host" if where is None else where
        t0 = time.monotonic()
        r = tlaunch(ws, ["--hosts", hosts, "-p", "2", "--", cj.PYTHON, ws.program("gloo_allreduce.py"), "3", "1000"],
                    node=where)
        wrong = cj.gloo_lines_ok(r.stdout, nodes, 2)
        check(r.returncode == 0 and wrong is None,
              f"Gloo all-reduce 4 nodes x 2 ranks over ssh, frontend on {who} ({time.monotonic() - t0:.1f} s)",
              f"{wrong}\n     {cj.describe(r)}")


def host_addresses(ws, torch):
    """Every node's addresses made /32 with an on-link route to their /24, as cloud VMs have them
    (GCP: `eth0 10.128.0.5/32`): no subnet is common to the nodes. A plain job runs on the network
    the daemons reached the frontend over, --net-cidr picks the other one, and in both the ranks'
    variables name the chosen interface and the Gloo all-reduce runs over it."""
    changed = []
    try:
        for node in vc.nodes:
            for dev, ip in (("eth0", vc.mgmt_ip(node)), ("ib0", vc.fabric_ip(node))):
                net = ip.rsplit(".", 1)[0] + ".0/24"
                r = vc.exec(node, f"ip addr add {ip}/32 dev {dev} && ip addr del {ip}/24 dev {dev} && "
                                  f"ip route replace {net} dev {dev} src {ip}", capture_output=True, text=True)
                check(r.returncode == 0, f"{node}: {dev} {ip}/24 made a /32 with a route to {net}", r.stderr)
                changed.append((node, dev, ip, net))
        hosts = ",".join(vc.nodes)
        keys = ["MASTER_ADDR", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "OMPI_MCA_btl_tcp_if_include"]
        cases = [("no --net flag: the daemons' control network", [], "eth0", vc.mgmt_ip("node1"), "198.18.0.8/29"),
                 ("--net tcp --net-cidr 198.19.0.0/24", ["--net", "tcp", "--net-cidr", "198.19.0.0/24"], "ib0",
                  vc.fabric_ip("node1"), "198.19.0.0/24")]
        for what, args, dev, master, cidr in cases:
            r = subprocess.run([ws.tlaunch, "--hosts", hosts, "-p", "1", *args, "--", cj.PYTHON,
                                ws.program("print_env.py"), *keys], capture_output=True, text=True, errors="replace",
                               timeout=TIMEOUT, cwd=ws.dir, env=vc.environ())
            want = {"MASTER_ADDR": master, "GLOO_SOCKET_IFNAME": dev, "NCCL_SOCKET_IFNAME": "=" + dev,
                    "OMPI_MCA_btl_tcp_if_include": cidr}
            lines = [line for line in r.stdout.splitlines() if line.startswith("[")]
            got = [json.loads(line.split("] ", 1)[1]) for line in lines]
            check(r.returncode == 0 and len(got) == 4 and all(g == want for g in got),
                  f"/32 addresses, {what}: every rank gets {want}", cj.describe(r))
            if not torch:
                continue
            r = subprocess.run([ws.tlaunch, "--hosts", hosts, "-p", "2", *args, "--", cj.PYTHON,
                                ws.program("gloo_allreduce.py"), "3", "1000"], capture_output=True, text=True,
                               errors="replace", timeout=TIMEOUT, cwd=ws.dir, env=vc.environ())
            wrong = cj.gloo_lines_ok(r.stdout, vc.nodes, 2)
            check(r.returncode == 0 and wrong is None, f"/32 addresses, {what}: Gloo all-reduce on 4 nodes x 2 ranks",
                  f"{wrong}\n     {cj.describe(r)}")
    finally:
        for node, dev, ip, net in changed:
            vc.exec(node, f"ip route del {net} dev {dev}; ip addr add {ip}/24 dev {dev}; ip addr del {ip}/32 dev {dev}",
                    capture_output=True)


ODD_ARGUMENTS = ["a b", "  two  spaces ", "it's", '"double"', "$HOME", "${PATH}", "x; echo INJECTED", "a && b",
                 "|", ">out", "line1\nline2", "", "*", "back\\slash", "`id`", "$(id)", "\ttab", "-n", "é ü",
                 "'", "\\'", "%s", "~"]


def arguments_unchanged(ws):
    # One rank on each of two remote nodes; `--tag-output rank` so the line an argument's newline
    # starts can be told apart, then each rank's lines are joined back together.
    r = tlaunch(ws, ["--hosts", "node2,node3", "-p", "1", "--tag-output", "rank", "--", "/usr/bin/printf", "%s|",
                     *ODD_ARGUMENTS])
    expected = "".join(a + "|" for a in ODD_ARGUMENTS)
    got = {0: [], 1: []}
    stray = []
    for line in r.stdout.split("\n"):
        for rank in got:
            if line.startswith(f"[{rank}] "):
                got[rank].append(line[len(f"[{rank}] "):])
                break
        else:
            if line:
                stray.append(line)
    texts = {rank: "\n".join(lines) for rank, lines in got.items()}
    check(r.returncode == 0 and not stray and all(t == expected for t in texts.values()),
          "program arguments with spaces, quotes, $, ;, newlines reach both ranks unchanged over ssh",
          f"expected {expected!r}\n     got {texts!r}, stray {stray!r}\n     {cj.describe(r)}")
    check(not os.path.exists(ws.path("out")), "no argument was interpreted by a shell ('>out' made no file)")


def node_order(ws):
    order = ["node3", "node1", "node4", "node2"]
    Path(ws.path("hostfile.ompi")).write_text(
        "# Open MPI / DeepSpeed form\n" + "".join(f"{n} slots=2\n" for n in order))
    mpich = ["node2", "node4", "node1", "node3"]
    Path(ws.path("hostfile.mpich")).write_text("".join(f"{n}:2\n" for n in mpich))
    cases = [
        ("Open MPI hostfile 'node3 slots=2' ...", ["--hostfile", ws.path("hostfile.ompi")], order),
        ("MPICH hostfile 'node2:2' ...", ["--hostfile", ws.path("hostfile.mpich")], mpich),
        ("--hosts 'node[1-4]'", ["--hosts", "node[1-4]"], ["node1", "node2", "node3", "node4"]),
        ("--hosts 'node[4,1-2],node3'", ["--hosts", "node[4,1-2],node3"], ["node4", "node1", "node2", "node3"]),
    ]
    for what, args, nodes in cases:
        r = tlaunch(ws, [*args, "-p", "2", "--", "/bin/hostname"])
        got = cj.rank_hosts(r.stdout)
        expected = {rank: (nodes[rank // 2], nodes[rank // 2]) for rank in range(8)}
        check(r.returncode == 0 and got == expected, f"{what}: ranks 0..7 on {', '.join(nodes)} in that order",
              f"got {{rank: (tag, hostname)}} {got}\n     {cj.describe(r)}")


def unreachable_node(ws):
    """Two dead nodes: one run names both (not one per run), as soon as the others are in."""
    with cj.HostsEntries([f"{a} {n}" for a, n in zip(UNUSED_ADDRESSES, DEAD_NODES)]):
        t0 = time.monotonic()
        r = tlaunch(ws, ["--hosts", f"node1,{DEAD_NODES[0]},node2,{DEAD_NODES[1]}", "-p", "1", "--", "/bin/sleep",
                         "30"], timeout=60)
        elapsed = time.monotonic() - t0
    at = r.stderr.find("not started:")  # no rank ran
    summary = r.stderr[at:] if at >= 0 else ""
    check(r.returncode == 69 and "could not start tlaunchd on 2 of 4 nodes" in summary and
          all(n in summary for n in DEAD_NODES) and "node1" not in summary and elapsed < 15,
          f"two unreachable nodes: exit 69 in < 15 s, one summary names both ({elapsed:.1f} s)", cj.describe(r))
    job = cj.job_id_in(r.stderr)
    if job:
        jobs_seen.append(job)
        ok, left = nothing_left(job, 10)
        check(ok, "unreachable node: nothing of the job left on node1/node2", left)
    # tlaunch preflight, an admin's sweep: both dead nodes get a daemon_start row, and node1 and
    # node2 are checked without them, in one report.
    with cj.HostsEntries([f"{a} {n}" for a, n in zip(UNUSED_ADDRESSES, DEAD_NODES)]):
        r = tlaunch(ws, ["preflight", "--json", "--hosts", f"node1,{DEAD_NODES[0]},node2,{DEAD_NODES[1]}"], timeout=60)
    try:
        rows = json.loads(r.stdout)
    except ValueError:
        rows = []
    dead = sorted(i["node"] for i in rows if i["check"] == "daemon_start" and i["status"] == "fail")
    checked = {i["node"] for i in rows if i["check"] == "reachability" and i["status"] == "pass"}
    check(r.returncode == 69 and dead == sorted(DEAD_NODES) and checked == {"node1", "node2"},
          "preflight with two unreachable nodes: a daemon_start row for each, node1 and node2 checked, exit 69",
          f"dead {dead} checked {checked}\n     {cj.describe(r)}")


def frontend_address(ws):
    """The address the daemons connect to is the route toward a node that is not tlaunch's own
    host, and a first name that does not resolve stops no other: (1) tlaunch on node1 whose
    /etc/hosts names it 127.0.1.1 (Debian's default), node1 listed first: every other daemon was
    told to connect to 127.0.0.1 and the healthy nodes were blamed; (2) an unresolvable first name:
    the run ended at once naming it alone, nothing checked."""
    hosts = os.path.join(ws.dir, "hosts.debian")
    with open("/etc/hosts") as f:
        cluster = f.read()
    with open(hosts, "w") as f:
        f.write("127.0.0.1 localhost\n127.0.1.1 node1\n" + cluster)
    argv = [ws.tlaunch, *cj.NET, "--hosts", "node1,node2,node3", "-p", "1", "--", "hostname"]
    # A mount namespace of its own: the cluster's shared /etc/hosts stays as it is.
    r = subprocess.run(vc.exec_argv("node1", ["unshare", "-m", "sh", "-c",
                                              'mount --bind "$0" /etc/hosts && exec "$@"', hosts, *argv]),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", timeout=TIMEOUT,
                       cwd=ws.dir, env=vc.environ())
    if cj.job_id_in(r.stderr):
        jobs_seen.append(cj.job_id_in(r.stderr))
    got = sorted(l for l in r.stdout.splitlines())
    check(r.returncode == 0 and got == ["[node1:0] node1", "[node2:1] node2", "[node3:2] node3"],
          "tlaunch on node1, named 127.0.1.1 in its /etc/hosts and listed first: every node runs", cj.describe(r))
    r = tlaunch(ws, ["preflight", "--json", "--hosts", "tlc-no-such-name,node1,node2"], timeout=60)
    try:
        rows = json.loads(r.stdout)
    except ValueError:
        rows = []
    dead = [i["node"] for i in rows if i["check"] == "daemon_start" and i["status"] == "fail"]
    checked = {i["node"] for i in rows if i["check"] == "reachability" and i["status"] == "pass"}
    check(r.returncode == 69 and dead == ["tlc-no-such-name"] and checked == {"node1", "node2"},
          "preflight, first name unresolvable: its daemon_start row, node1 and node2 checked, exit 69",
          f"dead {dead} checked {checked}\n     {cj.describe(r)}")


def wrong_daemon_path(ws):
    r = tlaunch(ws, ["--hosts", "node2,node3", "-p", "1", "--daemon-path", "/nonexistent/tlaunchd", "--",
                     "/bin/true"], timeout=60)
    at = r.stderr.find("not started:")  # no rank ran
    summary = r.stderr[at:] if at >= 0 else ""
    check(r.returncode != 0 and "/nonexistent/tlaunchd" in summary and "node2" in summary and "node3" in summary,
          "--daemon-path /nonexistent/tlaunchd: non-zero exit, the message names both nodes and the path",
          cj.describe(r))


def wait_ready(ws, p, ranks):
    lines = cj.wait_for_lines(p.stdout, ranks, " ready", 120)
    if lines is None:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        check(False, f"job started {ranks} ranks", f"stdout {out!r} stderr {err!r}")
        return None
    return lines


def kill_daemon(ws, nodes):
    p = start(ws, ["--hosts", ",".join(nodes), "-p", "2", "--", cj.PYTHON, ws.program("wait_for_signals.py")])
    lines = wait_ready(ws, p, 8)
    if lines is None:
        return
    job = cj.job_id_of_pid(int(lines[0].split(" pid ")[1].split()[0]))
    jobs_seen.append(job)
    victims = cj.daemons_of(job, "node3")
    check(len(victims) == 1, "found node3's tlaunchd by its job id", str(victims))
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    t0 = time.monotonic()
    try:
        out, err = p.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    ended = time.monotonic() - t0
    summary = [line for line in err.splitlines() if f"job {job} failed:" in line]
    check(p.returncode == 69 and summary and "node3" in summary[0],
          f"kill -9 of node3's tlaunchd: exit 69 after {ended:.1f} s, the summary names node3",
          f"exit {p.returncode}, stderr {err!r}")
    ok, left = nothing_left(job, max(0.0, 10 - (time.monotonic() - t0)))
    check(ok, "kill -9 of node3's tlaunchd: nothing of the job left on any node within 10 s", left)


def kill_frontend(ws, nodes):
    p = start(ws, ["--hosts", ",".join(nodes), "-p", "2", "--", cj.PYTHON, ws.program("wait_for_signals.py")])
    lines = wait_ready(ws, p, 8)
    if lines is None:
        return
    job = cj.job_id_of_pid(int(lines[0].split(" pid ")[1].split()[0]))
    jobs_seen.append(job)
    os.kill(p.pid, signal.SIGKILL)
    t0 = time.monotonic()
    p.wait()
    ok, left = nothing_left(job, 10)
    check(ok, f"kill -9 of tlaunch: nothing of the job left on any node within 10 s "
              f"({time.monotonic() - t0:.1f} s)", left)
    for stream in (p.stdout, p.stderr):
        stream.close()


def main():
    global vc
    skip_unless_possible(slurm=False)
    cj.require_tlaunch()
    torch = cj.have_torch()
    cj.HostsEntries.strip()
    t_start = time.monotonic()
    with cj.Workspace() as ws:
        cj.wait_for_free_cluster()
        vc = cj.OwnVirtualCluster(n=4, slurm=False)
        with vc:
            print(f"cluster up in {vc.up_seconds:.1f} s", flush=True)
            steps = [node_order, arguments_unchanged, unreachable_node, frontend_address, wrong_daemon_path]
            if torch:
                steps.insert(0, lambda ws: gloo_allreduce(ws, vc.nodes))
            else:
                print("note: Debian's python3-torch is missing: the Gloo all-reduce is not checked", flush=True)
            steps += [lambda ws: host_addresses(ws, torch), lambda ws: kill_daemon(ws, vc.nodes),
                      lambda ws: kill_frontend(ws, vc.nodes)]
            for step in steps:
                step(ws)
        print(f"cluster down in {vc.down_seconds:.1f} s", flush=True)
    left = [p for job in jobs_seen for p in cj.job_processes(job)]
    check(not left, "after down: no process of any job of this test", "\n     ".join(left))
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    check("tlvc-" not in netns, "after down: no network namespace of the cluster", netns)
    print(f"total {time.monotonic() - t_start:.1f} s", flush=True)
    return check.exit_status()


if __name__ == "__main__":
    sys.exit(main())
