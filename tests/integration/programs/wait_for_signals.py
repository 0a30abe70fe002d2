# Reports the signals it gets; exits 0 on SIGTERM, after CHECKPOINT_SECONDS (environment) of
# "checkpoint" when set, then says "rank R checkpointed". Optionally exits with a code after a delay
# when its RANK matches (argv: fail_rank fail_code delay [markers]). With a directory as markers
# (ranks on one host), each rank leaves a marker there once its handlers are in place, and the
# failing rank's delay starts only when every rank's marker is there: a test can expect every
# other rank's "got SIGTERM", however slowly the ranks start.
import os
import signal
import sys
import time

import rank_markers

rank = int(os.environ["RANK"])


def on(sig, _frame):
    print(f"rank {rank} got {signal.Signals(sig).name}", flush=True)
    if sig == signal.SIGTERM:
        checkpoint = float(os.environ.get("CHECKPOINT_SECONDS", "0"))
        if checkpoint > 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one checkpoint, whatever comes again
            time.sleep(checkpoint)
            print(f"rank {rank} checkpointed", flush=True)
        sys.exit(0)


for s in (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(s, on)
print(f"rank {rank} pid {os.getpid()} ready", flush=True)
fail_rank = int(sys.argv[1]) if len(sys.argv) > 1 else -1
markers = sys.argv[4] if len(sys.argv) > 4 else None
if markers:
    rank_markers.leave(markers, f"rank{rank}")
    if rank == fail_rank:
        rank_markers.wait_for_count(markers, int(os.environ["WORLD_SIZE"]))
start = time.time()
deadline = start + 120
while time.time() < deadline:
    time.sleep(0.05)
    if rank == fail_rank and time.time() > start + float(sys.argv[3]):
        print(f"rank {rank} failing on purpose", file=sys.stderr, flush=True)
        sys.exit(int(sys.argv[2]))
