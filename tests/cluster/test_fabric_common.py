"""Shared by test_fabric_capture.py and test_preflight_cluster.py; not a test itself (stdlib only).

- SharedCluster: a VirtualCluster that waits its turn: this machine holds one virtual cluster at a
  time, and another test (or a developer) may be using it.
- SysfsCaptures: the real sysfs captures (mlx4_0 FDR, qib0 QDR) extracted where every node sees them.
- Tlaunch: runs tlaunch inside a node (its frontend then runs on the fabric) with a clean environment.
- BridgeCapture / tcp_payload_packets: tcpdump on the switch's bridges, and a pcap reader.
- PreflightTable: the per-node preflight table tlaunch prints, parsed.
"""
import ipaddress
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from vcluster import SCRIPT, VClusterError, VirtualCluster  # noqa: E402
import cluster_jobs as cj  # noqa: E402

WAIT_FOR_CLUSTER_S = 15 * 60
POLL_S = 5
SWITCH_NETNS = "tlvc-switch"
MGMT_BRIDGE = "br-mgmt"
FABRIC_BRIDGE = "br-fabric"
FABRIC_PREFIX = 24  # contrib/vcluster.md: ib0 = 198.19.0.(10+I)/24
MLX4_CAPTURE = "hwloc-linux_32em64t-2n8c+1mic_mlx4_0-ib0.sysfs.tar.bz2"
QIB_CAPTURE = "hwloc-linux_40intel64-2g2n4c_qib0-ib0.sysfs.tar.bz2"
# What the caller's environment must not slip into the jobs (a CI runner with NCCL_* set would
# change the plan and the preflight findings under test).
FABRIC_ENV_PREFIXES = ("NCCL_", "GLOO_", "TP_SOCKET_", "UCX_", "OMPI_MCA_", "PRTE_MCA_", "PMIX_MCA_", "MASTER_")


def vcluster_status():
    """(exit status of `vcluster status --quiet`, first line of `vcluster status`)."""
    rc = subprocess.run([str(SCRIPT), "status", "--quiet"], capture_output=True).returncode
    first = subprocess.run([str(SCRIPT), "status"], capture_output=True, text=True).stdout.split("\n", 1)[0]
    return rc, first


def cluster_exists():
    return vcluster_status()[0] in (0, 1)  # 0 up, 1 degraded/half built, 3 down


