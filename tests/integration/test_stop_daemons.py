"""`tlaunch stop-daemons` never forgets a warm daemon that may still be alive: one that does not
answer in time (a slow node, a network blip) stays written down, its node and pid are named and
the exit status is non-zero, so that a second stop-daemons (or kill) still reaches it; forgetting
it would leave it accepting the user's secret until it expires. One whose port refuses the
connection is gone, and is forgotten. Both keepers here are stand-ins on loopback: a socket that
accepts and says nothing, and a port nothing listens on. A user without a warm-daemon cache has
nothing to stop."""
import json
import os
import socket
import time

import tl

home = tl.tempdir()
reg = os.path.join(home, ".cache", "tlaunch", "daemons")
os.makedirs(reg, mode=0o700)
os.chmod(os.path.join(home, ".cache"), 0o700)
os.chmod(os.path.join(home, ".cache", "tlaunch"), 0o700)
fd = os.open(os.path.join(reg, "secret"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, (os.urandom(32).hex() + "\n").encode())
os.close(fd)

silent = socket.socket()
silent.bind(("127.0.0.1", 0))
silent.listen(8)  # the kernel completes the connection; nobody ever sends the challenge
silent_port = silent.getsockname()[1]
gone = socket.socket()
gone.bind(("127.0.0.1", 0))
gone_port = gone.getsockname()[1]
gone.close()  # nothing listens there any more


def entry(node, port, pid):
    e = {"node": node, "destination": node, "host": "127.0.0.1", "port": port, "pid": pid,
         "since": int(time.time()) - 60, "expires": int(time.time()) + 3600, "keep_s": 600}
    with open(os.path.join(reg, f"node-{node}.json"), "w") as f:
        json.dump(e, f)


entry("slow1", silent_port, 4242)
entry("gone1", gone_port, 4343)
r = tl.run(["stop-daemons"], env={**os.environ, "HOME": home}, timeout=60)
silent.close()
tl.check(r.returncode != 0, f"stop-daemons with a keeper that did not answer exits 0: {r.stdout!r} {r.stderr!r}")
tl.check(f"node slow1: its warm daemon (127.0.0.1:{silent_port}, pid 4242) did not answer" in r.stderr and
         "kill 4242" in r.stderr,
         f"the silent keeper's node and pid are not named: {r.stderr!r}")
tl.check(os.path.exists(os.path.join(reg, "node-slow1.json")), "the silent keeper's entry was forgotten")
tl.check(not os.path.exists(os.path.join(reg, "node-gone1.json")), "the entry of a port nobody listens on was kept")

# The secret removed (as the hint for a broken one says) while a keeper is written down: it
# cannot be stopped from here, so it is named with its pid and kept, and the exit is not 0.
os.remove(os.path.join(reg, "secret"))
r = tl.run(["stop-daemons"], env={**os.environ, "HOME": home}, timeout=60)
tl.check(r.returncode != 0 and "no warm daemons" not in r.stdout, f"stop-daemons without the secret: {r.returncode} {r.stdout!r}")
tl.check("node slow1: its warm daemon" in r.stderr and "the secret it was started with" in r.stderr and "kill 4242" in r.stderr,
         f"the keeper that cannot be stopped is not named: {r.stderr!r}")
tl.check(os.path.exists(os.path.join(reg, "node-slow1.json")), "the keeper's entry was forgotten without its secret")

# A user who never kept daemons (here: a home that does not exist) has none to stop, and
# looking makes no directory anywhere.
nowhere = os.path.join(tl.tempdir(), "no-such-home")
r = tl.run(["stop-daemons"], env={**os.environ, "HOME": nowhere}, timeout=60)
tl.check(r.returncode == 0 and "no warm daemons" in r.stdout, f"stop-daemons without a cache: {r.returncode} {r.stdout!r} {r.stderr!r}")
tl.check(not os.path.exists(nowhere), "stop-daemons made the missing home directory")
print("PASS: a keeper without an answer stays written down and is named (exit "
      f"{r.returncode}); one whose port refuses is forgotten")
