"""A DeepSpeed job under tlaunch: no `deepspeed` launcher, no --local_rank argument. The ranks
find RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in their environment, which is
what deepspeed.init_distributed() reads (it would fall back to MPI discovery without them).

    tlaunch --hostfile hosts.txt -- python3 train_ds.py --deepspeed_config ds_config.json

(see ds_job.sh). Trains a small linear model on random data for a few steps, with ZeRO stage 1.
"""
import argparse
import os
import sys

try:
    import deepspeed
    import torch
except ImportError as e:
    rank = os.environ.get("RANK", "?")
    print(f"rank {rank}: cannot run the DeepSpeed example: {e.name or e} is not importable by {sys.executable} "
          f"({e}). Install DeepSpeed for this Python (pip install deepspeed), or run the job with the Python "
          f"that has it. tlaunch gave this rank RANK={rank} LOCAL_RANK={os.environ.get('LOCAL_RANK')} "
          f"WORLD_SIZE={os.environ.get('WORLD_SIZE')} MASTER_ADDR={os.environ.get('MASTER_ADDR')} "
          f"MASTER_PORT={os.environ.get('MASTER_PORT')}.", file=sys.stderr, flush=True)
    sys.exit(2)

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=20)
# deepspeed's own launcher passes --local_rank; tlaunch does not (LOCAL_RANK is in the environment).
parser.add_argument("--local_rank", type=int, default=int(os.environ.get("LOCAL_RANK", "0")))
parser = deepspeed.add_config_arguments(parser)
args = parser.parse_args()

use_cuda = torch.cuda.is_available()
deepspeed.init_distributed(dist_backend="nccl" if use_cuda else "gloo")
device = torch.device("cuda", args.local_rank) if use_cuda else torch.device("cpu")
if use_cuda:
    torch.cuda.set_device(device)

model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
torch.manual_seed(1234 + engine.global_rank)
for step in range(args.steps):
    x = torch.randn(engine.train_micro_batch_size_per_gpu(), 32, device=engine.device)
    loss = (engine(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
    engine.backward(loss)
    engine.step()
    if engine.global_rank == 0 and step % 5 == 0:
        print(f"step {step}: loss {loss.item():.4f}", flush=True)
if engine.global_rank == 0:
    print(f"done: {args.steps} steps on {engine.world_size} ranks", flush=True)
