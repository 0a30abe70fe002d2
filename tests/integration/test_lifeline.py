"""Nothing ordinary may kill a healthy job (issue: the job lifeline). Each case is something a
user does every day, run as a real local job; each must end with the job's own status, every
line, and no process of the job left:
  1. stdout not read for 10 s (a pager left unscrolled, Ctrl-S, a slow `tee`) with a 3 s
     heartbeat timeout: every line arrives, exit 0;
  2. one 2 MB line: it arrives whole, in 1 MiB pieces, and exactly as written in --output-dir;
  3. a progress bar (\\r updates) into a pipe: at most one line per second, the final state once;
  4. the same on a terminal: updated in place, one final line; a prompt that waits for input
     (no newline yet) is shown, on a terminal and into a pipe;
  5. tlaunch stopped (SIGSTOP) for 6 s with a 3 s heartbeat timeout: the job completes, also
     when its ranks print all along (the daemons' sends meet a full, zero window);
  6. a daemon stopped (SIGSTOP): the job ends naming its node within the heartbeat timeout;
  7. a rank that closes its stdout early and keeps running: the job goes on;
  8. --output-dir on a full file system: one warning naming the file, stdout goes on, exit 0;
  9. --stdin to a rank that does not read yet: tlaunch reads ahead only its credit (1 MiB), then
     every byte arrives;
 10. 600 ranks on one node with a 3 s heartbeat timeout: starting them takes seconds, the node
     is not lost;
 11. a storm of bare \\r (5 MB, a bar redrawn with nothing new): one line, in moments;
 12./13. a paused reader holds the output, not the teardown or tlaunch's own end;
 14. a daemon signalled (scancel, a node's shutdown) while its output waits for a paused reader:
     its rank's last words (printed at SIGTERM) arrive once the reader reads.
"""
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import threading
import time

import tl

PAT = tl.program("output_patterns.py")


def read_screen(fd, p, until=None, timeout=60):
    """What fd (a pty's master side, or a pipe) gives until `until` appears, the end (end of
    file, or p gone with nothing more to read), or the timeout."""
    got = b""
    deadline = time.monotonic() + timeout
    while (until is None or until not in got) and time.monotonic() < deadline:
        if not select.select([fd], [], [], 1)[0]:
            if p.poll() is not None:
                break
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # a pty whose other side is closed
            break
        if not chunk:
            break
        got += chunk
    return got
LOCAL2 = ["--launcher", "local", "-N", "2", "-p", "1", "-q"]


def job_of(text):
    m = re.search(r"job (tl-[0-9a-f]+)", text)
    return m.group(1) if m else None


def no_survivors(job, what):
    tl.check(job is not None, f"{what}: no job id in the output")
    tl.check(tl.wait_until(lambda: not tl.processes_with_env("TLAUNCH_JOB_ID", job), 10),
             f"{what}: processes of job {job} survived: {tl.processes_with_env('TLAUNCH_JOB_ID', job)}")


def read_until(p, needle, count, timeout):
    buf = b""
    deadline = time.monotonic() + timeout
    while buf.count(needle) < count:
        left = deadline - time.monotonic()
        tl.check(left > 0, f"waited {timeout} s for {count} x {needle!r}; got {buf[-500:]!r}")
        r, _, _ = select.select([p.stdout], [], [], left)
        if r:
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                tl.fail(f"the job ended early: {p.stderr.read()}")
            buf += chunk
    return buf


# 1. A paused reader. 2 ranks x 100,000 lines of 210 bytes (42 MB): far more than the pipes,
#    the daemons' queues and the credit windows hold, so the ranks must wait for the reader.
N = 100_000
p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "-N", "2", "-p", "1", "--heartbeat-timeout", "3", "--",
                      tl.PYTHON, PAT, "lines", str(N)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     start_new_session=True)
