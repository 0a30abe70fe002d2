# Marker files that the ranks of a test program leave in a directory they all see (one host, or
# the virtual cluster's shared file system), so that one rank can wait for the others' state
# instead of for a fixed time that a loaded machine overruns.
import os
import time


def leave(directory, name):
    open(os.path.join(directory, name), "w").close()


def wait_until(done, timeout=60):
    """Polls done() until it holds or timeout seconds pass; returns its last value."""
    until = time.monotonic() + timeout
    while not done() and time.monotonic() < until:
        time.sleep(0.01)
    return done()


def wait_for_count(directory, count, timeout=60):
    """Until at least `count` markers are in directory (every rank's, when count is the world)."""
    return wait_until(lambda: len(os.listdir(directory)) >= count, timeout)
