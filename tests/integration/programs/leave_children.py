# A rank that starts what training scripts start and forget: a setsid'ed server, a double-forked
# daemon, one that ignores SIGTERM, and a short-lived orphan (its zombie must be reaped), each
# carrying MARKER in its command line. Then it exits with EXIT after HOLD seconds.
# argv: marker exit_code hold_seconds [sync_dir]
# With sync_dir (a directory every rank sees), the hold starts only once every rank has said
# ready: a failing rank cannot end the job before a slow-starting one has started its children.
import os
import subprocess
import sys
import time

import rank_markers

marker, code, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
sleep_forever = [sys.executable, "-c", "import time; time.sleep(1000)"]
quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

# setsid, as `setsid some_server &` does.
subprocess.Popen(["setsid"] + sleep_forever + [marker, "setsid"], **quiet)
# A double fork (the classic daemon): the middle process exits, the grandchild is orphaned.
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, sleep_forever + [marker, "double-fork"])
    os._exit(0)
os.waitpid(pid, 0)
# Orphaned too, and deaf to SIGTERM: only SIGKILL ends it.
subprocess.Popen(["setsid", sys.executable, "-c",
                  "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(1000)",
                  marker, "ignores-sigterm"], **quiet)
# An orphan that exits on its own while the job runs.
pid = os.fork()
if pid == 0:
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(0.3)", marker, "short"])
    os._exit(0)
os.waitpid(pid, 0)
print(f"rank {os.environ['RANK']} ready", flush=True)
if len(sys.argv) > 4:
    rank_markers.leave(sys.argv[4], f"rank{os.environ['RANK']}")
    rank_markers.wait_for_count(sys.argv[4], int(os.environ["WORLD_SIZE"]))
time.sleep(hold)
sys.exit(code)
