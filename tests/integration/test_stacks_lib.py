"""Reading `tlaunch stacks` reports in tests."""
import os
import re
import select
import signal
import time

import tl


def classes(report):
    """{rank label: text of the class} from a stacks report ("ranks 0, 2-3" -> its stacks)."""
    out, label = {}, None
    for line in report.splitlines():
        if line.startswith("tlaunch: "):  # the report on tlaunch's stderr (Ctrl-\, --hang-timeout)
            line = line[len("tlaunch: "):]
        m = re.match(r"(ranks? [0-9, -]+):(.*)$", line)
        if m:
            label = m.group(1)
            out[label] = m.group(2)
        elif label and line.startswith("    "):
            out[label] += "\n" + line
    return out


def wait_ready(p, n, timeout=60):
    """stdout until n ranks said ready (raw reads with a deadline: never hangs)."""
    deadline = time.monotonic() + timeout
    buf = b""
    while buf.count(b"ready") < n:
        left = deadline - time.monotonic()
        if left <= 0:
            os.killpg(p.pid, signal.SIGKILL)
            tl.fail(f"only {buf.count(b'ready')} of {n} ranks said ready in {timeout} s; stdout so far: {buf!r}")
        r, _, _ = select.select([p.stdout], [], [], left)
        if r:
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                tl.fail(f"job ended early: {p.stderr.read()}")
            buf += chunk
    return buf.decode(errors="replace")
