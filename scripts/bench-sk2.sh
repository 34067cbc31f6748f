#!/usr/bin/env bash
# make bench-sk2: StoreKit 2 uploads (signed transactions, JWS) verified offline by
# `iap-reconcile verify`, against this machine's ES256 floor.
# BENCH_SK2_USERS (default 35000, 53,794 uploads): generated users, every upload signed
# (`iap-sim seed --storekit2-share 1`), all of them unresolved; the few app receipts the
# generator still makes are verified in a first run, not measured.
# Prints, for the verify command as a whole: signed uploads per second and their ratio to the
# floor (swift-crypto's P-256 verification rate on every core, 1,024 distinct signatures by one key
# over the uploads' signing-input size checked in turn, `iap-sim es256-floor`; one signature again
# and again, for comparison only (the branch predictor learns it), and `openssl speed -multi` beside it
# for reference), the job's CPU per 1,000 uploads beside the
# floor's own, Postgres's CPU per 1,000 (its backends, reaped by the postmaster: the
# postmaster's cutime + cstime before and after), and peak RSS. The verdicts are then checked:
# a night on the verified data must write the generator's expected reports (genuine, tampered,
# another app's, an unknown root, the sandbox each lead to their own rows).
# BENCH_SK2_ROUNDS (default 3): verify runs, each with the floor measured before and after it; the
# figures are the rounds' medians, the ratio each round's rate over the mean of its two floors.
# BENCH_VS=DIR: measure that build's iap-reconcile instead (e.g. main's, for the figure before a
# change); the generator and the floor stay this build's.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
start_everything
users=${BENCH_SK2_USERS:-35000}
as_of=2026-11-21T03:00:00Z
bundle=com.example.game
job=${BENCH_VS:-$bin}

echo "== generating $users users, every upload a signed transaction"
"$bin/iap-sim" seed --users "$users" --seed 11 --as-of "$as_of" --bundle "$bundle" --pki "$work/pki" \
  --storekit2-share 1 --refunds "$work/refunds.csv" --expected "$work/expected" >/dev/null
start_sim --refunds "$work/refunds.csv"
export IAP_BUNDLE_IDS=$bundle IAP_ROOT_CERTIFICATES="$work/pki/root.pem"
"$job/iap-reconcile" migrate
# The generator's app receipts (the scenarios StoreKit 2 cannot play) go to the simulator in a
# first, unmeasured run: their retries wait --retry-base-ms (0.5 s, doubling) between attempts,
# 3.5 s for a receipt asked four times, which would time Apple's pace, not the signed path. Then
# every signed upload is made unresolved: none settled at upload (the app's verify_status), the
# first run's records of the few it verified removed, and a window (--window-days, for verify
# only) that holds every upload.
echo "== the app receipts first (not measured)"
"$job/iap-reconcile" verify --as-of "$as_of" --window-days 3650 --sweep-limit 0 --no-progress
# Made unresolved again before every round (the rounds measure the same work).
unresolve() {
  psql -qX -v ON_ERROR_STOP=1 <<'SQL'
UPDATE iap_receipts SET verify_status = NULL WHERE receipt_data LIKE '%.%.%' AND verify_status IS NOT NULL;
DELETE FROM recon.verify_attempts a USING recon.receipt_state s WHERE s.receipt_id = a.receipt_id AND s.kind = 'signed_transaction';
DELETE FROM recon.receipt_transactions a USING recon.receipt_state s WHERE s.receipt_id = a.receipt_id AND s.kind = 'signed_transaction';
DELETE FROM recon.receipt_state WHERE kind = 'signed_transaction';
DELETE FROM recon.apple_transactions WHERE source = 'signed_transaction';
-- The app receipts the first run left unresolved wait for a later night: none is asked again.
UPDATE recon.receipt_state SET next_eligible_at = 'infinity' WHERE NOT definitive;
VACUUM ANALYZE;
CHECKPOINT;
SQL
}
signed=$(psql -AtX -c "SELECT count(*) FROM iap_receipts WHERE receipt_data LIKE '%.%.%'")
# The floor signs what the uploads sign: their mean `header.payload` length.
signing=$(psql -AtX -c "SELECT round(avg(length(receipt_data) - length(split_part(receipt_data, '.', 3)) - 1)) FROM iap_receipts WHERE receipt_data LIKE '%.%.%'")

openssl speed -seconds 3 -multi "$(nproc)" ecdsap256 2>/dev/null | awk '/256 bits ecdsa/ {print $(NF)}' | tail -1 > "$work/openssl.txt" || true
echo "== openssl speed -multi $(nproc) ecdsap256 (for reference): $(cat "$work/openssl.txt") verify/s"
# For comparison only: one signature checked again and again, which the branch predictor learns.
"$bin/iap-sim" es256-floor --seconds 3 --message-bytes "$signing" --signatures 1 > "$work/one-signature.txt"
echo "== one signature again and again (for comparison): $(cat "$work/one-signature.txt")"

