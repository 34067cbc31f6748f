#!/usr/bin/env bash
# Runs `make test` N times in a row in one fresh clone of this repository's HEAD, and prints each
# run's result and every failed test. A hunt for tests that fail at random; not part of CI.
#   scripts/test-repeat.sh [N]        N runs (default 10)
# Variables:
#   REPEAT_DIR   where to clone (default: a new folder under /tmp); kept afterwards, with a log per run
#   REPEAT_REF   what to clone (default HEAD: committed work only, say so before you trust a green row)
#   TEST_FLAGS   passed to `make test` (e.g. --filter SignedData)
# Exits 0 when every run passed, 1 when any failed, 64 on a bad argument.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-10}
case "$runs" in ''|*[!0-9]*|0) echo "test-repeat: N must be a positive whole number, not '$runs'" >&2; exit 64 ;; esac
ref=${REPEAT_REF:-HEAD}
commit=$(git -C "$here" rev-parse --verify "$ref^{commit}" 2>/dev/null) \
  || { echo "test-repeat: '$ref' names no commit in $here" >&2; exit 64; }
if [ -n "$(git -C "$here" status --porcelain --untracked-files=no)" ]; then
  echo "test-repeat: note: the work tree has uncommitted changes; they are not in the clone" >&2
fi
dir=${REPEAT_DIR:-$(mktemp -d /tmp/iap-test-repeat.XXXXXX)}
mkdir -p "$dir"
[ -d "$dir/repo/.git" ] || git clone --quiet --no-hardlinks "$here" "$dir/repo"
git -C "$dir/repo" -c advice.detachedHead=false checkout --quiet --force "$commit"
echo "test-repeat: $runs runs of make test at $(git -C "$dir/repo" log -1 --format='%h %s' | cut -c1-80), in $dir/repo"

failed_runs=0
for i in $(seq 1 "$runs"); do
  log="$dir/run-$i.log"
  start=$(date +%s)
  status=0
  (cd "$dir/repo" && make test TEST_FLAGS="${TEST_FLAGS:-}") >"$log" 2>&1 || status=$?
  took=$(( $(date +%s) - start ))
  closing=$(grep -E '^(✔|✘) Test run with' "$log" | tail -1 || true)
  if [ "$status" = 0 ]; then
    printf 'run %d/%d: passed in %ds  %s\n' "$i" "$runs" "$took" "$closing"
  else
    failed_runs=$((failed_runs + 1))
    printf 'run %d/%d: FAILED (exit %s) in %ds  %s\n' "$i" "$runs" "$status" "$took" "${closing:-no closing line: see $log}"
    # Swift Testing's failures, then XCTest's; the first 40 lines of them.
    grep -E '^✘ Test .* (recorded an issue|failed)|error: -\[|: error: ' "$log" | grep -v '^✘ Test run with' | head -40 | sed 's/^/    /' || true
  fi
done
echo "test-repeat: $((runs - failed_runs)) of $runs runs passed; logs in $dir"
[ "$failed_runs" = 0 ]
