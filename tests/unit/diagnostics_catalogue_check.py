#!/usr/bin/env python3
"""The diagnostics catalogue against the code that uses it (bootstrap/diagnostics/catalogue.txt).

Fails, naming file:line, when a call names a topic the catalogue lacks, when a call's arguments
are not exactly the topic's {placeholders} (a missing one would reach a user as "{node}"), or
when a topic is used nowhere (dead text). A call whose topic is chosen at run time lists the
topics it may name in comments right above it ("// topics: a b c"); each is checked against the
call's arguments. Run by ctest as unit.diagnostics_catalogue."""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
CATALOGUE = ROOT / "bootstrap" / "diagnostics" / "catalogue.txt"
SOURCE_DIRS = ["launcher", "daemon", "bootstrap", "binding"]
CALL = re.compile(r"\bdiagnostic(?:Error)?\(\s*Errc::\w+\s*,\s*")


def topics():
    out, current = {}, None
    for line in CATALOGUE.read_text().splitlines():
        m = re.fullmatch(r"\[([^\]]+)\]", line.rstrip())
        if m:
            current = m.group(1)
            out[current] = set()
        elif current and not line.startswith("#"):
            out[current] |= set(re.findall(r"\{(\w+)\}", line))
    return out


def call_text(src, start):
    """The text of the call's argument list from `start` (just after "diagnostic(") to its ')'."""
    depth, i, in_str = 1, start, False
    while i < len(src) and depth:
        c = src[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        i += 1
    return src[start : i - 1]


def main():
    known = topics()
    used, problems = set(), []
    for d in SOURCE_DIRS:
        for path in sorted((ROOT / d).rglob("*.cc")) + sorted((ROOT / d).rglob("*.h")):
            src = path.read_text()
            for m in CALL.finditer(src):
                where = f"{path.relative_to(ROOT)}:{src.count(chr(10), 0, m.start()) + 1}"
                rest = call_text(src, m.end())
                topic = re.match(r'"([^"]+)"', rest)
                if topic:
                    names, args = [topic.group(1)], rest[topic.end() :]
                else:
                    names, args = listed_topics(src, m.start()), rest
                    if not names:
                        problems.append(f"{where}: a topic chosen at run time needs '// topics: ...' above the call")
                for name in names:
                    check_call(where, name, args, known, used, problems)
    for name in sorted(set(known) - used):
        problems.append(f"{CATALOGUE.relative_to(ROOT)}: topic [{name}] is used nowhere")
    for p in problems:
        print(p)
    print(f"{len(known)} topics, {len(used)} used, {len(problems)} problem(s)")
    return 1 if problems else 0


def listed_topics(src, call_start):
    """The topics named in the '// topics:' comment lines right above the call's line."""
    lines = src[:call_start].split("\n")[:-1]
    names = []
    while lines and lines[-1].strip().startswith("// topics:"):
        names = lines.pop().strip()[len("// topics:") :].split() + names
    return names


def check_call(where, name, args, known, used, problems):
    used.add(name)
    if name not in known:
        problems.append(f"{where}: no topic [{name}] in the catalogue")
        return
    given = set(re.findall(r'\{\s*"(\w+)"\s*,', args))
    missing, extra = known[name] - given, given - known[name]
    if missing:
        problems.append(f"{where}: [{name}] placeholders not filled: {sorted(missing)}")
    if extra:
        problems.append(f"{where}: [{name}] arguments the text does not use: {sorted(extra)}")


if __name__ == "__main__":
    sys.exit(main())
