#!/usr/bin/env bash
# make bench: the decide and write stages at scale.
# About 1M orders, 1M receipts, 1M grants and 1M learned transactions (BENCH_USERS, default
# 600000 generated users; a user has one to three purchases). The job's tables are filled from the
# generator's truth, as if every receipt had been verified, so nothing is sent.
# BENCH_EXTRA_FINDINGS=N (default 0, at most 17): every clean consumable user (about 60% of them)
# makes N more purchases, each a finding (iap-sim seed --extra-findings: missed orders and repeated
# grants alternately); 4 gives about 11 times the default's findings, for the memory target.
# Measures, in the same run:
#   job       iap-reconcile run --no-verify: input checks, families, rules, history, five CSVs
#   postgres  the same decide SQL with every row read by COPY … TO STDOUT and dropped
#             (iap-reconcile run --database-only): what Postgres itself needs for the rows the job reads
# and prints their ratio (target <= 3), the rows per second, and the job's peak RSS (target < 100 MB)
# next to the number of findings (rows of compensate, duplicate_grants, clawback, refunds, unattributed).
#   split     the same night with SOURCE_DATABASE_URL: the four source relations in a database of
#             their own (iap_source, on the same cluster), copied into the job's by the night's
#             first step; printed with its copy stage, the copy's floor (each source relation
#             COPY'd out of iap_source and into an unlogged table of iap, binary, by psql) and its
#             ratio to the single-database job of the same round (target <= 1.20).
#             BENCH_SPLIT=0 leaves it out.
# Before the rounds, one night of each kind, untimed: every timed night is a repeat night.
# BENCH_ROUNDS=N (default 1): N rounds on the same data, each the floor, the job, the floor again
# (this machine's speed drifts by 10-20% within minutes); a round's ratio is its job over the mean
# of the two floors around it, and the ratio printed is the median of the rounds' ratios, with
# each round's and the spread beside it (the figure to quote: docs/benchmarks.md). Every run's
# reports are checked against the truth.
# BENCH_PLAY_USERS=N (default 0): a shop selling on both stores, N Google Play players beside the
# App Store's (iap-sim seed --play-users: every Play family, most players clean; about one purchase
# a player). Play's tables are filled by the night's own verification, untimed, against the
# simulator with Google's quota lifted (100,000 players: about 4 minutes), then every timed night
# runs with Play configured (PLAY_PACKAGE_NAMES…, nothing asked: --no-verify), and its reports,
# acknowledge.csv too, are checked against the truth. Google lists voided purchases by its own
# clock, so --as-of is ten minutes before now (iap-sim seed --help), not the fixed night. The floor
# reads Play's tables too; the rows counted add Google's purchases, lines, voided records and orders.
# BENCH_VS=DIR: the iap-reconcile of another build (e.g. main's release build, to compare a change
# with it): each round also runs that job on the same data, the two in turn (this one first in odd
# rounds, the other first in even ones), its reports checked too, and its figures and the ratio of
# the two are printed after this build's.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
start_everything
users=${BENCH_USERS:-600000}
extra=${BENCH_EXTRA_FINDINGS:-0}
play_users=${BENCH_PLAY_USERS:-0}
as_of=2026-11-21T03:00:00Z
play_seed=() play_tables=() reports=(compensate.csv duplicate_grants.csv clawback.csv refunds.csv unattributed.csv input_errors.csv)
if [ "$play_users" != 0 ]; then
  as_of=$(date -u -d '-10 min' +%Y-%m-%dT%H:%M:%SZ)
  play_package=com.example.game
  play_seed=(--play-users "$play_users" --play-package "$play_package" --play-truth "$work/play-truth.tsv")
  play_tables=(recon.play_purchases recon.play_purchase_lines recon.play_voided recon.play_orders)
  reports+=(acknowledge.csv)
fi

