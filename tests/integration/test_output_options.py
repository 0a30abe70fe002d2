"""--tag-output forms, --output-dir files per rank, --stdin=0 forwarding, stderr to stderr."""
import json
import os
import shlex
import re
import resource
import subprocess
import time

import tl

d = tl.tempdir()
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--output-dir", d, "--", "sh", "-c",
            'echo "out of $RANK"; echo "err of $RANK" >&2'])
tl.check(r.returncode == 0, f"job: {r.returncode} {r.stderr}")
tl.check(sorted(r.stdout.splitlines()) == ["[local0:0] out of 0", "[local1:1] out of 1"], f"full tags: {r.stdout!r}")
tl.check("[local1:1] err of 1" in r.stderr.splitlines(), f"stderr goes to stderr: {r.stderr!r}")
for rank in (0, 1):
    with open(os.path.join(d, f"rank.{rank}.out")) as f:
        tl.check(f.read() == f"out of {rank}\n", "per-rank stdout file, untagged")
    with open(os.path.join(d, f"rank.{rank}.err")) as f:
        tl.check(f.read() == f"err of {rank}\n", "per-rank stderr file")
# A file left by an earlier run with a wider mode is written 0600 like a new one.
os.chmod(os.path.join(d, "rank.0.out"), 0o644)
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--output-dir", d, "--", "echo", "token"])
modes = {n: oct(os.stat(os.path.join(d, n)).st_mode & 0o777) for n in os.listdir(d)}
tl.check(r.returncode == 0 and set(modes.values()) == {"0o600"}, f"--output-dir file modes: {modes}")
# Reused by a smaller job: the larger run's rank.1 files stay (they are the user's), and are said
# not to be this job's (nothing told them apart from the new run's).
reused = tl.tempdir()
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--output-dir", reused, "--", "echo", "larger"])
r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "--output-dir", reused, "--", "echo", "smaller"])
tl.check(r.returncode == 0 and "also holds rank.1 files of an earlier, larger run (this job has 1 rank)" in r.stderr
         and os.path.exists(os.path.join(reused, "rank.1.out")), f"a larger run's files: {r.stderr}")

# "--output-dir=~/logs" (and a quoted "~/..."): the shell leaves the "~"; tlaunch reads it as the
# home directory, as the shell would. It created a directory named "~" in the current one.
home = tl.tempdir()
r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "--preflight-skip", "memlock", "--output-dir=~/logs",
            "--summary-json", "~/outcome.json", "--", "echo", "home"], env=dict(os.environ, HOME=home), cwd=home)
tl.check(r.returncode == 0 and not os.path.exists(os.path.join(home, "~")), f"~ expanded: {r.returncode} {r.stderr}")
with open(os.path.join(home, "logs", "rank.0.out")) as f:
    tl.check(f.read() == "home\n", "--output-dir=~/logs is under $HOME")
tl.check(os.path.isfile(os.path.join(home, "outcome.json")), "--summary-json ~/outcome.json is under $HOME")
# The same for the ranks' --chdir=~/wd and --hostfile=~/hosts (a "~" that reached them was a directory and a
# file of that name in the current directory: "no such directory", "cannot read").
os.mkdir(os.path.join(home, "wd"))
with open(os.path.join(home, "hosts"), "w") as f:
    f.write("localhost slots=1\n")
r = tl.run(["--preflight-skip", "memlock", "--hostfile=~/hosts", "--chdir=~/wd", "-q", "--", "pwd"],
           env=dict(os.environ, HOME=home), cwd="/")
tl.check(r.returncode == 0 and r.stdout.strip().endswith(os.path.join(home, "wd")), f"~ in -D and --hostfile: {r.stderr}")

# --summary-json in the --output-dir this run creates: written there (it was refused, "runA is not
# a directory"), 0600 like the rank files (it holds the ranks' last stderr lines; it was 0644).
# One replaced keeps the mode its user gave it.
run_dir = os.path.join(tl.tempdir(), "runA")
r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "--preflight-skip", "memlock", "--output-dir", run_dir,
            "--summary-json", os.path.join(run_dir, "summary.json"), "--", "true"])
tl.check(r.returncode == 0 and os.path.isfile(os.path.join(run_dir, "summary.json")),
         f"--summary-json inside a new --output-dir: {r.returncode} {r.stderr}")
mode = os.stat(os.path.join(run_dir, "summary.json")).st_mode & 0o777
tl.check(mode == 0o600, f"a new summary's mode: {oct(mode)}")
private = os.path.join(run_dir, "private.json")
with open(private, "w") as f:
    f.write("{}")
