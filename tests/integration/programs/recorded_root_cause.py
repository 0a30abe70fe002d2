"""A DDP-tutorial script under torch's @record: rank 0 raises at step 3; its `finally:` closes
the process group first (its peers' all_reduce fails with "Connection closed by peer" and they
exit at once), then @record writes the exception to its TORCHELASTIC_ERROR_FILE, then a slow
exit hook (wandb.finish(), a TensorBoard writer) holds rank 0 for 1.5 s while the job ends."""
import atexit
import time

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        atexit.register(time.sleep, 1.5)
    try:
        for step in range(1000):
            if rank == 0 and step == 3:
                raise ValueError(f"NaN loss at step {step}")
            dist.all_reduce(torch.ones(4))
            time.sleep(0.02)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
