#!/usr/bin/env bash
# make demo: a throwaway Postgres, a few thousand generated orders with every kind of finding,
# the App Store and Google Play simulators (with some latency and faults), one night, a summary and
# the reports, each compared with what the generator knows to be true.
# DEMO_STORES: `both` (the default): a shop selling on the App Store and Google Play, 300 Play
# players of every Play family beside the App Store's (PLAY_* variables pointing at the simulator
# on loopback); every report ends with `store` and acknowledge.csv is written and compared too.
# `app_store`: no Google Play setting, the reports as an Apple-only shop gets them.
# DEMO_AS_OF=2026-12-01T03:00:00Z: the night of Tests/Golden/demo-2026-12-01 (what the generator and
# the night give with no Google Play setting, committed before Play): DEMO_STORES defaults to
# `app_store` for it, and its CSVs must equal the golden files byte for byte, or the demo fails.
# Any other time: the reports are only compared with the generator's. Google Play needs an as-of
# within 8 days before now (Google lists voided purchases by its own clock: `iap-sim seed --help`).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
start_everything
as_of=${DEMO_AS_OF:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
golden="$here/Tests/Golden/demo-$(date -u -d "$as_of" +%Y-%m-%d)"
golden_night=0
[ -d "$golden" ] && [ "$(cat "$golden/AS_OF")" = "$as_of" ] && golden_night=1
if [ "$golden_night" = 1 ]; then stores=${DEMO_STORES:-app_store}; else stores=${DEMO_STORES:-both}; fi
case "$stores" in both | app_store) ;; *) echo "demo: DEMO_STORES must be both or app_store, not $stores" >&2; exit 64 ;; esac
secret="demo-shared-secret"
play_package=com.example.game
play_subscription=projects/iap-demo/subscriptions/iap-reconcile

play_seed=() play_sim=()
if [ "$stores" = both ]; then
  play_seed=(--play-users 300 --play-package "$play_package" --play-truth "$work/play-truth.tsv")
fi
echo "== generating 3000 users' orders, receipts and grants (as of $as_of)"
echo "   a quarter of them upload StoreKit 2 signed transactions, signed by a test PKI in $work/pki"
[ "$stores" = both ] && echo "   and 300 Google Play players ($play_package), what Google knows in $work/play-truth.tsv"
"$bin/iap-sim" seed --users 3000 --seed 2026 --as-of "$as_of" --bundle com.example.game \
  --refunds "$work/refunds.csv" --expected "$work/expected" --pki "$work/pki" --apple-truth "$work/apple-truth.tsv" \
  --expect-proceeds "${play_seed[@]}"
if [ "$stores" = both ]; then
  # A Google Cloud service-account key of our own (the Cloud console gives you a JSON file like it)
  "$bin/iap-sim" play-key --out "$work/play-key.json" 2>/dev/null
  play_sim=(--play-service-account "$work/play-key.json" --play-truth "$work/play-truth.tsv"
    --play-subscription "$play_subscription")
fi
# An In-App Purchase key of our own (App Store Connect gives you a .p8 file like it)
"$bin/iap-sim" keygen --out "$work/key.p8" >/dev/null
export IAP_ISSUER_ID=57246542-96fe-1a63-e053-0824d011072a IAP_KEY_ID=DEMOKEY001 IAP_PRIVATE_KEY_FILE="$work/key.p8"
# An App Store Connect team key (Sales role), another .p8, for Apple's daily sales reports
"$bin/iap-sim" keygen --out "$work/team.p8" >/dev/null
export ASC_ISSUER_ID=69a6de7f-7d4c-47e3-e053-5b8c7c11a4d1 ASC_KEY_ID=DEMOTEAM01 ASC_PRIVATE_KEY_FILE="$work/team.p8" \
  ASC_VENDOR_NUMBER=85012345
echo "== the simulator: verifyReceipt, the App Store Server API and the daily sales reports, from the same truth"
[ "$stores" = both ] && echo "   and Google Play: the token endpoint, purchases, orders, voided purchases and Pub/Sub"
start_sim --shared-secret "$secret" --refunds "$work/refunds.csv" --latency-ms 20 --fault-rate 0.1 --seed 2026 \
  --pki "$work/pki" --apple-truth "$work/apple-truth.tsv" --api-key "$work/key.p8" --api-key-id "$IAP_KEY_ID" \
  --api-issuer "$IAP_ISSUER_ID" --api-bundle com.example.game --connect-key "$work/team.p8" "${play_sim[@]}"