os.chmod(private, 0o640)
r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "--preflight-skip", "memlock", "--summary-json", private,
            "--", "true"])
tl.check(r.returncode == 0 and os.stat(private).st_mode & 0o777 == 0o640,
         f"a 0640 summary replaced: mode {oct(os.stat(private).st_mode & 0o777)}: {r.stderr}")
# tlaunch killed (SIGKILL, the OOM killer) while its job runs: the last job's summary, exit status
# 0, stayed for a script to read as this job's. It says "not ended" from the job's start.
p = tl.start(["--launcher", "local", "-N", "1", "-p", "1", "--preflight-skip", "memlock", "--kill-timeout", "1",
              "--summary-json", private, "--", "sh", "-c", "echo started; sleep 30"])
with tl.ending(p):
    tl.check(b"started" in tl.read_until(p, b"started"), "the job did not start")
    os.kill(p.pid, 9)
    p.wait()
with open(private) as f:
    left = json.load(f)
tl.check(left["exit_status"] is None and "has not ended" in left["reason"] and left["job_id"].startswith("tl-"),
         f"summary left by a killed tlaunch: {left}")
tl.check(tl.wait_until(lambda: not tl.processes_with_env("TLAUNCH_JOB_ID", left["job_id"]), 15),
         "the killed tlaunch's ranks remain")

# Started with stdout closed (`>&-`): the job runs, and the user hears that its stdout went nowhere.
r = subprocess.run([tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "1", "--", "echo", "lost"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
                   preexec_fn=lambda: os.close(1))
tl.check(r.returncode == 0 and "stdout is closed: the ranks' stdout is discarded" in r.stderr,
         f"stdout closed: exit {r.returncode}, {r.stderr}")

# A job refused before its ranks start (a program missing on the nodes, found while they prepare)
# leaves the last run's files as they were: it emptied every one.
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "--output-dir", d, "--", "no-such-program-xyz"])
sizes = {n: os.path.getsize(os.path.join(d, n)) for n in os.listdir(d)}
tl.check(r.returncode == 127 and sizes["rank.0.out"] == len("token\n"),
         f"a job that never started emptied --output-dir: exit {r.returncode}, {sizes}")
# Two files per rank stay open in tlaunch: past its hard limit of open files, the message says
# that limit and what to do (it said to check the disk's space, and exit 64).
# Refused halfway through opening them, it leaves the last run's files whole too.
r = subprocess.run([tl.TLAUNCH, "--launcher", "local", "-N", "1", "-p", "40", "--output-dir", d, "--",
                    "true"], capture_output=True, text=True, timeout=120,
                   preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
tl.check(r.returncode == 78 and "beyond its limit of 64" in r.stderr and "ulimit -Hn" in r.stderr,
         f"--output-dir past the open-files limit: exit {r.returncode}, {r.stderr}")
tl.check(os.path.getsize(os.path.join(d, "rank.0.out")) == len("token\n"),
         "a job refused while opening its files emptied the ones it had opened")

r = tl.run(["-p", "2", "--tag-output=rank", "--", "sh", "-c", 'echo "x$RANK"'])
tl.check(sorted(r.stdout.splitlines()) == ["[0] x0", "[1] x1"], f"rank tags: {r.stdout!r}")
r = tl.run(["-p", "1", "--tag-output=none", "--", "echo", "plain"])
tl.check(r.stdout == "plain\n", f"no tags: {r.stdout!r}")

# stdin: not connected by default (the rank reads EOF), forwarded to rank 0 with --stdin=0.
r = tl.run(["-p", "2", "--tag-output=rank", "--", "sh", "-c", 'echo "$RANK:$(wc -c)"'], input="hello\n")
tl.check(sorted(r.stdout.splitlines()) == ["[0] 0:0", "[1] 1:0"], f"stdin default: {r.stdout!r}")
r = tl.run(["-p", "2", "--stdin=0", "--tag-output=rank", "--", "sh", "-c", 'echo "$RANK:$(wc -c)"'],
           input="hello world\n" * 10000)
tl.check(sorted(r.stdout.splitlines()) == ["[0] 0:120000", "[1] 1:0"], f"--stdin=0: {r.stdout!r}")
# Once the rank closes its stdin, or ends, tlaunch reads no more of its own: what comes after is
# left for the next reader (`{ tlaunch ...; cat; }`), not read and dropped.
# Rank 1 keeps the job going meanwhile.
for closes in ("os.close(0); time.sleep(2)", "sys.exit(0)"):
    script = ("import os, sys, time\n"
              "if os.environ['RANK'] != '0': time.sleep(2); sys.exit(0)\n"
              f"print(repr(sys.stdin.readline()), flush=True); {closes}")
    line = (f"(echo a; sleep 1; echo b; sleep 1; echo c) | {{ {shlex.quote(tl.TLAUNCH)} --launcher local -N 2 -p 1 "
            f"-q --tag-output none --stdin 0 -- {tl.PYTHON} -c {shlex.quote(script)}; cat; }}")
    r = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=60)
    tl.check(r.stdout.splitlines() == ["'a\\n'", "b", "c"],
             f"--stdin, then the rank's {closes!r}: the rest stays for the next reader: {r.stdout!r} {r.stderr!r}")
