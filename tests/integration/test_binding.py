"""Binding as a user checks it: on this machine -p 2 gives each rank its own core
(Cpus_allowed_list), --bind none leaves ranks unbound, --report-bindings prints the manifest,
and --dry-run --json exposes the manifest and a fingerprint that is stable across runs and
independent of host names; a recorded topology is planned but not applied; under taskset the
ranks stay on the CPUs it allows."""
import json
import os
import re

import tl

r = tl.run(["-p", "2", "--tag-output=rank", "--report-bindings", "--", "grep", "Cpus_allowed_list", "/proc/self/status"])
tl.check(r.returncode == 0, f"job: {r.stderr}")
cpus = {}
for line in r.stdout.splitlines():
    m = re.match(r"^\[(\d)\] Cpus_allowed_list:\s+(\S+)$", line)
    tl.check(m is not None, f"bad line {line!r}")
    cpus[int(m.group(1))] = m.group(2)
online = open("/sys/devices/system/cpu/online").read().strip()
if online == "0-1":
    tl.check(cpus == {0: "0", 1: "1"}, f"each rank on its own core: {cpus}")
else:
    tl.check(cpus[0] != cpus[1], f"ranks share a cpuset: {cpus}")
tl.check("binding manifest (fingerprint" in r.stderr and "cpuset" in r.stderr, "--report-bindings prints the manifest")

# Started under `taskset -c 0`: both ranks stay on CPU 0 (rank 1 was bound to CPU 1, outside
# what the user allowed).
r = tl.run(["-p", "2", "--tag-output=rank", "--", "grep", "Cpus_allowed_list", "/proc/self/status"],
           preexec_fn=lambda: os.sched_setaffinity(0, {0}))
tl.check(r.returncode == 0 and sorted(r.stdout.splitlines()) == ["[0] Cpus_allowed_list:\t0", "[1] Cpus_allowed_list:\t0"],
         f"under taskset -c 0: {r.returncode} {r.stdout!r} {r.stderr[-500:]!r}")

r = tl.run(["-p", "2", "--bind", "none", "--tag-output=rank", "--", "grep", "Cpus_allowed_list", "/proc/self/status"])
tl.check(all(l.endswith(online) for l in r.stdout.splitlines()), f"--bind none: {r.stdout!r}")


def dry(hosts):
    r = tl.run(["--launcher", "local", "--hosts", hosts, "-p", "2", "--dry-run", "--json", "--", "true"])
    tl.check(r.returncode == 0, f"dry-run: {r.stderr}")
    return json.loads(r.stdout)


a, b, c = dry("a1,a2"), dry("a1,a2"), dry("zz1,zz2")
tl.check([x["rank"] for x in a["ranks"]] == [0, 1, 2, 3], "ranks array")
for row in a["ranks"]:
    for key in ("rank", "node", "local_rank", "gpu_busid", "hca", "path", "numa", "cpuset"):
        tl.check(key in row, f"manifest row lacks {key}: {row}")
    tl.check(row["gpu_busid"] is None and row["hca"] is None, "-p: no GPU, no HCA")
tl.check(a["fingerprint"] == b["fingerprint"] == c["fingerprint"], "fingerprint stable and free of host names")
tl.check(a["ranks"] == b["ranks"], "same inputs, same manifest")

fixtures = os.environ.get("TLAUNCH_FIXTURES_DIR", os.path.join(os.path.dirname(__file__), "../fixtures"))
xml = os.path.join(fixtures, "topologies", "llnl-ipa20_dell-xe8640_2xXeon8480_4xH100-SXM_4xmlx5-IB_hwloc2.12.xml")
tl.check(os.path.exists(xml), f"missing fixture {xml}")
r = tl.run(["-g", "4", "--dry-run", "--offline", "--json", "--topology-xml", xml, "--hosts", "n1,n2", "--", "true"])
tl.check(r.returncode == 0, f"offline dry-run: {r.stderr}")
plan = json.loads(r.stdout)
tl.check(len(plan["ranks"]) == 8 and plan["ranks"][0]["gpu_busid"] == "0000:4e:00.0", "GPU per rank from the XML")
tl.check("not applied" in r.stderr, "a recorded topology is planned, not applied (said once)")
r = tl.run(["-g", "8", "--dry-run", "--offline", "--topology-xml", xml, "--hosts", "n1", "--", "true"])
tl.check(r.returncode == 78 and "4 GPUs" in r.stderr and "8" in r.stderr, f"-g 8 on 4 GPUs: {r.stderr}")

