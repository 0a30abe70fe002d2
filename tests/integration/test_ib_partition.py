"""An InfiniBand partition end to end: the job's IPoIB interface is a pkey child (ib0.8001), so
its ranks' verbs must use that partition's P_Key table entry, not entry 0.

The daemons read the real mlx4_0 sysfs capture (tests/fixtures/sysfs), to which this test adds
what a pkey child adds on a real node: net/ib0.8001 (the parent's address and device, its own
pkey file) and the partition in the port's P_Key table. The live interface is a veth named
ib0.8001 in a network namespace of this test's own, holding the job's subnet. Two simulated
nodes (--launcher local) run inside it; each rank prints its fabric variables:
- on the child: NCCL_IB_PKEY=1 (the entry's index), UCX_IB_PKEY=0x0001 (the partition), NCCL
  and Gloo on ib0.8001, NCCL_IB_HCA the port; --dry-run says where the P_Key came from;
- a user's NCCL_IB_PKEY=0 wins, with a warning that the queue pairs join another partition;
- on the parent (the address on ib0 instead): no P_Key variable at all.
Needs root for the namespace (exits 77, skipped, elsewhere); the namespace goes in any case."""
import json
import os
import re
import shutil
import subprocess
import tarfile

import tl

CAPTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../fixtures/sysfs",
                       "hwloc-linux_32em64t-2n8c+1mic_mlx4_0-ib0.sysfs.tar.bz2")
DEVICE = "sys/devices/pci0000:80/0000:80:02.2/0000:82:00.0"
KEYS = ["NCCL_IB_PKEY", "UCX_IB_PKEY", "NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "NCCL_IB_HCA", "MASTER_ADDR"]

if os.geteuid() != 0 or shutil.which("ip") is None:
    tl.skip("needs root and iproute2 for a network namespace")


def capture_with_pkey_child(into):
    """The capture's sysfs root, with ib0.8001 added as the kernel shows a pkey child."""
    with tarfile.open(CAPTURE, "r:bz2") as tar:
        tar.extractall(into, numeric_owner=True)
    root = os.path.join(into, "32em64t-2n8c+1mic")
    parent = os.path.join(root, DEVICE, "net/ib0")
    child = os.path.join(root, DEVICE, "net/ib0.8001")
    os.mkdir(child)
    for name in ("type", "address", "mtu", "dev_id", "mode"):  # a child copies its parent's address
        if os.path.isfile(os.path.join(parent, name)):
            shutil.copy(os.path.join(parent, name), child)
    os.symlink(os.readlink(os.path.join(parent, "device")), os.path.join(child, "device"))
    with open(os.path.join(child, "pkey"), "w") as f:
        f.write("0x8001\n")
    os.symlink(f"../../{DEVICE[len('sys/'):]}/net/ib0.8001", os.path.join(root, "sys/class/net/ib0.8001"))
    with open(os.path.join(root, DEVICE, "infiniband/mlx4_0/ports/1/pkeys/1"), "w") as f:
        f.write("0x8001\n")  # the subnet manager put the partition at entry 1
    return root


def ranks(stdout):
    """{rank: {key: value}} from print_env.py's lines."""
    out = {}
    for line in stdout.splitlines():
        m = re.fullmatch(r"\[[\w.-]+:(\d+)\] (\{.*\})", line)
        if m:
            out[int(m.group(1))] = json.loads(m.group(2))
    return out


tmp = tl.tempdir()
root = capture_with_pkey_child(tmp)
ns = f"tlpkey{os.getpid()}"
subprocess.run(["ip", "netns", "add", ns], check=True)
try:
    def ip(*args):
        subprocess.run(["ip", "-n", ns, *args], check=True)

    def job(extra, *program):
        # The memlock limit of this machine fails the RDMA preflight; the capture has no device to probe.
        return subprocess.run(["ip", "netns", "exec", ns, tl.TLAUNCH, "--launcher", "local", "-N", "2", "-p", "1",
                               "--sysfs-root", root, "--preflight-skip", "memlock", *extra, "--", *program],
                              capture_output=True, text=True, timeout=120)

    def interface(name):
        """A live interface of that name holding the job's subnet (a veth: this kernel may lack dummy)."""
        ip("link", "add", name, "type", "veth", "peer", "name", "tlpk-peer")
        ip("addr", "add", "10.77.0.1/24", "dev", name)
        ip("link", "set", "tlpk-peer", "up")
        ip("link", "set", name, "up")

    ip("link", "set", "lo", "up")
    interface("ib0.8001")

    r = job([], tl.PYTHON, tl.program("print_env.py"), *KEYS)
    tl.check(r.returncode == 0, f"the job on ib0.8001: exit {r.returncode}\n{r.stderr}")
    seen = ranks(r.stdout)
    tl.check(sorted(seen) == [0, 1], f"both ranks printed: {r.stdout!r}\n{r.stderr}")
    for rank, env in seen.items():
        tl.check(env == {"NCCL_IB_PKEY": "1", "UCX_IB_PKEY": "0x0001", "NCCL_SOCKET_IFNAME": "=ib0.8001",
                         "GLOO_SOCKET_IFNAME": "ib0.8001", "NCCL_IB_HCA": "=mlx4_0:1", "MASTER_ADDR": "10.77.0.1"},
                 f"rank {rank}'s fabric variables: {env}")

    dry = job(["--dry-run"], "true")
    tl.check(dry.returncode == 0 and "NCCL_IB_PKEY=1" in dry.stdout and "UCX_IB_PKEY=0x0001" in dry.stdout,
             f"--dry-run shows the P_Key: {dry.stdout}\n{dry.stderr}")
    dry = job(["--dry-run", "--json"], "true")
    tl.check(dry.returncode == 0, f"--dry-run --json: exit {dry.returncode}\n{dry.stderr}")
    sources = {s["name"]: s["source"] for s in json.loads(dry.stdout)["network"]["env"][0]["env"]}
    tl.check(sources.get("NCCL_IB_PKEY") == "partition 0x8001 of ib0.8001, entry 1 of mlx4_0:1's P_Key table "
             "(verbs use entry 0 unless told)", f"--dry-run --json says where the P_Key came from: {sources}")

    mine = job(["-x", "NCCL_IB_PKEY=0"], tl.PYTHON, tl.program("print_env.py"), "NCCL_IB_PKEY")
    tl.check(mine.returncode == 0 and all(e == {"NCCL_IB_PKEY": "0"} for e in ranks(mine.stdout).values()),
             f"the user's NCCL_IB_PKEY reaches the ranks: {mine.stdout}\n{mine.stderr}")
    tl.check("NCCL's queue pairs join another partition" in mine.stderr, f"and is warned about: {mine.stderr}")

    # The parent carries the job's subnet: the default partition, nothing to say.
    ip("link", "del", "ib0.8001")  # and its peer
    interface("ib0")
    r = job([], tl.PYTHON, tl.program("print_env.py"), *KEYS)
    tl.check(r.returncode == 0, f"the job on ib0: exit {r.returncode}\n{r.stderr}")
    for rank, env in ranks(r.stdout).items():
        tl.check(env["NCCL_SOCKET_IFNAME"] == "=ib0" and env["NCCL_IB_PKEY"] is None and env["UCX_IB_PKEY"] is None,
                 f"rank {rank} on the parent: {env}")
finally:
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
print("PASS")