time.sleep(10)  # nobody reads
out, err = p.communicate(timeout=300)
err = err.decode(errors="replace")
tl.check(p.returncode == 0, f"paused reader: exit {p.returncode}: {err[-1500:]}")
lines = out.decode().splitlines()
for rank in (0, 1):
    got = [l for l in lines if l.startswith(f"[local{rank}:{rank}] R{rank} L")]
    tl.check(len(got) == N, f"paused reader: rank {rank} delivered {len(got)} of {N} lines")
    tl.check(got[-1].startswith(f"[local{rank}:{rank}] R{rank} L{N - 1} "), "paused reader: lines out of order")
no_survivors(job_of(err), "paused reader")
print("PASS 1: stdout paused 10 s (heartbeat timeout 3 s): all", 2 * N, "lines, exit 0")

# 2. One 2 MB line, on stdout and in --output-dir.
outdir = os.path.join(tl.tempdir(), "out")
r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "--output-dir", outdir, "--", tl.PYTHON, PAT, "longline",
            "2000000"])
tl.check(r.returncode == 0, f"long line: exit {r.returncode}: {r.stderr[-1500:]}")
pieces = [l for l in r.stdout.splitlines() if l.startswith("[local0:0] x")]
tl.check(len(pieces) == 2 and all(len(l) <= len("[local0:0] ") + (1 << 20) for l in pieces),
         f"long line: {len(pieces)} pieces of {[len(l) for l in pieces]} bytes")
tl.check(sum(len(l) - len("[local0:0] ") for l in pieces) == 2_000_000, "long line: bytes lost")
tl.check(r.stdout.splitlines()[-1] == "[local0:0] after", "long line: the job did not go on")
# A long line of 3-byte characters: 1 MiB falls inside one; each piece is still valid UTF-8 (an
# invalid byte would read as U+FFFD here).
r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "--", tl.PYTHON, PAT, "longline", "2000001", "\u2589"])
tl.check(r.returncode == 0, f"long UTF-8 line: exit {r.returncode}: {r.stderr[-1500:]}")
pieces = [l[len("[local0:0] "):] for l in r.stdout.splitlines() if l.startswith("[local0:0] \u2589")]
tl.check(len(pieces) == 2 and "".join(pieces) == "\u2589" * 666667,
         f"long UTF-8 line: pieces of {[len(l) for l in pieces]} characters")
with open(os.path.join(outdir, "rank.0.out"), "rb") as f:
    tl.check(f.read() == b"x" * 2_000_000 + b"\nafter\n", "long line: --output-dir does not hold the exact bytes")
tl.check(os.stat(outdir).st_mode & 0o777 == 0o700, "--output-dir is not 0700")
tl.check(os.stat(os.path.join(outdir, "rank.0.out")).st_mode & 0o777 == 0o600, "--output-dir files are not 0600")
print("PASS 2: a 2 MB line arrives in 2 pieces, whole; --output-dir has the raw bytes (0700/0600)")

# 3. A progress bar into a pipe: 60 updates over 3 s.
t0 = time.monotonic()
r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "-q", "--", tl.PYTHON, PAT, "progress", "60", "3"])
elapsed = time.monotonic() - t0  # the bar's own run time, or longer on a loaded machine
tl.check(r.returncode == 0, f"progress: exit {r.returncode}: {r.stderr[-800:]}")
bar = [l for l in r.stderr.splitlines() if l.startswith("[local0:0] R0")]
tl.check("\r" not in r.stderr, "progress: a carriage return reached the pipe")
tl.check(2 <= len(bar) <= max(7, elapsed + 3),
         f"progress: {len(bar)} lines for 60 updates in {elapsed:.1f} s (want about one a second): {bar}")
tl.check(bar[-1].endswith("100%|" + "#" * 20 + " done") and sum("done" in l for l in bar) == 1,
         f"progress: the final state is not printed once: {bar[-3:]}")
print(f"PASS 3: 60 progress updates in 3 s became {len(bar)} lines in a pipe, the final one once")

