#!/usr/bin/env bash
# make bench-api: the job's own rate budget for the App Store Server API.
# 6,000 Get Transaction Info calls (the refund sweep of StoreKit 2 uploads). The simulator allows
# 200 calls a second to that endpoint (sliding one-second window, 429 + Retry-After beyond) and
# answers after 20 ms. Run 1: the job's budget is 200/s: it must reach >= 95% of it (190/s) and
# receive no 429. Run 2 (control): budget 400/s: it must receive 429s, proof that the
# simulator's limit bites. BENCH_API_CALLS (default 6000) sets the size.
# Then a whole night of sweeps: BENCH_API_SWEEP users (default 2000), each with a
# consumable refund seen only in notification history and an open order whose customer's
# transaction history is asked: 2,000 REFUND notifications (and as many ONE_TIME_CHARGE, with
# Apple's repeats) and 2,000 histories, the simulator holding every endpoint to Apple's limits.
# It must get no 429, and prints the requests per endpoint.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
start_everything
n=${BENCH_API_CALLS:-6000}
as_of=2026-11-21T03:00:00Z
users=$((n * 20))

echo "== generating $users users, every upload a StoreKit 2 signed transaction"
"$bin/iap-sim" seed --users "$users" --seed 11 --as-of "$as_of" --no-bad-rows --pki "$work/pki" \
  --storekit2-share 1 --apple-truth "$work/apple-truth.tsv" >/dev/null
# only signed transactions: the sweep then asks the Server API and nothing else
psql -qX -v ON_ERROR_STOP=1 -c "DELETE FROM iap_receipts WHERE receipt_data NOT LIKE '%.%.%'" -c "VACUUM ANALYZE"
"$bin/iap-sim" keygen --out "$work/key.p8" >/dev/null
export IAP_BUNDLE_IDS=com.example.game IAP_ROOT_CERTIFICATES="$work/pki/root.pem" \
  IAP_ISSUER_ID=57246542-96fe-1a63-e053-0824d011072a IAP_KEY_ID=BENCHKEY01 IAP_PRIVATE_KEY_FILE="$work/key.p8"

"$bin/iap-reconcile" migrate
echo "== verifying every upload offline (no App Store call), so that the sweep is all that is left"
"$bin/iap-reconcile" verify --as-of "$as_of" --sweep-limit 0 --no-progress --no-api-sweeps

run() {  # run LABEL JOB_BUDGET
  local label=$1 budget=$2
  psql -qX -c "UPDATE recon.receipt_state SET last_swept_at = NULL, last_attempt_at = now() - interval '2 days'"
  rm -f "$work/calls.tsv" "$work/port"
  start_sim --pki "$work/pki" --apple-truth "$work/apple-truth.tsv" --latency-ms 20 --seed 11 \
    --api-key "$work/key.p8" --api-key-id BENCHKEY01 --api-issuer 57246542-96fe-1a63-e053-0824d011072a \
    --api-bundle com.example.game --api-rate transaction_info=200
  export IAP_API_URL_PRODUCTION="http://127.0.0.1:$port/production" IAP_API_URL_SANDBOX="http://127.0.0.1:$port/sandbox"
  echo "== $label: $n sweeps, job budget $budget/s, simulator limit 200/s, 20 ms latency"
  "$bin/iap-reconcile" verify --as-of "$as_of" --sweep-limit "$n" --sweep-interval-hours 0 --no-progress \
    --api-rate "transaction_info=$budget" --retry-base-ms 50 --no-api-sweeps || true
  kill "$sim_pid" 2>/dev/null; wait "$sim_pid" 2>/dev/null || true; sim_pid=""
  python3 - "$work/calls.tsv" "$label" "$budget" <<'PY' | tee -a "$work/result.txt"
import sys
path, label, budget = sys.argv[1], sys.argv[2], float(sys.argv[3])
times, limited = [], 0
for line in open(path):
    f = line.rstrip("\n").split("\t")
    # API lines: unix ms, environment, endpoint, outcome (200, 429:4290000:until=…, …), id
    if len(f) < 4 or f[2] != "transaction_info":
        continue
    times.append(int(f[0]))
    if f[3].startswith("429"):
        limited += 1
ok = len(times) - limited
span = (max(times) - min(times)) / 1000 if len(times) > 1 else float("nan")
rate = (len(times) - 1) / span if span == span and span > 0 else 0
print(f"{label:8s} calls {len(times):,} ({ok:,} answered, {limited:,} got 429) in {span:.2f} s: {rate:.1f} calls/s "
      f"({rate / budget * 100:.0f}% of the job's budget {budget:.0f}/s)")
PY
}
run budget 200
run control 400

