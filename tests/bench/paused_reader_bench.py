#!/usr/bin/python3
"""A reader that stops for a while: 8 local ranks (4 nodes x 2) each write N lines as fast as they
can into tlaunch, whose stdout is a pipe nobody reads for PAUSE seconds (a pager left
unscrolled, Ctrl-S). Prints how many lines arrived, how long the job took, and how much memory
tlaunch and its daemons held at most: the job must complete with every line, and the memory stay
bounded by the credit windows and daemon queues, not by the output.

  /usr/bin/python3 tests/bench/paused_reader_bench.py --tlaunch build-rel/bin/tlaunch [--pause 60] [--lines 200000]
"""
import argparse
import os
import subprocess
import threading
import time

WRITER = ("import os,sys\nr=os.environ['RANK']\nn=int(sys.argv[1])\nw=sys.stdout.write\n"
          "for i in range(n): w(f'R{r} L{i} ' + 'y'*100 + '\\n')\n")


def peak_rss_kb(pids, stop, out):
    while not stop.is_set():
        total = 0
        for pid in list(pids):
            for child in [pid] + children(pid):
                try:
                    with open(f"/proc/{child}/status") as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                total += int(line.split()[1])
                except OSError:
                    pass
        out[0] = max(out[0], total)
        time.sleep(0.2)


def children(pid):
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        kids.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    # tlaunchd only: the ranks' own memory is not the launcher's
    return [k for k in kids if open(f"/proc/{k}/comm").read().strip() == "tlaunchd"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tlaunch", default="build-rel/bin/tlaunch")
    ap.add_argument("--pause", type=float, default=60)
    ap.add_argument("--lines", type=int, default=200_000)
    a = ap.parse_args()
    t0 = time.monotonic()
    p = subprocess.Popen([a.tlaunch, "--launcher", "local", "-N", "4", "-p", "2", "-q", "--",
                          "/usr/bin/python3", "-c", WRITER, str(a.lines)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    stop, peak = threading.Event(), [0]
    mon = threading.Thread(target=peak_rss_kb, args=([p.pid], stop, peak))
    mon.start()
    time.sleep(a.pause)
    resumed = time.monotonic()
    out, err = p.communicate()
    done = time.monotonic()
    stop.set()
    mon.join()
    n = out.count(b"\n")
    want = 8 * a.lines
    print(f"paused reader: stdout stopped {a.pause:.0f} s; exit {p.returncode}; {n} of {want} lines "
          f"({'all' if n == want else 'LOST ' + str(want - n)}); {out and len(out) / 1e6:.0f} MB; "
          f"job {done - t0:.1f} s (the last {done - resumed:.1f} s after the reader resumed); "
          f"peak RSS of tlaunch + daemons {peak[0] / 1024:.0f} MiB")
    if p.returncode != 0:
        print(err.decode(errors="replace")[-2000:])


if __name__ == "__main__":
    main()
