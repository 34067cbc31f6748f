#!/usr/bin/env python3
"""make check-workbook: open the night's reconciliation.xlsx with LibreOffice Calc, export every
sheet to CSV, and compare each with the report CSV it came from: every id digit for digit, every
text cell as written, every time column in the zone its header names, dates and amounts equal.
Usage: check-workbook.py REPORT_DAY_FOLDER. Exit 1 on any difference."""
import csv, datetime, decimal, os, shutil, subprocess, sys, tempfile, zoneinfo

day = sys.argv[1].rstrip("/")
book = os.path.join(day, "reconciliation.xlsx")
if not os.path.exists(book):
    sys.exit(f"{book} is missing: run make demo first")
tmp = tempfile.mkdtemp(prefix="check-workbook-")
shutil.copy(book, tmp)
# The CSV filter's options: comma, double quote, UTF-8, from line 1, cells as shown, every sheet (-1).
subprocess.run(["soffice", "--headless", "--convert-to",
                "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,-1",
                "--outdir", tmp, os.path.join(tmp, "reconciliation.xlsx")],
               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600,
               env={**os.environ, "HOME": tmp})

def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))

def unguarded(v):
    return v[1:] if v.startswith("'") and v[1:2] in ("=", "+", "-", "@", "\t", "\r") else v

problems = 0
for name in sorted(os.listdir(day)):
    if not name.endswith(".csv"):
        continue
    report = name[:-4]
    exported = os.path.join(tmp, f"reconciliation-{report}.csv")
    if not os.path.exists(exported):
        print(f"  {name:26s} NO SHEET"); problems += 1; continue
    want, got = rows(os.path.join(day, name)), rows(exported)
    bad = []
    if len(got) != len(want):
        bad.append(f"{len(got) - 1} rows in the sheet, {len(want) - 1} in the CSV")
    ids = 0
    for i, (w, g) in enumerate(zip(want, got)):
        for c, column in enumerate(want[0]):
            wv, gv = (w[c] if c < len(w) else ""), (g[c] if c < len(g) else "")
            header = got[0][c] if c < len(got[0]) else ""
            if i == 0:
                ok = gv == wv or (gv.startswith(wv + " (") and gv.endswith(")"))
            elif wv == "":
                ok = gv == ""
            elif header.endswith(")") and " (" in header and i > 0:
                zone = zoneinfo.ZoneInfo(header[header.index(" (") + 2:-1])
                t = datetime.datetime.strptime(wv, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
                ok = gv == t.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S")
            elif column in ("amount", "refunded_amount"):
                ok = decimal.Decimal(gv or "0") == decimal.Decimal(wv)
            else:
                ok = gv == unguarded(wv)
                if column.endswith("_id") or column in ("finding_key", "grant_ids"):
                    ids += 1
            if not ok:
                bad.append(f"row {i} {column}: sheet {gv!r}, CSV {wv!r}")
    problems += len(bad)
    verdict = "ok" if not bad else f"{len(bad)} differences, e.g. {bad[0]}"
    print(f"  {name:26s} {len(want) - 1:6d} rows, {ids:6d} id cells digit for digit: {verdict}")
shutil.rmtree(tmp, ignore_errors=True)
print("the workbook gives back every report" if problems == 0 else f"{problems} differences")
sys.exit(1 if problems else 0)