class SharedCluster(VirtualCluster):
    """VirtualCluster that first waits (up to 15 minutes) until no other cluster exists, and
    retries when `up` loses a race to another one. Unlike VirtualCluster it never runs `down`
    after a failed `up`: that `down` would remove the cluster that made `up` fail, someone
    else's (`up` removes what it built itself when it fails)."""

    def __enter__(self):
        deadline = time.monotonic() + WAIT_FOR_CLUSTER_S
        waited = False
        while True:
            while cluster_exists() and time.monotonic() < deadline:
                if not waited:
                    print(f"waiting for the virtual cluster in use to go away ({vcluster_status()[1]})", flush=True)
                    waited = True
                time.sleep(POLL_S)
            err = self._try_up()
            if err is None:
                break
            if "already up" in err and time.monotonic() < deadline:
                time.sleep(POLL_S)
                continue
            raise VClusterError("'vcluster up' failed; its messages are above")
        try:
            self._env = self._read_env()
        except BaseException:
            self.__exit__(None, None, None)  # ours: take it down
            raise
        return self

    def still_ours(self):
        """(ours?, first line of `vcluster status`): ours while it is up and owned by this process.
        It may not be: another test's failed `up` runs `down` (vcluster.py), which removes any cluster."""
        rc, first = vcluster_status()
        return rc == 0 and f"owner pid {os.getpid()}" in first, first

    def run_steps(self, check, steps):
        """Runs each (name, function) while the cluster is still ours; stops, saying why, when it is not."""
        for name, step in steps:
            ours, status = self.still_ours()
            if not ours:
                check(False, f"the cluster is still up and ours before '{name}': someone took it down", status)
                return
            step()

    def _try_up(self):
        """Runs `up`; None on success, else its stderr (already echoed)."""
        self._install_signal_handlers()
        args = [self._script, "up", "-n", str(self.n), "--owner", str(os.getpid())]
        if not self.slurm:
            args.append("--no-slurm")
        if not self.ssh:
            args.append("--no-ssh")
        if self._cpus is not None:
            args += ["--cpus", str(self._cpus)]
        if self._timeout is not None:
            args += ["--timeout", str(self._timeout)]
        self.hosts_before = Path("/etc/hosts").read_bytes()  # no cluster now: the machine's own bytes
        start = time.monotonic()
        up = subprocess.Popen(args, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        try:
            _, err = up.communicate()
        except BaseException:
            up.terminate()  # `up` removes what it built on SIGTERM
            up.wait()
            self._restore_signal_handlers()
            raise
        sys.stderr.write(err)
        if up.returncode != 0:
            self._restore_signal_handlers()
            return err
        self.up_seconds = time.monotonic() - start
        return None


def fixtures_dir():
    return Path(os.environ.get("TLAUNCH_FIXTURES_DIR") or HERE.parent / "fixtures")


class SysfsCaptures:
    """Extracts the sysfs captures into a directory under /var/tmp (each node has its own /tmp)
    and removes it on exit. .root(name) is a capture's sysfs root (the directory holding sys/);
    .per_node({node: name}) makes DIR/nodeI -> that root and returns 'DIR/{node}' for --sysfs-root."""

    def __init__(self, *names):
        self.names = names
        self.dir = None
        self._mounted = False
        self._roots = {}

    def __enter__(self):
        missing = [n for n in self.names if not (fixtures_dir() / "sysfs" / n).is_file()]
        if missing:
            cj.tl.fail(f"sysfs capture(s) {', '.join(missing)} not found under {fixtures_dir()}/sysfs "
                       "(set TLAUNCH_FIXTURES_DIR)")
        self.dir = tempfile.mkdtemp(prefix="tlaunch-fabric-sysfs-", dir="/var/tmp")
        os.chmod(self.dir, 0o755)
        try:
            # On a tmpfs of its own (mounted before the cluster's nodes copy the host's mounts):
            # on ext4, once the suite has removed many files, each of a capture's ~9,400 files
            # costs a scan of recently deleted inodes, seconds per capture. Plain /var/tmp if
            # mounting is refused.
            self._mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", self.dir],
                                           capture_output=True).returncode == 0
            for name in self.names:
                into = Path(self.dir, f"capture{len(self._roots)}")
                into.mkdir()
                with tarfile.open(fixtures_dir() / "sysfs" / name, "r:bz2") as tar:
                    # numeric_owner: by name, each of its ~9,400 files cost ~100 failed NSS
                    # lookups of its recorded owner (4 s per capture).
                    tar.extractall(into, numeric_owner=True)
                roots = [p for p in into.iterdir() if (p / "sys").is_dir()]
                if len(roots) != 1:
                    raise RuntimeError(f"{name}: expected one directory with sys/ at its top, found {roots}")
                self._roots[name] = str(roots[0])
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc):
        self.remove()
        return False

    def remove(self):
        if self.dir:
            if self._mounted:
                if subprocess.run(["umount", self.dir], capture_output=True).returncode != 0:
                    subprocess.run(["umount", "-l", self.dir], capture_output=True)
                self._mounted = False
            shutil.rmtree(self.dir, ignore_errors=True)

    def root(self, name):
        return self._roots[name]

    def per_node(self, mapping):
        base = Path(self.dir, "per-node")
        base.mkdir(exist_ok=True)
        for node, name in mapping.items():
            link = base / node
            if link.is_symlink():
                link.unlink()
            link.symlink_to(self._roots[name])
        return str(base / "{node}")

    def hca_port_of(self, name, netdev):
        """'mlx4_0:1': the HCA (and its port) that owns netdev in that capture, as recorded."""
        ib = Path(self._roots[name], "sys/class/infiniband")
        for dev in sorted(ib.iterdir()):
            if (dev / "device" / "net" / netdev).exists():
                ports = sorted(p.name for p in (dev / "ports").iterdir())
                return f"{dev.name}:{ports[0]}"
        raise RuntimeError(f"{name}: no HCA owns {netdev}")

    def rate_of(self, name, hca_port):
        dev, port = hca_port.split(":")
        return Path(self._roots[name], "sys/class/infiniband", dev, "ports", port, "rate").read_text().strip()


