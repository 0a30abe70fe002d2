"""Bad input gets one clear message and a non-zero exit before anything starts."""
import os
import resource
import socket
import subprocess

import tl


def expect(args, code, text):
    r = tl.run(args, timeout=30)
    tl.check(r.returncode == code, f"{args}: exit {r.returncode}, expected {code}; stderr: {r.stderr}")
    tl.check(text in r.stderr, f"{args}: message {text!r} not in {r.stderr!r}")
    tl.check("Traceback" not in r.stderr and "terminate called" not in r.stderr, f"{args}: crash: {r.stderr}")
    return r


expect(["--no-such-flag", "-p", "1", "--", "true"], 64, "--no-such-flag")
expect(["-p", "2", "-g", "2", "--", "true"], 64, "-p and -g both given")
expect(["--hosts", "a:8,b", "--launcher", "local", "--", "true"], 64, "some nodes in --hosts have slots and some none")
expect(["-p", "two", "--", "true"], 64, "-p")
expect(["-p", "1"], 64, "no program given")
expect(["-p", "1", "--", "no-such-program-xyz"], 127, "'no-such-program-xyz' not found on node local0")
expect(["-p", "1", "--", "./no/such/file"], 127, "does not exist on node local0")
# Missing on several nodes: every one named in one run, not one node per run.
r = expect(["--launcher", "local", "-N", "3", "-p", "1", "--", "no-such-program-xyz"], 127, "'no-such-program-xyz' not found on nodes local[0-2]")
tl.check(r.stderr.count("not found on") == 1, f"said once for the three nodes: {r.stderr}")
# A file that is no program: not executable, or a text file without a #! line (exec: "Exec
# format error" on every rank).
not_a_program = os.path.join(tl.tempdir(), "notes.txt")
with open(not_a_program, "w") as f:
    f.write("hello\n")
os.chmod(not_a_program, 0o644)
expect(["-p", "1", "--", not_a_program], 126, "cannot be executed")
os.chmod(not_a_program, 0o755)
expect(["-p", "1", "--", not_a_program], 126, "is a text file without a #! first line")
# GPU ranks on a node without GPUs: resources (78), however they are asked for.
expect(["--nproc-per-node", "gpu", "--", "true"], 78, "--nproc-per-node gpu: no GPU on local0")
expect(["-g", "1", "--", "true"], 78, "preflight failed on local0")
r = expect(["-p", "1", "--", ""], 64, "no program given")
tl.check("job tl-" not in r.stderr, f"an empty program is refused before any daemon starts: {r.stderr}")
expect(["-p", "1", "--", "/tmp"], 126, "program '/tmp' on node local0 is a directory")
expect(["-p", "1", "-D", "/etc/hostname", "--", "true"], 64, "working directory /etc/hostname is not a directory on node local0")
expect(["-p", "1", "-D", "/no/such/dir", "--", "true"], 64, "working directory /no/such/dir does not exist on node local0")
# A script saved with Windows line endings: exec fails with ENOENT on a file that is there.
dos = os.path.join(tl.tempdir(), "dos.sh")
with open(dos, "wb") as f:
    f.write(b"#!/bin/sh\r\necho hi\r\n")
os.chmod(dos, 0o755)
r = expect(["--launcher", "local", "-N", "2", "-p", "1", "--", dos], 126, "has Windows line endings")
tl.check("dos2unix" in r.stderr, f"the hint says how to convert it: {r.stderr}")
with open(dos, "wb") as f:  # the usual header: env finds no "python3\r"
    f.write(b"#!/usr/bin/env python3\r\nprint('hi')\r\n")
expect(["--launcher", "local", "-p", "1", "--", dos], 126, "has Windows line endings")
# Started in a directory that was removed meanwhile: the ranks ran in / (and wrote there).
gone = os.path.join(tl.tempdir(), "gone")
os.mkdir(gone)


def in_removed_directory():
    os.chdir(gone)
    os.rmdir(gone)


r = tl.run(["--launcher", "local", "-p", "1", "--", "/bin/pwd"], timeout=30, preexec_fn=in_removed_directory)
tl.check(r.returncode == 64 and "the current directory cannot be read" in r.stderr and "-D" in r.stderr,
         f"a removed current directory: exit {r.returncode}: {r.stderr!r} {r.stdout!r}")
r = tl.run(["--launcher", "local", "-p", "1", "--tag-output=none", "-D", "/tmp", "--", "/bin/pwd"], timeout=30,
           preexec_fn=lambda: (os.mkdir(gone), in_removed_directory()))