echo "== generating $users users (extra findings per clean consumable user: $extra)"
[ "$play_users" != 0 ] && echo "   and $play_users Google Play players ($play_package), as of $as_of"
measure "$work/seed.time" "$bin/iap-sim" seed --users "$users" --seed 1 --as-of "$as_of" --truth-table \
  --extra-findings "$extra" --refunds "$work/refunds.csv" --expected "$work/expected" "${play_seed[@]}" >/dev/null
"$bin/iap-reconcile" migrate
echo "== filling the job's tables from the truth (as if verified)"
psql -qX -v ON_ERROR_STOP=1 <<'SQL'
CREATE FUNCTION pg_temp.ms(timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE AS 'SELECT (extract(epoch FROM $1) * 1000)::bigint';
CREATE TEMP TABLE truth AS
  SELECT *, coalesce(forced_status, 0) IN (0, 21006) AS ok, bundle_id = 'com.example.game' AS our_bundle FROM sim_truth;
INSERT INTO recon.receipt_state (receipt_id, attempts, last_class, last_status, last_attempt_at, definitive, verdict, environment, bundle_id)
SELECT DISTINCT ON (receipt_id) receipt_id, 1, CASE WHEN ok AND our_bundle THEN 'ok' ELSE 'reject' END,
       coalesce(forced_status, 0), now(), true,
       CASE WHEN NOT ok THEN 'invalid_receipt' WHEN NOT our_bundle THEN 'wrong_bundle' ELSE 'valid' END,
       environment, bundle_id
FROM truth ORDER BY receipt_id;
INSERT INTO recon.apple_transactions (transaction_id, environment, original_transaction_id, product_id, quantity,
       purchase_date_ms, original_purchase_date_ms, expires_date_ms, cancellation_date_ms, cancellation_reason,
       is_trial_period, web_order_line_item_id, bundle_id)
SELECT DISTINCT ON (transaction_id, environment) transaction_id, environment, original_transaction_id, product_id,
       quantity, pg_temp.ms(purchase_date), pg_temp.ms(original_purchase_date), pg_temp.ms(expires_date),
       pg_temp.ms(cancellation_date), cancellation_reason, is_trial_period, web_order_line_item_id, bundle_id
FROM truth WHERE ok AND our_bundle AND transaction_id IS NOT NULL
ORDER BY transaction_id, environment, cancellation_date NULLS LAST;
INSERT INTO recon.receipt_transactions (receipt_id, transaction_id, environment)
SELECT DISTINCT receipt_id, transaction_id, environment FROM truth WHERE ok AND our_bundle AND transaction_id IS NOT NULL;
VACUUM ANALYZE;
SQL
if [ "$play_users" != 0 ]; then
  echo "== Google Play: the night's own verification asks the simulator for every token (untimed, Google's quota lifted)"
  "$bin/iap-sim" play-key --out "$work/play-key.json" >/dev/null 2>&1
  subscription=projects/iap-bench/subscriptions/iap-reconcile
  start_sim --play-service-account "$work/play-key.json" --play-truth "$work/play-truth.tsv" \
    --play-subscription "$subscription" --play-quota-per-minute 1000000
  PLAY_SERVICE_ACCOUNT_FILE="$work/play-key.json" PLAY_PACKAGE_NAMES="$play_package" PLAY_API_URL="http://127.0.0.1:$port" \
    PLAY_TOKEN_URL="http://127.0.0.1:$port/token" PLAY_PUBSUB_URL="http://127.0.0.1:$port" PLAY_PUBSUB_SUBSCRIPTION="$subscription" \
    measure "$work/play-verify.time" "$bin/iap-reconcile" verify --as-of "$as_of" --no-progress \
    --play-rate one_time_purchases=1000000 --play-rate orders=1000000 >"$work/play-verify.log" 2>&1 \
    || { tail -5 "$work/play-verify.log"; exit 1; }
  kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; sim_pid=""
  grep '^verify:' "$work/play-verify.log" || true
  echo "   $(cut -d' ' -f1 "$work/play-verify.time") s; the simulator is stopped: the timed nights ask nothing"
  # Play configured for every timed night, every Google address a closed port of this machine: a
  # night that asked anything would fail, never reach Google.
  export PLAY_SERVICE_ACCOUNT_FILE="$work/play-key.json" PLAY_PACKAGE_NAMES="$play_package" \
    PLAY_API_URL="http://127.0.0.1:9" PLAY_TOKEN_URL="http://127.0.0.1:9/token" PLAY_PUBSUB_URL="http://127.0.0.1:9"
  psql -qX -c "VACUUM ANALYZE"
fi
psql -AtX -F' ' -c "SELECT (SELECT count(*) FROM iap_orders), (SELECT count(*) FROM iap_receipts),
  (SELECT count(*) FROM iap_grants), (SELECT count(*) FROM recon.apple_transactions)
  $(for t in "${play_tables[@]}"; do echo " + (SELECT count(*) FROM $t)"; done)" > "$work/sizes"
read -r orders receipts grants learned < "$work/sizes"
split=${BENCH_SPLIT:-1}
if [ "$split" = 1 ]; then
  echo "== the split: the source relations in a database of their own (iap_source)"
  psql -qX -d postgres -c "DROP DATABASE IF EXISTS iap_source WITH (FORCE)" \
    -c "CREATE DATABASE iap_source TEMPLATE iap STRATEGY FILE_COPY"
  psql -qX -d iap_source -c "DROP SCHEMA recon CASCADE"
fi

# The floor: every row the night decides from, read once
# with COPY into /dev/null, one relation after the other: the four source relations and every
# table in which the job keeps what it learned from Apple. A new such table belongs in this list.
rounds=${BENCH_ROUNDS:-1}
vs=${BENCH_VS:-}
if [ -n "$vs" ] && [ ! -x "$vs/iap-reconcile" ]; then echo "BENCH_VS=$vs has no iap-reconcile"; exit 64; fi
verdict="all ${#reports[@]} equal the generator's truth"
: > "$work/rounds"
: > "$work/vs-rounds"
: > "$work/split-rounds"
# job BINARY TIMEFILE ROUND: one timed run of the job, its reports checked against the truth.
# A third of the orders are findings with --extra-findings, which holds a night (docs/contract.md,
# "Held nights"); the benchmark times the published night, so the share rule is lifted there (for
# a build that has it).
holding() {
  if [ "$extra" != 0 ] && "$1/iap-reconcile" run --help 2>/dev/null | grep -q -- --hold-findings-percent; then
    echo --hold-findings-percent 100
  fi
}
job() {
  rm -rf "$work/reports"
  # shellcheck disable=SC2046
  measure "$2" "$1/iap-reconcile" run --no-verify --no-progress --as-of "$as_of" --out "$work/reports" $(holding "$1")
  for f in "${reports[@]}"; do
    cmp -s "$work/expected/$f" "$work/reports"/*/"$f" || verdict="DIFFERS from the generator's truth in round $3 ($1): $f"
  done
  stages "single"
}
# stages LABEL: the last run's seconds per stage (summary.json), one line, to compare the two nights.
stages() {
  python3 -c "import json,sys,glob; s=json.load(open(glob.glob(sys.argv[1])[0]))['seconds']; print('   stages (' + sys.argv[2] + '): ' + ', '.join(f'{k} {v:.2f}' for k, v in sorted(s.items(), key=lambda kv: kv[1])))" \
    "$work/reports/*/summary.json" "$1"
}
# split_job TIMEFILE ROUND: the job with SOURCE_DATABASE_URL, its reports checked; the copy stage's
# seconds (summary.json) appended to TIMEFILE's line.
split_job() {
  rm -rf "$work/reports"
  # shellcheck disable=SC2046
  SOURCE_DATABASE_URL="dbname=iap_source" measure "$1" "$bin/iap-reconcile" run --no-verify --no-progress --as-of "$as_of" \
    --out "$work/reports" $(holding "$bin")
  for f in "${reports[@]}"; do
    cmp -s "$work/expected/$f" "$work/reports"/*/"$f" || verdict="DIFFERS from the generator's truth in round $2 (split): $f"
  done
  stages "split"
  copy=$(python3 -c "import json,sys,glob; print(json.load(open(glob.glob(sys.argv[1])[0]))['seconds'].get('copy', 0))" \
    "$work/reports/*/summary.json")
  sed -i "s/\$/ $copy/" "$1"
}
# copy_floor: the seconds to stream the four source relations from iap_source into unlogged tables
# of iap with psql (binary COPY out, COPY in), printed: what the split's copy cannot beat.
copy_floor() {
  local start end
  psql -qX -v ON_ERROR_STOP=1 -c "DROP SCHEMA IF EXISTS bench_copy CASCADE" -c "CREATE SCHEMA bench_copy"
  for t in iap_products iap_orders iap_receipts iap_grants; do
    psql -qX -v ON_ERROR_STOP=1 -c "CREATE UNLOGGED TABLE bench_copy.$t (LIKE public.$t)"
  done
  start=$(date +%s.%N)
  for t in iap_products iap_orders iap_receipts iap_grants; do
    psql -qX -d iap_source -v ON_ERROR_STOP=1 -c "COPY (SELECT * FROM public.$t) TO STDOUT (FORMAT binary)" \
      | psql -qX -v ON_ERROR_STOP=1 -c "COPY bench_copy.$t FROM STDIN (FORMAT binary)"
  done
  end=$(date +%s.%N)
  psql -qX -v ON_ERROR_STOP=1 -c "DROP SCHEMA bench_copy CASCADE"
  python3 -c "print(f'{$end - $start:.2f}')"
}
# floor: the seconds to read every input relation once, printed.
floor() {
  local start end
  start=$(date +%s.%N)
  for t in public.iap_products public.iap_orders public.iap_receipts public.iap_grants \
           recon.apple_transactions recon.receipt_transactions recon.receipt_state \
           recon.notifications recon.history_customers "${play_tables[@]}"; do
    psql -qX -v ON_ERROR_STOP=1 -c "COPY (SELECT * FROM $t) TO STDOUT" > /dev/null
  done
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.2f}')"
}
# Each round's floor is measured before and after its job(s), and the round's ratio divides by
# their mean: the machine's speed drifts within minutes and does not slow the floor (one psql at a
# time) and the job (both cores) alike, so a floor measured once, minutes away, says little.
# One night of each kind first, untimed: a nightly job's night is never the schema's first (the
# first finds no findings history and writes every finding as new), so every timed night is a
# repeat night, and the split's first night does not pay for being the schema's second.
echo "== warm-up: one night (and one split night), untimed"
"$bin/iap-reconcile" run --no-verify --no-progress --as-of "$as_of" --out "$work/warm-up" >/dev/null 2>"$work/warm-up.log"
if [ "$split" = 1 ]; then
  SOURCE_DATABASE_URL="dbname=iap_source" "$bin/iap-reconcile" run --no-verify --no-progress --as-of "$as_of" \
    --out "$work/warm-up" >/dev/null 2>>"$work/warm-up.log"
