#!/usr/bin/env bash
# make bench-api: the job's own rate budget for the App Store Server API.
# 6,000 Get Transaction Info calls (the refund sweep of StoreKit 2 uploads). The simulator allows
# 200 calls a second to that endpoint (sliding one-second window, 429 + Retry-After beyond) and
# answers after 20 ms. Run 1: the job's budget is 200/s: it must reach >= 95% of it (190/s) and
# receive no 429. Run 2 (control): budget 400/s: it must receive 429s, proof that the
# simulator's limit bites. BENCH_API_CALLS (default 6000) sets the size.
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
"$bin/iap-reconcile" verify --as-of "$as_of" --sweep-limit 0 --no-progress

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
    --api-rate "transaction_info=$budget" --retry-base-ms 50 || true
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