# stdin that cannot be read (`< somedir`): said, and the rank gets end of file.
dir_fd = os.open(tl.tempdir(), os.O_RDONLY | os.O_DIRECTORY)
r = tl.run(["-p", "1", "--stdin=0", "--tag-output=none", "--", "wc", "-c"], stdin=dir_fd)
os.close(dir_fd)
tl.check(r.returncode == 0 and r.stdout.strip() == "0" and "cannot read tlaunch's stdin (Is a directory): rank 0 gets end of file"
         in r.stderr, f"--stdin from a directory: {r.returncode} {r.stdout!r} {r.stderr!r}")

# -v: how long the nodes took for each launch phase, the slowest named (3 nodes here).
r = tl.run(["--launcher", "local", "-N", "3", "-p", "1", "-v", "--", "true"])
for phase in ("daemons reported", "nodes prepared", "ranks started"):
    line = next((l for l in r.stderr.splitlines() if "tlaunch: " + phase in l), "")
    tl.check(r.returncode == 0 and re.search(r": 3 nodes in \d+ ms \(median \d+ ms; slowest: local\d \d+, ", line),
             f"-v {phase}: {line!r} in {r.stderr!r}")
r = tl.run(["--launcher", "local", "-N", "3", "-p", "1", "--", "true"])
tl.check("daemons reported" not in r.stderr, f"phase timings only with -v: {r.stderr!r}")


# --output-dir in a place others can write: what they put there first is refused, naming it,
# at once (no rank starts, no hang), and nothing is written through it.
def refused(outdir, expect, what):
    r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "--output-dir", outdir, "--", "echo", "secret"], timeout=60)
    tl.check(r.returncode != 0 and expect in r.stderr and "secret" not in r.stdout,
             f"--output-dir with {what}: exit {r.returncode}, expected {expect!r} in {r.stderr!r}")


base = tl.tempdir()
real = os.path.join(base, "real")
os.mkdir(real, 0o700)
os.symlink(real, os.path.join(base, "link"))
refused(os.path.join(base, "link"), "a symbolic link or not a directory", "a symlink as the directory")
refused(os.path.join(base, "link") + "//", "a symbolic link or not a directory", "a symlink as the directory, 'link//'")
tl.check(os.listdir(real) == [], f"output was written through the symlink: {os.listdir(real)}")
# A directory that cannot be made is said before any node starts (no banner), with what to do.
r = tl.run(["--launcher", "local", "-N", "1", "-p", "1", "--output-dir", os.path.join(base, "no", "such"), "--", "true"])
tl.check(r.returncode == 64 and "cannot create --output-dir" in r.stderr and "->" in r.stderr
         and "node(s) x" not in r.stderr, f"--output-dir in a missing parent: {r.returncode} {r.stderr!r}")
planted = os.path.join(base, "planted")
os.mkdir(planted, 0o700)
os.mkfifo(os.path.join(planted, "rank.0.out"))
refused(planted, f"{planted}/rank.0.out exists and is a FIFO or socket", "a FIFO planted as rank.0.out")
os.unlink(os.path.join(planted, "rank.0.out"))
os.symlink(os.path.join(base, "stolen"), os.path.join(planted, "rank.0.out"))
refused(planted, f"{planted}/rank.0.out exists and is a symbolic link", "a symlink planted as rank.0.out")
tl.check(not os.path.exists(os.path.join(base, "stolen")), "output was written through a planted symlink")
if os.geteuid() == 0:  # another owner needs chown
    os.unlink(os.path.join(planted, "rank.0.out"))
    with open(os.path.join(planted, "rank.0.out"), "w") as f:
        f.write("theirs\n")
    os.chmod(os.path.join(planted, "rank.0.out"), 0o666)
    os.chown(os.path.join(planted, "rank.0.out"), 65534, 65534)
    refused(planted, "exists and is another user's (uid 65534)", "another user's rank.0.out")
    with open(os.path.join(planted, "rank.0.out")) as f:
        tl.check(f.read() == "theirs\n", "another user's rank.0.out was emptied or written to")
    foreign = os.path.join(base, "foreign")
    os.mkdir(foreign, 0o777)
    os.chown(foreign, 65534, 65534)
    refused(foreign, "belongs to another user (uid 65534)", "another user's directory")