fi
for round in $(seq "$rounds"); do
  echo "== round $round of $rounds: the floor: COPY (SELECT * FROM t) TO STDOUT into /dev/null, each input relation once"
  floor_before=$(floor)
  if [ "$round" = 1 ]; then
    echo "== postgres alone: the decide SQL, rows read and dropped"
    measure "$work/postgres.time" "$bin/iap-reconcile" run --database-only --no-progress --as-of "$as_of"
  fi
  echo "== round $round of $rounds: the job: iap-reconcile run --no-verify"
  if [ -n "$vs" ] && [ $((round % 2)) = 0 ]; then job "$vs" "$work/vs.time" "$round"; fi
  job "$bin" "$work/job.time" "$round"
  if [ -n "$vs" ] && [ $((round % 2)) = 1 ]; then job "$vs" "$work/vs.time" "$round"; fi
  if [ "$split" = 1 ]; then
    echo "== round $round of $rounds: the split: SOURCE_DATABASE_URL=dbname=iap_source, then the copy's floor"
    split_job "$work/split.time" "$round"
    cfloor=$(copy_floor)
    echo "$(cut -d' ' -f1 "$work/job.time") $(cat "$work/split.time") $cfloor" >> "$work/split-rounds"
    echo "   split job $(cut -d' ' -f1 "$work/split.time") s (copy stage $(cut -d' ' -f5 "$work/split.time") s, its floor $cfloor s)"
  fi
  echo "== round $round of $rounds: the floor again, after the job"
  floor_after=$(floor)
  floor=$(python3 -c "print(f'{($floor_before + $floor_after) / 2:.2f}')")
  echo "$floor $(cat "$work/job.time") $floor_before $floor_after" >> "$work/rounds"
  echo "   floor $floor_before s before, $floor_after s after (mean $floor s), job $(cut -d' ' -f1 "$work/job.time") s"
  if [ -n "$vs" ]; then
    echo "$floor $(cat "$work/vs.time")" >> "$work/vs-rounds"
    echo "   the other build ($vs): job $(cut -d' ' -f1 "$work/vs.time") s"
  fi
