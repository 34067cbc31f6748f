#!/usr/bin/env bash
# make bench-receipts: app receipts (PKCS#7, RSA-2048) verified on our own machine by
# `iap-reconcile verify --receipts offline`, against this machine's RSA floor and against
# verifyReceipt.
# BENCH_RECEIPTS (default 50000): unresolved receipts as a game's look (`iap-sim bench-receipts`:
# 1 to 20 consumable purchases each, mostly 1 or 2, mean printed), then 1,000 receipts of 200
# purchases each; every 500th receipt's signature broken.
# BENCH_RECEIPTS_ROUNDS (default 3): verify runs of each set, each with the floor measured before and
# after it (`iap-sim rsa-floor`: swift-crypto RSA-2048 PKCS#1 v1.5 with SHA-256 on every core, 1,024
# distinct signatures over the receipts' mean signed content); the figures are the rounds' medians.
# Beside them: `openssl speed -multi $(nproc) rsa2048`, and the same mix through verifyReceipt
# (`--receipts verify-receipt`, the simulator answering in 50 ms, 64 requests in flight), once.
# Prints receipts and purchases per second, the ratio to the floor, the job's and Postgres's CPU
# per 1,000 receipts beside the floor's own, peak RSS; the verdicts are checked (every receipt
# valid but the broken ones, rejected as bad_signature; every purchase of a valid one learned).
# BENCH_VS=DIR: measure that build's iap-reconcile instead.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
start_everything
count=${BENCH_RECEIPTS:-50000}
as_of=2026-11-21T03:00:00Z
bundle=com.example.game
job=${BENCH_VS:-$bin}

echo "== the source relations (a few generated users), and the receipts"
"$bin/iap-sim" seed --users 10 --seed 3 --as-of "$as_of" --bundle "$bundle" --pki "$work/pki" --pkcs7-receipts \
  --no-bad-rows >/dev/null
"$bin/iap-sim" bench-receipts --count "$count" --pki "$work/pki" --bundle "$bundle" --as-of "$as_of" --prefix RM \
  --out "$work/mix.tsv" 2> "$work/mix.txt"
"$bin/iap-sim" bench-receipts --count 1000 --entries 200 --pki "$work/pki" --bundle "$bundle" --as-of "$as_of" \
  --prefix RL --first-transaction 5000000000000 --out "$work/large.tsv" 2> "$work/large.txt"
echo "   mix:   $(cat "$work/mix.txt")"
echo "   large: $(cat "$work/large.txt")"
export IAP_BUNDLE_IDS=$bundle IAP_RECEIPT_ROOT_CERTIFICATES="$work/pki/receipt-root.pem" IAP_ROOT_CERTIFICATES="$work/pki/root.pem"
"$job/iap-reconcile" migrate

# load SET: the set's receipts alone, none verified yet (the rounds measure the same work).
load() {
  psql -qX -v ON_ERROR_STOP=1 <<SQL
TRUNCATE recon.verify_attempts, recon.receipt_transactions, recon.receipt_state;
DELETE FROM recon.apple_transactions;
DELETE FROM iap_receipts;
\copy iap_receipts (receipt_id, user_id, order_id, transaction_id, receipt_data, submitted_at, verify_status) FROM '$work/$1.tsv'
VACUUM ANALYZE;
CHECKPOINT;
SQL
}
field() { awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' "$work/$1.txt"; }

openssl speed -seconds 3 -multi "$(nproc)" rsa2048 2>/dev/null | awk '/^rsa 2048 bits/ {print $(NF)}' | tail -1 > "$work/openssl.txt" || true
echo "== openssl speed -multi $(nproc) rsa2048 (for reference): $(cat "$work/openssl.txt") verify/s"

postmaster=$(ps -o ppid= -p "$(psql -AtX -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")" | tr -d ' ')
pg_cpu() { awk '{print $16 + $17}' "/proc/$postmaster/stat"; }
rounds=${BENCH_RECEIPTS_ROUNDS:-3}
for set in mix large; do
  signing=$(field "$set" mean_payload_bytes)
  : > "$work/rounds-$set.txt"
  for round in $(seq "$rounds"); do
    load "$set"
    floor_before=$("$bin/iap-sim" rsa-floor --seconds 3 --message-bytes "$signing")
    pg_before=$(pg_cpu)
    echo "== $set, round $round of $rounds (floor before: $floor_before)"
    measure "$work/verify.time" "$job/iap-reconcile" verify --receipts offline --as-of "$as_of" --window-days 3650 \
      --sweep-limit 0 --no-progress
    sleep 1
    pg_after=$(pg_cpu)
    floor_after=$("$bin/iap-sim" rsa-floor --seconds 3 --message-bytes "$signing")
    valid=$(psql -AtX -c "SELECT count(*) FROM recon.receipt_state WHERE definitive AND verdict = 'valid'")
    rejected=$(psql -AtX -c "SELECT count(*) FROM recon.receipt_state WHERE definitive AND rejection = 'bad_signature'")
    learned=$(psql -AtX -c "SELECT count(*) FROM recon.receipt_transactions")
    echo "$valid $rejected $learned $(cat "$work/verify.time") $((pg_after - pg_before)) $floor_before $floor_after" >> "$work/rounds-$set.txt"
  done
done

echo "== the same mix through verifyReceipt (50 ms, 64 in flight), once"
start_sim --latency-ms 50 --pki "$work/pki"
load mix
measure "$work/vr.time" "$job/iap-reconcile" verify --receipts verify-receipt --as-of "$as_of" --window-days 3650 \
  --sweep-limit 0 --no-progress --concurrency 64
vr_settled=$(psql -AtX -c "SELECT count(*) FROM recon.receipt_state WHERE definitive")

FIGURES_JSON="$work/figures.json" python3 - "$(getconf CLK_TCK)" "$(nproc)" "$work" "$(cat "$work/openssl.txt")" "$vr_settled" <<'PY' | tee "$work/result.txt"
import json, os, sys, statistics
tck, cores, work, openssl, vr_settled = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4].strip(), int(sys.argv[5])
def made(name):
    f = open(f"{work}/{name}.txt").read().split()
    return {f[i]: int(f[i + 1]) for i in range(0, len(f) - 1, 2)}
