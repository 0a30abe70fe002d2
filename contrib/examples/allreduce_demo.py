"""tlaunch demo: every rank joins a torch.distributed Gloo group from the environment tlaunch
gives it (no arguments to init_process_group), all-reduces its rank, and prints the result.

    tlaunch --launcher local -N 2 -p 2 -- /usr/bin/python3 contrib/examples/allreduce_demo.py
"""
import os
import socket

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank)])
dist.all_reduce(t)
print(f"rank {rank} of {world} (local rank {os.environ['LOCAL_RANK']} on {socket.gethostname()}, "
      f"master {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}): "
      f"sum of ranks = {t.item():.0f} (expected {world * (world - 1) // 2})", flush=True)
dist.destroy_process_group()