done
read -r pg_wall _ _ _ < "$work/postgres.time"
rows=$((orders + receipts + grants + learned))
rm -f "$work/figures.json"
PLAY_USERS="$play_users" FIGURES_JSON="$work/figures.json" python3 - "$orders" "$receipts" "$grants" "$learned" "$pg_wall" "$work/rounds" \
  "$(ls "$work/reports"/*/ | tr '\n' ' ')" "$(wc -l "$work/reports"/*/*.csv | tail -1 | awk '{print $1}')" \
  "$(ls -d "$work/reports"/*/)" "$work/vs-rounds" "$work/split-rounds" <<'PY' | tee "$work/result.txt"
import csv, json, os, statistics, sys
o, r, g, t = map(int, sys.argv[1:5])
pg = float(sys.argv[5])
runs = [list(map(float, line.split())) for line in open(sys.argv[6]) if line.strip()]
floors, jobs = [x[0] for x in runs], [x[1] for x in runs]
cpus, rsss = [x[2] + x[3] for x in runs], [x[4] for x in runs]
floor, job, cpu, rss = statistics.median(floors), statistics.median(jobs), statistics.median(cpus), max(rsss)
def spread(values):
    return f" (median of {len(values)}: {min(values):.2f}-{max(values):.2f})" if len(values) > 1 else ""
