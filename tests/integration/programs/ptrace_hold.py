"""Holds a process as a debugger does (gdb -p): PTRACE_SEIZE, then nothing until killed.
Prints "traced" once it holds it, or "cannot trace ERRNO"."""
import ctypes
import sys
import time

PTRACE_SEIZE = 0x4206
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(PTRACE_SEIZE, int(sys.argv[1]), None, None) != 0:
    print("cannot trace", ctypes.get_errno(), flush=True)
    sys.exit(1)
print("traced", flush=True)
time.sleep(600)
