#!/usr/bin/env python3
"""A tlaunchd whose accepted connection never gets the frontend's challenge connects again.

That is what a daemon sees when thousands connect at once and the frontend's listen queue
overflows: the kernel drops the last packet of its handshake (with SYN cookies nothing sends it
again), the daemon's side looks connected, and the frontend never heard of it. Here a socket
that accepts and says nothing stands in for that frontend: the daemon must give up on the
silent connection (closing it) and connect again, instead of waiting forever."""
import os
import socket
import subprocess
import time

import tl

DAEMON = os.path.join(os.path.dirname(tl.TLAUNCH), "tlaunchd")

srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
port = srv.getsockname()[1]
p = subprocess.Popen([DAEMON, "--connect", f"127.0.0.1:{port}", "--job-id", "tl-reconnect", "--node-index", "0",
                      "--node-name", "local0"],
                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
try:
    p.stdin.write("0" * 64 + "\n")
    p.stdin.flush()
    srv.settimeout(15)
    first, _ = srv.accept()
    t0 = time.monotonic()
    srv.settimeout(30)
    second, _ = srv.accept()
    waited = time.monotonic() - t0
    tl.check(5 <= waited <= 20, f"the daemon connected again after {waited:.1f} s (about 10 s expected)")
    first.settimeout(5)
    tl.check(first.recv(1) == b"", "the daemon closed the connection that got no challenge")
    first.close()
    second.close()
finally:
    p.kill()
    p.wait()
    srv.close()
err = p.stderr.read()
tl.check("no challenge from the frontend within 10 s of connecting; connecting again" in err,
         f"the daemon says why it connects again:\n{err}")
print("ok: a daemon whose connection never gets the challenge connects again after ~10 s")