ratios = [j / f for f, j in zip(floors, jobs)]
lines = int(sys.argv[8])
# The findings: data rows (header left out) of the five finding reports; input_errors.csv is not one.
findings = 0
for name in ("compensate.csv", "duplicate_grants.csv", "clawback.csv", "refunds.csv", "unattributed.csv"):
    with open(os.path.join(sys.argv[9], name), newline="") as f:
        findings += sum(1 for _ in csv.reader(f)) - 1
rows = o + r + g + t
play = int(os.environ.get("PLAY_USERS", "0"))
learned = "learned: Apple's transactions, Google's purchases, their lines, voided records and orders" if play else "learned transactions"
print(f"input rows               {rows:,} ({o:,} orders, {r:,} receipts, {g:,} grants, {t:,} {learned})"
      + (f"; {play:,} Google Play players beside the App Store's users" if play else ""))
print(f"report lines written     {lines:,}")
print(f"floor (every input row read once with COPY) {floor:.2f} s{spread(floors)}")
print(f"postgres alone           {pg:.2f} s  (the job's own decide SQL, rows dropped: a diagnostic)")
print(f"job (run --no-verify)    {job:.2f} s{spread(jobs)}  (job CPU {cpu:.2f} s)")
print(f"floor before / after     " + ", ".join(f"{x[5]:.2f}/{x[6]:.2f}" for x in runs) + " s (each round's floor is their mean)")
print(f"ratio job / floor        {statistics.median(ratios):.2f}  (the median of the rounds' ratios, each its job over the mean of"
      f" the floors around it; target <= 3)"
      + (f"; each round: {', '.join(f'{x:.2f}' for x in ratios)}; spread {min(ratios):.2f}-{max(ratios):.2f}" if len(ratios) > 1 else ""))
