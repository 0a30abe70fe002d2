"""The frontend's port is reachable by anyone on the network (and on 0.0.0.0 under srun): what
strangers send must never crash or stall a job. While a 2-node job runs, from this host:
  - 2,000 idle TCP connections: dropped at the 5 s authentication deadline;
  - crafted frames: 1 MiB of nested CBOR arrays (0x81...), a declared length of 4 GiB, CBOR of the
    wrong shape, a hello with a wrong proof, rank output before authentication, deep nesting
    inside the 4 KiB pre-authentication limit;
each connection is dropped, and the job completes with exit 0 and every rank's output."""
import multiprocessing
import os
import resource
import signal
import socket
import struct
import time

import tl

PAT = tl.program("output_patterns.py")


def frame(payload):
    return struct.pack(">I", len(payload)) + payload


def closed_by_peer(s, timeout):
    """True when the frontend closed the connection within timeout."""
    s.settimeout(timeout)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))

# The ranks sleep until SIGUSR1 (forwarded by tlaunch) once the strangers are dealt with.
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--heartbeat-timeout", "5", "--", tl.PYTHON, PAT, "sleep",
              "120"])
try:
    tl.check(tl.wait_until(lambda: tl.listening_ports(p.pid), 30), "the frontend never listened")
    port = tl.listening_ports(p.pid)[0]

    idle = []
    for _ in range(2000):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        idle.append(s)
    crafted = {
        "1 MiB of nested arrays": frame(b"\x81" * (1 << 20)),
        "a declared length of 4 GiB": b"\xff\xff\xff\xff" + b"\x00" * 100,
        "nested arrays within 4 KiB": frame(b"\x81" * 4000),
        "a map with a number for its type": frame(b"\xa1\x61t\x05"),
        "a hello with a wrong proof": frame(b"\xa4\x61t\x65hello\x64node\x66local0\x65index\x00\x63mac\x44abcd"),
        "rank output before authentication": frame(b"\x01\x00\x00\x00\x00\x01hello\n"),
        "garbage": frame(os.urandom(3000)),
    }
    t0 = time.monotonic()
    for what, data in crafted.items():
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            s.sendall(data)
        except (ConnectionResetError, BrokenPipeError):
            pass
        tl.check(closed_by_peer(s, 8), f"the frontend kept a connection that sent {what}")
        s.close()
        tl.check(p.poll() is None, f"the job died after a stranger sent {what}: exit {p.poll()}")
    # The idle ones: gone at the authentication deadline (5 s; some earlier, when the pending
    # cap made room for newer ones).
    left_open = [s for s in idle[-50:] if not closed_by_peer(s, max(0.1, 12 - (time.monotonic() - t0)))]
    tl.check(not left_open, f"{len(left_open)} idle connections still open after the authentication deadline")
    for s in idle:
        s.close()
    tl.check(p.poll() is None, f"the job ended while strangers were turned away: exit {p.poll()}")
    p.send_signal(signal.SIGUSR1)
    out, err = p.communicate(timeout=120)
finally:
    if p.poll() is None:
        p.kill()
tl.check(p.returncode == 0, f"job exit {p.returncode}: {err[-1500:]}")
tl.check(out.count("done") == 2, f"ranks did not complete: {out!r}")
print("PASS: 2,000 idle connections and", len(crafted), "crafted frames; the job completed")

# A daemon's own listener (tree children, reachability probes) under a flood when the node is out
# of file descriptors: it retries its accept a moment later instead of spinning on EMFILE (it
# spun at ~100% of a core), and the job completes. Everything under a hard limit of 60 fds (the
# daemon uses ~24; below its cap on pending strangers, so that accept() does fail).
def low_fd_limit():
    resource.setrlimit(resource.RLIMIT_NOFILE, (60, 60))


