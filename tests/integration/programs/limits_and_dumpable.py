# Prints what a rank sees of its limits and of its daemon: its RLIMIT_NOFILE soft limit, the
# daemon's (its parent's) Max open files, whether it is itself dumpable, whether it can read
# its own and its daemon's /proc/<pid>/environ, and the descriptors it inherited.
import ctypes
import os

import resource

libc = ctypes.CDLL(None, use_errno=True)
PR_GET_DUMPABLE = 3
daemon = os.getppid()


def readable(path):
    try:
        with open(path, "rb") as f:
            f.read()
        return True
    except OSError:
        return False


# Before anything else opens a file: what exec left open (the listing's own fd is the last).
inherited = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))[:-1]
with open(f"/proc/{daemon}/limits") as f:
    line = next(l for l in f if l.startswith("Max open files")).split()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
print(f"rank nofile {soft} {hard}")
print(f"daemon nofile {line[3]} {line[4]}")
print(f"rank dumpable {libc.prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)}")
print(f"rank environ readable {readable('/proc/self/environ')} owner {os.stat('/proc/self/environ').st_uid} uid {os.getuid()}")
print(f"daemon environ readable {readable(f'/proc/{daemon}/environ')} owner {os.stat(f'/proc/{daemon}/environ').st_uid}")
print(f"rank inherited fds {' '.join(str(fd) for fd in inherited)}")