# 4. The same on a terminal.
master, slave = pty.openpty()
XTERM = dict(os.environ, TERM="xterm")  # whatever the console running the tests says
p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "1", "-q", "--", tl.PYTHON, PAT,
                      "progress", "30", "1.5"], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                     start_new_session=True, env=XTERM)
os.close(slave)
screen = read_screen(master, p)
p.wait(timeout=30)
os.close(master)
tl.check(p.returncode == 0, f"terminal progress: exit {p.returncode}: {screen[-500:]!r}")
tl.check(screen.count(b"\r\x1b[K[local0:0] R0") >= 10, f"terminal progress: not drawn in place: {screen[:300]!r}")
final = [l for l in screen.split(b"\n") if b"done" in l]
tl.check(len(final) == 1, f"terminal progress: {len(final)} final lines")
newlines = screen.count(b"\n")
tl.check(newlines <= 2, f"terminal progress: {newlines} lines on the screen, want 1")
print("PASS 4: on a terminal the bar is redrawn in place and ends in one line")

# 4a. TERM=dumb (Emacs' shell, some CI consoles) has no cursor control: lines as into a pipe, no
#     "\e[K" shown as garbage.
master, slave = pty.openpty()
p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "1", "-q", "--", tl.PYTHON, PAT,
                      "progress", "10", "1"], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                     start_new_session=True, env=dict(os.environ, TERM="dumb"))
os.close(slave)
screen = read_screen(master, p)
p.wait(timeout=30)
os.close(master)
tl.check(p.returncode == 0 and b"\x1b[K" not in screen and b"done" in screen,
         f"TERM=dumb: exit {p.returncode}, cursor control on a dumb terminal: {screen[-300:]!r}")
print("PASS 4a: TERM=dumb gets lines, no cursor control")

# 4c. The terminal is resized while the bar runs: later states are cut to the new width (a line
# wider than the terminal wraps into rows that are never redrawn).
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "1", "-q", "--", tl.PYTHON, PAT,
                      "progress", "40", "4"], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave,
                     start_new_session=True, env=XTERM)
os.close(slave)
before = read_screen(master, p, until=b"R0  25%")
fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 16, 0, 0))
after = read_screen(master, p)
p.wait(timeout=30)
os.close(master)
drawn_before = [d.split(b"\r")[0] for d in before.split(b"\r\x1b[K")[1:]]
drawn_after = [d.split(b"\r")[0] for d in after.split(b"\r\x1b[K")[1:] if d and b"done" not in d]
tl.check(p.returncode == 0, f"resized terminal: exit {p.returncode}: {after[-300:]!r}")
tl.check(any(len(d) > 16 for d in drawn_before), f"resized terminal: nothing wide before: {drawn_before[-3:]!r}")
tl.check(len(drawn_after) >= 3 and all(len(d) <= 15 for d in drawn_after[-3:]),
         f"resized terminal: the last states are not cut to 16 columns: {drawn_after[-3:]!r}")
print("PASS 4c: after the terminal shrank to 16 columns the bar is cut to 15")

# 4b. A prompt that waits for input (input(), pdb's "(Pdb) "): shown before the answer, on a
#     terminal and into a pipe, not only once its line is done.
ASK = ["--launcher", "local", "-N", "1", "-p", "1", "-q", "--stdin", "0", "--", tl.PYTHON, "-c",
       "x = input('Proceed? [y/n] '); print('got', x)"]
