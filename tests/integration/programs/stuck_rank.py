"""`tlaunch stacks` test program: rank STUCK_RANK blocks in select() inside a uniquely named
function while the others sleep in another; after SECONDS, or at SIGUSR1 (which tlaunch forwards
to the ranks), all exit 0.
usage: stuck_rank.py STUCK_RANK SECONDS"""
import os
import select
import signal
import sys
import time


class Released(Exception):
    pass


def release(signum, frame):
    raise Released()


def tlaunch_test_rank_is_stuck_here(seconds):
    select.select([], [], [], seconds)


def tlaunch_test_ranks_sleep_here(seconds):
    time.sleep(seconds)


stuck, seconds = int(sys.argv[1]), float(sys.argv[2])
rank = int(os.environ["RANK"])
signal.signal(signal.SIGUSR1, release)
print(f"rank {rank} ready", flush=True)
try:
    if rank == stuck:
        tlaunch_test_rank_is_stuck_here(seconds)
    else:
        tlaunch_test_ranks_sleep_here(seconds)
except Released:
    pass
print(f"rank {rank} done", flush=True)
