"""DeepSpeed and Megatron-LM under tlaunch (issue 12 item 5). DeepSpeed itself cannot be
installed here, so this checks its contract: every rank has what deepspeed.init_distributed()
and Megatron's initialisation read, and a torch group forms from it; ~/.deepspeed_env and
./.deepspeed_env (or DS_ENV_FILE's file) reach every rank as `deepspeed` exports them, the later
file winning and -x winning over both, shown by --dry-run; a malformed line is refused naming
file:line; the example scripts' command lines plan the job they describe."""
import atexit
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import tl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "contrib" / "examples"
PROBE = tl.program("ds_megatron_env.py")
XML = str(ROOT / "tests" / "fixtures" / "topologies" /
          "azure-hbv4-vm_2xEPYC9V33X_mlx5_ib0-IB+mlx5_an0-AccelNet_no-gpu_hwloc2.12.xml")


def rank_lines(stdout):
    seen = {}
    for line in stdout.splitlines():
        m = re.match(r"^\[(\d+)\] (\{.*\})$", line)
        if m:
            seen[int(m.group(1))] = json.loads(m.group(2))
    return seen


# 1. The environment contract: 2 nodes x 2 ranks.
r = tl.run(["--launcher", "local", "-N", "2", "-p", "2", "-l", "--", tl.PYTHON, PROBE])
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"job failed: {r.returncode}")
seen = rank_lines(r.stdout)
tl.check(sorted(seen) == [0, 1, 2, 3], f"ranks seen: {sorted(seen)}")
for rank, e in seen.items():
    node, local = divmod(rank, 2)
    tl.check(not e["deepspeed_would_run_mpi_discovery"], f"rank {rank}: DeepSpeed would not find its variables: {e}")
    expect = {"RANK": rank, "WORLD_SIZE": 4, "LOCAL_RANK": local, "LOCAL_SIZE": 2, "LOCAL_WORLD_SIZE": 2,
              "CROSS_RANK": node, "CROSS_SIZE": 2, "GROUP_RANK": node, "NODE_RANK": node,
              "OMPI_COMM_WORLD_RANK": rank, "OMPI_COMM_WORLD_LOCAL_SIZE": 2}
    for k, v in expect.items():
        tl.check(e[k] == str(v), f"rank {rank}: {k}={e[k]!r}, expected {v}")
    tl.check(e["torch_rank"] == rank and e["torch_world_size"] == 4, f"rank {rank}: torch group {e}")

# 2. .deepspeed_env: home's, then the current directory's (the later wins), then -x.
tmp = Path(tl.tempdir())
atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # also when a check fails (sys.exit)
home, work = tmp / "home", tmp / "work"
home.mkdir()
work.mkdir()
(home / ".deepspeed_env").write_text("DS_A=from-home\nDS_B=from-home\n# comment\n\nDS_HOME_ONLY=yes\n")
(work / ".deepspeed_env").write_text("DS_A=from-cwd\nexport DS_QUOTED=\"a b\"\nDS_B=from-cwd\n")
env = dict(os.environ, HOME=str(home), DS_B="from-environment", DS_C="from-environment")
env.pop("DS_ENV_FILE", None)
names = ["DS_A", "DS_B", "DS_C", "DS_HOME_ONLY", "DS_QUOTED"]
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "-l", "-x", "DS_B=from-x", "--", tl.PYTHON,
            tl.program("print_env.py")] + names, env=env, cwd=work)
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"job with .deepspeed_env failed: {r.returncode}")
seen = rank_lines(r.stdout)
tl.check(sorted(seen) == [0, 1], f"ranks seen: {sorted(seen)}")
for rank, e in seen.items():
    want = {"DS_A": "from-cwd", "DS_B": "from-x", "DS_C": "from-environment", "DS_HOME_ONLY": "yes",
            "DS_QUOTED": "a b"}
    tl.check(e == want, f"rank {rank}: {e}, expected {want}")

