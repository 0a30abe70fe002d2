#!/usr/bin/python3
"""Smoke test of contrib/vcluster: a 4-node cluster works like 4 machines and leaves nothing behind.

Needs root; exits 77 (skip) where namespaces or the Debian packages are missing.
"""

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vcluster import VirtualCluster, skip_unless_possible  # noqa: E402

STATE_DIR = "/var/lib/tlaunch-vcluster"
SSH_DIR = Path(os.path.expanduser("~root")) / ".ssh"
TIMEOUT = 60
failures = []


def check(ok, what, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if not ok and detail else ""), flush=True)
    if not ok:
        failures.append(what)


def run(argv, **kw):
    # stderr apart: Slurm reports there e.g. that a job waits while the last one's nodes finish.
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT, **kw)


def out(proc):
    return f"exit {proc.returncode}, stdout {proc.stdout.strip()!r}, stderr {(proc.stderr or '').strip()!r}"


def ssh_tree():
    """Every file and directory under root's ~/.ssh with its mode and bytes (None if absent)."""
    if not SSH_DIR.exists():
        return None
    tree = {}
    for path in [SSH_DIR, *sorted(SSH_DIR.rglob("*"))]:
        st = path.lstat()
        tree[str(path)] = (st.st_mode, st.st_uid, None if path.is_dir() else path.read_bytes())
    return tree


def link_names(*args):
    lines = run(["ip", "-o", "link", "show", *args]).stdout.splitlines()
    return sorted(line.split(":")[1].strip().split("@")[0] for line in lines)


def mount_points():
    return sorted(line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines())


def host_snapshot():
    # Only what the cluster could have touched: other people's work may change the rest meanwhile.
    return {
        "/etc/hosts": (os.stat("/etc/hosts").st_mode, Path("/etc/hosts").read_bytes()),
        "ssh": ssh_tree(),
        "bridges": link_names("type", "bridge"),
        "our links": [name for name in link_names() if name.startswith("tlvc")],
        "netns": sorted(n for n in run(["ip", "netns", "list"]).stdout.split() if n.startswith("tlvc-")),
        "our mounts": [m for m in mount_points() if m.startswith(("/run/netns", STATE_DIR))],
    }


def cluster_processes():
    """Live processes of the cluster: node anchors and anything naming the state directory."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] == "Z":  # exited, waiting to be reaped
            continue
        if argv[0].startswith(b"vcluster-anchor-") or any(STATE_DIR.encode() in a for a in argv):
            found.append(f"{pid} {b' '.join(argv).decode(errors='replace')}")
    return found


def test_cluster(vc):
    nodes = vc.nodes
    env = vc.environ()

    for node in nodes:
        p = vc.exec(node, ["hostname"], stdout=subprocess.PIPE, text=True, timeout=TIMEOUT)
        check(p.returncode == 0 and p.stdout.strip() == node, f"{node}: hostname is {node}", out(p))

    p = vc.exec("node1", ["ip", "-o", "-4", "addr", "show"], stdout=subprocess.PIPE, text=True, timeout=TIMEOUT)
    check(f"eth0    inet {vc.mgmt_ip('node1')}/24" in p.stdout and f"ib0    inet {vc.fabric_ip('node1')}/24" in p.stdout,
          "node1: eth0 and ib0 have the management and fabric addresses", out(p))

    marker = f"/tmp/vcluster-smoke-{os.getpid()}"
    p = vc.exec("node1", f"echo x > {marker} && test -e {marker}", timeout=TIMEOUT)
    q = vc.exec("node2", ["test", "!", "-e", marker], timeout=TIMEOUT)
    check(p.returncode == 0 and q.returncode == 0 and not os.path.exists(marker),
          "/tmp is private to each node", f"node1 rc {p.returncode}, node2 rc {q.returncode}")

    p = run(["ssh", "node2", "hostname"])
    check(p.returncode == 0 and p.stdout.strip() == "node2", "host: 'ssh node2 hostname' prints node2", out(p))
    p = run(vc.exec_argv("node1", ["ssh", "node2", "hostname"]))
    check(p.returncode == 0 and p.stdout.strip() == "node2", "node1: 'ssh node2 hostname' prints node2", out(p))

    p = run(vc.exec_argv("node1", ["ping", "-c", "1", "-W", "5", "-I", "ib0", vc.fabric_ip("node4")]))
    check(p.returncode == 0, "node1 pings node4's fabric address over ib0", out(p))

    p = run(["srun", "-N4", "hostname"], env=env)
    check(p.returncode == 0 and sorted(p.stdout.split()) == nodes, "srun -N4 hostname prints node1..node4", out(p))

    p = run(["srun", "--mpi=pmix", "-N2", "-n2", "printenv", "PMIX_RANK"], env=env)
    check(p.returncode == 0 and sorted(p.stdout.split()) == ["0", "1"],
          "srun --mpi=pmix -N2 -n2 gives PMIx ranks 0 and 1", out(p))

    p = run(["salloc", "-N4", "/bin/sh", "-c", "echo nodes=$SLURM_JOB_NUM_NODES"], env=env)
    check(p.returncode == 0 and "nodes=4" in p.stdout, "salloc -N4 runs a command with a 4-node allocation", out(p))


def main():
    skip_unless_possible()
    before = host_snapshot()
    vc = VirtualCluster(n=4, slurm=True)
    with vc:
        print(f"up took {vc.up_seconds:.2f}s", flush=True)
        test_cluster(vc)
    print(f"down took {vc.down_seconds:.2f}s", flush=True)

    after = host_snapshot()
    check(not after["netns"], "down: no network namespace left", after["netns"])
    check(not after["our links"], "down: no network link of the cluster left", after["our links"])
    check(after["bridges"] == before["bridges"], "down: the host's bridges are as before",
          f"before {before['bridges']}, after {after['bridges']}")
    procs = cluster_processes()
    check(not procs, "down: no process of the cluster left", "; ".join(procs))
    check(after["our mounts"] == before["our mounts"], "down: no mount of the cluster left (nor /run/netns)",
          f"before {before['our mounts']}, after {after['our mounts']}")
    check(not os.path.exists(STATE_DIR), f"down: {STATE_DIR} removed")
    check(after["/etc/hosts"] == before["/etc/hosts"], "down: /etc/hosts restored byte for byte")
    check(after["ssh"] == before["ssh"], f"down: {SSH_DIR} restored byte for byte")

    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        return 1
    print("all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
