"""`cmake --install` puts what a user needs where a user looks: both programs, the bash completion
and the man page tlaunch(1), which man can render; the installed tlaunch finds its tlaunchd."""
import os
import shutil
import subprocess
import sys

import tl

build = sys.argv[1]
prefix = tl.tempdir()
try:
    r = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True, text=True, timeout=300)
    tl.check(r.returncode == 0, f"cmake --install failed: {r.stdout}{r.stderr}")
    for rel in ("bin/tlaunch", "bin/tlaunchd"):
        tl.check(os.access(os.path.join(prefix, rel), os.X_OK), f"{rel} not installed")
    completion = os.path.join(prefix, "share/bash-completion/completions/tlaunch")
    tl.check(os.path.isfile(completion), "bash completion not installed as share/bash-completion/completions/tlaunch")
    page = os.path.join(prefix, "share/man/man1/tlaunch.1")
    tl.check(os.path.isfile(page), "man page not installed as share/man/man1/tlaunch.1")
    if shutil.which("man"):
        m = subprocess.run(["man", "-l", page], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "MANPAGER": "cat", "MANWIDTH": "100"})
        tl.check(m.returncode == 0 and "EXIT STATUS" in m.stdout and "--output-dir" in m.stdout,
                 f"man -l {page} does not render: {m.stderr[-500:]}")
    j = subprocess.run([os.path.join(prefix, "bin/tlaunch"), "--launcher", "local", "-N", "1", "-p", "1", "-q", "--",
                        "/bin/echo", "installed"], capture_output=True, text=True, timeout=120)
    tl.check(j.returncode == 0 and "installed" in j.stdout, f"the installed tlaunch does not run a job: {j.stderr}")
finally:
    shutil.rmtree(prefix, ignore_errors=True)
print("PASS: programs, completion and man page installed; the installed tlaunch runs a job")