# --dry-run shows each value and where it came from, as text and as JSON.
dry = ["--dry-run", "--offline", "--topology-xml", XML, "--hosts", "n1,n2", "-p", "1", "-x", "DS_B=from-x", "--", "prog"]
r = tl.run(dry, env=env, cwd=work)
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"dry run: {r.returncode} {r.stderr}")
tl.check(f"DS_A=from-cwd  (./.deepspeed_env:1)" in r.stdout, "dry run shows the current directory's file")
tl.check(f"DS_HOME_ONLY=yes  ({home}/.deepspeed_env:5)" in r.stdout, "dry run shows the home file's line")
tl.check("DS_B=from-x  (-x)" in r.stdout, "dry run shows -x winning")
r = tl.run(dry[:1] + ["--json"] + dry[1:], env=env, cwd=work)
tl.check(r.returncode == 0, f"dry run --json: {r.returncode} {r.stderr}")
exports = {e["name"]: e for e in json.loads(r.stdout)["exports"]}
tl.check(exports["DS_A"]["value"] == "from-cwd" and exports["DS_A"]["source"] == "./.deepspeed_env:1",
         f"json exports: {exports}")
tl.check(exports["DS_B"]["source"] == "-x", f"json exports: {exports}")

# DS_ENV_FILE: a name looked up in home and here, or a path; one that exists nowhere is refused.
(work / "job.env").write_text("DS_A=from-job-env\n")
r = tl.run(dry, env=dict(env, DS_ENV_FILE="job.env"), cwd=work)
tl.check(r.returncode == 0 and "DS_A=from-job-env  (./job.env:1)" in r.stdout, f"DS_ENV_FILE=job.env: {r.stdout}")
tl.check("DS_HOME_ONLY" not in r.stdout, "DS_ENV_FILE replaces .deepspeed_env")
r = tl.run(dry, env=dict(env, DS_ENV_FILE=str(work / "job.env")), cwd=tmp)
tl.check(r.returncode == 0 and f"DS_A=from-job-env  ({work}/job.env:1)" in r.stdout, f"DS_ENV_FILE path: {r.stdout}")
r = tl.run(dry, env=dict(env, DS_ENV_FILE="nowhere.env"), cwd=work)
tl.check(r.returncode == 64 and "DS_ENV_FILE=nowhere.env: no such file" in r.stderr, f"missing DS_ENV_FILE: {r.stderr}")

# A malformed line or a per-rank variable: refused before anything starts, naming file:line.
(work / ".deepspeed_env").write_text("DS_A=1\nNCCL_IB_HCA mlx5_0\n")
r = tl.run(dry, env=env, cwd=work)
tl.check(r.returncode == 64, f"malformed line: exit {r.returncode}")
tl.check("./.deepspeed_env:2: expected KEY=VALUE, found 'NCCL_IB_HCA mlx5_0'" in r.stderr, f"message: {r.stderr}")
(work / ".deepspeed_env").write_text("LOCAL_RANK=0\n")
r = tl.run(dry, env=env, cwd=work)
tl.check(r.returncode == 64 and "./.deepspeed_env:1: LOCAL_RANK differs per rank" in r.stderr, f"{r.stderr}")
(work / ".deepspeed_env").unlink()

# 3. The example scripts' tlaunch command lines.
bindir = str(Path(tl.TLAUNCH).resolve().parent)
script_env = dict(env, TLAUNCH=str(Path(tl.TLAUNCH).resolve()), PYTHON=tl.PYTHON, PATH=bindir + ":" + env["PATH"])
hostfile = tmp / "hosts.txt"
hostfile.write_text("node1 slots=2\nnode2 slots=2\n")
r = subprocess.run([str(EXAMPLES / "deepspeed" / "ds_job.sh"), str(hostfile)], capture_output=True, text=True,
                   env=dict(script_env, TLAUNCH_OPTIONS="--dry-run --offline --topology-xml " + XML), timeout=120)
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"ds_job.sh --dry-run: {r.returncode} {r.stderr}")
tl.check("2 node(s) x 2 rank(s), world size 4" in r.stdout, "ds_job.sh: one rank per slot, as deepspeed")
# Run for real on simulated nodes: without DeepSpeed the script says so and fails cleanly.
r = subprocess.run([str(EXAMPLES / "deepspeed" / "ds_job.sh"), str(hostfile)], capture_output=True, text=True,
                   env=dict(script_env, TLAUNCH_OPTIONS="--launcher local"), timeout=120)