# --include/--exclude GPU lists choose the GPUs, and the binding follows them. JUWELS Booster:
# each A100 has its own NUMA node and, under the same PCIe switch, its own HCA (mlx5_0..3).
juwels = os.path.join(fixtures, "topologies",
                      "jsc-juwels-booster-jwb0004_2xEPYC7402_4xA100_4xmlx5-HDR_pci-only-gpus_hwloc2.2.xml")
tl.check(os.path.exists(juwels), f"missing fixture {juwels}")
r = tl.run(["--dry-run", "--offline", "--json", "--topology-xml", juwels, "--hosts", "n1,n2",
            "--include", "n1:1,3@n2:1,3", "--", "true"])
tl.check(r.returncode == 0, f"--include dry run: {r.stderr}")
plan = json.loads(r.stdout)
tl.check([x["gpu_busid"] for x in plan["ranks"]] == ["0000:44:00.0", "0000:c4:00.0"] * 2, f"GPUs 1,3: {plan['ranks']}")
tl.check([x["hca"] for x in plan["ranks"]] == ["mlx5_1:1", "mlx5_3:1"] * 2, "each chosen GPU's own HCA")
tl.check([x["numa"] for x in plan["ranks"]] == [1, 5] * 2, "each chosen GPU's NUMA node")
rank1 = plan["nodes"][0]["ranks"][1]["env"]
tl.check(rank1.get("CUDA_VISIBLE_DEVICES") == "1,3" and rank1.get("LOCAL_RANK") == "1", f"rank 1: {rank1}")
# The same with real daemons reporting the fixture, and --exclude on a node without a slot count.
r = tl.run(["--launcher", "local", "--hosts", "n1", "--exclude", "n1:0", "--topology-xml", juwels, "--dry-run", "--json",
            "--", "true"])
tl.check(r.returncode == 0, f"--exclude dry run: {r.stderr}")
plan = json.loads(r.stdout)
tl.check([x["gpu_busid"] for x in plan["ranks"]] == ["0000:44:00.0", "0000:84:00.0", "0000:c4:00.0"],
         f"--exclude n1:0 leaves GPU 0 unused: {plan['ranks']}")
tl.check("mlx5_0:1" not in [x["hca"] for x in plan["ranks"]], "GPU 0's HCA unused")
r = tl.run(["--dry-run", "--offline", "--topology-xml", juwels, "--hosts", "n1", "--include", "n1:4", "--", "true"])
tl.check(r.returncode == 64 and "--include names GPU 4 of n1, which has 4 GPU(s) (0-3)" in r.stderr, f"GPU 4: {r.stderr}")

# CUDA_VISIBLE_DEVICES by UUID (nvidia-smi -L's names, or a unique start of one, as CUDA takes
# them), matched against the UUIDs each daemon reports: an AWS g4dn.metal's eight T4s, with the
# NVML UUIDs hwloc recorded. GPU 2 is 0000:35:00.0, GPU 6 0000:f4:00.0.
g4dn = os.path.join(fixtures, "topologies", "aws-g4dn.metal_2xXeon8259CL_8xT4_1xEFA_hwloc2.8.xml")
by_uuid = {**os.environ, "CUDA_VISIBLE_DEVICES": "GPU-cbe0afec,GPU-541de847-535a-023c-84c0-5bead20b12e0"}
show = 'echo "gpu $LOCAL_RANK ${CUDA_VISIBLE_DEVICES-unset} $TLAUNCH_GPU_BUSID $TLAUNCH_GPU_UUID"'
r = tl.run(["--launcher", "local", "-N", "2", "--topology-xml", g4dn, "--tag-output=none", "--", "sh", "-c", show],
           env=by_uuid)
tl.check(r.returncode == 0, f"GPUs by UUID: {r.stderr}")
lines = sorted(line for line in r.stdout.splitlines() if line.startswith("gpu "))
# In the order named, as CUDA numbers them: LOCAL_RANK 0 drives GPU 6, named first.
tl.check(lines == ["gpu 0 6,2 0000:f4:00.0 GPU-cbe0afec-aa16-5bc7-8379-8e739474cec1"] * 2 +
         ["gpu 1 6,2 0000:35:00.0 GPU-541de847-535a-023c-84c0-5bead20b12e0"] * 2,
         f"one rank per UUID named, bound to that GPU: {r.stdout!r}")
