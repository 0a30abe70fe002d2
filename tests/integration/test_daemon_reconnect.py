#!/usr/bin/env python3
"""A tlaunchd whose accepted connection never gets the frontend's challenge connects again, and
one whose frontend address drops every packet gives up at its --connect-timeout, after trying
the frontend's other addresses.

That is what a daemon sees when thousands connect at once and the frontend's listen queue
overflows: the kernel drops the last packet of its handshake (with SYN cookies nothing sends it
again), the daemon's side looks connected, and the frontend never heard of it. Here a socket
that accepts and says nothing stands in for that frontend: the daemon must give up on the
silent connection (closing it) and connect again, instead of waiting forever.

The second case is a frontend whose host is gone (tlaunch Ctrl-C'd on a node that then went
down, a firewall): each connect would wait for the kernel's SYN retries (~2 min), twenty times
over. In a network namespace of its own, a veth pair swallows the packets (nothing leaves this
machine); the daemon must end within its --connect-timeout (3 s here) and say why."""
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

# A frontend reachable at its second address only (tlaunch lists the fabric's addresses first):
# the first drops the connection attempts (a listener whose queue is full), and the daemon must
# go on to the second after one try (half its --connect-timeout of 8 s), not give up on the list.
full = socket.socket()
full.bind(("127.0.0.2", 0))
full.listen(0)
port2 = full.getsockname()[1]
fillers = []
for _ in range(4):
    f = socket.socket()
    f.settimeout(0.5)
    try:
        f.connect(("127.0.0.2", port2))
    except OSError:
        pass
    fillers.append(f)
good = socket.socket()
good.bind(("127.0.0.1", port2))
good.listen(8)
t0 = time.monotonic()
p = subprocess.Popen([DAEMON, "--connect", f"127.0.0.2,127.0.0.1:{port2}", "--job-id", "tl-second", "--node-index", "0",
                      "--node-name", "local0", "--connect-timeout", "8"],
                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
try:
    p.stdin.write("0" * 64 + "\n")
    p.stdin.flush()
    good.settimeout(30)
    try:
        second, _ = good.accept()
        took = time.monotonic() - t0
        second.close()
    except socket.timeout:
        took = None
    tl.check(took is not None and took < 7.5,
             f"the first address drops packets: the daemon reached the second after {took} s (about 4 s expected)")
finally:
    p.kill()
    p.wait()
    for s_ in [full, good, *fillers]:
        s_.close()
print("ok: an address that drops packets does not hide the next one")

# An option from a newer tlaunch is said and ignored: the daemon goes on to connect (and here
# fails to, on a port nobody listens on), instead of dying of its command line.
closed = socket.socket()
closed.bind(("127.0.0.1", 0))
closed_port = closed.getsockname()[1]
r = subprocess.run([DAEMON, "--connect", f"127.0.0.1:{closed_port}", "--job-id", "tl-newer", "--node-index", "0",
                    "--node-name", "local0", "--option-of-the-future", "3"],
                   input="0" * 64 + "\n", capture_output=True, text=True, timeout=60)
closed.close()
tl.check(r.returncode == 69 and "ignoring what this tlaunchd does not know (is tlaunch newer?): --option-of-the-future 3"
         in r.stderr and "Connection refused" in r.stderr,
         f"an unknown option: said and ignored, the daemon tries to connect (exit {r.returncode}):\n{r.stderr}")
print("ok: an option of a newer tlaunch is said and ignored")

if os.geteuid() != 0 or subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
    print("skip: the blackholed frontend needs root and unshare -n")
else:
    # The frontend's address is reached through a veth whose other end has no address: the
    # packets go there (a fixed neighbour entry spares the ARP) and nothing ever answers.
    script = ("ip link set lo up && ip link add tl-void type veth peer name tl-sink && "
              "ip addr add 10.99.0.1/24 dev tl-void && ip link set tl-sink up && ip link set tl-void up && "
              "ip neigh add 10.99.0.2 lladdr 02:00:00:00:00:99 dev tl-void && exec \"$@\"")
    t0 = time.monotonic()
    r = subprocess.run(["unshare", "-n", "sh", "-c", script, "sh", DAEMON, "--connect", "10.99.0.2:4000",
                        "--job-id", "tl-void", "--node-index", "0", "--node-name", "local0", "--connect-timeout", "3"],
                       input="0" * 64 + "\n", capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    tl.check(r.returncode == 69 and took < 10,
             f"a frontend address that drops packets: the daemon ends with 69 after {took:.1f} s (--connect-timeout 3)"
             f"\n{r.stderr}")
    tl.check("cannot connect to the frontend at 10.99.0.2:4000: no answer within 3 s" in r.stderr,
             f"the daemon says it got no answer within 3 s:\n{r.stderr}")
    print(f"ok: a blackholed frontend address: the daemon gave up after {took:.1f} s")