tl.check(r.returncode == 0 and r.stdout == "/tmp\n", f"-D /tmp from a removed directory: exit {r.returncode}: {r.stdout!r}")
# Paths that are not what the flag wants: named with the flag's file and the reason (a directory
# given as a file read as "not an hwloc XML export", "Permission denied", or an I/O error, 74).
expect(["--hostfile", "/tmp", "--", "true"], 64, "cannot read hostfile /tmp: it is a directory")
expect(["--launcher", "local", "--topology-xml", "/tmp", "--", "true"], 78, "cannot read topology XML '/tmp': it is a directory")
# An endless file (a typo for a device) is refused at a bound: hwloc read /dev/zero until memory ran out.
expect(["topo", "--topology-xml", "/dev/zero"], 78, "topology XML '/dev/zero' is larger than 64 MiB")
# A report that is the command's whole output, on a full disk: an error and 74, not an empty
# plan.json and success.
for report in (["--launcher", "local", "-N", "2", "-p", "1", "--dry-run", "--json", "--", "true"],
               ["--offline", "--dry-run", "--hosts", "n1,n2", "-p", "1", "--topology-xml",
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "../fixtures/topologies",
                             "aws-g4dn.metal_2xXeon8259CL_8xT4_1xEFA_hwloc2.8.xml"), "--", "true"],
               ["preflight", "--launcher", "local", "-N", "2", "--json"], ["topo"]):
    with open("/dev/full", "w") as full:
        r = subprocess.run([tl.TLAUNCH] + report, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    tl.check(r.returncode == 74 and "cannot write the report to standard output: No space left on device" in r.stderr,
             f"{report} > /dev/full: exit {r.returncode}, {r.stderr}")
# --topology-xml that is a pipe: each daemon would read its own stdin, and block until its node
# was declared lost (15 s, exit 69).
r = subprocess.run([tl.TLAUNCH, "--launcher", "local", "-p", "1", "--topology-xml", "/dev/stdin", "--", "true"],
                   input="x\n", capture_output=True, text=True, timeout=60)
tl.check(r.returncode == 78 and "'/dev/stdin': not a regular file" in r.stderr,
         f"--topology-xml /dev/stdin for a job: exit {r.returncode}, {r.stderr}")
for daemon, why in (("/tmp", "is a directory"), ("/no/such/tlaunchd", "does not exist")):
    r = expect(["--launcher", "local", "--daemon-path", daemon, "--", "true"], 69, f"tlaunchd at {daemon} {why} on this host")
    tl.check("--daemon-path" in r.stderr, f"the hint names --daemon-path: {r.stderr}")
# A file size limit (ulimit -f, inherited through ssh or srun) keeps libpmix from writing its job
# data: the message names the limit, not only "PMIx_server_register_nspace failed".
r = tl.run(["--launcher", "local", "-p", "1", "--", "true"], timeout=60,
           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY)))
tl.check(r.returncode == 78 and "ulimit -f" in r.stderr, f"ulimit -f 0: exit {r.returncode}: {r.stderr}")
# A bare name is looked up on this host's PATH, as ssh's shell does on a node.
expect(["--launcher", "local", "--daemon-path", "no-such-tlaunchd", "--", "true"], 69,
       "tlaunchd 'no-such-tlaunchd' is on no directory of this host's PATH")
bin_dir = os.path.dirname(os.path.abspath(tl.TLAUNCH))
r = tl.run(["--launcher", "local", "--daemon-path", "tlaunchd", "--tag-output=none", "--", "echo", "found"], timeout=60,
           env={**os.environ, "PATH": bin_dir + ":" + os.environ.get("PATH", "")})
tl.check(r.returncode == 0 and r.stdout == "found\n", f"--daemon-path tlaunchd on PATH: exit {r.returncode}: {r.stderr}")
# A subcommand mistyped runs as a program (it may exist on the nodes), with a note first.
r = expect(["--launcher", "local", "stauts"], 127, "did you mean `tlaunch status`?")
tl.check(r.stderr.index("did you mean") < r.stderr.index("not found on node local0"), f"the note comes first: {r.stderr}")
# Flags that would do nothing with the others given: refused, not silently ignored.
expect(["--launcher", "local", "--json", "--", "true"], 64, "--json prints the plan of --dry-run")
expect(["--launcher", "local", "--bind", "none", "--cpus-per-rank", "2", "--", "true"], 64,
       "--cpus-per-rank sizes each rank's set of cores, but --bind none binds nothing")