export IAP_API_URL_PRODUCTION="http://127.0.0.1:$port/production" IAP_API_URL_SANDBOX="http://127.0.0.1:$port/sandbox"
export ASC_API_URL="http://127.0.0.1:$port"
if [ "$stores" = both ]; then
  export PLAY_SERVICE_ACCOUNT_FILE="$work/play-key.json" PLAY_PACKAGE_NAMES="$play_package" \
    PLAY_API_URL="http://127.0.0.1:$port" PLAY_TOKEN_URL="http://127.0.0.1:$port/token" \
    PLAY_PUBSUB_URL="http://127.0.0.1:$port" PLAY_PUBSUB_SUBSCRIPTION="$play_subscription"
fi

export IAP_SHARED_SECRET="$secret" IAP_BUNDLE_IDS=com.example.game
# the test PKI's root stands in for Apple Root CA - G3 (embedded in the job, used when this is unset)
export IAP_ROOT_CERTIFICATES="$work/pki/root.pem"
echo "== the night: iap-reconcile run (the simulator fails 10% of the requests on purpose)"
# --retry-delay-minutes 0: a receipt the faults leave unresolved may be asked again at once
# (a real night waits 10 minutes, doubled per failed run), so the rerun below can show it.
"$bin/iap-reconcile" run --as-of "$as_of" --out "$here/reports" --timeout-ms 2000 --retry-base-ms 50 \
  --retry-delay-minutes 0
cp "$here/reports/last-run.json" "$work/first-run.json"

echo
echo "== Apple's refund requests: iap-reconcile respond --now $as_of --send"
echo "   (each answered once, inside its 12 hours, from what the rules say about the purchase;"
echo "    the night below lists them in consumption_requests.csv)"
"$bin/iap-reconcile" respond --now "$as_of" --send --no-progress --timeout-ms 2000 --retry-base-ms 50 \
  > "$work/respond.txt"
# Its first line, then the first request of each kind of answer (all of them in respond.txt).
{ head -1 "$work/respond.txt"
  for kind in ": sent " ": no_consent" ": expired" ": not_judged" ": Apple refused"; do
    grep -m1 -F -- "$kind" "$work/respond.txt" || true
  done; } | cut -c1-170 | sed 's/^/  /'
echo "  … (every request decided: $work/respond.txt)"

echo
echo "== run again: receipts the faults left unresolved are asked again, nothing else is"
echo "   (the reports for the date are replaced whole; refund requests now listed with their answers)"
"$bin/iap-reconcile" run --as-of "$as_of" --out "$here/reports" --timeout-ms 2000 --retry-base-ms 50 \
  --retry-delay-minutes 0 --no-progress --report-timezone Asia/Shanghai

day=$(date -u -d "$as_of" +%Y-%m-%d)
# The demo's times, in docs/figures.md (scripts/figures.py).
python3 - "$work/first-run.json" "$here/reports/last-run.json" "$work/figures.json" "$stores" <<'PY'
import datetime, json, sys
def seconds(path):
    d = json.load(open(path))
    at = lambda t: datetime.datetime.fromisoformat(t.replace("Z", "+00:00"))
    return (at(d["written_at"]) - at(d["started_at"])).total_seconds(), d.get("seconds", {})
first, stages = seconds(sys.argv[1])
second, _ = seconds(sys.argv[2])
json.dump([
    {"figure": "make demo: the first night, 3,000 users" + (" and 300 Google Play players" if sys.argv[4] == "both" else "")
               + ", 10% of Apple's answers failed on purpose",
     "value": f"{first:.1f} s", "floor": "the sweeps " + f"{stages.get('sweep', 0):.1f} s" + " at the simulator's rate limits"},
    {"figure": "make demo: the night again", "value": f"{second:.1f} s", "floor": ""},
], open(sys.argv[3], "w"))
PY
python3 "$here/scripts/figures.py" "make demo" "$work/figures.json" >/dev/null
echo
echo "== what the generator knows to be true, compared with the reports"
echo "   (receipts still unresolved are the simulator's malformed ones: 21002 is definitive after 3 runs)"
compared=(compensate.csv duplicate_grants.csv clawback.csv refunds.csv unattributed.csv input_errors.csv
  consumption_requests.csv coverage.csv)
