"""6 ranks x 20,000 lines of varied length written as fast as possible: every line arrives
exactly once, intact (checksum), tagged with its rank, on the stream it was written to; the
unterminated last line of each rank arrives too. Then the same promise when tlaunch's stdout is
a non-blocking pipe (ssh sets O_NONBLOCK on a stdout it shares with tlaunch) whose reader pauses:
tlaunch waits for it, as a blocking write would, and loses nothing."""
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
