"""A warm-daemon keeper is written down (~/.cache/tlaunch) only when tlaunch accepts the daemon
that started it. A daemon that never gets that far (the frontend unreachable, a version
mismatch, Ctrl-C during the start) used to leave its keeper behind for the whole --keep-for time
(up to a week), known to nobody: neither stop-daemons nor a later launch could find it. Now the
daemon tells its keeper once it is accepted, and a keeper whose daemon ends before that ends
with it. tlaunchd is started here as tlaunch would start it (--keep-for, the job secret and the
user's secret on stdin) towards a port nothing listens on."""
import os
import socket
import subprocess

import tl

TLAUNCHD = os.path.join(os.path.dirname(os.path.abspath(tl.TLAUNCH)), "tlaunchd")


def keepers():
    """pid -> cmdline of this tlaunchd's keepers."""
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"--keeper" in argv:
            out[int(pid)] = argv
    return out


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


before = set(keepers())
nobody = socket.socket()
nobody.bind(("127.0.0.1", 0))
port = nobody.getsockname()[1]
nobody.close()  # nothing listens there any more

home = tl.tempdir()
d = subprocess.Popen([TLAUNCHD, "--connect", f"127.0.0.1:{port}", "--connect-timeout", "3", "--node-name", "n0",
                      "--node-index", "0", "--job-id", "keeper-unknown", "--keep-for", "600"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     env={**os.environ, "HOME": home})
try:
    d.stdin.write(os.urandom(16).hex() + "\n" + os.urandom(16).hex() + "\n")
    d.stdin.close()
    d.stdin = None  # communicate() below must not touch it
    # The keeper starts before the daemon tries to connect (for 3 s here); the one that stays is
    # the copy it detaches (setsid), not the daemon's own child that hands its address over.
    def detached():
        return {pid for pid in set(keepers()) - before if parent_of(pid) != d.pid}
    tl.check(tl.wait_until(detached, 10), "tlaunchd --keep-for started no keeper")
    started = detached()
    _, err = d.communicate(timeout=60)
    tl.check(d.returncode != 0, f"tlaunchd connected to nobody and exited {d.returncode}: {err!r}")
    gone = tl.wait_until(lambda: not (set(keepers()) & started), 10)
    tl.check(gone, f"the keeper of a daemon tlaunch never accepted is still running: {sorted(set(keepers()) & started)}")
finally:
    if d.poll() is None:
        d.kill()
        d.communicate()
    for pid in set(keepers()) - before:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
print("PASS: a keeper whose daemon was never accepted ends with it")
