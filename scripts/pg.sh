#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests, the demo and the benchmarks.
#   scripts/pg.sh start   create (once) and start it; prints nothing but errors
#   scripts/pg.sh stop    stop it and delete it
#   scripts/pg.sh env     print the libpq variables to reach it (eval "$(scripts/pg.sh env)")
# It listens on a unix socket only, in its own folder. initdb and postgres refuse to run as
# root, so as root the cluster lives in a folder owned by the postgres user (under /tmp, which
# that user can always reach) and the server programs run through `runuser -u postgres`.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
state="$here/.pg"
bindir=$(pg_config --bindir 2>/dev/null || true)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && bindir=$d; done
fi
[ -x "${bindir:-}/initdb" ] || { echo "pg.sh: PostgreSQL server programs not found: install postgresql (apt-get install postgresql)" >&2; exit 1; }

as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

# The server outlives this script: it must not inherit a descriptor beyond 0-2, such as the
# `flock` lock a caller holds around its build and tests (the server would hold it until stopped).
close_inherited() {
  local fd
  for fd in $(ls /proc/$$/fd 2>/dev/null); do
    [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-" 2>/dev/null || true
  done
}

dir() { cat "$state/dir" 2>/dev/null || true; }

case "${1:-}" in
  start)
    mkdir -p "$state"
    d=$(dir)
    if [ -z "$d" ] || [ ! -d "$d/data" ]; then
      if [ "$(id -u)" = 0 ]; then d=$(mktemp -d /tmp/iap-reconcile-pg.XXXXXX); chown postgres "$d"; else d="$state/cluster"; mkdir -p "$d"; fi
      echo "$d" > "$state/dir"
      as_owner "$bindir/initdb" -D "$d/data" -A trust -U postgres -E UTF8 --locale=C.UTF-8 >"$d/initdb.log" 2>&1 \
        || as_owner "$bindir/initdb" -D "$d/data" -A trust -U postgres -E UTF8 --locale=C >"$d/initdb.log" 2>&1 \
        || { cat "$d/initdb.log" >&2; exit 1; }
    fi
    close_inherited
    if ! as_owner "$bindir/pg_ctl" -D "$d/data" status >/dev/null 2>&1; then
      as_owner "$bindir/pg_ctl" -D "$d/data" -w -t 60 -l "$d/server.log" \
        -o "-k $d -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=256MB -c work_mem=64MB -c maintenance_work_mem=256MB" \
        start >/dev/null || { tail -20 "$d/server.log" >&2; exit 1; }
    fi
    as_owner "$bindir/psql" -h "$d" -U postgres -d postgres -Atqc "SELECT 1 FROM pg_database WHERE datname='iap'" | grep -q 1 \
      || as_owner "$bindir/createdb" -h "$d" -U postgres iap
    ;;
  stop)
    d=$(dir)
    if [ -n "$d" ] && [ -d "$d/data" ]; then
      as_owner "$bindir/pg_ctl" -D "$d/data" -m fast -w stop >/dev/null 2>&1 || true
      rm -rf "$d"
    fi
    rm -rf "$state"
    ;;
  env)
    d=$(dir)
    [ -n "$d" ] || { echo "pg.sh: no cluster: run scripts/pg.sh start" >&2; exit 1; }
    echo "export PGHOST='$d' PGPORT=5432 PGUSER=postgres PGDATABASE=iap"
    ;;
  *) echo "usage: scripts/pg.sh start|stop|env" >&2; exit 64 ;;
esac
