#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests (Debian's `postgresql` package): a cluster in a temporary
# directory, reachable on a unix socket and 127.0.0.1:$PORT only, fsync on.
#
#   scripts/postgres-test-cluster.sh start [DIR] [PORT]   prints the URL to export as FIREGATE_TEST_STORE
#   scripts/postgres-test-cluster.sh stop DIR
#
# initdb refuses to run as root, so as root the cluster belongs to the `postgres` user.
set -euo pipefail

bindir() {
    if command -v initdb >/dev/null 2>&1; then dirname "$(readlink -f "$(command -v initdb)")"; return; fi
    local found
    found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
    [ -n "$found" ] || { echo "PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 2; }
    echo "$found"
}

as_owner() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "${1:-}" in
start)
    dir="${2:-$(mktemp -d /tmp/firegate-pg.XXXXXX)}"
    port="${3:-55432}"
    bin="$(bindir)"
    mkdir -p "$dir"
    if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir"; fi
    as_owner "$bin/initdb" -D "$dir/data" -U firegate -A trust -E UTF8 --no-sync >"$dir/initdb.log"
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
        -o "-c listen_addresses=127.0.0.1 -k $dir -p $port -c max_connections=300 -c shared_buffers=64MB" start >/dev/null
    echo "postgresql:///postgres?host=$dir&port=$port&user=firegate"
    ;;
stop)
    dir="${2:?usage: $0 stop DIR}"
    as_owner "$(bindir)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start [DIR] [PORT] | stop DIR" >&2
    exit 2
    ;;
esac
