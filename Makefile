# iap-reconcile — targets:
#   make demo          the night end to end on generated data (App Store and Google Play): throwaway Postgres, simulator, reports
#   make test          unit + integration + end-to-end tests against a real Postgres and the simulator
#   make bench         decide/write at 1M rows: job time vs Postgres's own time, rows/s, peak RSS; BENCH_PLAY_USERS=N: with Google Play players
#   make bench-verify  verification rate and CPU per 1,000 receipts against the simulator (50 ms, 64 in flight)
#   make bench-sk2     StoreKit 2 uploads verified offline against the ES256 floor (swift-crypto on every core)
#   make bench-receipts app receipts (PKCS#7) verified offline against the RSA-2048 floor and verifyReceipt
#   make bench-play    the night's Google Play stage against Google's 3,000 calls a minute (at least 5 minutes)
#   make bench-api     the job's rate budget for the App Store Server API (6,000 calls, simulator limit 200/s)
#   make chaos         the promises under faults: crash loop, database gone, lying App Store, fuzzing,
#                      secrets, privileges, load, unreachable App Store hosts (CHAOS_ARGS=--quick: the
#                      CI form, a few minutes)
#   make fuzz-build    the answer parser's libFuzzer target (.build-fuzz/release/iap-fuzz)
#   make screenshot    summary.html of the latest reports (make demo first) as a PNG, by headless Chromium (optional)
#   make check-workbook  the latest reconciliation.xlsx opened by LibreOffice Calc: ids digit for digit, times in the zone (optional)
#   make check-page    the latest summary.html by headless Chromium at 390 and 1280 px: fails on anything wider than its box (optional; PAGE=file)
#   make format        swift format (.swift-format) on the job's targets;  make format-check  fails on a changed file it would change
#   make graph         the targets, their lines and dependencies; fails where a layering rule breaks (scripts/target-graph.py)
#   make build         debug build;  make release  optimized build
#   make deps          install what is missing (apt, as root) or say what to install
#   make pg-start / pg-stop   the throwaway Postgres cluster (.pg/)
#   make clean         remove build output, the cluster and generated reports
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
SWIFT ?= swift
APT_PACKAGES := libcurl4-openssl-dev libpq-dev zlib1g-dev postgresql pkg-config
# Where Swift packages come from a local mirror owned by another user (root), git refuses to
# read it for an ordinary user ("dubious ownership"), and ignores command-line config for local
# clones. So the build's git calls get a global config of their own (scripts/gitconfig) that
# includes the user's ~/.gitconfig and trusts the mirror. Nothing outside this Makefile changes.
ifneq ($(shell id -u),0)
export GIT_CONFIG_GLOBAL := $(CURDIR)/scripts/gitconfig
endif

.PHONY: format format-check graph demo test bench bench-verify bench-sk2 bench-api bench-receipts bench-play chaos fuzz-build build release deps pg-start pg-stop clean screenshot check-workbook

deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing) >/tmp/iap-reconcile-apt.log 2>&1 \
	      || { tail -20 /tmp/iap-reconcile-apt.log; exit 1; }; \
	  else \
	    echo "missing packages:$$missing"; echo "install them with: sudo apt-get install -y$$missing"; exit 1; \
	  fi; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

pg-start: deps
	@scripts/pg.sh start

pg-stop:
	@scripts/pg.sh stop

test: build
	@scripts/pg.sh start
	@status=0; eval "$$(scripts/pg.sh env)"; \
	  IAP_BIN_DIR="$$($(SWIFT) build --show-bin-path)" $(SWIFT) test $(TEST_FLAGS) || status=$$?; \
	  scripts/pg.sh stop; exit $$status

demo: release
	@scripts/demo.sh

bench: release
	@scripts/bench.sh

bench-verify: release
	@scripts/bench-verify.sh

bench-sk2: release
	@scripts/bench-sk2.sh

bench-api: release
	@scripts/bench-api.sh

bench-receipts: release
	@scripts/bench-receipts.sh

bench-play: release
	@scripts/bench-play.sh

# libFuzzer's instrumentation in a build folder of its own; lld links it (gold fails on it), and
# the package's own entry point calls libFuzzer's driver (Tests/Fuzz/Fuzz.swift).
fuzz-build: deps
	$(SWIFT) build -c release --product iap-fuzz --scratch-path .build-fuzz \
	  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld \
	  -Xlinker -u -Xlinker LLVMFuzzerRunDriver -Xlinker --export-dynamic

chaos: release fuzz-build
	@python3 Tests/Chaos/chaos.py $(CHAOS_ARGS)

# Optional looks at what people get, after `make demo` (not part of make test): they install
# Chromium or LibreOffice Calc with apt when run as root.
screenshot:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/tmp/iap-reconcile-apt.log 2>&1; } \
	  || { echo "install chromium (sudo apt-get install -y chromium)"; exit 1; }
	@day=$$(ls -1d reports/20*/ 2>/dev/null | tail -1); [ -n "$$day" ] || { echo "no reports yet: run make demo first"; exit 1; }; \
	  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=420,2200 \
	    --screenshot="$$PWD/$${day}summary.png" "file://$$PWD/$${day}summary.html" >/dev/null 2>&1; \
	  echo "$${day}summary.png (a phone-wide rendering of $${day}summary.html)"

check-workbook:
	@command -v soffice >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libreoffice-calc) >/tmp/iap-reconcile-apt.log 2>&1; } \
	  || { echo "install LibreOffice Calc (sudo apt-get install -y libreoffice-calc)"; exit 1; }
	@day=$$(ls -1d reports/20*/ 2>/dev/null | tail -1); [ -n "$$day" ] || { echo "no reports yet: run make demo first"; exit 1; }; \
	  python3 scripts/check-workbook.py "$$day"

# PAGE=path/summary.html checks that page instead of the latest reports'.
.PHONY: check-page
check-page:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/tmp/iap-reconcile-apt.log 2>&1; } \
	  || { echo "install chromium (sudo apt-get install -y chromium)"; exit 1; }
	@scripts/check-page.sh $(PAGE)

# The rollback of docs/own-database.md with the previous release's own binary, built apart in
# .build-previous/ (PREVIOUS=vX.Y.Z to choose the tag); optional, not part of make test.
.PHONY: test-rollback
test-rollback: build
	@scripts/test-rollback.sh

clean:
	scripts/pg.sh stop || true
	rm -rf .build .build-fuzz .build-previous .run reports/20*

graph:
	@python3 scripts/target-graph.py

format:
	@scripts/format.sh

format-check:
	@scripts/format.sh --check