expect(["--launcher", "local", "--pmix", "off", "--event-grace", "2s", "--", "true"], 64,
       "--pmix off starts no PMIx server")
r = tl.run(["--launcher", "local", "--pmix", "off", "--event-grace", "0", "--", "true"], timeout=60)
tl.check(r.returncode == 0, f"--event-grace 0 asks for nothing, also with --pmix off: {r.returncode} {r.stderr}")
# An offline plan knows no node's interfaces: a network flag cannot be honoured, so it is refused.
fixtures = os.environ.get("TLAUNCH_FIXTURES_DIR", os.path.join(os.path.dirname(__file__), "../fixtures"))
xml = os.path.join(fixtures, "topologies", "llnl-ipa20_dell-xe8640_2xXeon8480_4xH100-SXM_4xmlx5-IB_hwloc2.12.xml")
for flag in (["--net-if", "ib0"], ["--net-cidr", "10.0.0.0/8"], ["--net", "tcp"], ["--sysfs-root", "/tmp"]):
    expect(["--dry-run", "--offline", "--topology-xml", xml, "--hosts", "n1"] + flag + ["--", "true"], 64,
           f"{flag[0]}{' tcp' if flag[0] == '--net' else ''} chooses among the nodes' network interfaces, which --offline does not know")
# --net-if lo on simulated nodes asks for what such a job does anyway: accepted (it was refused, 78).
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "-q", "--net-if", "lo", "--tag-output", "none", "--",
            "sh", "-c", "echo $GLOO_SOCKET_IFNAME"])
tl.check(r.returncode == 0 and r.stdout.split() == ["lo", "lo"], f"--net-if lo, local: {r.returncode} {r.stdout!r} {r.stderr}")
# A TMPDIR that is missing or a file on a node: named with the node, and never created.
missing = os.path.join(tl.tempdir(), "no", "such", "tmp")
r = tl.run(["--launcher", "local", "--", "true"], env=dict(os.environ, TMPDIR=missing))
tl.check(r.returncode == 64 and f"TMPDIR ({missing}) does not exist on node local0" in r.stderr,
         f"missing TMPDIR: exit {r.returncode}, {r.stderr}")
tl.check(not os.path.exists(os.path.dirname(os.path.dirname(missing))), "tlaunch created the missing TMPDIR")
# More ranks than the node's open-files hard limit allows the daemon (about 3 descriptors each):
# named as that, with the limit and what to raise (it said "pipe: Too many open files", exit 74).
r = subprocess.run([tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "120", "--bind", "none", "--pmix", "off", "--",
                    "sleep", "5"], capture_output=True, text=True, timeout=120,
                   preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300)))
tl.check(r.returncode == 78 and "ran out of file descriptors" in r.stderr and "open-files limit is 300" in r.stderr
         and "ulimit -Hn" in r.stderr, f"out of descriptors: exit {r.returncode}, {r.stderr[-800:]}")
# A relative TMPDIR (it failed every job with exit 70, "internal error", and a PMIx hint).
reldir = tl.tempdir()
os.mkdir(os.path.join(reldir, "reltmp"))
r = tl.run(["--launcher", "local", "--", "true"], env=dict(os.environ, TMPDIR="reltmp"), cwd=reldir)
tl.check(r.returncode == 64 and "TMPDIR (reltmp) is a relative path on node local0" in r.stderr and
         "absolute path" in r.stderr, f"relative TMPDIR: exit {r.returncode}, {r.stderr}")
expect(["-N", "3", "-p", "1", "--", "true"], 64, "--launcher local")
expect(["--launcher", "local", "--hosts", "a,b", "-N", "3", "-p", "1", "--", "true"], 64, "3")
expect(["--hostfile", "/nonexistent/hosts", "-p", "1", "--", "true"], 64, "/nonexistent/hosts")
expect(["-p", "1", "-x", "TLAUNCH_TEST_UNSET_VAR", "--", "true"], 64, "TLAUNCH_TEST_UNSET_VAR is not set")
expect(["preflight", "--hosts", "a,b", "--no-such-flag"], 64, "tlaunch preflight: unknown argument --no-such-flag")
expect(["preflight", "--hosts", "a,b", "python"], 64, "tlaunch preflight: unknown argument python")
expect(["preflight", "--hosts", "a,b", "--level", "deep"], 64, "--level")
# Too few hosts for the ranks: the message names the flags the user gave (-n, not -N).
expect(["-n", "5", "-p", "2", "--hosts", "a,b", "--dry-run", "--", "true"], 64,
       "-n 5 with -p 2 needs 3 nodes, but only 2 are available (a,b)")
