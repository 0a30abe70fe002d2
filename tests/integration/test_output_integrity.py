"""6 ranks x 20,000 lines of varied length written as fast as possible: every line arrives
exactly once, intact (checksum), tagged with its rank, on the stream it was written to; the
unterminated last line of each rank arrives too. Then the same promise when tlaunch's stdout is
a non-blocking pipe (ssh sets O_NONBLOCK on a stdout it shares with tlaunch) whose reader pauses:
tlaunch waits for it, as a blocking write would, and loses nothing. And a rank whose output goes
through a filter of its own (`exec > >(tee log)`, `| ts`), which still holds the rank's pipes when
the rank's main process has ended: its last lines arrive, after a success and after a failure."""
import fcntl
import os
import re
import subprocess
import time
import zlib

import tl

N = 20000
r = tl.run(["--launcher", "local", "-N", "3", "-p", "2", "--", tl.PYTHON, tl.program("spew.py"), str(N)], timeout=300)
tl.check(r.returncode == 0, f"job failed: {r.returncode}: {r.stderr[-2000:]}")
line_re = re.compile(r"^\[(local\d):(\d)\] R(\d) S(\d+) C([0-9a-f]{8}) (.*)$")
seen = set()
for stream, text, want_err in (("stdout", r.stdout, False), ("stderr", r.stderr, True)):
    for line in text.split("\n")[:-1]:
        if stream == "stderr" and line.startswith("tlaunch: "):
            continue  # tlaunch's own banner
        m = line_re.match(line)
        if not m:
            e = re.match(r"^\[(local\d):(\d)\] R(\d) END$", line)
            tl.check(e and stream == "stdout" and e.group(2) == e.group(3), f"garbled {stream} line: {line[:200]!r}")
            seen.add((int(e.group(2)), "END"))
            continue
        node, tag_rank, rank, seq, crc, body = m.groups()
        tl.check(tag_rank == rank, f"line of rank {rank} tagged {tag_rank}")
        tl.check(node == f"local{int(rank) // 2}", f"rank {rank} tagged with node {node}")
        tl.check(int(crc, 16) == zlib.crc32(body.encode()), f"corrupt line rank {rank} seq {seq}")
        tl.check((int(seq) % 5 == 0) == want_err, f"rank {rank} seq {seq} on the wrong stream")
        key = (int(rank), int(seq))
        tl.check(key not in seen, f"duplicate line {key}")
        seen.add(key)
expected = {(r_, s) for r_ in range(6) for s in range(N)} | {(r_, "END") for r_ in range(6)}
missing = expected - seen
tl.check(not missing, f"{len(missing)} lines lost, e.g. {sorted(missing, key=str)[:5]}")

# A non-blocking stdout, its reader paused for 2 s: every line still arrives, exit 0.
rd, wr = os.pipe()
fcntl.fcntl(wr, fcntl.F_SETFL, fcntl.fcntl(wr, fcntl.F_GETFL) | os.O_NONBLOCK)
p = subprocess.Popen([tl.TLAUNCH, "-q", "--launcher", "local", "-N", "1", "-p", "1", "--", tl.PYTHON, "-c",
                      "for i in range(100000): print('line', i)\nprint('THE END')"],
                     stdout=wr, stderr=subprocess.PIPE, start_new_session=True)
os.close(wr)
time.sleep(2)
data = b""
with os.fdopen(rd, "rb") as f:
    for chunk in iter(lambda: f.read(65536), b""):
        data += chunk
err = p.communicate(timeout=120)[1].decode(errors="replace")
lines = data.decode().splitlines()
tl.check(p.returncode == 0, f"non-blocking stdout: exit {p.returncode}: {err}")
tl.check(len(lines) == 100001 and lines[-1].endswith("THE END"),
         f"non-blocking stdout: {len(lines)} of 100001 lines arrived, the last {lines[-1:]!r}; {err}")
print(f"PASS: {len(seen)} lines intact; a paused non-blocking stdout lost nothing")

# A filter in the rank's own process group: bash's process substitution outlives bash by the
# time it takes to pass on the rest (a timestamping loop that starts late, as a log shipper
# that connects first: 0.3 s, then builtins only, so that a loaded machine passes 201 lines well
# within the grace of 1 s). It used to be killed with the rank's main process (0 of 201 lines
# arrived with a `date` for every line); mpirun shows them all.
log = os.path.join(tl.tempdir(), "rank.log")
filtered = ('exec > >(sleep 0.3; while IFS= read -r l; do printf "%s %s\\n" "$SECONDS" "$l"; done) 2>&1; '
            'for i in $(seq 200); do echo "line $i"; done; echo "last line"')
r = tl.run(["-q", "--launcher", "local", "-N", "1", "-p", "2", "--tag-output", "rank", "--", "bash", "-c", filtered],
           timeout=120)
got = {rank: [l for l in r.stdout.splitlines() if l.startswith(f"[{rank}] ")] for rank in (0, 1)}
tl.check(r.returncode == 0 and all(len(g) == 201 and g[-1].endswith(" last line") for g in got.values()),
         f"a filter holding the rank's output: exit {r.returncode}, lines per rank "
         f"{ {k: len(v) for k, v in got.items()} }: {r.stderr[-600:]}")
# A failing rank's traceback through `tee`: on the screen and in the log, and the rank is blamed.
failing = (f'exec 2> >(tee -a {log} >&2); if [ "$RANK" = 1 ]; then {tl.PYTHON} -c "raise ValueError(\'bad batch\')"; '
           'else sleep 30; fi')
r = tl.run(["--launcher", "local", "-N", "1", "-p", "2", "--", "bash", "-c", failing], timeout=120)
tl.check(r.returncode == 1 and "rank 1 on node local0 exited with status 1" in r.stderr and
         "[local0:1] ValueError: bad batch" in r.stderr,
         f"a failure's traceback through tee: exit {r.returncode}, shown, rank 1 blamed: {r.stderr[-1500:]}")
with open(log) as f:
    tl.check("ValueError: bad batch" in f.read(), "the traceback reached the rank's own log too")
print("PASS: a filter in the rank's process group passes on its last lines (success and failure)")