def fabric_cidr(vc):
    return str(ipaddress.ip_interface(f"{vc.fabric_ip(vc.nodes[0])}/{FABRIC_PREFIX}").network)


class Tlaunch:
    """Runs the tlaunch under test inside a node, from the workspace, with the caller's
    environment minus SLURM_* and fabric variables (plus `env`). Jobs run with -v, which prints
    their id: .jobs lists every job id seen, to look for leftovers."""

    def __init__(self, vc, ws):
        self.vc = vc
        self.ws = ws
        self.jobs = []

    def environ(self, env=None):
        base = {k: v for k, v in self.vc.environ().items() if not k.startswith(FABRIC_ENV_PREFIXES)}
        return {**base, **(env or {})}

    def argv(self, args, node="node1"):
        return self.vc.exec_argv(node, [self.ws.tlaunch, *args])

    def run(self, args, node="node1", env=None, timeout=300):
        """CompletedProcess with .elapsed (seconds) and .job (the job id, or None)."""
        if args[0] != "preflight" and "-v" not in args:
            args = ["-v", *args]
        t0 = time.monotonic()
        r = subprocess.run(self.argv(args, node), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           errors="replace", timeout=timeout, cwd=self.ws.dir, env=self.environ(env))
        r.elapsed = time.monotonic() - t0
        r.job = cj.job_id_in(r.stderr)
        if r.job:
            self.jobs.append(r.job)
        return r


