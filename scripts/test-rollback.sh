#!/usr/bin/env bash
# make test-rollback (optional, not part of make test): the rollback of docs/own-database.md with
# the previous release's own binary. Builds the newest tag that is not this build's version
# (PREVIOUS=vX.Y.Z to choose) apart, in .build-previous/, then runs UpgradeTests with
# IAP_PREVIOUS_BIN_DIR pointing at it: the previous binary must take the restored schema as its
# own, run its night and respond, and answer nothing twice.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
swift=${SWIFT:-swift}
version=$(sed -n 's/^let iapReconcileVersion = "\(.*\)"$/\1/p' "$here/Sources/iap-reconcile/Version.swift")
tag=${PREVIOUS:-$(git -C "$here" tag --list 'v*' --sort=-v:refname | grep -vx "v$version" | head -1)}
[ -n "$tag" ] || { echo "test-rollback: no earlier release tag (git tag --list 'v*')" >&2; exit 2; }
commit=$(git -C "$here" rev-parse "$tag^{commit}")
src="$here/.build-previous/src"
if [ "$(cat "$here/.build-previous/commit" 2>/dev/null)" != "$commit" ]; then
  rm -rf "$src" && mkdir -p "$src"
  git -C "$here" archive "$commit" | tar -x -C "$src"
  echo "$commit" > "$here/.build-previous/commit"
fi
echo "== building the previous release $tag ($commit) in .build-previous/"
(cd "$src" && "$swift" build --scratch-path "$here/.build-previous/build" --product iap-reconcile 2>&1 | tail -3)
previous=$(cd "$src" && "$swift" build --scratch-path "$here/.build-previous/build" --show-bin-path)
(cd "$here" && "$swift" build --build-tests 2>&1 | tail -1)
"$here/scripts/pg.sh" start
status=0
eval "$("$here/scripts/pg.sh" env)"
(cd "$here" && IAP_PREVIOUS_BIN_DIR="$previous" IAP_BIN_DIR="$("$swift" build --show-bin-path)" \
  "$swift" test --skip-build --filter UpgradeTests) || status=$?
"$here/scripts/pg.sh" stop
exit $status