expect(["-N", "3", "--hosts", "a,b", "--dry-run", "--", "true"], 64, "-N 3 asks for 3 nodes, but only 2 are available")
# srun's --export forms: a list was taken as one variable named "ALL,FOO" (FOO never set, exit 0);
# ALL is what tlaunch does anyway; NONE is refused, saying what to do instead.
expect(["--export=ALL,FOO=bar,BAZ", "-p", "1", "--", "true"], 64, "give each variable with its own -x: -x FOO=bar -x BAZ")
expect(["--export=NONE", "-p", "1", "--", "true"], 64, "it has no srun --export=NONE")
r = tl.run(["--export=ALL", "-x", "EXPORT_PROBE=7", "-p", "1", "-q", "--preflight-skip", "memlock", "--tag-output", "none",
            "--", "sh", "-c", "echo $EXPORT_PROBE"], timeout=60)
tl.check(r.returncode == 0 and r.stdout == "7\n", f"--export=ALL: {r.returncode} {r.stdout!r} {r.stderr}")
# torchrun's spelling is named back as typed.
expect(["--nnodes=2", "--nproc_per_node=2", "--", "true"], 64, "--nnodes 2 needs 2 nodes, but none were given")
expect(["-N", "2", "-p", "1", "--", "true"], 64, "-N 2 needs 2 nodes, but none were given")
expect(["--nnodes", "3", "--hosts", "a,b", "--dry-run", "--", "true"], 64,
       "--nnodes 3 needs at least 3 nodes, but only 2 are available (a,b)")
# The other subcommands run no program either: a stray argument is a mistake, not ignored.
expect(["topo", "--no-such-flag"], 64, "tlaunch topo: unknown argument --no-such-flag")
expect(["stop-daemons", "now"], 64, "tlaunch stop-daemons: unknown argument now")
expect(["status", "tl-1", "tl-2"], 64, "tlaunch status: unknown argument tl-2")
expect(["stacks", "--all"], 64, "tlaunch stacks: unknown argument --all")
# A value left out: the next option is not taken for it (`--summary-json --dry-run` ran the job
# for real and wrote a file named "--dry-run"), nor "--"; an empty value (an unset variable) is
# not the same as leaving the option out (`--hosts ""` ran on this host).
d = tl.tempdir()
r = expect(["--launcher", "local", "--summary-json", "--dry-run", "-p", "1", "--", "touch", os.path.join(d, "ran")], 64,
           "--summary-json needs a value, but the argument after it is the option --dry-run")
tl.check(not os.path.exists(os.path.join(d, "ran")) and not os.path.exists("--dry-run"), "the job ran anyway")
expect(["--mca", "btl", "--", "true"], 64, "--mca needs 2 values, but the argument after it is \"--\"")
expect(["-D", "-q", "--", "true"], 64, "-D needs a value, but the argument after it is the option -q")
expect(["topo", "--topology-xml", "--json"], 64, "--topology-xml needs a value")
expect(["preflight", "--level", "bogus"], 64, "Run 'tlaunch preflight --help' for its options")
for empty in ("", " "):
    expect(["--hosts", empty, "-p", "1", "--", "true"], 64, "--hosts was given an empty value")
expect(["--hostfile", "", "-p", "1", "--", "true"], 64, "--hostfile was given an empty value")
expect(["--launcher", "local", "--output-dir", "", "-p", "1", "--", "true"], 64, "--output-dir was given an empty value")
# `--summary-json=$OUT` with OUT unset: the next word (the user's script) was taken for the file
# and overwritten with the summary.
script = os.path.join(tl.tempdir(), "train.sh")
with open(script, "w") as f:
    f.write("#!/bin/sh\necho training\n")
os.chmod(script, 0o755)
expect(["--launcher", "local", "-p", "1", "--summary-json=", script], 64, "--summary-json was given an empty value")
with open(script) as f:
    tl.check(f.read() == "#!/bin/sh\necho training\n", "the script after an empty --summary-json= is left as it was")
