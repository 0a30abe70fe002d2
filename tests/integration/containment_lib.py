"""What the containment tests share: a rank program that leaves children behind, and how to
find them and the daemons' notes."""
import os
import re
import time
import uuid

import tl

LEAVE = tl.program("leave_children.py")


def survivors(marker):
    return tl.processes_matching(marker)


def run_leaving(code, env_extra):
    marker = "tlaunch-contain-" + uuid.uuid4().hex
    env = dict(os.environ, **env_extra)
    t0 = time.monotonic()
    r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "-v", "--kill-timeout", "3", "--",
                tl.PYTHON, LEAVE, marker, str(code), "1", tl.tempdir()], env=env, timeout=120)
    elapsed = time.monotonic() - t0
    left = survivors(marker)
    tl.kill_leftovers(marker)
    print(r.stdout, r.stderr)
    return r, elapsed, left


def containment_notes(stderr):
    return re.findall(r"node (\S+): containment: (.*)", stderr)


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []
