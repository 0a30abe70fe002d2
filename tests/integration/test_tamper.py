"""A frame replayed or altered on a daemon's link is noticed, not obeyed: node local0's daemon
reaches the frontend through a proxy of this test that, once the job runs, sends one frame of
the daemon's again (replay), or flips a bit in one (tamper). The frontend names an integrity
failure, treats local0 as lost (exit 69), and nothing of the job is left."""
import os
import re
import socket
import struct
import threading
import time

import tl

WRAPPER = tl.program("tlaunchd_via_proxy.sh")
PAT = tl.program("output_patterns.py")


class Proxy:
    """Forwards one connection both ways; on the daemon's side it cuts the stream into frames
    (4-byte big-endian length) and, when armed, replays or corrupts the next frame."""

    def __init__(self, target_file):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.target_file = target_file
        self.mode = None
        self.done = threading.Event()
        threading.Thread(target=self.run, daemon=True).start()

    def run(self):
        self.listener.settimeout(60)
        try:
            daemon, _ = self.listener.accept()
        except OSError:
            return
        host, port = open(self.target_file).read().strip().rsplit(":", 1)
        frontend = socket.create_connection((host.strip("[]"), int(port)), timeout=60)
        threading.Thread(target=self.pipe, args=(frontend, daemon), daemon=True).start()
        buf = b""
        try:
            while True:
                data = daemon.recv(65536)
                if not data:
                    break
                buf += data
                while len(buf) >= 4:
                    n = struct.unpack(">I", buf[:4])[0]
                    if len(buf) < 4 + n:
                        break
                    frame, buf = buf[:4 + n], buf[4 + n:]
                    frontend.sendall(frame)
                    if self.mode and n > 16:
                        if self.mode == "replay":
                            frontend.sendall(frame)
                        else:
                            bad = bytearray(frame)
                            bad[-1] ^= 0x01
                            frontend.sendall(bytes(bad))
                        self.mode = None
                        self.done.set()
        except OSError:
            pass

    @staticmethod
    def pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass


for mode in ("replay", "tamper"):
    d = tl.tempdir()
    target = os.path.join(d, "target")
    proxy = Proxy(target)
    env = {**os.environ, "TLAUNCH_TEST_PROXY": f"127.0.0.1:{proxy.port}", "TLAUNCH_TEST_PROXY_TARGET": target,
           "TLAUNCH_TEST_REAL_DAEMON": os.path.join(os.path.dirname(os.path.abspath(tl.TLAUNCH)), "tlaunchd")}
    p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--daemon-path", WRAPPER, "--", tl.PYTHON, PAT,
                  "sleep", "30"], env=env)
    buf = b""
    deadline = time.monotonic() + 60
    while buf.count(b"ready") < 2 and time.monotonic() < deadline:
        chunk = os.read(p.stdout.fileno(), 65536)
        if not chunk:
            break
        buf += chunk
    tl.check(buf.count(b"ready") == 2, f"{mode}: the job did not start: {buf!r}")
    proxy.mode = mode  # the daemon's next frame (a heartbeat within a second)
    out, err = p.communicate(timeout=60)
    tl.check(proxy.done.is_set(), f"{mode}: the proxy never saw a frame to {mode}")
    tl.check(p.returncode == 69, f"{mode}: exit {p.returncode}, want 69: {err[-1000:]}")
    tl.check(re.search(r"lost node local0: .*integrity failure", err),
             f"{mode}: the summary does not name local0 and an integrity failure: {err[-1000:]}")
    job = re.search(r"job (tl-[0-9a-f]+)", err)
    tl.check(job and tl.wait_until(lambda: not tl.processes_with_env("TLAUNCH_JOB_ID", job.group(1)), 10),
             f"{mode}: processes of the job survived")
    print(f"PASS: a {mode}ed frame on local0's link: integrity failure, local0 lost, exit 69")
