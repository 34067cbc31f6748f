# Shared by demo.sh and the benchmarks: start the cluster and the simulator, stop them on exit.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(cd "$here" && swift build -c release --show-bin-path)
work="$here/.run/$(basename "$0" .sh)"
sim_pid=""

cleanup() {
  # KEEP_CLUSTER=1 leaves the cluster running for inspection (scripts/pg.sh stop ends it)
  if [ "${KEEP_CLUSTER:-}" = 1 ]; then [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; return; fi
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
  "$here/scripts/pg.sh" stop
}

start_everything() {
  trap cleanup EXIT
  "$here/scripts/pg.sh" start
  eval "$("$here/scripts/pg.sh" env)"
  # a fresh database each time: nothing left from an earlier demo, test or benchmark
  psql -qX -d postgres -c "DROP DATABASE IF EXISTS iap WITH (FORCE)" -c "CREATE DATABASE iap"
  rm -rf "$work" && mkdir -p "$work"
}

# start_sim ARGS…: the simulator in the background; sets IAP_VERIFY_URL_* for the job.
start_sim() {
  "$bin/iap-sim" serve --port 0 --port-file "$work/port" --call-log "$work/calls.tsv" "$@" >"$work/sim.log" 2>&1 &
  sim_pid=$!
  # a large truth file takes a few seconds to load and index: wait up to a minute
  for _ in $(seq 600); do [ -s "$work/port" ] && break; sleep 0.1; done
  [ -s "$work/port" ] || { echo "the simulator did not start:"; cat "$work/sim.log"; exit 1; }
  port=$(cat "$work/port")
  export IAP_VERIFY_URL_PRODUCTION="http://127.0.0.1:$port/production/verifyReceipt"
  export IAP_VERIFY_URL_SANDBOX="http://127.0.0.1:$port/sandbox/verifyReceipt"
}

# measure OUT CMD…: runs CMD, writes "wall_s user_s sys_s maxrss_kb" to OUT.
measure() {
  local out=$1; shift
  python3 - "$out" "$@" <<'PY'
import resource, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
t = time.monotonic()
rc = subprocess.call(cmd)
wall = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
open(out, "w").write(f"{wall:.3f} {ru.ru_utime:.3f} {ru.ru_stime:.3f} {ru.ru_maxrss}\n")
sys.exit(rc)
PY
}