def rounds(name):
    out = []
    for line in open(f"{work}/rounds-{name}.txt"):
        f = line.split()
        valid, rejected, learned = int(f[0]), int(f[1]), int(f[2])
        wall, user, sys_, rss, pg = float(f[3]), float(f[4]), float(f[5]), int(f[6]), int(f[7]) / tck
        before, after = f[8:17], f[17:26]
        floor = (float(before[2]) + float(after[2])) / 2
        floor_cpu = (float(before[4]) + float(after[4])) / 2
        n = valid + rejected
        out.append(dict(valid=valid, rejected=rejected, learned=learned, wall=wall, rate=n / wall, floor=floor,
                        ratio=(n / wall) / floor, job=(user + sys_) / n * 1000, floor_cpu=floor_cpu,
                        jobratio=(user + sys_) / n * 1000 / floor_cpu, pg=pg / n * 1000, rss=rss))
    return out
mix, large = made("mix"), made("large")
rm, rl = rounds("mix"), rounds("large")
med = lambda rs, k: statistics.median(r[k] for r in rs)
each = lambda rs, k, fmt: ", ".join(fmt.format(r[k]) for r in rs)
vr = open(f"{work}/vr.time").read().split()
vr_rate = vr_settled / float(vr[0])
entries_mix = med(rm, 'rate') * mix['entries'] / mix['receipts']
entries_large = med(rl, 'rate') * large['entries'] / large['receipts']
ok = lambda rs, m: all(r['valid'] == m['receipts'] - m['broken'] and r['rejected'] == m['broken'] and r['learned'] == m['valid_entries'] for r in rs)
print(f"receipts (mix)           {mix['receipts']:,}, {mix['entries']:,} purchases (mean {mix['entries'] / mix['receipts']:.2f}), "
      f"{mix['broken']} broken; large: {large['receipts']:,} of 200")
print(f"RSA-2048 floor           {med(rm, 'floor'):,.0f} verifications/s (swift-crypto, {cores} threads, 1,024 distinct signatures "
      f"over {mix['mean_payload_bytes']} bytes); openssl speed -multi: {openssl or 'n/a'} verify/s")
print(f"mix, receipts/s          {med(rm, 'rate'):,.0f} over the whole command (median; each round: {each(rm, 'rate', '{:,.0f}')}); "
      f"{entries_mix:,.0f} purchases/s; {med(rm, 'ratio') * 100:.0f}% of the floor")
print(f"large, receipts/s        {med(rl, 'rate'):,.0f} (each round: {each(rl, 'rate', '{:,.0f}')}); {entries_large:,.0f} purchases/s, "
      f"{entries_large / entries_mix * 100:.0f}% of the mix's (target >= 80%)")
print(f"job CPU per 1,000        {med(rm, 'job'):.3f} s (mix; large {med(rl, 'job'):.3f} s); the floor's own {med(rm, 'floor_cpu'):.3f} s; "
      f"job / floor {med(rm, 'jobratio'):.2f} (target <= 2)")
print(f"Postgres CPU per 1,000   {med(rm, 'pg'):.3f} s (mix; large {med(rl, 'pg'):.3f} s)")
print(f"verifyReceipt            {vr_rate:,.0f} receipts/s ({vr_settled:,} settled in {float(vr[0]):.1f} s; 50 ms, 64 in flight); "
      f"offline is {med(rm, 'rate') / vr_rate:.1f} x (target >= 10)")
print(f"peak RSS                 {max(r['rss'] for r in rm + rl) / 1024:.1f} MB (target < 100)")
print(f"verdicts                 {'every round: the valid ones valid, the broken ones bad_signature, every purchase learned' if ok(rm, mix) and ok(rl, large) else 'DIFFER from the truth: ' + str(rm + rl)}")
json.dump([
    {"figure": f"app receipts verified offline, {mix['receipts']:,} receipts (mean {mix['entries'] / mix['receipts']:.2f} purchases), {len(rm)} round(s)",
     "value": f"{med(rm, 'rate'):,.0f} receipts/s", "floor": f"{vr_rate:,.0f}/s through verifyReceipt (50 ms, 64 in flight): {med(rm, 'rate') / vr_rate:.1f} ×; target ≥ 10 ×"},
    {"figure": "app receipts offline, job CPU per 1,000", "value": f"{med(rm, 'job'):.3f} CPU s",
     "floor": f"{med(rm, 'jobratio'):.2f} × the RSA-2048 floor's own ({med(rm, 'floor_cpu'):.3f} s); target ≤ 2"},
    {"figure": "app receipts offline, 200 purchases each", "value": f"{entries_large:,.0f} purchases/s",
     "floor": f"{entries_large / entries_mix * 100:.0f}% of the mix's {entries_mix:,.0f}/s; target ≥ 80%"},
    {"figure": "app receipts offline, peak RSS", "value": f"{max(r['rss'] for r in rm + rl) / 1024:.1f} MB", "floor": "target < 100 MB"},
], open(os.environ["FIGURES_JSON"], "w"))
PY
python3 "$(dirname "$0")/figures.py" "make bench-receipts" "$work/figures.json"
