# A rank for the --max-restarts tests. Prints "rank R attempt A of M run RUN_ID world W pid P ready", then,
# by MODE (argv[1]):
#   fail-once  rank 1 exits 3 in attempt 0, every rank exits 0 in later attempts
#   always     rank 1 exits 3 in every attempt
#   wait       in attempt 0 every rank waits (for its node to be lost), later attempts exit 0
#   fail-slow  as fail-once, but rank 0 ignores SIGTERM in attempt 0: the job takes --kill-timeout to end
# With a directory as argv[2] (ranks on one host), each rank leaves a marker there once it has
# printed, and rank 1 fails only after rank 0 of the same attempt has printed: the test can then
# expect every rank's line of a failed attempt, however slowly the ranks start.
import os
import signal
import sys
import time

import rank_markers

mode = sys.argv[1]
rank = int(os.environ["RANK"])
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
if mode == "fail-slow" and attempt == 0 and rank == 0:
    # Deaf before the marker is left: rank 1 fails as soon as it sees it, and the teardown's
    # SIGTERM must find this rank already ignoring it.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(f"rank {rank} attempt {attempt} of {os.environ['TORCHELASTIC_MAX_RESTARTS']} run "
      f"{os.environ['TORCHELASTIC_RUN_ID']} world {os.environ['WORLD_SIZE']} pid {os.getpid()} ready", flush=True)
markers = sys.argv[2] if len(sys.argv) > 2 else None
if markers:
    rank_markers.leave(markers, f"rank{rank}-attempt{attempt}")


def wait_for_rank0():
    if markers:
        rank_markers.wait_until(lambda: os.path.exists(os.path.join(markers, f"rank0-attempt{attempt}")), 30)


if mode == "fail-slow" and attempt == 0:
    if rank == 0:
        time.sleep(120)
    wait_for_rank0()
    sys.exit(3)
if mode == "fail-once" and rank == 1 and attempt == 0:
    wait_for_rank0()
    sys.exit(3)
if mode == "always" and rank == 1:
    sys.exit(3)
if mode == "wait" and attempt == 0:
    time.sleep(120)
