"""Rank 1 leaves its loop early and ends with status 0 (a `return` on one rank only); the others
then wait for it in a collective, and gloo fails them with "Connection closed by peer"."""
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
dist.all_reduce(torch.ones(1))
if dist.get_rank() == 1:
    sys.exit(0)
time.sleep(0.5)
for _ in range(100):
    dist.all_reduce(torch.ones(1))