echo "== a night of sweeps: notification history and transaction history at Apple's limits"
nb=${BENCH_API_SWEEP:-2000}
psql -qX -d postgres -c "DROP DATABASE IF EXISTS iap WITH (FORCE)" -c "CREATE DATABASE iap"
"$bin/iap-sim" seed --users 0 --api-bench "$nb" --seed 12 --as-of "$as_of" --no-bad-rows --pki "$work/pki" \
  --apple-truth "$work/sweep-truth.tsv" --refunds "$work/sweep-refund-list.csv" --expected "$work/sweep-expected" >/dev/null
rm -f "$work/calls.tsv" "$work/port"
start_sim --pki "$work/pki" --apple-truth "$work/sweep-truth.tsv" --refunds "$work/sweep-refund-list.csv" --latency-ms 20 \
  --seed 12 --api-key "$work/key.p8" --api-key-id BENCHKEY01 --api-issuer 57246542-96fe-1a63-e053-0824d011072a \
  --api-bundle com.example.game --api-rate transaction_info=50 --api-rate transaction_history=50 \
  --api-rate notification_history=50 --api-rate refund_history=10 --api-rate order_lookup=10
export IAP_API_URL_PRODUCTION="http://127.0.0.1:$port/production" IAP_API_URL_SANDBOX="http://127.0.0.1:$port/sandbox"
# Every purchase of this data is refunded on purpose: a night with that many claw-backs is held
# by default (--hold-findings-percent 25), so the benchmark lifts that threshold.
measure "$work/sweep-measure" "$bin/iap-reconcile" run --as-of "$as_of" --out "$work/sweep-reports" --no-progress \
  --history-limit "$nb" --retry-base-ms 50 --hold-findings-percent 100
kill "$sim_pid" 2>/dev/null; wait "$sim_pid" 2>/dev/null || true; sim_pid=""
day=$(date -u -d "$as_of" +%Y-%m-%d)
for f in clawback.csv refunds.csv compensate.csv unattributed.csv; do
  cmp -s "$work/sweep-expected/$f" "$work/sweep-reports/$day/$f" && v=matches || v=DIFFERS
  printf '   %-18s %6d rows  %s the truth of the generator\n' "$f" "$(($(wc -l < "$work/sweep-reports/$day/$f") - 1))" "$v"
done
FIGURES_JSON="$work/figures.json" python3 - "$work/calls.tsv" "$work/sweep-measure" "$work/sweep-reports/$day/summary.json" <<'PY' | tee -a "$work/result.txt"
import collections, json, os, sys
calls, measure, summary = sys.argv[1], sys.argv[2], sys.argv[3]
limits = {"transaction_info": 50, "transaction_history": 50, "notification_history": 50, "refund_history": 10, "order_lookup": 10}
per = collections.defaultdict(list)
limited = collections.Counter()
for line in open(calls):
    f = line.rstrip("\n").split("\t")
    if len(f) < 4 or f[2] not in limits:
        continue
    key = (f[1], f[2])
    per[key].append(int(f[0]))
    if f[3].startswith("429"):
        limited[key] += 1
wall, user, sys_s, rss = open(measure).read().split()
s = json.load(open(summary)).get("sweeps", {})
print(f"night    {float(wall):.1f} s wall, {float(user) + float(sys_s):.1f} s CPU, peak RSS {int(rss) / 1024:.1f} MB; "
      f"notifications stored {s.get('notifications')}, histories {s.get('history_customers')} "
      f"({s.get('history_left')} left), job 429s {s.get('rate_limited')}")
for (env, endpoint), times in sorted(per.items()):
    times.sort()
    peak, j = 0, 0
    for i, t in enumerate(times):
        while times[j] <= t - 1000:
            j += 1
        peak = max(peak, i - j + 1)
    limit = limits[endpoint] if env == "production" else max(1, limits[endpoint] // 10)
    span = (times[-1] - times[0]) / 1000 if len(times) > 1 else 0
    used = f", {len(times) / span:.1f}/s over {span:.1f} s = {len(times) / span / limit * 100:.0f}% of Apple's limit" if span >= 1 else ""
    print(f"  {env:10s} {endpoint:21s} {len(times):6,} requests, {limited[(env, endpoint)]:,} got 429, "
          f"busiest second {peak} (limit {limit}/s){used}")
print(f"sweep    429s in all: {sum(limited.values())}")
json.dump([
    {"figure": f"a night of Server API sweeps, {s.get('notifications')} notifications and {s.get('history_customers')} histories",
     "value": f"{float(wall):.1f} s, {float(user) + float(sys_s):.1f} CPU s, {int(rss) / 1024:.1f} MB",
     "floor": f"{sum(limited.values())} answers 429; Apple's limits 50/s"},
], open(os.environ["FIGURES_JSON"], "w"))
PY
python3 "$(dirname "$0")/figures.py" "make bench-api" "$work/figures.json"
