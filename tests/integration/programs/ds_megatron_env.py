"""What DeepSpeed and Megatron-LM read at init, checked the way they read it; prints one JSON line.

deepspeed.comm.init_distributed() uses the environment only when RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT and LOCAL_RANK are all set (else it runs MPI discovery); deepspeed's own launcher
also sets LOCAL_SIZE, CROSS_RANK and CROSS_SIZE. Megatron reads RANK, WORLD_SIZE and LOCAL_RANK
and calls init_process_group with them and the env:// store. Then a Gloo group is formed exactly
so, and its rank and size are reported next to the variables. argv: extra names to print."""
import json
import os
import sys

import torch.distributed as dist

deepspeed_required = ["RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"]
names = deepspeed_required + ["LOCAL_SIZE", "LOCAL_WORLD_SIZE", "CROSS_RANK", "CROSS_SIZE", "GROUP_RANK",
                              "NODE_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"] + sys.argv[1:]
out = {k: os.environ.get(k) for k in names}
out["deepspeed_would_run_mpi_discovery"] = not all(k in os.environ for k in deepspeed_required)
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])  # Megatron's arguments.py
dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
out["torch_rank"], out["torch_world_size"] = dist.get_rank(), dist.get_world_size()
dist.barrier()
dist.destroy_process_group()
print(json.dumps(out, sort_keys=True), flush=True)
