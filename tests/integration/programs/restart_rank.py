# A rank for the --max-restarts tests. Prints "rank R attempt A of M run RUN_ID world W pid P ready", then,
# by MODE (argv[1]):
#   fail-once  rank 1 exits 3 in attempt 0, every rank exits 0 in later attempts
#   always     rank 1 exits 3 in every attempt
#   wait       in attempt 0 every rank waits (for its node to be lost), later attempts exit 0
import os
import sys
import time

mode = sys.argv[1]
rank = int(os.environ["RANK"])
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
print(f"rank {rank} attempt {attempt} of {os.environ['TORCHELASTIC_MAX_RESTARTS']} run "
      f"{os.environ['TORCHELASTIC_RUN_ID']} world {os.environ['WORLD_SIZE']} pid {os.getpid()} ready", flush=True)
if mode == "fail-once" and rank == 1 and attempt == 0:
    sys.exit(3)
if mode == "always" and rank == 1:
    sys.exit(3)
if mode == "wait" and attempt == 0:
    time.sleep(120)