# Postgres's CPU: its backends' time, added to the postmaster's cutime and cstime as it reaps
# them (the job's sessions end with the command).
postmaster=$(ps -o ppid= -p "$(psql -AtX -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")" | tr -d ' ')
pg_cpu() { awk '{print $16 + $17}' "/proc/$postmaster/stat"; }
# The floor before and after each round (swift-crypto's P-256 verification on every core, 3 s,
# over the uploads' signing-input size); the round's ratio is its rate over their mean, as in
# `make bench`: the machine's pace drifts, and a floor measured once moved the ratio by 5 points.
rounds=${BENCH_SK2_ROUNDS:-3}
: > "$work/rounds.txt"
for round in $(seq "$rounds"); do
  unresolve
  floor_before=$("$bin/iap-sim" es256-floor --seconds 3 --message-bytes "$signing")
  pg_before=$(pg_cpu)
  echo "== round $round of $rounds: verifying $signed signed uploads (floor before: $floor_before)"
  measure "$work/verify.time" "$job/iap-reconcile" verify --as-of "$as_of" --window-days 3650 --sweep-limit 0 --no-progress
  # The job's backends end with it; the postmaster counts them once it has reaped them.
  sleep 1
  pg_after=$(pg_cpu)
  floor_after=$("$bin/iap-sim" es256-floor --seconds 3 --message-bytes "$signing")
  verified=$(psql -AtX -c "SELECT count(*) FROM recon.receipt_state WHERE kind = 'signed_transaction' AND definitive")
  echo "$verified $(cat "$work/verify.time") $((pg_after - pg_before)) $floor_before $floor_after" >> "$work/rounds.txt"
done

echo "== the verdicts: a night on the verified data against the generator's truth"
"$job/iap-reconcile" run --as-of "$as_of" --out "$work/reports" --no-progress > "$work/night.log" 2>&1
verdict="all six equal the generator's truth"
for f in compensate.csv duplicate_grants.csv clawback.csv refunds.csv unattributed.csv input_errors.csv; do
  cmp -s "$work/expected/$f" "$work/reports"/*/"$f" || verdict="DIFFER from the generator's truth: $f"
done

FIGURES_JSON="$work/figures.json" python3 - "$signed" "$(getconf CLK_TCK)" "$(nproc)" "$work/rounds.txt" "$(cat "$work/openssl.txt")" "$(cat "$work/one-signature.txt")" <<'PY' | tee "$work/result.txt"
import json, os, sys, statistics
signed, tck, cores = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
openssl = sys.argv[5].strip()
one = sys.argv[6].split()  # es256 verifications/s R cpu_per_1000 C threads T signatures 1
rounds = []
for line in open(sys.argv[4]):
    f = line.split()
    # verified, wall, user, sys, rss, postgres ticks, then the two floors, each
    # "es256 verifications/s R cpu_per_1000 C threads T signatures N"
    verified, wall, user, sys_, rss, pg = int(f[0]), float(f[1]), float(f[2]), float(f[3]), int(f[4]), int(f[5]) / tck
    before, after = f[6:15], f[15:24]
    floor = (float(before[2]) + float(after[2])) / 2
    floor_cpu = (float(before[4]) + float(after[4])) / 2
    rate = verified / wall
    rounds.append(dict(verified=verified, wall=wall, rate=rate, ratio=rate / floor, floor=floor, floors=(float(before[2]), float(after[2])),
                       job=(user + sys_) / verified * 1000, floor_cpu=floor_cpu, jobratio=(user + sys_) / verified * 1000 / floor_cpu,
                       pg=pg / verified * 1000, rss=rss))
med = lambda k: statistics.median(r[k] for r in rounds)
each = lambda k, fmt: ", ".join(fmt.format(r[k]) for r in rounds)
verified = ", ".join(format(r["verified"], ",") for r in rounds)
print(f"signed uploads           {signed:,} ({verified} verified per round, each definitive)")
print(f"ES256 floor              {med('floor'):,.0f} verifications/s (median of the rounds' means; swift-crypto, {cores} threads, "
      f"1,024 distinct signatures in turn; before/after: {'; '.join(f'{b:,.0f}/{a:,.0f}' for b, a in (r['floors'] for r in rounds))}); "
      f"openssl speed -multi: {openssl or 'n/a'} verify/s")
print(f"one signature again      {float(one[2]):,.0f} verifications/s, CPU per 1,000 {float(one[4]):.4f} s (for comparison: "
      f"the branch predictor learns one signature; against it the job / floor would be {med('job') / float(one[4]):.2f})")
print(f"uploads per second       {med('rate'):,.0f} over the whole command (median; each round: {each('rate', '{:,.0f}')}; walls {each('wall', '{:.2f}')} s)")
print(f"ratio to the floor       {med('ratio') * 100:.0f}% (median of the rounds' ratios, each its rate over the mean of the floors around it; "
      f"each round: {each('ratio', '{:.2f}')}; target >= 50%)")
print(f"job CPU per 1,000        {med('job'):.3f} s (median); the floor's own {med('floor_cpu'):.3f} s; "
      f"job / floor {med('jobratio'):.2f} (each round: {each('jobratio', '{:.2f}')}; target <= 1.3)")
print(f"Postgres CPU per 1,000   {med('pg'):.3f} s (median; each round: {each('pg', '{:.3f}')})")
print(f"peak RSS                 {max(r['rss'] for r in rounds) / 1024:.1f} MB")
json.dump([
    {"figure": f"signed uploads verified offline, {signed:,} uploads, {len(rounds)} round(s)", "value": f"{med('rate'):,.0f} uploads/s",
     "floor": f"{med('ratio') * 100:.0f}% of the ES256 floor ({med('floor'):,.0f}/s on {cores} cores); target ≥ 50%"},
    {"figure": "signed uploads, job CPU per 1,000", "value": f"{med('job'):.3f} CPU s",
     "floor": f"{med('jobratio'):.2f} × the floor's own; target ≤ 1.3"},
    {"figure": "signed uploads, peak RSS", "value": f"{max(r['rss'] for r in rounds) / 1024:.1f} MB", "floor": ""},
], open(os.environ["FIGURES_JSON"], "w"))
PY
echo "verdicts                 $verdict" | tee -a "$work/result.txt"
python3 "$(dirname "$0")/figures.py" "make bench-sk2" "$work/figures.json"