r = tl.run(["--launcher", "local", "-N", "1", "--topology-xml", g4dn, "--", "true"],
           env={**os.environ, "CUDA_VISIBLE_DEVICES": "GPU-ffff"})
tl.check(r.returncode == 64 and "CUDA_VISIBLE_DEVICES=GPU-ffff (environment) leaves CUDA no GPU of" in r.stderr,
         f"a UUID that is no GPU of the node: {r.returncode} {r.stderr}")
# Without UUIDs (hwloc alone, no NVML there): the value goes to the ranks unchanged, said once.
r = tl.run(["--launcher", "local", "-N", "1", "-g", "1", "--topology-xml", juwels, "--tag-output=none", "--", "sh", "-c",
            show], env=by_uuid)
tl.check(r.returncode == 0 and "GPU-cbe0afec,GPU-541de847" in r.stdout and "UUIDs are unknown" in r.stderr,
         f"GPUs by UUID on a node without UUIDs: {r.returncode} {r.stdout!r} {r.stderr}")

# -v says where each node's live topology came from. In a private TMPDIR of its own the first job
# discovers (both daemons of a job may, racing), and the next job's daemons read what it stored.
env = dict(os.environ, TMPDIR=tl.tempdir())
first = tl.run(["--launcher", "local", "-N", "2", "-v", "--", "true"], env=env)
tl.check(first.returncode == 0, f"job: {first.stderr}")
tl.check("topology: hwloc's discovery on local" in first.stderr, f"first job of a boot discovers: {first.stderr}")
second = tl.run(["--launcher", "local", "-N", "2", "-v", "--", "true"], env=env)
tl.check(second.returncode == 0, f"job: {second.stderr}")
# Both, usually ("this boot's cache on local[0-1]"); one daemon may discover again when the
# machine changed between the two reads: the namespace cluster's tests, run beside this one,
# add and remove veth interfaces, which are part of what the cache is keyed by.
tl.check(re.search(r"topology: (.*, )?this boot's cache on local", second.stderr),
         f"the next job's daemons read the cached topology: {second.stderr}")
# Any HWLOC_ variable turns the cache off: the daemons discover again.
third = tl.run(["--launcher", "local", "-N", "2", "-v", "--", "true"], env=dict(env, HWLOC_HIDE_ERRORS="1"))
tl.check("topology: hwloc's discovery on local[0-1]" in third.stderr, f"HWLOC_* set: {third.stderr}")
# A recorded topology is no node's live one: no such line.
recorded = tl.run(["--launcher", "local", "-N", "1", "-v", "--topology-xml", juwels, "--", "true"], env=env)
tl.check("topology: " not in recorded.stderr, f"--topology-xml: {recorded.stderr}")

# `tlaunch topo` discovers this machine without hwloc's OpenCL, GL, libpciaccess and libxml2
# plugins (their libraries cost every process that loads them; OpenCL ~230 ms on a GPU server).
topo = tl.run(["topo"], env=dict(os.environ, HWLOC_PLUGINS_VERBOSE="1"))
tl.check(topo.returncode == 0 and "Topology of this machine (live)" in topo.stdout, f"tlaunch topo: {topo.stderr}")
for plugin in ("hwloc_opencl", "hwloc_gl", "hwloc_pci", "hwloc_xml_libxml"):
    tl.check(f"`{plugin}' is blacklisted" in topo.stderr, f"tlaunch topo loaded {plugin}: {topo.stderr}")
# A node the default plan does not fit (16 GPUs, 2 cores per NUMA node): the map all the same,
# then why, with the plan's exit status.
dgx = os.path.join(fixtures, "topologies", "nvidia-dgx2h_16xV100-SXM3_nvml_trimmed-no-nics_hwloc-testsuite.xml")
topo = tl.run(["topo", "--topology-xml", dgx])
tl.check(topo.returncode == 78 and "NUMA nodes" in topo.stdout and "GPU15" in topo.stdout,
         f"tlaunch topo on a node the default plan does not fit: {topo.returncode} {topo.stdout!r}")
tl.check("the default plan (16 ranks, one per GPU) does not fit this node" in topo.stderr, topo.stderr)

print("PASS")
