# Ranks that fail because a node is lost (test_failure_blame.py, case 2). Every rank connects
# to a hub, the last rank (on the last node); when the hub's node is lost the others' sockets
# close and they exit 1 at once, as NCCL ranks whose peer is gone do. A restart (--max-restarts)
# ends 0 at once: the test looks at which node it dropped.
# argv[1]: a directory every rank sees (one host), where the hub leaves its port.
import os
import socket
import sys
import time

markers = sys.argv[1]
rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
port_file = os.path.join(markers, f"hub.port.{attempt}")
if attempt != "0":
    print(f"rank {rank} of {world} restarted", flush=True)
    sys.exit(0)
if rank == world - 1:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    peers = [s.accept()[0] for _ in range(world - 1)]
    print(f"hub pid {os.getpid()} ready", flush=True)
    time.sleep(120)
    sys.exit(0)
deadline = time.monotonic() + 60
while not os.path.exists(port_file) and time.monotonic() < deadline:
    time.sleep(0.01)
with open(port_file) as f:
    c = socket.create_connection(("127.0.0.1", int(f.read())))
c.recv(1)
print(f"rank {rank}: connection to the hub lost", file=sys.stderr, flush=True)
sys.exit(1)
