"""Helpers for tlaunch's integration tests (stdlib only; run by Debian's /usr/bin/python3).

Each test script is one ctest test: it exits 0 on success, 1 on failure (with a message), 77 to
skip. Tests run real tlaunch jobs and look at what a user would see: output, exit status, and
the processes left on the machine.
"""
import atexit
import contextlib
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TLAUNCH = os.environ.get("TLAUNCH_BIN") or os.path.join(os.path.dirname(__file__), "../../build/bin/tlaunch")
PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
PYTHON = "/usr/bin/python3"  # Debian's: the one with torch and mpi4py


def fail(msg):
    print("FAIL:", msg, file=sys.stderr, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def skip(msg):
    print("SKIP:", msg, flush=True)
    sys.exit(77)


def program(name):
    return os.path.join(PROGRAMS, name)


def run(args, timeout=120, **kw):
    """Runs tlaunch with args; returns CompletedProcess (text, both streams captured)."""
    return subprocess.run([TLAUNCH] + list(args), capture_output=True, text=True, timeout=timeout,
                          errors="replace", **kw)


def start(args, **kw):
    return subprocess.Popen([TLAUNCH] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace", start_new_session=True, **kw)


def processes_with_env(name, value):
    """PIDs of live processes whose environment holds name=value (how we find a job's ranks
    without trusting process names)."""
    needle = f"{name}={value}".encode()
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    with open(f"/proc/{d}/stat") as s:
                        if s.read().split(")")[-1].split()[0] != "Z":
                            pids.append(int(d))
        except OSError:
            pass
    return pids


def children_of(pid):
    """PIDs of the live processes whose parent is pid."""
    found = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                if d.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(d))
        except (OSError, ValueError, IndexError):
            pass
    return found


def processes_matching(marker):
    """PIDs of live processes whose command line contains marker."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def wait_until(pred, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(interval)
    return pred()


def read_until(p, marker, timeout=60, stream=None):
    """What p printed on stdout (or `stream`, e.g. p.stderr) as bytes, up to and including
    `marker`, or all of it at the timeout."""
    stream = stream or p.stdout
    deadline = time.monotonic() + timeout
    out = b""
    while marker not in out and time.monotonic() < deadline:
        if select.select([stream], [], [], 1)[0]:
            chunk = os.read(stream.fileno(), 4096)
            if not chunk:
                break
            out += chunk
    return out


def kill_leftovers(marker):
    for pid in processes_matching(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


_tempdirs = []


def tempdir():
    """A new directory, removed when the test exits, passed or failed (tl.fail exits too)."""
    d = tempfile.mkdtemp(prefix="tlaunch-test-")
    _tempdirs.append(d)
    return d


@atexit.register
def _remove_tempdirs():
    for d in _tempdirs:
        shutil.rmtree(d, ignore_errors=True)


def listening_ports(pid):
    """TCP ports process pid listens on (IPv4 and IPv6), from /proc: how a test finds the
    frontend's port as a stranger on the same host would."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for row in f:
                    cols = row.split()
                    if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                        ports.append(int(cols[1].rsplit(":", 1)[1], 16))
        except OSError:
            pass
    return ports


def job_of_rank(pid):
    """TLAUNCH_JOB_ID of a rank, from its environment (None if it has none)."""
    with open(f"/proc/{pid}/environ", "rb") as f:
        for kv in f.read().split(b"\0"):
            if kv.startswith(b"TLAUNCH_JOB_ID="):
                return kv.split(b"=", 1)[1].decode()
    return None


def signal_daemon(job, node, sig, frontend_pid):
    """Sends sig to the tlaunchd of `node` in `job` (only this job's: under ctest -j another
    test's simulated node of the same name may run beside it). Fails the test if there is none."""
    daemons = [pid for pid in set(processes_matching(f"--node-name\0{node}")) & set(processes_matching(f"--job-id\0{job}"))
               if pid != frontend_pid]
    check(daemons, f"found the daemon of {node} in job {job}")
    for pid in daemons:
        os.kill(pid, sig)


@contextlib.contextmanager
def ending(p):
    """A started tlaunch (start()) for the block: killed with its group if it has not ended by
    the block's end, also when a check in the block fails."""
    try:
        yield p
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def communicate_or_fail(p, timeout, what):
    """(stdout, stderr) of a started tlaunch; kills its group and fails the test if it does not end."""
    try:
        return p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        fail(f"the job did not end {what}")