expect(["--hosts=", "python3", "train.py"], 64, "--hosts was given an empty value")
# A value missing at the end of the line, as in the middle of it.
expect(["-N"], 64, "-N needs a value: give it right after -N")
expect(["preflight", "--level"], 64, "--level needs a value")
# Two variables after one -x, a shell's `VAR=1 prog`, an option pasted with a typographic dash.
expect(["--launcher", "local", "-p", "1", "-x", "FOO=bar", "BAR=baz", "--", "true"], 64,
       "'BAR=baz' would be run as the program: give variables with -x, one variable each (-x BAR=baz)")
expect(["--launcher", "local", "-p", "1", "--", "OMP_NUM_THREADS=4", "true"], 64, "-x OMP_NUM_THREADS=4")
expect(["--launcher", "local", "-p", "1", "\u2014hosts", "n1", "true"], 64, "type the option again as --hosts")
# A rendezvous endpoint is no MASTER_ADDR (torchrun's --rdzv-endpoint host:port).
expect(["--launcher", "local", "-p", "1", "--master-addr", "127.0.0.1:29500", "--", "true"], 64,
       "looks like HOST:PORT: give the host alone and the port with --master-port")
# --master-port taken on rank 0's node: said before any rank starts (torch's traceback after every
# rank started, before). A port whose only trace is the last store's TIME_WAIT is free to torch's
# store (SO_REUSEADDR), so it is no refusal; nor is a taken port with the user's own MASTER_ADDR.
with socket.socket() as held, socket.socket() as lingering:
    held.bind(("127.0.0.1", 0))
    held.listen()
    taken = held.getsockname()[1]
    expect(["--launcher", "local", "-N", "2", "-p", "1", "--preflight-skip", "memlock", "--master-port", str(taken),
            "--", "touch", os.path.join(d, "ran")], 78,
           f"MASTER_PORT {taken} (--master-port) is in use on local0, rank 0's node")
    tl.check(not os.path.exists(os.path.join(d, "ran")), "a rank started on a taken --master-port")
    r = tl.run(["--launcher", "local", "-p", "1", "--preflight-skip", "memlock", "--master-port", str(taken),
                "--dry-run", "--", "true"])
    tl.check(r.returncode == 0 and f"warning: MASTER_PORT {taken} (--master-port) is in use" in r.stdout,
             f"--dry-run shows the plan and warns of a taken --master-port: {r.returncode} {r.stderr}")
    r = tl.run(["--launcher", "local", "-p", "1", "--preflight-skip", "memlock", "-x", f"MASTER_PORT={taken}",
                "-x", "MASTER_ADDR=127.0.0.1", "--", "true"])
    tl.check(r.returncode == 0, f"a taken MASTER_PORT with the user's MASTER_ADDR: {r.returncode} {r.stderr}")
    lingering.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lingering.bind(("127.0.0.1", 0))
    lingering.listen()
    waiting = lingering.getsockname()[1]
    peer = socket.create_connection(("127.0.0.1", waiting))
    accepted, _ = lingering.accept()
    accepted.close()  # this side closes first: its end of the connection lingers in TIME_WAIT
    peer.close()
    lingering.close()
    r = tl.run(["--launcher", "local", "-p", "1", "--preflight-skip", "memlock", "--master-port", str(waiting), "--",
                "true"])
    tl.check(r.returncode == 0, f"a --master-port in TIME_WAIT only: {r.returncode} {r.stderr}")
expect(["--launcher", "local", "-p", "1", "-x", "MASTER_ADDR=999.1.1.1", "--", "true"], 64,
       "'999.1.1.1' is neither an IPv4 or IPv6 address nor a host name")
expect(["--launcher", "local", "-p", "1", "-x", "PMIX_RANK=3", "--", "true"], 64, "PMIx server")
# --net-if and --preflight-skip take one word (commas list more): the program's options stay its own.
r = tl.run(["--launcher", "local", "-p", "1", "--preflight-skip", "memlock", "--", "true"])
tl.check(r.returncode == 0, f"--preflight-skip before a separated program: {r.stderr}")
r = tl.run(["--launcher", "local", "-p", "1", "--preflight-skip", "memlock", "echo", "-n", "hi"])
tl.check(r.returncode == 0 and r.stdout.rstrip().endswith("hi") and "-n" not in r.stdout,
         f"--preflight-skip took the program's words: {r.returncode} {r.stdout!r} {r.stderr}")