# tlaunch started with its standard descriptors closed (`<&-`, `>&-`, a daemon manager): its own
# eventfd or epoll descriptor once took their numbers, so --stdin forwarded eventfd counters to
# the rank and output went into an epoll descriptor. Now they are /dev/null: the rank reads no
# bytes, and its stderr still arrives.
def closed(fds):
    return lambda: [os.close(fd) for fd in fds]


r = subprocess.run([tl.TLAUNCH, "--launcher", "local", "-q", "--tag-output", "none", "--stdin", "0", "--", "sh", "-c",
                    "wc -c >&2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                   preexec_fn=closed([0]))
tl.check(r.returncode == 0 and r.stderr.strip() == "0", f"stdin closed: the rank read {r.stderr!r} (exit {r.returncode})")
r = subprocess.run([tl.TLAUNCH, "--launcher", "local", "-q", "--tag-output", "none", "--", "sh", "-c",
                    "echo out; echo err >&2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                   preexec_fn=closed([0, 1]))
tl.check(r.returncode == 0 and r.stderr.strip() == "err", f"stdin and stdout closed: exit {r.returncode}, {r.stderr!r}")

# tlaunch's stdout cannot be written (a full disk: /dev/full; a reader that left: `| head -1`):
# said once on stderr, the job goes on to its own end and status, stderr keeps coming.
BROKEN = "cannot write to stdout"
with open("/dev/full", "w") as full:
    r = subprocess.run([tl.TLAUNCH, "--launcher", "local", "-N", "2", "-q", "--", "sh", "-c",
                        "seq 1000; echo done >&2"], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
tl.check(r.returncode == 0 and r.stderr.count(BROKEN) == 1 and "No space left on device" in r.stderr
         and r.stderr.count("] done") == 2, f"stdout on /dev/full: exit {r.returncode}, {r.stderr!r}")
marker = os.path.join(tl.tempdir(), "ran-to-the-end")
p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "-q", "--", "sh", "-c",
                      f"echo first; sleep 1; seq 100000; sleep 1; touch {marker}"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
tl.check(p.stdout.readline().endswith("first\n"), "the first line")
p.stdout.close()  # as `| head -1` does
_, err = p.communicate(timeout=60)
tl.check(p.returncode == 0 and err.count(BROKEN) == 1 and "Broken pipe" in err and os.path.exists(marker),
         f"reader gone: exit {p.returncode}, rank finished: {os.path.exists(marker)}, {err!r}")

# Past `ulimit -f` an --output-dir file fails with EFBIG, as on a full disk; SIGXFSZ killed
# tlaunch (exit 153) and cut every rank's file short.
odir = os.path.join(tl.tempdir(), "out")
r = subprocess.run([tl.TLAUNCH, "--launcher", "local", "-p", "2", "-q", "--output-dir", odir, "--", "sh", "-c",
                    "seq 20000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                   preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (51200, 51200)))
tl.check(r.returncode == 0 and r.stderr.count("File too large") == 2 and r.stdout.count("\n") == 2 * 20000,
         f"ulimit -f: exit {r.returncode}, {r.stdout.count(chr(10))} lines, {r.stderr!r}")

# --pty: a C program's stdout is a terminal, so glibc writes each printf line at once, and the
# lines before an abort() arrive; in the default pipe glibc held them in its 4 KiB buffer and
# they died with it. --output-dir gets the bytes as written ("\n", not a terminal's "\r\n").
cdir = tl.tempdir()
prog = os.path.join(cdir, "printf_then_abort")
subprocess.run(["cc", "-x", "c", "-o", prog, "-"], check=True, text=True, input=
               '#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n'
               'int main(void) { printf("tty=%d\\n", isatty(1)); printf("last words\\n"); abort(); }\n')
for flags, expect_lines in (([], []), (["--pty"], ["[local0:0] tty=1", "[local0:0] last words"])):
    odir = os.path.join(cdir, "pty" if flags else "pipe")
    r = tl.run(["--launcher", "local", "-p", "1", "-q", "--output-dir", odir] + flags + ["--", prog])
    tl.check(r.returncode == 134 and r.stdout.splitlines() == expect_lines,
             f"{flags or 'a pipe'}: exit {r.returncode}, {r.stdout!r} {r.stderr!r}")
    with open(os.path.join(odir, "rank.0.out"), "rb") as f:
        tl.check(f.read() == b"".join(line.split("] ", 1)[1].encode() + b"\n" for line in expect_lines),
                 f"{flags or 'a pipe'}: --output-dir file")

# --pty's window size: a terminal's usual 80x24 into a pipe (it was 0x0: bars and tables drew
# nothing or one column); on tlaunch's terminal, its size less the tag, so what a rank draws fits.
size_prog = ["/usr/bin/python3", "-c", "import os; s = os.get_terminal_size(1); print(s.columns, s.lines)"]
r = tl.run(["--launcher", "local", "-p", "1", "-q", "--pty", "--"] + size_prog)
tl.check(r.returncode == 0 and r.stdout == "[local0:0] 80 24\n", f"--pty into a pipe: {r.stdout!r} {r.stderr!r}")
import fcntl, pty, struct, termios
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
p = subprocess.Popen([tl.TLAUNCH, "--launcher", "local", "-p", "1", "-q", "--pty", "--"] + size_prog,
                     stdout=slave, stderr=subprocess.PIPE, env=dict(os.environ, TERM="xterm"))
os.close(slave)
seen = b""
while True:
    try:
        chunk = os.read(master, 4096)
    except OSError:  # EIO: every writer of the terminal has closed it
        break
    if not chunk:
        break
    seen += chunk
p.wait(timeout=60)
os.close(master)
tl.check(p.returncode == 0 and b"[local0:0] " + str(120 - len("[local0:0] ")).encode() + b" 40" in seen,
         f"--pty on a 120x40 terminal: exit {p.returncode}, {seen!r}")

# Debugging with --stdin 0 at a terminal: pdb's prompts, the typed commands the terminal echoes and
# the answers read as under mpirun. The rank's stream has no newline after a prompt, so its line
# was drawn as "(Pdb) (Pdb) (Pdb) 3".
def screen_of(data):
    """The lines a terminal shows for `data` (\r, \n and erase-to-end-of-line only)."""
    lines, col, i, text = [""], 0, 0, data.decode(errors="replace")
    while i < len(text):
        if text.startswith("\x1b[K", i):
            lines[-1] = lines[-1][:col]
            i += 3
            continue
        c = text[i]
        if c == "\r":
            col = 0
        elif c == "\n":
            lines.append("")
            col = 0
        else:
            lines[-1] = lines[-1][:col] + c + lines[-1][col + 1:]
            col += 1
        i += 1
    return [line for line in lines if line]


import select
pid, fd = pty.fork()
if pid == 0:
    os.environ["TERM"] = "xterm"
    os.execv(tl.TLAUNCH, [tl.TLAUNCH, "--launcher", "local", "-p", "1", "-q", "--preflight-skip", "memlock",
                          "--stdin", "0", "--", "/usr/bin/python3", "-c", "a = 5\nbreakpoint()\nprint('after', a)"])
shown = b""
def read_for(seconds, until=None):
    global shown
    end = time.time() + seconds
    while time.time() < end and not (until and until in shown):
        if select.select([fd], [], [], 0.05)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            shown += chunk
read_for(60, b"(Pdb) ")
for command in (b"x = 1\n", b"p x+a\n"):
    prompts = shown.count(b"(Pdb) ")
    os.write(fd, command)
    end = time.time() + 30
    while shown.count(b"(Pdb) ") <= prompts and time.time() < end:  # the prompt after the command
        read_for(0.1)
os.write(fd, b"c\n")
read_for(60)  # to the end: the terminal's last writer has gone
_, status = os.waitpid(pid, 0)
os.close(fd)
lines = screen_of(shown)
tl.check(os.waitstatus_to_exitcode(status) == 0 and lines[-5:] == [
    "[local0:0] (Pdb) x = 1", "[local0:0] (Pdb) p x+a", "[local0:0] 6", "[local0:0] (Pdb) c", "[local0:0] after 5"],
    f"pdb at a terminal: {lines} {shown!r}")
print("PASS")
