"""tlaunch and tlaunchd never load a library from the directory they are started in. To the
dynamic loader an empty or relative DT_RUNPATH entry means the current directory; CMake's
build-tree RPATH once ended tlaunchd's with ':', so a job started in a directory holding a file
named like one of its libraries (a shared /tmp, a colleague's checkout) loaded that file into
every tlaunchd. Here a job runs from a directory where every library either program needs has a
decoy that cannot load: it must run as usual. Also checks the programs' RUNPATH entries."""
import os
import subprocess

import tl

bindir = os.path.dirname(os.path.abspath(tl.TLAUNCH))
programs = [os.path.join(bindir, p) for p in ("tlaunch", "tlaunchd")]


def dynamic_entries(path, tag):
    """The values of one dynamic-section tag (NEEDED, RUNPATH, RPATH), as readelf prints them."""
    r = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, timeout=60)
    tl.check(r.returncode == 0, f"readelf -d {path}: {r.stderr}")
    out = []
    for line in r.stdout.splitlines():
        if f"({tag})" in line and "[" in line:
            out.append(line[line.index("[") + 1:line.rindex("]")])
    return out


needed = set()
for prog in programs:
    tl.check(os.access(prog, os.X_OK), f"{prog} is not built")
    for tag in ("RUNPATH", "RPATH"):
        for value in dynamic_entries(prog, tag):
            for entry in value.split(":"):
                tl.check(entry.startswith("/") or entry.startswith("$ORIGIN"),
                         f"{os.path.basename(prog)}: {tag} {value!r} has the entry {entry!r}, which the loader "
                         "resolves against the current directory")
    needed.update(dynamic_entries(prog, "NEEDED"))
tl.check("libc.so.6" in needed and any(n.startswith("libpmix") for n in needed),
         f"readelf found too few libraries to test with: {sorted(needed)}")

decoys = tl.tempdir()
os.chmod(decoys, 0o755)
for name in needed:
    with open(os.path.join(decoys, name), "w") as f:
        f.write("not a library: loading this file means the current directory is searched\n")
r = tl.run(["--launcher", "local", "-N", "2", "-p", "1", "-q", "--", "/bin/echo", "ran"], cwd=decoys, timeout=120)
tl.check(r.returncode == 0 and r.stdout.count("ran") == 2,
         f"a job started in a directory of decoy libraries failed (exit {r.returncode}): {r.stderr[-800:]}")
print(f"PASS: no RUNPATH entry relative to the current directory; a job started among decoys of "
      f"{len(needed)} libraries ran")