# Other programs' options stay theirs: after the program, and as --ssh-option's value.
r = tl.run(["--launcher", "local", "-p", "1", "--", "echo", "--summary-json", "--dry-run"])
tl.check(r.returncode == 0 and "--summary-json --dry-run" in r.stdout, f"the program's own arguments: {r.stderr}")
# (-v is --ssh-option's value, not tlaunch's -v: the refusal is about --ssh-option doing nothing
# under the local launcher, not about a value missing.)
expect(["--launcher", "local", "--ssh-option", "-v", "-p", "1", "--", "true"], 64,
       "--ssh-option is for ssh, but this job's daemons are started by the local launcher")
expect(["--launcher", "local", "--preflight", "off", "--preflight-strict", "-p", "1", "--", "true"], 64,
       "--preflight-strict tunes the preflight checks, but --preflight off runs none")
# ssh's or srun's flag without its value: the value is the next word, which would have been
# taken for the program, with every option after it (--dry-run too) the program's arguments.
expect(["--hosts", "localhost", "-p", "1", "--ssh-option", "-p", "2222", "--dry-run", "--", "touch", os.path.join(d, "ran")],
       64, "--ssh-option -p: ssh's -p takes a value, which must come in the same word, e.g. --ssh-option='-p 2222'")
expect(["--hosts", "localhost", "-p", "1", "--ssh-option=-i", "key", "--dry-run", "--", "true"], 64,
       "--ssh-option -i: ssh's -i takes a value")
expect(["--launcher", "slurm", "-N", "1", "--slurm-args", "--partition", "debug", "--dry-run", "--", "touch", os.path.join(d, "ran")],
       64, "--slurm-args --partition: srun's --partition takes a value, which must come in the same word")
tl.check(not os.path.exists(os.path.join(d, "ran")), "the job ran anyway")
# Flags of a launcher the job does not use would do nothing: refused.
expect(["--launcher", "local", "--slurm-args", "-p gpu", "-p", "1", "--", "true"], 64,
       "--slurm-args is for srun, but this job's daemons are started by the local launcher")

# Warm daemons save ssh sessions or srun steps inside an allocation; elsewhere the flag is refused.
expect(["--launcher", "local", "--keep-daemons", "1m", "-p", "1", "--", "true"], 64,
       "this job's daemons are started by the local launcher")
expect(["--launcher", "slurm", "-N", "1", "--keep-daemons", "1m", "-p", "1", "--", "true"], 64,
       "this job's daemons are started by srun outside a Slurm allocation")

r = tl.run(["--version"])
tl.check(r.returncode == 0 and r.stdout.startswith("tlaunch "), f"--version: {r.stdout!r}")
r = tl.run(["--help"])
tl.check(r.returncode == 0 and "--procs-per-node" in r.stdout and "Exit status" in r.stdout, "--help")

# --preflight is --level's other name in the subcommand: the full level's own rows appear.
r = tl.run(["preflight", "--launcher", "local", "--hosts", "a,b", "--preflight=full", "--json"], timeout=60)
tl.check(r.returncode == 0 and '"rdma_pair"' in r.stdout and '"reachability"' in r.stdout,
         f"preflight --preflight=full: {r.returncode} {r.stdout[-400:]!r} {r.stderr!r}")

# No count at all: like torchrun and mpirun, a default (slots, else one per GPU, else 1).
r = tl.run(["--", "true"])
tl.check(r.returncode == 0 and "1 node(s) x" in r.stderr, f"no -p/-g: {r.returncode} {r.stderr!r}")

# Arguments reach the program unchanged, spaces and quotes included; a clean job exits 0.
r = tl.run(["-p", "1", "--tag-output=none", "--", "/usr/bin/printf", "%s|", "a b", "it's", '"q"', "$HOME", ""])
tl.check(r.returncode == 0 and r.stdout == "a b|it's|\"q\"|$HOME||\n", f"argv: {r.stdout!r}")
# Started from an environment without PATH (env -i, some cron and service set-ups): a program
# is looked up in the system's default path as execvp does, never in the working directory,
# where a program of the same name may lie.
cwd = tl.tempdir()
planted = os.path.join(cwd, "true")
with open(planted, "w") as f:
    f.write("#!/bin/sh\necho planted program ran\n")
os.chmod(planted, 0o755)
r = tl.run(["--launcher", "local", "-p", "1", "--", "true"], cwd=cwd, env={})
tl.check(r.returncode == 0 and "planted program ran" not in r.stdout,
         f"without PATH the working directory's 'true' ran: {r.returncode} {r.stdout!r} {r.stderr[-500:]!r}")
print("PASS")
