"""contrib/completions/tlaunch.bash: it knows every option `tlaunch --help` lists (so it cannot
fall behind the CLI), and completing in a real bash gives what a user expects."""
import re
import subprocess
from pathlib import Path

import tl

SCRIPT = Path(__file__).resolve().parents[2] / "contrib" / "completions" / "tlaunch.bash"


# An option line of CLI11's help: "  -N,--nodes N ...", "  --nproc-per-node,--nproc_per_node N|gpu ...",
# "  --keep-going                a failed ...". A value's name follows the names after one space and
# starts with a capital (N, TEXT, FILE, RANK|none); the description follows the padding.
OPTION_LINE = re.compile(r"^\s+((?:-\w,)?--[a-z][a-z_-]*(?:,--[a-z][a-z_-]*)*)(?: (?!Excludes:|Needs:)([A-Z]\S*))?", re.M)


def help_lines(args):
    """[(long names, whether it takes a value)] of `tlaunch ARGS --help`."""
    out = tl.run(args).stdout
    return [([n for n in m.group(1).split(",") if n.startswith("--")], m.group(2) is not None)
            for m in OPTION_LINE.finditer(out)]


def help_options(args):
    return {n for names, _ in help_lines(args) for n in names}


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


# Every spelling of an option that takes a value is known to _tlaunch_values, or the word after it
# would be taken for the program and completion would stop offering options.
valued = sorted({n for args in (["--help"], ["preflight", "--help"]) for names, v in help_lines(args) if v for n in names})
tl.check("--max-restarts" in valued and "--master_port" in valued, f"the help's valued options were not read: {valued}")
probe = subprocess.run(["bash", "--norc", "--noprofile", "-c",
                        f"source {SCRIPT}\nfor o in {' '.join(valued)}; do _tlaunch_values $o '' || echo $o; done"],
                       capture_output=True, text=True, timeout=30)
unknown = probe.stdout.split()
tl.check(probe.returncode == 0 and not unknown, f"options whose values the completion does not know: {unknown} {probe.stderr}")


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
    ("tlaunch --max-restarts 2 --dry", {"--dry-run"}, set()),
    ("tlaunch --mca btl tcp --dry", {"--dry-run"}, set()),  # --mca takes KEY and VALUE
    ("tlaunch --master_port 29500 --dry", {"--dry-run"}, set()),
    ("tlaunch --nproc_per_node ", {"gpu", "auto", "cpu"}, {"--dry-run"}),
    ("tlaunch --launcher ", {"auto"}, set()),
]
for line, want, unwanted in cases:
    got = complete(line)
    tl.check(want <= got and not (unwanted & got), f"completing {line!r}: got {sorted(got)[:12]}, want {sorted(want)}")
print("PASS")
