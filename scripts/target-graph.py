#!/usr/bin/env python3
"""The package's targets as a graph, and the house rules that keep its layers apart.

Prints each Sources/ target with its lines and the targets of this package it depends on, then
fails (exit 1, one line per breach) on:
  - a target over 6,000 lines (the next capability must fit beside it);
  - Reconciliation importing anything but Foundation (the rules do no I/O);
  - a `package` declaration without a `///` line just above it (what a target shows another is
    documented where it is declared);
  - a function over 80 lines in the transport (TransportCore, StoreIO/Transport) or the plan
    (NightDecide/Plan);
  - a target of Package.swift that ARCHITECTURE.md does not name.
Run by .ci/run; `make graph` prints it alone.
"""
import json, os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_TARGET_LINES = 6000
MAX_FUNCTION_LINES = 80
FUNCTION_DIRS = ["Sources/TransportCore", "Sources/StoreIO/Transport", "Sources/NightDecide/Plan"]
# Functions the rule above still finds too long, each with the work that shortens it. Printed on
# every run; a function not listed here fails.
OWED = {
}


def swift_files(directory):
    for base, _, names in os.walk(os.path.join(ROOT, directory)):
        for name in sorted(names):
            if name.endswith(".swift"):
                yield os.path.join(base, name)


def lines_of(directory):
    return sum(sum(1 for _ in open(f, encoding="utf-8")) for f in swift_files(directory))


def dumped_targets():
    dump = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, capture_output=True, text=True)
    if dump.returncode != 0:
        sys.exit("target-graph: swift package dump-package failed: " + dump.stderr.strip()[:300])
    return json.loads(dump.stdout)["targets"]


def package_targets(targets):
    names = {t["name"] for t in targets}
    graph = {}
    for t in targets:
        if t["type"] not in ("regular", "executable"):
            continue
        path = t.get("path") or os.path.join("Sources", t["name"])
        if not path.startswith("Sources/"):
            continue
        deps = []
        for d in t.get("dependencies", []):
            name = (d.get("byName") or d.get("target") or [None])[0]
            if name in names:
                deps.append(name)
        graph[t["name"]] = (path, deps)
    return graph


def strip_strings(line):
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', line)


def long_functions(path):
    """(name, first line, length) of each func whose body is over the limit."""
    text = open(path, encoding="utf-8").read().split("\n")
    out, in_block = [], False
    i = 0
    while i < len(text):
        m = re.match(r"\s*(?:@\w+\s+)*(?:(?:public|package|private|fileprivate|internal|static|mutating|"
                     r"final|override|nonisolated)\s+)*(?:func\s+(\w+)|(init)\b)", text[i])
        if not m:
            i += 1
            continue
        name, depth, parens, start, j, opened = m.group(1) or m.group(2), 0, 0, i, i, False
        in_block = False
        while j < len(text):
            line = text[j]
            if line.count('"""') % 2 == 1:
                in_block = not in_block
                j += 1
                continue
            if not in_block:
                # Braces count only outside parentheses: a default closure (`= {}`) in the
                # signature opens no body; a body on one line (`{ … }`) opens and closes it.
                for ch in strip_strings(line.split("//")[0]):
                    if ch == "(":
                        parens += 1
                    elif ch == ")":
                        parens -= 1
                    elif ch == "{" and parens <= 0:
                        depth, opened = depth + 1, True
                    elif ch == "}" and parens <= 0:
                        depth -= 1
            if opened and depth <= 0:
                break
            j += 1
        if j - start + 1 > MAX_FUNCTION_LINES:
            out.append((name, start + 1, j - start + 1))
        i = start + 1
    return out


def main():
    breaches, notes = [], []
    targets = dumped_targets()
    graph = package_targets(targets)
    architecture = open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8").read()
    for t in targets:
        if not re.search(r"\b" + re.escape(t["name"]) + r"\b", architecture):
            breaches.append(f"ARCHITECTURE.md does not name the target {t['name']}")
    print("targets (lines; the targets of this package each uses):")
    for name, (path, deps) in sorted(graph.items(), key=lambda kv: -lines_of(kv[1][0])):
        n = lines_of(path)
        print(f"  {name:<18} {n:>6}  -> {', '.join(deps) if deps else '(none)'}")
        if n > MAX_TARGET_LINES:
            breaches.append(f"{path}: {n} lines, over {MAX_TARGET_LINES}: split it along a seam")
    for f in swift_files("Sources/Reconciliation"):
        for k, line in enumerate(open(f, encoding="utf-8"), 1):
            m = re.match(r"\s*(?:@\w+\s+)?import\s+(?:\w+\s+)?([\w.]+)", line)
            if m and m.group(1) != "Foundation":
                breaches.append(f"{os.path.relpath(f, ROOT)}:{k}: Reconciliation imports {m.group(1)}; "
                                "it must do no I/O (Foundation only)")
    for f in swift_files("Sources"):
        lines = open(f, encoding="utf-8").read().split("\n")
        for k, line in enumerate(lines):
            if not re.match(r"\s*(?:@[\w()]+\s+)*(?:\w+\s+)*package(?:\(set\))?\s+(?:\w+\s+)*"
                            r"(?:func|var|let|struct|enum|class|protocol|typealias|init|actor|subscript)\b", line):
                continue
            if re.match(r"\s*(public|open)\b", line) or "package(set)" in line and re.search(r"\bpublic\b", line):
                continue
            above = k - 1
            while above >= 0 and re.match(r"\s*@\w+", lines[above]):
                above -= 1
            if above < 0 or not lines[above].strip().startswith("///"):
                breaches.append(f"{os.path.relpath(f, ROOT)}:{k + 1}: a package declaration without a /// line "
                                "saying what it is for")
    for d in FUNCTION_DIRS:
        for f in swift_files(d):
            rel = os.path.relpath(f, ROOT)
            for name, first, n in long_functions(f):
                if (rel, name) in OWED:
                    notes.append(f"{rel}:{first}: {name} is {n} lines (owed: {OWED[(rel, name)]})")
                else:
                    breaches.append(f"{rel}:{first}: {name} is {n} lines, over {MAX_FUNCTION_LINES}")
    for n in notes:
        print("note: " + n)
    for b in breaches:
        print("target-graph: " + b, file=sys.stderr)
    if breaches:
        sys.exit(1)
    print("target-graph: every rule holds")


if __name__ == "__main__":
    main()
