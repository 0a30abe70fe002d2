"""A rank started from a terminal (the local launcher's daemon runs in the user's terminal
session) has no controlling terminal, as over ssh or srun: a program that opens /dev/tty
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
print("PASS")