for where in ("pipe", "terminal"):
    if where == "pipe":
        p = subprocess.Popen([tl.TLAUNCH] + ASK, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
        screen_fd = p.stdout.fileno()
    else:
        master, slave = pty.openpty()
        p = subprocess.Popen([tl.TLAUNCH] + ASK, stdin=subprocess.PIPE, stdout=slave, stderr=slave,
                             start_new_session=True, env=XTERM)
        os.close(slave)
        screen_fd = master
    try:
        screen = read_screen(screen_fd, p, until=b"Proceed? [y/n]", timeout=30)
        tl.check(b"Proceed? [y/n]" in screen, f"prompt ({where}): not shown while the rank waits for input: {screen!r}")
        if where == "terminal":
            tl.check(b"\r\x1b[K[local0:0] Proceed? [y/n] " in screen, f"prompt (terminal): not drawn in place: {screen!r}")
        p.stdin.write(b"yes\n")
        p.stdin.close()
        screen += read_screen(screen_fd, p, timeout=30)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        if where == "terminal":
            os.close(master)
    tl.check(p.returncode == 0 and b"got yes" in screen, f"prompt ({where}): exit {p.returncode}: {screen!r}")
print("PASS 4b: a prompt waiting for input is shown, on a terminal and into a pipe")

# 5. tlaunch itself stopped for 6 s (heartbeat timeout 3 s).
p = tl.start(LOCAL2 + ["--heartbeat-timeout", "3", "--", tl.PYTHON, PAT, "sleep", "8"])
read_until(p, b"ready", 2, 60)
os.kill(p.pid, signal.SIGSTOP)
time.sleep(6)
os.kill(p.pid, signal.SIGCONT)
out, err = p.communicate(timeout=60)
tl.check(p.returncode == 0, f"stopped frontend: exit {p.returncode}: {err[-1000:]}")
tl.check(out.count("done") == 2, f"stopped frontend: ranks did not finish: {out!r}")
print("PASS 5: tlaunch stopped for 6 s with a 3 s heartbeat timeout: the job completed")

# 5b. The same while both ranks print ~2 MB/s: the credit window (4 MiB) fills the stopped
# frontend's socket buffer; its kernel advertises a zero window and answers the daemons' probes.
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--heartbeat-timeout", "3", "--", tl.PYTHON, PAT, "stream", "10"])
early = read_until(p, b"ready", 2, 60).decode()
os.kill(p.pid, signal.SIGSTOP)
time.sleep(7)
os.kill(p.pid, signal.SIGCONT)
out, err = p.communicate(timeout=120)
out = early + out
tl.check(p.returncode == 0, f"stopped frontend, printing ranks: exit {p.returncode}: {err[-1000:]}")
for rank in (0, 1):
    done = re.findall(rf"^\[local{rank}:{rank}\] done (\d+)$", out, re.M)
    tl.check(len(done) == 1, f"stopped frontend, printing ranks: rank {rank} did not finish: {out[-500:]!r}")
    got = sum(1 for l in out.splitlines() if l.startswith(f"[local{rank}:{rank}] R{rank} S"))
    tl.check(got == int(done[0]), f"stopped frontend, printing ranks: rank {rank} delivered {got} of {done[0]} lines")
no_survivors(job_of(err), "stopped frontend, printing ranks")
print("PASS 5b: tlaunch stopped for 7 s while its ranks printed 2 MB/s each: every line, exit 0")

# 6. A daemon stopped: noticed within the heartbeat timeout, named, nothing left.
p = tl.start(["--launcher", "local", "-N", "2", "-p", "1", "--heartbeat-timeout", "3", "--kill-timeout", "2", "--",
              tl.PYTHON, PAT, "sleep", "60"])
read_until(p, b"ready", 2, 60)
frozen = None
for pid in tl.processes_matching("--node-name"):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    if b"local1" in argv and os.path.basename(argv[0].decode()) == "tlaunchd":
        with open(f"/proc/{pid}/stat") as s:
            if int(s.read().split(")")[-1].split()[1]) == p.pid:
                frozen = pid
tl.check(frozen, "could not find local1's tlaunchd")
t0 = time.monotonic()
os.kill(frozen, signal.SIGSTOP)
try:
    out, err = p.communicate(timeout=60)
finally:
    try:
        os.kill(frozen, signal.SIGCONT)
    except OSError:
        pass
elapsed = time.monotonic() - t0
tl.check(p.returncode == 69, f"frozen daemon: exit {p.returncode}, want 69: {err[-800:]}")
tl.check("lost node local1" in err and "no heartbeat" in err, f"frozen daemon: local1 not named: {err[-800:]}")
# The heartbeat timeout (3 s), the next ping (1 s), teardown. A stopped daemon cannot answer
# SIGTERM: it is killed, not waited for (that wait made this 9.2 s).
tl.check(elapsed < 8, f"frozen daemon: the job took {elapsed:.1f} s to end")
no_survivors(job_of(err), "frozen daemon")
print(f"PASS 6: a stopped daemon ended the job in {elapsed:.1f} s naming local1")

# 7. A rank closes its stdout and keeps running.
r = tl.run(LOCAL2 + ["--", tl.PYTHON, PAT, "closeout", "2"])
tl.check(r.returncode == 0, f"closed stdout: exit {r.returncode}: {r.stderr[-800:]}")
tl.check(r.stderr.count("still here") == 2, f"closed stdout: the ranks did not go on: {r.stderr[-800:]}")
print("PASS 7: ranks that close stdout early go on")

# 8. --output-dir on a full file system.
mnt = tl.tempdir()
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt], capture_output=True).returncode != 0:
    print("SKIP 8: cannot mount a tmpfs here (not root?)")
