#!/usr/bin/env bash
# make format / make format-check: swift format with .swift-format on the house's Swift files.
#   scripts/format.sh            formats them in place (the targets below; the frozen migration
#                                texts and their history never: their checksums are in every
#                                installed schema)
#   scripts/format.sh --check [BASE]
#                                fails, naming each file, when a Swift file under those targets that
#                                changed since BASE (default: the commit before HEAD; all of them
#                                when there is none) is not as `swift format` leaves it
set -euo pipefail
cd "$(dirname "$0")/.."
swift=${SWIFT:-swift}
roots=(Sources/PlayStore Tests/PlayStoreTests Sources/PlayNight Sources/PlaySimulator Tests/PlaySimulatorTests Sources/JobStore Sources/TransportCore Sources/StoreIO Sources/NightLearn Sources/NightDecide Sources/NightReview Sources/Desk Sources/SimulatorData Sources/iap-reconcile)
formatted() { case "$1" in */Migrations/00*|*/Migrations/MigrationHistory.swift) return 1 ;; *.swift) ;; *) return 1 ;; esac
  for r in "${roots[@]}"; do [[ "$1" == "$r"/* ]] && return 0; done; return 1; }
if [ "${1:-}" != "--check" ]; then
  find "${roots[@]}" -name '*.swift' ! -path '*/Migrations/00*' ! -name MigrationHistory.swift -print0 \
    | xargs -0 "$swift" format format --configuration .swift-format -i
  exit 0
fi
base=${2:-HEAD~1}
if git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  files=$(git diff --name-only --diff-filter=AMR "$base" -- "${roots[@]}")
else
  files=$(find "${roots[@]}" -name '*.swift')
fi
bad=0
for f in $files; do
  formatted "$f" && [ -f "$f" ] || continue
  if ! "$swift" format format --configuration .swift-format "$f" | cmp -s - "$f"; then
    echo "format-check: $f is not as swift format leaves it: run make format" >&2; bad=1
  fi
done
exit $bad