[ "$stores" = both ] && compared+=(acknowledge.csv)
truth_differs=0
for f in "${compared[@]}"; do
  if cmp -s "$work/expected/$f" "$here/reports/$day/$f"; then verdict="matches"; else verdict="DIFFERS"; truth_differs=1; fi
  if [ "$stores" = both ] && [ -e "$here/reports/$day/$f" ]; then
    play_rows=$(grep -c ',google_play'$'\r''$' "$here/reports/$day/$f" || true)
    printf '  %-24s %6d rows (%4d of Google Play)  %s\n' "$f" "$(($(wc -l < "$here/reports/$day/$f") - 1))" "$play_rows" "$verdict"
  else
    printf '  %-24s %6d rows  %s\n' "$f" "$(($(wc -l < "$here/reports/$day/$f" 2>/dev/null || echo 1) - 1))" "$verdict"
  fi
done
[ "$truth_differs" = 0 ] || echo "   (a file that DIFFERS: diff $work/expected/<file> $here/reports/$day/<file>)"
if [ "$golden_night" = 1 ] && [ "$stores" = both ]; then
  echo
  echo "== not compared with the golden files of this night ($golden): they are the night without Google Play"
  echo "   (DEMO_STORES=app_store, the default for this as-of, compares them)"
elif [ "$golden_night" = 1 ]; then
  echo
  echo "== the golden files of this night ($golden: no Google Play setting, committed before Play)"
  differ=0
  for g in "$golden"/*.csv; do
    f=$(basename "$g")
    if [ "$f" = unresolved.csv ]; then
      # attempts and last_attempt_at are the faults' and the clock's (README.md there)
      same() { python3 -c 'import csv,sys; rows=lambda p: [r[:4] + r[5:7] for r in csv.reader(open(p))]; sys.exit(rows(sys.argv[1]) != rows(sys.argv[2]))' "$1" "$2"; }
    else
      same() { cmp -s "$1" "$2"; }
    fi
    if same "$g" "$here/reports/$day/$f"; then verdict="equal"; else verdict="DIFFERS"; differ=1; fi
    printf '  %-24s %s\n' "$f" "$verdict"
  done
  for f in "$here/reports/$day"/*.csv; do
    [ -e "$golden/$(basename "$f")" ] || { printf '  %-24s %s\n' "$(basename "$f")" "NEW (not in the golden files)"; differ=1; }
  done
  [ "$differ" = 0 ] || { echo "demo: the reports differ from the golden files of $as_of (diff -r $golden $here/reports/$day)" >&2; exit 1; }
fi
echo
echo "reports: $here/reports/$day/"
ls -1 "$here/reports/$day/" | sed 's/^/  /'
echo "for people:"
echo "  workbook (times in Asia/Shanghai): $here/reports/$day/reconciliation.xlsx"
echo "  one-page summary:                 $here/reports/$day/summary.html"
echo "  the last run, for monitoring:     $here/reports/last-run.json"
echo "first rows of compensate.csv:"
head -4 "$here/reports/$day/compensate.csv" | sed 's/^/  /'
echo "money per currency (summary.json: owed to players, to claw back, refunded by Apple; proceeds_*: what"
echo "  Apple pays us for the same rows, from its daily sales reports, in the proceeds currency):"
python3 - "$here/reports/$day/summary.json" <<'PY'
import json, sys
for currency, kinds in sorted(json.load(open(sys.argv[1])).get("money", {}).items()):
    print("  " + currency + "  " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
PY
echo "Apple's daily sales reports (summary.json sales_reports):"
python3 - "$here/reports/$day/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])).get("sales_reports", {})
print(f"  window {s.get('window', {}).get('from')} to {s.get('window', {}).get('to')} ({s.get('window', {}).get('time_zone')}): "
      f"{len(s.get('held', []))} days held tonight, {len(s.get('empty', []))} empty, {s.get('held_before', 0)} held before, "
      f"{len(s.get('not_yet_published', []))} not yet published, {len(s.get('errors', []))} errors; "
      f"{s.get('rows_kept', 0)} rows kept, {s.get('requests', 0)} requests")
PY
echo "refund requests (summary.json refund_requests; outcomes come 12 to 18 hours after a request):"
python3 - "$here/reports/$day/summary.json" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
f = summary.get("refund_requests", {})
print(f"  {f.get('requests', 0)} requests, {f.get('answered_in_time', 0)} answered in time; "
      f"refunded {f.get('refunded', 0)}, declined {f.get('declined', 0)}, pending {f.get('pending', 0)}")
print("  answers: " + ", ".join(f"{k} {v}" for k, v in sorted(f.get("answers", {}).items())))
declined = {c: k["refund_declined"] for c, k in sorted(summary.get("money", {}).items()) if "refund_declined" in k}
print("  refunds declined: " + (", ".join(f"{c} {v}" for c, v in declined.items()) or "none"))
PY

echo "app receipts (summary.json verification.receipts_offline; the simulator's receipts are JSON tokens,"
echo "  which only verifyReceipt reads: --receipts auto sends them on as malformed):"
python3 - "$here/reports/$day/summary.json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1])).get("verification", {}).get("receipts_offline", {})
listed = lambda d: ", ".join(f"{k} {v}" for k, v in sorted(d.items())) or "none"
print(f"  --receipts {o.get('mode')}: {o.get('verified', 0)} verified offline, rejected: {listed(o.get('rejected', {}))}; "
      f"sent to verifyReceipt: {listed(o.get('to_verify_receipt', {}))}")
PY

# Apple's own receipts, verified on this machine against the embedded Apple Root CA, with
# verifyReceipt out of reach: two public receipts (Tests/AppStoreTests/Fixtures/receipts, their
# provenance there) in a source schema of their own, a job schema of their own.
echo
echo "== two real Apple receipts (2015 sandbox, SHA-1; 2024 production, SHA-256), --receipts offline,"
echo "   verifyReceipt unreachable: iap-reconcile verify --source-schema apple_receipts"
psql -qX -v ON_ERROR_STOP=1 <<SQL
CREATE SCHEMA apple_receipts;
CREATE TABLE apple_receipts.iap_products (LIKE public.iap_products);
CREATE TABLE apple_receipts.iap_orders (LIKE public.iap_orders);
CREATE TABLE apple_receipts.iap_grants (LIKE public.iap_grants);
CREATE TABLE apple_receipts.iap_receipts (LIKE public.iap_receipts INCLUDING ALL);
INSERT INTO apple_receipts.iap_receipts (receipt_id, user_id, receipt_data, submitted_at) VALUES
  ('APPLE-2015', 'U-real-1', '$(tr -d '\n' < "$here/Tests/AppStoreTests/Fixtures/receipts/sandbox-2015.b64")', now() - interval '1 hour'),
  ('APPLE-2024', 'U-real-2', '$(tr -d '\n' < "$here/Tests/AppStoreTests/Fixtures/receipts/production-2024.b64")', now() - interval '1 hour');
SQL
"$bin/iap-reconcile" migrate --job-schema apple_receipts_job >/dev/null
# Not the demo game's: no bundle list, no Server API key (their apps are not ours).
env -u IAP_BUNDLE_IDS -u IAP_ISSUER_ID -u IAP_KEY_ID -u IAP_PRIVATE_KEY_FILE \
  IAP_VERIFY_URL_PRODUCTION=http://127.0.0.1:9/verifyReceipt IAP_VERIFY_URL_SANDBOX=http://127.0.0.1:9/verifyReceipt \
  "$bin/iap-reconcile" verify --receipts offline --source-schema apple_receipts --job-schema apple_receipts_job \
  --no-progress --log-level error 2>&1 | sed 's/^/  /'
psql -qAtX -F ' ' -c "SELECT '  ' || s.receipt_id, s.verdict, s.environment, count(t.transaction_id) || ' purchases learned'
  FROM apple_receipts_job.receipt_state s LEFT JOIN apple_receipts_job.receipt_transactions t USING (receipt_id)
  GROUP BY 1, 2, 3 ORDER BY 1"

# Customer service: a player forwards Apple's invoice e-mail. The order ID of a missed purchase:
missed=$(awk -F, 'NR > 1 && $11 == "paid_not_granted" && $9 == "production" { print $6; exit }' "$here/reports/$day/compensate.csv")
order=$(awk -F'\t' -v t="$missed" '$1 == t { print $13; exit }' "$work/apple-truth.tsv")
if [ -n "$order" ]; then
  echo
  echo "== customer service: iap-reconcile lookup $order (the order ID on the player's invoice)"
  "$bin/iap-reconcile" lookup "$order" | sed 's/^/  /' || true
fi
# The same for a Google Play player: the GPA order id of his receipt e-mail, missed by the shop.
gpa=$(awk -F, 'NR > 1 && $NF == "google_play\r" && $6 ~ /^GPA\./ { print $6; exit }' "$here/reports/$day/compensate.csv")
if [ "$stores" = both ] && [ -n "$gpa" ]; then
  echo
  echo "== customer service: iap-reconcile lookup $gpa (Google Play's order number on the player's receipt)"
  "$bin/iap-reconcile" lookup "$gpa" | sed 's/^/  /' || true
fi
if [ "$truth_differs" = 1 ]; then
  echo "demo: a report differs from the generator's truth (listed above as DIFFERS)" >&2
  exit 1
fi
