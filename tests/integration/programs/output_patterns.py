"""Output a user's program makes every day, for the lifeline tests:
  lines N        N numbered lines of 200 bytes, then sleep 1 s
  longline N [T] one line of N bytes (T repeated, default 'x'), then 'after'
  progress N S   a tqdm-like bar on stderr: N updates over S seconds, then the final line
  sleep S        print 'ready', sleep S seconds (less at SIGUSR1, which tlaunch forwards), print 'done'
  stream S       print 'ready', then ~2 MB/s of numbered lines for S seconds, then 'done N' (N lines)
  closeout S     close stdout, keep running S seconds, exit 0
  final S        as stream, and at SIGTERM 'FINAL after N lines', exit 0 (a checkpoint's last words)
"""
import os
import signal
import sys
import time

mode = sys.argv[1]
rank = os.environ.get("RANK", "?")
if mode == "lines":
    for i in range(int(sys.argv[2])):
        sys.stdout.write(f"R{rank} L{i} " + "y" * 200 + "\n")
    sys.stdout.flush()
    time.sleep(1)
elif mode == "longline":
    text = sys.argv[3] if len(sys.argv) > 3 else "x"
    sys.stdout.buffer.write(text.encode() * (int(sys.argv[2]) // len(text.encode())) + b"\n")
    sys.stdout.flush()
    sys.stdout.write("after\n")
elif mode == "progress":
    n, secs = int(sys.argv[2]), float(sys.argv[3])
    for i in range(n + 1):
        sys.stderr.write(f"\rR{rank} {100 * i // n:3d}%|" + "#" * (20 * i // n))
        sys.stderr.flush()
        time.sleep(secs / n)
    sys.stderr.write(f"\rR{rank} 100%|" + "#" * 20 + " done\n")
elif mode == "sleep":
    class Released(Exception):
        pass

    def release(signum, frame):
        raise Released()
    signal.signal(signal.SIGUSR1, release)
    print("ready", flush=True)
    try:
        time.sleep(float(sys.argv[2]))
    except Released:
        pass
    print("done", flush=True)
elif mode in ("stream", "final"):
    count = 0
    if mode == "final":
        def last_words(signum, frame):  # os.write: the handler may interrupt a buffered write
            os.write(1, f"\nFINAL after {count} lines\n".encode())
            os._exit(0)
        signal.signal(signal.SIGTERM, last_words)
    print("ready", flush=True)
    end = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:
        sys.stdout.write("".join(f"R{rank} S{count + i} " + "z" * 90 + "\n" for i in range(1000)))
        sys.stdout.flush()
        count += 1000
        time.sleep(0.05)
    print(f"done {count}", flush=True)
elif mode == "closeout":
    sys.stdout.close()
    os.close(1)
    time.sleep(float(sys.argv[2]))
    sys.stderr.write("still here\n")
else:
    sys.exit(f"unknown mode {mode}")
