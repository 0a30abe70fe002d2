# Reports the signals it gets; exits 0 on SIGTERM. Optionally exits with a code after a delay
# when its RANK matches (argv: fail_rank fail_code delay).
import os
import signal
import sys
import time

rank = int(os.environ["RANK"])


def on(sig, _frame):
    print(f"rank {rank} got {signal.Signals(sig).name}", flush=True)
    if sig == signal.SIGTERM:
        sys.exit(0)


for s in (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(s, on)
print(f"rank {rank} pid {os.getpid()} ready", flush=True)
fail_rank = int(sys.argv[1]) if len(sys.argv) > 1 else -1
deadline = time.time() + 120
while time.time() < deadline:
    time.sleep(0.05)
    if rank == fail_rank and time.time() > deadline - 120 + float(sys.argv[3]):
        print(f"rank {rank} failing on purpose", file=sys.stderr, flush=True)
        sys.exit(int(sys.argv[2]))