print(f"ratio job / postgres     {job / pg:.2f}")
print(f"input rows per second    {rows / job:,.0f}")
print(f"job peak RSS             {rss / 1024:.1f} MB  (target < 100 MB; findings {findings:,})")
vs = [list(map(float, line.split())) for line in open(sys.argv[10]) if line.strip()]
if vs:
    vjobs, vcpu = [x[1] for x in vs], statistics.median([x[2] + x[3] for x in vs])
    vratios = [j / x[0] for x, j in zip(vs, vjobs)]
    print(f"other build: job         {statistics.median(vjobs):.2f} s{spread(vjobs)}  (job CPU {vcpu:.2f} s, "
          f"peak RSS {max(x[4] for x in vs) / 1024:.1f} MB)")
    print(f"other build: ratio       {statistics.median(vratios):.2f}; each round: {', '.join(f'{x:.2f}' for x in vratios)}")
    pairs = [a / b for a, b in zip(jobs, vjobs)]
    print(f"this / other, per round  {', '.join(f'{x:.3f}' for x in pairs)} (median {statistics.median(pairs):.3f})")
split = [list(map(float, line.split())) for line in open(sys.argv[11]) if line.strip()]
if split:
    # single job, split job wall user sys rss, copy stage, copy floor
    sratios = [x[1] / x[0] for x in split]
    print(f"split (SOURCE_DATABASE_URL) {statistics.median([x[1] for x in split]):.2f} s{spread([x[1] for x in split])}"
          f"  (copy stage {statistics.median([x[5] for x in split]):.2f} s; its floor, psql COPY out + COPY in "
          f"{statistics.median([x[6] for x in split]):.2f} s; peak RSS {max(x[4] for x in split) / 1024:.1f} MB)")
    print(f"ratio split / single     {statistics.median(sratios):.2f}  (each round's split job over its single-database job;"
          f" target <= 1.20)" + (f"; each round: {', '.join(f'{x:.2f}' for x in sratios)}" if len(sratios) > 1 else ""))
# docs/figures.md's rows (scripts/figures.py), written below when the reports equal the truth.
size = f"{rows / 1e6:.1f}M input rows, {len(runs)} round(s)"
if play:
    size = f"both stores ({play:,} Google Play players), " + size
figures = [
    {"figure": f"the night without verification (decide and write), {size}", "value": f"{job:.2f} s",
     "floor": f"{statistics.median(ratios):.2f} × reading every row once ({floor:.2f} s); target ≤ 3"},
    {"figure": f"input rows per second, {size}", "value": f"{rows / job:,.0f}", "floor": ""},
    {"figure": f"peak RSS of the night{', both stores' if play else ''}, {findings:,} findings", "value": f"{rss / 1024:.1f} MB", "floor": "target < 100 MB"},
]
if split:
    figures.append({"figure": f"the night reading a second database (SOURCE_DATABASE_URL), {size}",
                    "value": f"{statistics.median([x[1] for x in split]):.2f} s",
                    "floor": f"{statistics.median(sratios):.2f} × the one-database night; target ≤ 1.20"})
json.dump(figures, open(os.environ["FIGURES_JSON"], "w"))
PY
echo "reports                  $verdict" | tee -a "$work/result.txt"
if [ -z "$vs" ] && [ "$verdict" = "all ${#reports[@]} equal the generator's truth" ]; then
  target="make bench"
  [ "$play_users" != 0 ] && target="make bench BENCH_PLAY_USERS=$play_users"
  python3 "$(dirname "$0")/figures.py" "$target" "$work/figures.json"
fi
