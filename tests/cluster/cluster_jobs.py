"""Helpers for tlaunch's cluster tests (stdlib only): run tlaunch jobs on a VirtualCluster and
check what a user would check: output, exit status, and what is left on the nodes afterwards.

The nodes share the host's PID namespace, so /proc here shows every node's processes; a job's
processes are found by TLAUNCH_JOB_ID in their environment (ranks) or the job id on their command
line (tlaunchd, ssh, srun), never by program name. Each node has a private /tmp: everything a
node must see (tlaunch, tlaunchd, programs, working directory) lives outside /tmp.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))
import tl  # noqa: E402  (TLAUNCH, PYTHON, program(), processes_with_env, wait_until)
from vcluster import SCRIPT, VirtualCluster  # noqa: E402

PYTHON = tl.PYTHON
# The virtual nodes have no RDMA device: a user runs tlaunch there with --net tcp (else preflight
# refuses the job, exit 78), and names the stand-in fabric (ib0, 198.19.0.0/24) so that jobs use it.
NET = ["--net", "tcp", "--net-if", "ib0"]
NODE_PRIVATE = ("/tmp/", "/dev/shm/")  # paths each vcluster node has its own copy of


class Checks:
    """Collects failed checks so that one run reports all of them; prints each as it goes."""

    def __init__(self):
        self.failures = []

    def __call__(self, ok, what, detail=""):
        print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f"\n     {detail}" if not ok and detail else ""), flush=True)
        if not ok:
            self.failures.append(what)
        return ok

    def exit_status(self):
        if self.failures:
            print(f"{len(self.failures)} check(s) failed: " + "; ".join(self.failures), flush=True)
            return 1
        print("PASS", flush=True)
        return 0


def _node_visible(path):
    return not str(Path(path).resolve()).startswith(NODE_PRIVATE)


class Workspace:
    """A directory the nodes see (under /var/tmp), removed on exit, with tlaunch and tlaunchd where
    the nodes can run them (copied only if the build lives in /tmp) and the test programs."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tlaunch-cluster-test-", dir="/var/tmp")
        os.chmod(self.dir, 0o755)
        tlaunch = Path(tl.TLAUNCH).resolve()
        self.tlaunch = str(tlaunch)
        if not _node_visible(tlaunch):
            bindir = Path(self.dir, "bin")
            bindir.mkdir()
            for name in ("tlaunch", "tlaunchd"):
                shutil.copy2(tlaunch.parent / name, bindir / name)
            self.tlaunch = str(bindir / "tlaunch")
        self.programs = tl.PROGRAMS
        if not _node_visible(self.programs):
            self.programs = shutil.copytree(self.programs, Path(self.dir, "programs"))

    def program(self, name):
        return os.path.join(self.programs, name)

    def path(self, name):
        return os.path.join(self.dir, name)

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def foreign_cluster():
    """None if no virtual cluster exists, or only one whose owner has exited (`up` replaces it);
    otherwise the first line of `vcluster status` (someone else's cluster: leave it alone)."""
    p = subprocess.run([str(SCRIPT), "status"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=60)
    if p.returncode == 3:
        return None
    first = (p.stdout.splitlines() or ["vcluster: ?"])[0]
    m = re.search(r"owner pid (\d+)( \(exited\))?", first)
    if m and (m.group(2) or int(m.group(1)) == os.getpid()):
        return None
    return first


def wait_for_free_cluster(timeout=300):
    """There is one virtual cluster per machine. If another process's cluster is up, wait for it
    to go away (up to timeout s); then exit 1 naming it rather than disturb it."""
    deadline = time.monotonic() + timeout
    other = foreign_cluster()
    if other:
        print(f"waiting up to {timeout} s for another virtual cluster to go away: {other}", flush=True)
    while other and time.monotonic() < deadline:
        time.sleep(2)
        other = foreign_cluster()
    if other:
        print(f"FAIL: another virtual cluster is still up after {timeout} s: {other}\n"
              f"     see '{SCRIPT} status'; if it is a leftover, '{SCRIPT} down'", flush=True)
        sys.exit(1)


class OwnVirtualCluster(VirtualCluster):
    """VirtualCluster that never takes down a cluster it did not build: when `up` fails because
    another process's cluster appeared meanwhile, VirtualCluster's clean-up `down` would remove
    that one. Use after wait_for_free_cluster()."""

    def _down(self):
        other = foreign_cluster()
        if other:
            print(f"not taking down another process's virtual cluster: {other}", flush=True)
            self.down_seconds = 0.0
            return
        super()._down()


def require_tlaunch():
    for name in ("tlaunch", "tlaunchd"):
        if not os.access(Path(tl.TLAUNCH).resolve().parent / name, os.X_OK):
            tl.skip(f"{name} is not built next to {tl.TLAUNCH} (set TLAUNCH_BIN)")


def have_torch():
    try:
        subprocess.run([PYTHON, "-c", "import torch.distributed"], check=True, capture_output=True, timeout=120)
        return True
    except Exception:
        return False


def _live(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def job_processes(job):
    """'pid command' of every live process of tlaunch job `job` on any node: ranks (by environment)
    and daemons, ssh and srun (by the job id on their command line)."""
    found = set(tl.processes_with_env("TLAUNCH_JOB_ID", job))
    needle = job.encode()
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            try:
                if needle in Path(f"/proc/{d}/cmdline").read_bytes():
                    found.add(int(d))
            except OSError:
                pass
    out = []
    for pid in sorted(found):
        if _live(pid):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            out.append(f"{pid} {cmd.strip()}")
    return out


def any_job_processes():
    """Live processes with any TLAUNCH_JOB_ID in their environment."""
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                env = Path(f"/proc/{d}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(kv.startswith(b"TLAUNCH_JOB_ID=") for kv in env) and _live(int(d)):
                pids.append(int(d))
    return pids


def daemons_of(job, node):
    """PIDs of tlaunchd processes of `job` serving `node`."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            argv = Path(f"/proc/{d}/cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if (os.path.basename(argv[0]) == "tlaunchd" and job in argv and
                any(a == "--node-name" and b == node for a, b in zip(argv, argv[1:])) and _live(int(d))):
            pids.append(int(d))
    return pids


def node_processes_matching(marker):
    """PIDs of live processes on the cluster's nodes (another UTS namespace than this test's)
    whose command line contains marker: a local test running beside this one may run the same
    program on the host."""
    host_uts = os.readlink("/proc/self/ns/uts")
    pids = []
    for pid in tl.processes_matching(marker):
        try:
            if os.readlink(f"/proc/{pid}/ns/uts") != host_uts:
                pids.append(pid)
        except OSError:
            pass
    return pids


def job_id_of_pid(pid):
    return tl.job_of_rank(pid)


def job_id_in(text):
    m = re.search(r"job (tl-[0-9a-f]+)", text)
    return m.group(1) if m else None


def wait_for_lines(stream, count, marker, timeout):
    """Reads lines from stream until `count` of them contain marker; returns all lines read, or
    None if the stream ended or `timeout` passed first (checked between lines)."""
    lines = []
    deadline = time.monotonic() + timeout
    while sum(marker in line for line in lines) < count:
        if time.monotonic() > deadline:
            return None
        line = stream.readline()
        if line == "":
            return None
        lines.append(line)
    return lines


def gloo_lines_ok(stdout, nodes, ranks_per_node):
    """None if stdout is exactly one OK line per rank of the Gloo all-reduce with rank r tagged
    with nodes[r // ranks_per_node]; otherwise what is wrong."""
    world = len(nodes) * ranks_per_node
    total = world * (world + 1) // 2
    seen = set()
    for line in stdout.splitlines():
        m = re.fullmatch(rf"\[([\w.-]+):(\d+)\] rank (\d+)/{world} allreduce={total} expected={total} OK", line)
        if not m:
            return f"unexpected line {line!r}"
        tag_node, tag_rank, rank = m.group(1), int(m.group(2)), int(m.group(3))
        if tag_rank != rank:
            return f"tag rank {tag_rank} differs from RANK {rank}: {line!r}"
        if tag_node != nodes[rank // ranks_per_node]:
            return f"rank {rank} tagged {tag_node}, expected {nodes[rank // ranks_per_node]}: {line!r}"
        seen.add(rank)
    if seen != set(range(world)):
        return f"ranks that reported OK: {sorted(seen)}, expected 0..{world - 1}"
    return None


def rank_hosts(stdout):
    """{rank: (tag node, printed hostname)} from `[node:rank] hostname` lines."""
    out = {}
    for line in stdout.splitlines():
        m = re.fullmatch(r"\[([\w.-]+):(\d+)\] (\S+)", line)
        if m:
            out[int(m.group(2))] = (m.group(1), m.group(3))
    return out


def keeper_pids(exe_dir):
    """PIDs of every `tlaunchd --keeper` (warm daemons) run from exe_dir, on any node (the
    virtual nodes share one pid namespace)."""
    pids = []
    for d in os.listdir("/proc"):
        try:
            if d.isdigit() and b"--keeper" in Path(f"/proc/{d}/cmdline").read_bytes() and \
                    os.readlink(f"/proc/{d}/exe").startswith(str(exe_dir)):
                pids.append(int(d))
        except OSError:
            pass
    return pids


def daemon_parents(stdout):
    """node -> the pid of its daemon's parent, from ranks' lines "on NODE daemon-parent PID"."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if "daemon-parent" in parts:
            i = parts.index("daemon-parent")
            out[parts[i - 1]] = int(parts[i + 1])
    return out


def describe(proc):
    return f"exit {proc.returncode}\n     stdout: {proc.stdout!r}\n     stderr: {proc.stderr!r}"


class HostsEntries:
    """Adds lines to /etc/hosts between our own markers and removes exactly them again (also a
    block left by an earlier, killed run). /etc/hosts is rewritten in place (it may be a mount)."""

    BEGIN = "# BEGIN tlaunch-cluster-test\n"
    END = "# END tlaunch-cluster-test\n"

    def __init__(self, lines, path="/etc/hosts"):
        self.lines = lines
        self.path = path

    @classmethod
    def strip(cls, path="/etc/hosts"):
        text = Path(path).read_text()
        cleaned = re.sub(re.escape(cls.BEGIN) + r".*?" + re.escape(cls.END), "", text, flags=re.S)
        if cleaned != text:
            with open(path, "w") as f:
                f.write(cleaned)

    def __enter__(self):
        self.strip(self.path)
        self.original = Path(self.path).read_text()
        sep = "" if not self.original or self.original.endswith("\n") else "\n"
        self.written = self.original + sep + self.BEGIN + "".join(line + "\n" for line in self.lines) + self.END
        with open(self.path, "w") as f:
            f.write(self.written)
        return self

    def __exit__(self, *exc):
        if Path(self.path).read_text() == self.written:  # untouched meanwhile: the original bytes
            with open(self.path, "w") as f:
                f.write(self.original)
        else:
            self.strip(self.path)
        return False