else:
    try:
        r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "-q", "--output-dir", os.path.join(mnt, "o"), "--",
                    tl.PYTHON, PAT, "lines", "2000"])
    finally:
        subprocess.run(["umount", "-l", mnt])
    tl.check(r.returncode == 0, f"full disk: exit {r.returncode}: {r.stderr[-800:]}")
    warnings = [l for l in r.stderr.splitlines() if "cannot write" in l]
    tl.check(len(warnings) == 1 and "rank.0.out" in warnings[0] and "No space left" in warnings[0],
             f"full disk: want one warning naming rank.0.out: {warnings}")
    tl.check(r.stdout.count("[local0:0] R0 L") == 2000, "full disk: stdout lost lines")
    print("PASS 8: a full --output-dir gives one warning; stdout and the job go on")

# 8b. A --summary-json that cannot be written (a full disk) must not leave the last job's file:
#     a script would read the earlier success as this job's outcome.
mnt = tl.tempdir()
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt], capture_output=True).returncode != 0:
    print("SKIP 8b: cannot mount a tmpfs here (not root?)")
else:
    summary = os.path.join(mnt, "summary.json")
    try:
        first = tl.run(["--launcher", "local", "-p", "1", "-q", "--summary-json", summary, "--", "true"])
        with open(os.path.join(mnt, "filler"), "wb") as f:
            try:
                f.write(b"\0" * (128 << 10))
            except OSError:
                pass  # full: what the test wants
        second = tl.run(["--launcher", "local", "-p", "1", "-q", "--summary-json", summary, "--", "sh", "-c", "exit 3"])
        left = None
        if os.path.exists(summary):
            with open(summary) as f:
                left = json.load(f)
    finally:
        subprocess.run(["umount", "-l", mnt])
    tl.check(first.returncode == 0, f"the first summary: {first.stderr}")
    # Either this job's summary (the last one's removal, at the job's start, made room for it) or
    # none and the error said; never the last job's success.
    tl.check(second.returncode == 3 and ((left is None and "No space left" in second.stderr) or
                                         (left is not None and left["exit_status"] == 3)),
             f"an unwritable summary: exit {second.returncode}, the file left: {left}; {second.stderr}")
    print("PASS 8b: an unwritable --summary-json leaves no earlier job's summary behind")

# 9. --stdin under credit: the rank reads nothing for 3 s; meanwhile tlaunch may take only its
#    credit window of our 64 MB (plus pipe buffers), then every byte arrives.
TOTAL = 64 << 20
p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "1", "-q", "--stdin", "0", "--", "sh", "-c",
                      "sleep 3; wc -c"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     start_new_session=True)
written = [0]


def feed():
    block = b"z" * 65536
    try:
        while written[0] < TOTAL:
            p.stdin.write(block)
            written[0] += len(block)
        p.stdin.close()
    except BrokenPipeError:
        pass


