#!/usr/bin/env python3
"""docs/figures.md: the one table of the project's measured figures.

Every benchmark target (make bench, bench-verify, bench-sk2, bench-api) and make demo ends with

    python3 scripts/figures.py TARGET FIGURES.json

FIGURES.json is a list of {"figure": ..., "value": ..., "floor": ...}: what was measured (with its
size), the value, and its ratio to its floor (empty where the figure has none). The rows of TARGET
are replaced by these, stamped with the date (UTC), the commit, the machine and its cores; every
other target's rows are kept. Other docs link here and carry no figure of their own.
"""
import datetime
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PAGE = os.path.join(ROOT, "docs", "figures.md")
HEAD = """# Figures

Every figure the project has measured, one row each, written by the target that measures it
(`make bench`, `make bench-verify`, `make bench-sk2`, `make bench-api`, `make demo`): what was
measured, the value, its ratio to its floor (what the same machine needs for the same work at
the least: reading every row once, Apple's latency, the ES256 checks on every core), and when,
on which commit and machine. A run replaces its target's rows. What each benchmark does, and the
measured choices behind the design, are in [benchmarks.md](benchmarks.md).

| figure | value | against its floor | target | date | commit | machine |
|---|---|---|---|---|---|---|
"""


def machine():
    model = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def commit():
    try:
        c = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                           check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "diff", "--quiet", "HEAD", "--", "Sources", "Package.swift"]).returncode
        return c + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cell(text):
    return str(text).replace("|", "/").replace("\n", " ").strip()


def rows(text):
    """The table rows of the page, each a list of seven cells."""
    out = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| figure |"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 7:
                out.append(cells)
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: scripts/figures.py TARGET FIGURES.json")
    target, figures = sys.argv[1], json.load(open(sys.argv[2]))
    old = open(PAGE).read() if os.path.exists(PAGE) else ""
    kept = [r for r in rows(old) if r[3] != f"`{target}`"]
    stamp = [f"`{target}`", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"), commit(), machine()]
    new = [[cell(f["figure"]), cell(f["value"]), cell(f.get("floor", ""))] + stamp for f in figures]
    order = ["`make bench`", "`make bench-verify`", "`make bench-sk2`", "`make bench-api`", "`make demo`"]
    # A target run with a variable (`make bench BENCH_PLAY_USERS=200000`) keeps rows of its own, after its target's.
    def place(r):
        base = "`" + " ".join(r[3].strip("`").split()[:2]) + "`"
        return (order.index(base) if base in order else len(order), r[3] != base)

    all_rows = sorted(kept + new, key=place)
    tmp = PAGE + ".tmp"
    with open(tmp, "w") as f:
        f.write(HEAD + "".join("| " + " | ".join(r) + " |\n" for r in all_rows))
    os.replace(tmp, PAGE)
    print(f"figures: {len(new)} row(s) of {target} written to docs/figures.md")


if __name__ == "__main__":
    main()
