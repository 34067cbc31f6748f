#!/usr/bin/env bash
# make bench-sk2: StoreKit 2 uploads (signed transactions, JWS) verified offline by
# `iap-reconcile verify`, against this machine's ES256 floor (issue 33).
# BENCH_SK2_USERS (default 35000, 53,794 uploads): generated users, every upload signed
# (`iap-sim seed --storekit2-share 1`), all of them unresolved; the few app receipts the
# generator still makes are verified in a first run, not measured.
# Prints, for the verify command as a whole: signed uploads per second and their ratio to the
# floor (swift-crypto's P-256 verification rate on every core over the uploads' signing-input
# size, `iap-sim es256-floor`, with
# `openssl speed -multi` beside it for reference), the job's CPU per 1,000 uploads beside the
# floor's own, Postgres's CPU per 1,000 (its backends, reaped by the postmaster: the
# postmaster's cutime + cstime before and after), and peak RSS. The verdicts are then checked:
# a night on the verified data must write the generator's expected reports (genuine, tampered,
# another app's, an unknown root, the sandbox each lead to their own rows).
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
psql -qX -v ON_ERROR_STOP=1 <<'SQL'
UPDATE iap_receipts SET verify_status = NULL WHERE receipt_data LIKE '%.%.%';
DELETE FROM recon.verify_attempts a USING recon.receipt_state s WHERE s.receipt_id = a.receipt_id AND s.kind = 'signed_transaction';
DELETE FROM recon.receipt_transactions a USING recon.receipt_state s WHERE s.receipt_id = a.receipt_id AND s.kind = 'signed_transaction';
DELETE FROM recon.receipt_state WHERE kind = 'signed_transaction';
DELETE FROM recon.apple_transactions WHERE source = 'signed_transaction';
VACUUM ANALYZE;
SQL
signed=$(psql -AtX -c "SELECT count(*) FROM iap_receipts WHERE receipt_data LIKE '%.%.%'")
# The floor signs what the uploads sign: their mean `header.payload` length.
signing=$(psql -AtX -c "SELECT round(avg(length(receipt_data) - length(split_part(receipt_data, '.', 3)) - 1)) FROM iap_receipts WHERE receipt_data LIKE '%.%.%'")

echo "== the ES256 floor: swift-crypto on $(nproc) cores, 3 s, $signing-byte messages (openssl speed beside it)"
"$bin/iap-sim" es256-floor --seconds 3 --message-bytes "$signing" | tee "$work/floor.txt"
openssl speed -seconds 3 -multi "$(nproc)" ecdsap256 2>/dev/null | awk '/256 bits ecdsa/ {print $(NF)}' | tail -1 > "$work/openssl.txt" || true
echo "   openssl speed -multi $(nproc) ecdsap256: $(cat "$work/openssl.txt") verify/s"

# Postgres's CPU: its backends' time, added to the postmaster's cutime and cstime as it reaps
# them (the job's sessions end with the command).
postmaster=$(ps -o ppid= -p "$(psql -AtX -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")" | tr -d ' ')
pg_cpu() { awk '{print $16 + $17}' "/proc/$postmaster/stat"; }
pg_before=$(pg_cpu)
echo "== verifying: $signed signed uploads"
measure "$work/verify.time" "$job/iap-reconcile" verify --as-of "$as_of" --window-days 3650 --sweep-limit 0 --no-progress
# The job's backends end with it; the postmaster counts them once it has reaped them.
sleep 1
pg_after=$(pg_cpu)
verified=$(psql -AtX -c "SELECT count(*) FROM recon.receipt_state WHERE kind = 'signed_transaction' AND definitive")

echo "== the verdicts: a night on the verified data against the generator's truth"
"$job/iap-reconcile" run --as-of "$as_of" --out "$work/reports" --no-progress > "$work/night.log" 2>&1
verdict="all six equal the generator's truth"
for f in compensate.csv duplicate_grants.csv clawback.csv refunds.csv unattributed.csv input_errors.csv; do
  cmp -s "$work/expected/$f" "$work/reports"/*/"$f" || verdict="DIFFER from the generator's truth: $f"
done

read -r wall user sys rss < "$work/verify.time"
python3 - "$signed" "$verified" "$wall" "$user" "$sys" "$rss" "$((pg_after - pg_before))" "$(getconf CLK_TCK)" \
  "$(cat "$work/floor.txt")" "$(cat "$work/openssl.txt")" <<'PY' | tee "$work/result.txt"
import sys
signed, verified = int(sys.argv[1]), int(sys.argv[2])
wall, user, sys_, rss = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
pg = int(sys.argv[7]) / int(sys.argv[8])
f = sys.argv[9].split()
floor_rate, floor_cpu = float(f[2]), float(f[4])
openssl = sys.argv[10].strip()
rate = verified / wall
print(f"signed uploads           {signed:,} ({verified:,} verified, each definitive)")
print(f"ES256 floor              {floor_rate:,.0f} verifications/s (swift-crypto, {f[6]} threads); "
      f"openssl speed -multi: {openssl or 'n/a'} verify/s")
print(f"uploads per second       {rate:,.0f} over the whole command ({wall:.2f} s): {rate / floor_rate * 100:.0f}% of the floor (target >= 50%)")
print(f"job CPU per 1,000        {(user + sys_) / verified * 1000:.3f} s (user {user:.2f} + sys {sys_:.2f}); "
      f"the floor's own {floor_cpu:.3f} s, target <= 1.3 x that = {1.3 * floor_cpu:.3f} s")
print(f"Postgres CPU per 1,000   {pg / verified * 1000:.3f} s ({pg:.2f} s in all)")
print(f"peak RSS                 {rss / 1024:.1f} MB")
PY
echo "verdicts                 $verdict" | tee -a "$work/result.txt"