feeder = threading.Thread(target=feed)
feeder.start()
time.sleep(2)
ahead = written[0]
feeder.join(timeout=120)
out, err = p.stdout.read(), p.stderr.read()
p.wait(timeout=120)
tl.check(p.returncode == 0 and out.decode().strip().endswith(str(TOTAL)), f"stdin: exit {p.returncode}, {out!r} {err[-500:]!r}")
tl.check(ahead <= 3 << 20, f"stdin: tlaunch took {ahead >> 10} KiB while the rank read nothing (credit is 1 MiB)")
print(f"PASS 9: --stdin took {ahead >> 10} KiB ahead of a rank that did not read, then all 64 MiB arrived")

# 9b. The rank closes its stdin at once and runs on for 3 s: tlaunch stops reading its own. It
#     read on and threw the bytes away as fast as they came (`yes |`: two cores busy, 3 s of CPU).
p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "1", "-q", "--stdin", "0", "--", "sh", "-c",
                      "head -c 5 >/dev/null; exec 0<&-; sleep 3; echo done"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
written = [0]
feeder = threading.Thread(target=feed)
feeder.start()
out, err = p.stdout.read(), p.stderr.read()
p.wait(timeout=120)
feeder.join(timeout=60)
tl.check(p.returncode == 0 and out.strip().endswith(b"done"), f"stdin closed by the rank: exit {p.returncode} {out!r} {err[-500:]!r}")
tl.check(written[0] <= 8 << 20, f"stdin closed by the rank: tlaunch still took {written[0] >> 20} MiB of input")
print(f"PASS 9b: the rank closed its stdin; tlaunch took {written[0] >> 10} KiB in all and stopped reading")

# 10. A node of many ranks: each fork and exec costs milliseconds (this ASan daemon: 600 ranks took
#     4-12 s on 2 cores), and the daemon's heartbeats went out only after the last one started: the
#     node was "lost" after 3 s. It starts them in slices with its event loop running between.
t0 = time.monotonic()
p = subprocess.run([tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "600", "-q", "--heartbeat-timeout", "3",
                    "--preflight-skip", "memlock", "--", "/bin/true"], capture_output=True, timeout=300)
took = time.monotonic() - t0
tl.check(p.returncode == 0, f"600 ranks on a node (3 s heartbeat timeout): exit {p.returncode} {p.stderr[-800:]!r}")
print(f"PASS 10: 600 ranks started and ended on one node in {took:.1f} s with a 3 s heartbeat timeout")

# 11. A storm of bare "\r" (a bar redrawn with nothing new, 5 MB of it): one record per "\r" took
#     57 s and ~1 GB in tlaunch here; a read's updates now travel as one record.
t0 = time.monotonic()
p = subprocess.run([tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "1", "-q", "--", tl.PYTHON, "-c",
                    "import os\nfor _ in range(1220): os.write(1, b'\\r' * 4096)\nos.write(1, b'done\\n')"],
                   capture_output=True, timeout=300)
took = time.monotonic() - t0
tl.check(p.returncode == 0 and p.stdout == b"[local0:0] done\n", f"CR storm: exit {p.returncode} {p.stdout[-300:]!r}")
tl.check(took < 30, f"CR storm: 5 MB of bare CR took {took:.1f} s")
print(f"PASS 11: 5 MB of bare CR into a pipe: one line, {took:.1f} s")

# 12. A paused reader (`| less` left unscrolled) holds the output, not the teardown: a rank that
#     fails while a node-mate's lines wait for credit ends the job at once. Its exit waited in its
#     daemon's queue behind those lines, and the other ranks ran on until someone read.
marker = os.path.join(tl.tempdir(), "rank2-got-sigterm")
p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "3", "-q", "--", "sh", "-c",
                      'case $RANK in 0) yes "$(printf %0100d 0)" | head -c 40000000;; 1) sleep 3; exit 5;; '
                      f'*) trap "touch {marker}; exit 0" TERM; sleep 120 & wait;; esac'],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