class BridgeCapture:
    """tcpdump of TCP on one of the switch's bridges (every frame between the nodes crosses it;
    promiscuous mode, tcpdump's default, shows forwarded frames too), headers only."""

    def __init__(self, bridge, path):
        self.bridge = bridge
        self.path = path
        self.proc = None
        self.stderr = ""

    def __enter__(self):
        self.proc = subprocess.Popen(["ip", "netns", "exec", SWITCH_NETNS, "tcpdump", "-n", "-i", self.bridge,
                                      "-s", "128", "-w", self.path, "tcp"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        first = self.proc.stderr.readline()  # "tcpdump: listening on ..." once it captures
        self.stderr = first
        if "listening on" not in first:
            self.stop()
            raise RuntimeError(f"tcpdump on {self.bridge} did not start: {self.stderr.strip()}")
        return self

    def stop(self):
        if self.proc and self.proc.poll() is None:
            time.sleep(0.3)  # let the last frames of a just-finished job reach the capture
            self.proc.send_signal(signal.SIGINT)
            try:
                self.stderr += self.proc.communicate(timeout=20)[1]
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.stderr += self.proc.communicate()[1]
        return self.stderr

    def __exit__(self, *exc):
        self.stop()
        return False


def tcp_payload_packets(path):
    """[(src, sport, dst, dport, payload bytes)] for each IPv4 TCP packet carrying data in a pcap
    file (Ethernet link type), read from the headers tcpdump kept."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        return []
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise ValueError(f"{path}: not a pcap file")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != 1:
        raise ValueError(f"{path}: link type {linktype}, expected Ethernet (1)")
    out = []
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[off + 8:off + 12])[0]
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        eth = 14
        ethertype = struct.unpack("!H", frame[12:14])[0] if len(frame) >= 14 else 0
        if ethertype == 0x8100 and len(frame) >= 18:
            ethertype, eth = struct.unpack("!H", frame[16:18])[0], 18
        if ethertype != 0x0800 or len(frame) < eth + 20:
            continue
        ip = frame[eth:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack("!H", ip[2:4])[0]
        if ip[9] != 6 or len(ip) < ihl + 14:
            continue
        tcp = ip[ihl:]
        sport, dport = struct.unpack("!HH", tcp[:4])
        payload = total - ihl - (tcp[12] >> 4) * 4
        if payload > 0:
            out.append((".".join(map(str, ip[12:16])), sport, ".".join(map(str, ip[16:20])), dport, payload))
    return out


class PreflightTable:
    """The table tlaunch prints for preflight: sections 'node3 (4 pass, 0 warn, 1 fail, 5 skip)',
    each with rows (check, device, status, found) and 'fix CHECK: ...' lines."""

    HEADER = re.compile(r"^(\S.*?) \((\d+) pass, (\d+) warn, (\d+) fail, (\d+) skip\)$")
    STATUSES = ("pass", "warn", "fail", "skip")

    def __init__(self, text):
        self.sections = {}
        current = None
        for line in text.splitlines():
            if line.startswith("tlaunch: "):
                line = line[len("tlaunch: "):]  # tlaunch prefixes every line of its own messages
            m = self.HEADER.match(line)
            if m:
                current = {"counts": tuple(int(x) for x in m.groups()[1:]), "rows": [], "fixes": []}
                self.sections[m.group(1)] = current
                continue
            if current is None or not line.startswith("  "):
                continue
            body = line.strip()
            if body.startswith("fix "):
                current["fixes"].append(body[4:])
                continue
            cells = re.split(r"\s{2,}", body)
            if cells[0] == "CHECK":
                continue
            at = next((i for i in (1, 2) if i < len(cells) and cells[i] in self.STATUSES), None)
            if at is None:
                continue
            current["rows"].append({"check": cells[0], "device": cells[1] if at == 2 else "",
                                    "status": cells[at], "found": cells[at + 1] if at + 1 < len(cells) else ""})

    def rows(self, section, check=None, status=None):
        sec = self.sections.get(section, {"rows": []})
        return [r for r in sec["rows"] if (check is None or r["check"] == check) and
                (status is None or r["status"] == status)]

    def fixes(self, section):
        return self.sections.get(section, {"fixes": []})["fixes"]

    def failing_sections(self):
        return sorted(name for name, s in self.sections.items() if s["counts"][2] > 0)


def refused_on(stderr):
    """The node list of 'preflight failed on X; no rank was started', or None."""
    m = re.search(r"preflight failed on ([^;\n]+); no rank was started", stderr)
    return m.group(1) if m else None


def _live(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def processes_in(directory):
    """'pid command' of live processes (not this one) whose working directory is under directory:
    the ranks of this test's jobs run there."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                cwd = os.readlink(f"/proc/{d}/cwd")
                cmd = Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if (cwd == directory or cwd.startswith(directory + "/")) and _live(d):
                out.append(f"{d} {cmd.strip()}")
    return out


def nothing_left(check, what, job, within=10):
    """Checks that no process of `job` (ranks, daemons, ssh) lives on any node within `within` s."""
    if job:
        ok = cj.tl.wait_until(lambda: not cj.job_processes(job), within, interval=0.1)
        check(ok, f"{what}: nothing of job {job} left on any node", "\n     ".join(cj.job_processes(job)))


def no_processes_left(check, tl):
    """After `down`: no process of any job this test ran, and none working in its workspace."""
    left = [p for job in tl.jobs for p in cj.job_processes(job)] + processes_in(tl.ws.dir)
    check(not left, f"after down: no process of this test's {len(tl.jobs)} jobs, none in its workspace",
          "\n     ".join(left))


def machine_left_clean(check, vc, *dirs):
    """After `down` and cleanup: the extracted captures and the workspace are gone and, unless another
    cluster came up meanwhile, no namespace of ours is left and /etc/hosts is as it was before `up`."""
    left = [d for d in dirs if d and os.path.exists(d)]
    check(not left, "after the test: the extracted captures and the workspace are removed", str(left))
    rc, first = vcluster_status()
    if rc in (0, 1):
        print(f"note: another cluster is up now ({first}); namespaces and /etc/hosts not compared", flush=True)
        return
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    check("tlvc-" not in netns, "after down: no network namespace of the cluster", netns)
    check(Path("/etc/hosts").read_bytes() == vc.hosts_before, "after down: /etc/hosts has the bytes it had before up")
