"""A rank started from a terminal (the local launcher's daemon is started in a session of its
own) has no controlling terminal, as over ssh or srun: a program that opens /dev/tty
(getpass, an ssh or sudo prompt, git's credential prompt) gets an error it handles, and the
job ends. Before, the rank was a background process group of that terminal: it was stopped
by SIGTTIN and the job hung without a word."""
import shlex
import subprocess

import tl

PROBE = ("import os, getpass\n"
         "try:\n"
         "    os.close(os.open('/dev/tty', os.O_RDWR))\n"
         "    print('rank has a terminal', flush=True)\n"
         "except OSError as e:\n"
         "    print('rank has no terminal', e.errno, flush=True)\n"
         "try:\n"
         "    getpass.getpass('password: ')\n"
         "except EOFError:\n"
         "    print('getpass read the end of stdin', flush=True)\n")
command = " ".join(shlex.quote(a) for a in [tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "1", "--",
                                            tl.PYTHON, "-c", PROBE])
# script(1) gives tlaunch a terminal of its own, as a user's shell has.
try:
    r = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
except subprocess.TimeoutExpired:
    tl.kill_leftovers("getpass")
    tl.check(False, "the job hung: the rank was stopped by its terminal")
print(r.stdout, r.stderr)
tl.check("rank has no terminal" in r.stdout and "getpass read the end of stdin" in r.stdout,
         f"the rank's view of the terminal: {r.stdout!r}")
tl.check(r.returncode == 0, f"exit {r.returncode}")

# The ranks of a node share one session, their daemon's (which has no terminal): one scheduler
# autogroup where the kernel groups by session. With a session per rank, Open MPI's sched_yield
# gave the CPU to no one and an oversubscribed MPI job ran 15-30x slower than under mpirun.
SESSION = ("import os\n"
           "try:\n"
           "    group = open('/proc/self/autogroup').read().split()[0]\n"
           "except OSError:\n"
           "    group = 'none'\n"
           "print('session', os.getsid(0), group, 'own' if os.getsid(0) == os.getpid() else 'shared', flush=True)\n")
command = " ".join(shlex.quote(a) for a in [tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "3", "--tag-output",
                                            "none", "--", tl.PYTHON, "-c", SESSION])
r = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, timeout=60,
                   stdin=subprocess.DEVNULL)
sessions = {line.split(None, 1)[1].strip() for line in r.stdout.splitlines() if line.startswith("session ")}
tl.check(r.returncode == 0 and len(sessions) == 1 and next(iter(sessions)).endswith(" shared"),
         f"the ranks' sessions: {sessions} ({r.stdout!r} {r.stderr!r})")
print("PASS")