p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--", tl.PYTHON, PAT, "sleep", "120"], preexec_fn=low_fd_limit)
flood = []
try:
    def daemon_listening():
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                continue
            if ppid == p.pid and cmd[0].endswith(b"tlaunchd") and tl.listening_ports(int(pid)):
                return int(pid), tl.listening_ports(int(pid))[0]
        return None
    # Once the ranks run: during the set-up a daemon out of descriptors fails the job (it needs
    # files and pipes then), and in the sanitizer build UBSan, which cannot read the process's
    # memory map then, takes the exception that says so for an error of its own.
    seen = b""
    while seen.count(b"ready") < 2:
        more = tl.read_until(p, b"ready", 60)
        tl.check(more, f"the ranks never started: {seen!r}")
        seen += more
    tl.check(tl.wait_until(lambda: daemon_listening() is not None, 30), "no daemon listened")
    daemon, dport = daemon_listening()
    def fds():
        return len(os.listdir(f"/proc/{daemon}/fd"))
    # Until the daemon is out of descriptors and the kernel's queue is full. The daemon accepts
    # at its own pace (slow on a loaded machine under the sanitizers): a connection the full
    # queue times out is tried again a moment later, rather than counting at once.
    flood_until = time.monotonic() + 30
    while len(flood) < 200 and time.monotonic() < flood_until:
        try:
            flood.append(socket.create_connection(("127.0.0.1", dport), timeout=0.5))
        except OSError:
            if fds() >= 58:
                break
            time.sleep(0.2)
    tl.check(tl.wait_until(lambda: fds() >= 58, 10), f"the flood did not exhaust the daemon's descriptors ({fds()})")

    def cpu_seconds(pid):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    before = cpu_seconds(daemon)
    time.sleep(2)
    spent = cpu_seconds(daemon) - before
    tl.check(spent < 0.5, f"the daemon spent {spent:.2f} s of CPU in 2 s with its descriptors exhausted (spinning on accept)")
    for s in flood:
        s.close()
    flood = []
    tl.check(p.poll() is None, f"the job ended under the flood: exit {p.poll()}")
    p.send_signal(signal.SIGUSR1)  # the ranks may finish now
    out, err = p.communicate(timeout=120)
finally:
    for s in flood:
        s.close()
    if p.poll() is None:
        p.kill()
tl.check(p.returncode == 0 and out.count("done") == 2, f"job under a flood of its daemon's port: exit {p.returncode}: {err[-1500:]}")
print("PASS: a daemon out of descriptors under a flood waits instead of spinning; the job completed")

# A flood spread over many addresses of the daemons' own host (anyone can bind any address in
# 127.0.0.0/8) while 16 local daemons are connecting: the frontend makes room by closing one
# connection not yet authenticated, and the busiest host's were the daemons'. Each daemon gave
# up after its fifth such close and the job failed (exit 69, "lost the frontend"); now it
# connects again, backing off, until --connect-timeout, and the job completes once the flood
# stops. The daemons start a second late, so that the flood is on when they connect.
late = os.path.join(tl.tempdir(), "late-tlaunchd")
with open(late, "w") as f:
    f.write(f"#!/bin/sh\nsleep 1\nexec {os.path.join(os.path.dirname(os.path.abspath(tl.TLAUNCH)), 'tlaunchd')} \"$@\"\n")
os.chmod(late, 0o755)
p = tl.start(["--launcher", "local", "-N", "16", "-p", "1", "--connect-timeout", "40", "--daemon-path", late, "--",
              tl.PYTHON, PAT, "lines", "1"])
stop_flood = multiprocessing.Event()
counts = multiprocessing.Queue()


def spread_flood(seed, port):
    held, n = [], 0
    while not stop_flood.is_set():
        k = n * 7919 + seed
        src = "127.0.0.1" if k % 4 == 0 else f"127.{(k >> 16) % 250 + 1}.{(k >> 8) % 256}.{k % 254 + 1}"
        try:
            s = socket.socket()
            s.bind((src, 0))
            s.settimeout(1)
            s.connect(("127.0.0.1", port))
            held.append(s)
            n += 1
        except OSError:
            s.close()
        if len(held) > 900:
            held.pop(0).close()
    for s in held:
        s.close()
    counts.put(n)


try:
    tl.check(tl.wait_until(lambda: tl.listening_ports(p.pid), 30), "the frontend never listened")
    port = tl.listening_ports(p.pid)[0]
    flooders = [multiprocessing.Process(target=spread_flood, args=(i, port)) for i in range(4)]
    for t in flooders:
        t.start()
    time.sleep(8)
    stop_flood.set()
    for t in flooders:
        t.join()
    made = sum(counts.get() for _ in flooders)
    out, err = p.communicate(timeout=120)
finally:
    stop_flood.set()
    if p.poll() is None:
        p.kill()
print(err[-3000:])
tl.check(made > 2000, f"the flood made {made} connections")
tl.check(p.returncode == 0, f"job under a flood from many addresses of its daemons' host: exit {p.returncode}")
print(f"PASS: {made} connections from many loopback addresses while 16 daemons connected; the job completed")