try:
    ended_unread = tl.wait_until(lambda: os.path.exists(marker), 30)
finally:
    out, err = p.communicate(timeout=120)
tl.check(ended_unread, "a failed rank did not end the job while the reader was paused")
tl.check(p.returncode == 5 and b"rank 1 on node local0 exited with status 5" in err,
         f"paused reader, failed rank: exit {p.returncode} {err[-800:]!r}")
print(f"PASS 12: a rank failing behind a paused reader ended the job at once ({len(out) >> 20} MiB read after)")

# 13. The job is over and its output waits for a reader who does not read (`| less` left
#     unscrolled): Ctrl-C or SIGTERM (a batch system's, before its SIGKILL) ends tlaunch with the
#     job's status and drops the rest. Both were held in silence for as long as nobody read, and
#     --summary-json was written only after the last byte.
summary = os.path.join(tl.tempdir(), "summary.json")
# 2 nodes x 2.5 MB: within the two links' credit windows (4 MiB each), so the ranks end.
unread, stdout_end = os.pipe()  # nobody reads it while tlaunch runs
p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "-N", "2", "-p", "1", "-q", "--summary-json", summary, "--",
                      "sh", "-c", 'yes "$(printf %0100d 0)" | head -c 2500000; exit 0'],
                     stdout=stdout_end, stderr=subprocess.PIPE)
os.close(stdout_end)
try:
    written = tl.wait_until(lambda: os.path.exists(summary), 60)  # the job's end, before its output's
    time.sleep(0.5)
    still_running = p.poll() is None
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    p.wait(timeout=30)
    took = time.monotonic() - t0
    err = p.stderr.read()
finally:
    if p.poll() is None:
        p.kill()
        p.wait()
    os.close(unread)
with open(summary) as f:
    outcome = json.load(f)
tl.check(written and still_running and p.returncode == 0 and outcome["exit_status"] == 0 and took < 5 and
         b"of output, still waiting for stdout's reader, are dropped" in err,
         f"Ctrl-C while the last output waits for a reader: exit {p.returncode} after {took:.1f} s, "
         f"summary written first {written}, waiting {still_running}: {err[-600:]!r}")
print(f"PASS 13: Ctrl-C while the last output waited for a reader ended tlaunch in {took:.1f} s, status 0")

# 14. A daemon signalled (scancel, a node shutting down) while its ranks' output waits for a
#     paused reader: its rank prints its last words at SIGTERM and exits 0; those lines, and the
#     rank's end, reach tlaunch once the reader reads (the daemon used to go at once, dropping
#     what waited for credit: up to 8 MiB, and "how its ranks ended ... is unknown").
p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "-N", "2", "-p", "1", "-q", "--", "sh", "-c",
                      f'if [ "$RANK" = 1 ]; then exec {tl.PYTHON} {PAT} final 60; '
                      f'else exec {tl.PYTHON} {PAT} sleep 60; fi'],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
with tl.ending(p):
    time.sleep(4)  # nobody reads: rank 1's lines fill the pipes, the credit window and its daemon's queue
    job = tl.job_of_rank(tl.processes_matching(f"{PAT}\0final")[0])
    tl.signal_daemon(job, "local1", signal.SIGTERM, p.pid)
    time.sleep(3)
    out, err = tl.communicate_or_fail(p, 90, "after its daemon was signalled behind a paused reader")
text = out.decode(errors="replace")
final = re.search(r"^\[local1:1\] FINAL after (\d+) lines$", text, re.M)
tl.check(final is not None and "is unknown" not in err.decode(errors="replace"),
         f"signalled daemon behind a paused reader: its rank's last words arrived ({final is not None}), exit "
         f"{p.returncode}: {err[-800:]!r}")
print(f"PASS 14: a daemon signalled behind a paused reader: its rank's last words arrived "
      f"(after {final.group(1)} lines), exit {p.returncode}")

