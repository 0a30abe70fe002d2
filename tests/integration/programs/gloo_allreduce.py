# A torch.distributed job as users write it: init_process_group("gloo") with no arguments,
# then all-reduce. Prints one line per rank with the result, exits non-zero if it is wrong.
import os
import sys

import torch
import torch.distributed as dist

iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 1
size = int(sys.argv[2]) if len(sys.argv) > 2 else 1
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])
for _ in range(iterations):
    t = torch.full((size,), float(rank + 1))
    dist.all_reduce(t)
expected = world * (world + 1) / 2
ok = bool(torch.all(t == expected))
print(f"rank {rank}/{world} allreduce={t[0].item():.0f} expected={expected:.0f} {'OK' if ok else 'WRONG'}", flush=True)
dist.destroy_process_group()
sys.exit(0 if ok else 1)
