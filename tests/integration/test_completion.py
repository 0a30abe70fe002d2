"""contrib/completions/tlaunch.bash: it knows every option `tlaunch --help` lists (so it cannot
fall behind the CLI), and completing in a real bash gives what a user expects."""
import re
import subprocess
from pathlib import Path

import tl

SCRIPT = Path(__file__).resolve().parents[2] / "contrib" / "completions" / "tlaunch.bash"


def help_options(args):
    out = tl.run(args).stdout
    return {m.group(1) for m in re.finditer(r"^\s+(?:-\w,)?(--[a-z][a-z-]*)", out, re.M)}


def script_words(var):
    text = SCRIPT.read_text()
    m = re.search(var + r'="([^"]*)"', text)
    tl.check(m is not None, f"{var} not found in {SCRIPT}")
    return set(m.group(1).split())


missing = help_options(["--help"]) - script_words("_tlaunch_options")
tl.check(not missing, f"options in `tlaunch --help` that the completion does not offer: {sorted(missing)}")
missing = help_options(["preflight", "--help"]) - script_words("_tlaunch_preflight_options")
tl.check(not missing, f"`tlaunch preflight` options the completion does not offer: {sorted(missing)}")
missing = help_options(["nccl-report", "--help"]) - script_words("_tlaunch_nccl_report_options")
tl.check(not missing, f"`tlaunch nccl-report` options the completion does not offer: {sorted(missing)}")
missing = help_options(["topo", "--help"]) - script_words("_tlaunch_topo_options")
tl.check(not missing, f"`tlaunch topo` options the completion does not offer: {sorted(missing)}")


def complete(line):
    """COMPREPLY for the command line `line` (the cursor at its end), from a real bash."""
    words = line.split(" ")
    program = (f"source {SCRIPT}\n"
               f"COMP_WORDS=({' '.join(repr(w) for w in words)})\n"
               f"COMP_CWORD={len(words) - 1}\n"
               "_tlaunch\n"
               'printf "%s\\n" "${COMPREPLY[@]}"\n')
    r = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True, timeout=30)
    tl.check(r.returncode == 0, f"bash: {r.stderr}")
    return set(r.stdout.split())


cases = [
    ("tlaunch --pre", {"--preflight", "--preflight-skip", "--preflight-strict"}, {"--pmix"}),
    ("tlaunch --launcher ", {"local", "ssh", "slurm"}, {"--bind"}),
    ("tlaunch -p 2 --preflight f", {"full"}, {"off"}),
    ("tlaunch --preflight-skip mem", {"memlock"}, set()),
    ("tlaunch pre", {"preflight"}, {"topo"}),
    ("tlaunch preflight --le", {"--level"}, set()),
    ("tlaunch preflight --level ", {"quick", "full"}, {"off"}),
    ("tlaunch topo --", {"--topology-xml", "--help"}, {"--hosts"}),
    ("tlaunch ncc", {"nccl-report"}, set()),
    ("tlaunch nccl-report --", {"--json", "--help"}, {"--hosts"}),
    ("tlaunch -p 2 -- ech", {"echo"}, {"--preflight"}),
    ("tlaunch -p 2 ech", {"echo"}, set()),
    ("tlaunch -p 2 echo --pre", set(), {"--preflight"}),  # the program's own arguments are not ours
]
for line, want, unwanted in cases:
    got = complete(line)
    tl.check(want <= got and not (unwanted & got), f"completing {line!r}: got {sorted(got)[:12]}, want {sorted(want)}")
print("PASS")