print(r.stdout, r.stderr)
try:
    subprocess.run([tl.PYTHON, "-c", "import deepspeed"], check=True, capture_output=True)
    tl.check(r.returncode == 0 and "done: 20 steps on 4 ranks" in r.stdout, "ds_job.sh with DeepSpeed installed")
except subprocess.CalledProcessError:
    tl.check(r.returncode == 2, f"ds_job.sh without deepspeed: exit {r.returncode}")
    tl.check("cannot run the DeepSpeed example: deepspeed is not importable" in r.stderr, f"{r.stderr}")

megatron = str(EXAMPLES / "megatron_job.sh")
r = subprocess.run([megatron, "pretrain_gpt.py", "--num-layers", "2"], capture_output=True, text=True, timeout=120,
                   env=dict(script_env, HOSTS="n[1-4]", NUM_NODES="2", GPUS_PER_NODE="2", MASTER_PORT="29555",
                            TLAUNCH_OPTIONS="--dry-run --offline --topology-xml " + XML))
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"megatron_job.sh --dry-run: {r.returncode} {r.stderr}")
tl.check("2 node(s) x 2 rank(s), world size 4" in r.stdout, "megatron_job.sh: --nnodes and --nproc-per-node")
tl.check("MASTER_PORT=29555" in r.stdout, "megatron_job.sh: --master-port")
tl.check("CUDA_DEVICE_MAX_CONNECTIONS=1  (-x)" in r.stdout, "megatron_job.sh: CUDA_DEVICE_MAX_CONNECTIONS")
r = subprocess.run([megatron, "pretrain_gpt.py"], capture_output=True, text=True, timeout=120,
                   env=dict(script_env, HOSTS="n[1-4]", NODE_RANK="1"))
tl.check(r.returncode == 64 and "run this script once" in r.stderr, f"NODE_RANK=1: {r.returncode} {r.stderr}")
# For real on 2 simulated nodes: the ranks get what Megatron reads.
r = subprocess.run([megatron, PROBE, "CUDA_DEVICE_MAX_CONNECTIONS"], capture_output=True, text=True, timeout=120,
                   env=dict(script_env, NUM_NODES="2", GPUS_PER_NODE="2", TLAUNCH_OPTIONS="--launcher local -l"))
print(r.stdout, r.stderr)
tl.check(r.returncode == 0, f"megatron_job.sh: {r.returncode} {r.stderr}")
seen = rank_lines(r.stdout)
tl.check(sorted(seen) == [0, 1, 2, 3], f"ranks seen: {sorted(seen)}")
for rank, e in seen.items():
    tl.check(e["RANK"] == str(rank) and e["LOCAL_RANK"] == str(rank % 2) and e["torch_world_size"] == 4, f"{e}")
    tl.check(e["CUDA_DEVICE_MAX_CONNECTIONS"] == "1", f"rank {rank}: {e}")

# torchrun's spellings are accepted, and its --node_rank is explained, not taken.
r = tl.run(["--dry-run", "--offline", "--topology-xml", XML, "--hosts", "n1,n2", "--nproc_per_node", "2", "--master_port", "29501",
            "--", "prog"], env=env, cwd=tmp)
tl.check(r.returncode == 0 and "world size 4" in r.stdout and "MASTER_PORT=29501" in r.stdout, f"{r.stdout}{r.stderr}")
r = tl.run(["--hosts", "n1,n2", "--node_rank", "1", "--", "prog"], env=env, cwd=tmp)
tl.check(r.returncode == 64 and "tlaunch starts every node from one command" in r.stderr, f"--node_rank: {r.stderr}")
tl.check("--node_rank 1:" in r.stderr and "drop --node_rank" in r.stderr, f"--node_rank is named as typed: {r.stderr}")
print("PASS")
