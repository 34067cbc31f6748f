#!/usr/bin/env bash
# make bench-verify: how fast the verification stage asks the App Store.
# The simulator answers after 50 ms; with 64 requests in flight that allows 64 / 0.05 = 1,280
# requests a second. Target: at least 90% of that (1,152 receipts/s), using under one core.
# BENCH_VERIFY_RECEIPTS (default 20000) sets the size.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
start_everything
n=${BENCH_VERIFY_RECEIPTS:-20000}
as_of=2026-11-21T03:00:00Z

echo "== generating $n production receipts, all unresolved"
"$bin/iap-sim" seed --users "$((n * 3 / 2))" --seed 9 --as-of "$as_of" --no-bad-rows --truth-table >/dev/null
psql -qX -v ON_ERROR_STOP=1 <<SQL
UPDATE iap_receipts SET verify_status = NULL;
-- one request per receipt, so the rate measures the request loop and nothing else: sandbox
-- receipts (two requests each), receipts the simulator answers 21002 (retried with backoff)
-- and receipts outside the window are left out
DELETE FROM iap_receipts WHERE receipt_id NOT IN (
  SELECT receipt_id FROM sim_truth WHERE environment = 'production' AND forced_status IS NULL);
DELETE FROM iap_receipts WHERE submitted_at < timestamptz '$as_of' - interval '30 days' OR submitted_at > timestamptz '$as_of';
DELETE FROM iap_receipts WHERE receipt_id NOT IN (SELECT receipt_id FROM iap_receipts ORDER BY receipt_id LIMIT $n);
VACUUM ANALYZE;
SQL
total=$(psql -AtX -c "SELECT count(*) FROM iap_receipts")
start_sim --latency-ms 50 --seed 9
"$bin/iap-reconcile" migrate

echo "== verifying $total receipts: 64 in flight, 50 ms simulated latency"
# --receipts verify-receipt: every receipt to the simulator, as the benchmark measures (auto would
# verify the generator's PKCS#7 receipts offline; its JSON tokens go to verifyReceipt either way).
measure "$work/verify.time" "$bin/iap-reconcile" verify --as-of "$as_of" --concurrency 64 --sweep-limit 0 --no-progress \
  --receipts verify-receipt
read -r wall user sys rss < "$work/verify.time"
verified=$(psql -AtX -c "SELECT count(*) FROM recon.receipt_state WHERE definitive")
requests=$(wc -l < "$work/calls.tsv")
# the request loop's own span: first answer stored to last answer stored, and the latency the job saw
psql -AtX -F' ' -c "SELECT extract(epoch FROM max(at) - min(at)), avg(elapsed_ms), percentile_cont(0.99) WITHIN GROUP (ORDER BY elapsed_ms) FROM recon.verify_attempts" > "$work/span"
read -r span latency p99 < "$work/span"
FIGURES_JSON="$work/figures.json" python3 - "$verified" "$requests" "$wall" "$user" "$sys" "$rss" "$span" "$latency" "$p99" <<'PY' | tee "$work/result.txt"
import json, os, sys
verified, requests = int(sys.argv[1]), int(sys.argv[2])
wall, user, sys_, rss = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
span, latency, p99 = float(sys.argv[7]), float(sys.argv[8]), float(sys.argv[9])
steady = verified / span
rate = verified / wall
cpu = user + sys_
print(f"receipts verified        {verified} ({requests} requests)")
print(f"request latency seen     {latency:.1f} ms average, {p99:.0f} ms p99 (simulator adds 50 ms)")
print(f"receipts per second      {steady:.0f} while verifying ({steady / 1280 * 100:.0f}% of the 1,280/s that 50 ms x 64 allows; target >= 90%)")
print(f"                         {rate:.0f} over the whole command ({wall:.2f} s, with start-up, migrations, source check)")
print(f"CPU seconds per 1,000    {cpu / verified * 1000:.3f}  (user {user:.2f} s + sys {sys_:.2f} s)")
print(f"cores used               {cpu / wall:.2f}  (target < 1)")
print(f"peak RSS                 {rss / 1024:.1f} MB")
json.dump([
    {"figure": f"verifyReceipt, {verified:,} receipts, 64 in flight, 50 ms latency", "value": f"{steady:.0f} receipts/s",
     "floor": f"{steady / 1280 * 100:.0f}% of the 1,280/s the latency allows; target ≥ 90%"},
    {"figure": "verifyReceipt, CPU per 1,000 receipts", "value": f"{cpu / verified * 1000:.3f} CPU s", "floor": ""},
    {"figure": "verifyReceipt, peak RSS", "value": f"{rss / 1024:.1f} MB", "floor": ""},
], open(os.environ["FIGURES_JSON"], "w"))
PY
python3 "$(dirname "$0")/figures.py" "make bench-verify" "$work/figures.json"
