#!/usr/bin/env bash
# Documents-backend benchmarks (docs/benchmarks.md), all on 127.0.0.1, each phase bounded in time:
#
#   (a) document GET over keep-alive HTTP with wrk, against a release firegate, as a ratio to nginx
#       serving the very same document JSON as a static file in the same run.   target ≥ 0.9×
#       The same for a tree location (GET /bench/item.json?ns=bench), nginx serving its JSON.
#                                                                                 target ≥ 0.75×
#   (b) durable single-document commits over HTTP: many concurrent wrk connections, each request a
#       one-write :commit creating a new document (firegate on a data dir: fsync'd, group commit),
#       against a plain SQLite loop doing one fsync'd transaction per row (WAL, synchronous=FULL)
#       on the same disk.                                  targets ≥ 15 000 commits/s and ≥ 2×
#
# Usage: bench/documents.sh            (FIREGATE_BIN defaults to .build/release/firegate)
# Knobs: BENCH_SECONDS (10, measured part of each phase; a 2 s warm-up comes first),
#        BENCH_THREADS (2), BENCH_CONNECTIONS (64), BENCH_PAYLOAD (200 bytes per committed doc),
#        BENCH_KEEP=1 keeps the run folder (bench/out/run.*).
#        BENCH_JSON=1 (bench/run) also prints one `@bench {json}` line per figure: doc_get and tree_get
#        (firegate req/s, ref = nginx req/s), commit (commits/s, ref = SQLite rows/s).
# Exit status: 0 when every target is met, 1 when one is missed, 2 when the run itself failed.
# Installs wrk and nginx with apt-get when they are missing. Starts firegate and nginx itself and
# stops them (and only them) on exit. Never builds firegate and refuses a debug build.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO="$PWD"
FIREGATE_BIN="${FIREGATE_BIN:-.build/release/firegate}"
SECS="${BENCH_SECONDS:-10}"
THREADS="${BENCH_THREADS:-2}"
CONNS="${BENCH_CONNECTIONS:-64}"
PAYLOAD="${BENCH_PAYLOAD:-200}"
WARMUP=2
PROJECT="bench"

die() { echo "bench: $*" >&2; exit 2; }

[ "$SECS" -ge 1 ] && [ "$SECS" -le 13 ] || die "BENCH_SECONDS must be 1..13 (each phase stays within 15 s)"
[ -x "$FIREGATE_BIN" ] || die "no firegate binary at $FIREGATE_BIN (build it with: swift build -c release --static-swift-stdlib --product firegate)"
case "$(cd "$(dirname "$FIREGATE_BIN")" && pwd -P)/" in
    */debug/*) die "$FIREGATE_BIN is a debug build; benchmark a release build only" ;;
esac

# ---------------------------------------------------------------------------------------------
# tools
missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing: ${missing[*]}"
    [ "$(id -u)" -eq 0 ] || die "need root to apt-get install ${missing[*]}"
    # Keep the package scripts from starting a system-wide nginx on port 80.
    policy_created=0
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && policy_created=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    [ "$policy_created" -eq 1 ] && rm -f /usr/sbin/policy-rc.d
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"

# ---------------------------------------------------------------------------------------------
# run folder (on the repository's disk, so SQLite and firegate fsync to the same device)
mkdir -p bench/out
RUN="$(mktemp -d "$REPO/bench/out/run.XXXXXX")"
chmod 755 "$RUN"
FG_PID=""
NGINX_PID=""

stop_pid() {
    local pid="$1"
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    stop_pid "$FG_PID"; FG_PID=""
    stop_pid "$NGINX_PID"; NGINX_PID=""
    if [ "${BENCH_KEEP:-0}" != "1" ]; then rm -rf "$RUN"; else echo "kept $RUN"; fi
}
trap cleanup EXIT
trap 'exit 2' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_http() {   # url, pid
    for _ in $(seq 200); do
        kill -0 "$2" 2>/dev/null || return 1
        curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# wrk output -> "requests_per_sec non_2xx socket_errors"
wrk_numbers() {
    python3 - "$1" <<'EOF'
import re, sys
out = open(sys.argv[1]).read()
rps = re.search(r"Requests/sec:\s*([\d.]+)", out)
non2xx = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", out)
errs = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
print(rps.group(1) if rps else "0", non2xx.group(1) if non2xx else "0",
      sum(int(x) for x in errs.groups()) if errs else 0)
EOF
}

run_wrk() {     # label, outfile, wrk args...
    local label="$1" out="$2"; shift 2
    wrk -t"$THREADS" -c"$CONNS" -d"${WARMUP}s" "$@" >/dev/null 2>&1 || true
    wrk -t"$THREADS" -c"$CONNS" -d"${SECS}s" --latency "$@" >"$out" 2>&1 || die "wrk failed for $label: $(cat "$out")"
    echo "--- $label"
    sed -n '/Thread Stats/,/Transfer\/sec/p' "$out" | sed 's/^/    /'
}

# ---------------------------------------------------------------------------------------------
echo "firegate: $FIREGATE_BIN"
echo "wrk: $THREADS threads, $CONNS connections, ${WARMUP}s warm-up + ${SECS}s per phase; $(nproc) cores"

FG_PORT="$(free_port)"
mkdir -p "$RUN/data"
"$FIREGATE_BIN" serve --host 127.0.0.1 --port "$FG_PORT" --data-dir "$RUN/data" --project "$PROJECT" >"$RUN/firegate.log" 2>&1 &
FG_PID=$!
BASE="http://127.0.0.1:$FG_PORT"
wait_http "$BASE/healthz" "$FG_PID" || die "firegate did not start: $(cat "$RUN/firegate.log")"

DOCS="$BASE/v1/projects/$PROJECT/databases/%28default%29/documents"

# A typical small document, written once, read back as the exact JSON firegate serves.
curl -fsS -X PATCH "$DOCS/users/alice" -H 'Content-Type: application/json' --data-binary @- >/dev/null <<'EOF'
{"fields":{
  "name":{"stringValue":"Alice Example"},
  "email":{"stringValue":"alice@example.com"},
  "age":{"integerValue":"34"},
  "score":{"doubleValue":1234.5},
  "active":{"booleanValue":true},
  "joined":{"timestampValue":"2024-03-01T12:00:00.123456Z"},
  "tags":{"arrayValue":{"values":[{"stringValue":"admin"},{"stringValue":"beta"},{"stringValue":"eu"}]}},
  "address":{"mapValue":{"fields":{"city":{"stringValue":"Lyon"},"zip":{"stringValue":"69001"},
    "geo":{"geoPointValue":{"latitude":45.76,"longitude":4.83}}}}}
}}
EOF
mkdir -p "$RUN/www"
chmod 755 "$RUN/www"
curl -fsS "$DOCS/users/alice" -o "$RUN/www/alice.json"
chmod 644 "$RUN/www/alice.json"
DOC_BYTES="$(wc -c <"$RUN/www/alice.json")"

# A tree location of the same server (the tree backend), read back as the exact JSON firegate serves.
TREE="$BASE/bench/item.json?ns=bench"
curl -fsS -X PUT "$TREE" -H 'Content-Type: application/json' --data-binary @- >/dev/null <<'EOF'
{"name":"Alice Example","email":"alice@example.com","age":34,"score":1234.5,"active":true,
 "joined":"2024-03-01T12:00:00.123456Z","tags":["admin","beta","eu"],
 "address":{"city":"Lyon","zip":"69001","geo":{"latitude":45.76,"longitude":4.83}}}
EOF
curl -fsS "$TREE" -o "$RUN/www/tree.json"
chmod 644 "$RUN/www/tree.json"
TREE_BYTES="$(wc -c <"$RUN/www/tree.json")"

# ---------------------------------------------------------------------------------------------
# (a) GET: firegate vs nginx
NGINX_PORT="$(free_port)"
mkdir -p "$RUN/nginx-tmp"
cat >"$RUN/nginx.conf" <<EOF
worker_processes auto;
daemon off;
pid $RUN/nginx.pid;
error_log $RUN/nginx-error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_timeout 75s;
    keepalive_requests 100000000;
    client_body_temp_path $RUN/nginx-tmp/body;
    proxy_temp_path $RUN/nginx-tmp/proxy;
    fastcgi_temp_path $RUN/nginx-tmp/fastcgi;
    uwsgi_temp_path $RUN/nginx-tmp/uwsgi;
    scgi_temp_path $RUN/nginx-tmp/scgi;
    server {
        listen 127.0.0.1:$NGINX_PORT;
        root $RUN/www;
        location / { default_type application/json; }
    }
}
EOF
"$NGINX" -p "$RUN" -c "$RUN/nginx.conf" >"$RUN/nginx.out" 2>&1 &
NGINX_PID=$!
wait_http "http://127.0.0.1:$NGINX_PORT/alice.json" "$NGINX_PID" || die "nginx did not start: $(cat "$RUN/nginx.out" "$RUN/nginx-error.log" 2>/dev/null)"
cmp -s "$RUN/www/alice.json" <(curl -fsS "http://127.0.0.1:$NGINX_PORT/alice.json") || die "nginx serves other bytes"
cmp -s "$RUN/www/alice.json" <(curl -fsS "$DOCS/users/alice") || die "firegate GET is not stable"
cmp -s "$RUN/www/tree.json" <(curl -fsS "http://127.0.0.1:$NGINX_PORT/tree.json") || die "nginx serves other bytes (tree)"
cmp -s "$RUN/www/tree.json" <(curl -fsS "$TREE") || die "firegate tree GET is not stable"

echo
echo "== (a) document GET, keep-alive, same ${DOC_BYTES}-byte JSON"
run_wrk "firegate GET $DOCS/users/alice" "$RUN/wrk-get-firegate.txt" "$DOCS/users/alice"
read -r FG_GET FG_GET_BAD FG_GET_ERR <<<"$(wrk_numbers "$RUN/wrk-get-firegate.txt")"
run_wrk "nginx static file" "$RUN/wrk-get-nginx.txt" "http://127.0.0.1:$NGINX_PORT/alice.json"
read -r NG_GET NG_GET_BAD NG_GET_ERR <<<"$(wrk_numbers "$RUN/wrk-get-nginx.txt")"

echo
echo "== (a') tree GET, keep-alive, same ${TREE_BYTES}-byte JSON"
run_wrk "firegate GET $TREE" "$RUN/wrk-tree-firegate.txt" "$TREE"
read -r FG_TREE FG_TREE_BAD FG_TREE_ERR <<<"$(wrk_numbers "$RUN/wrk-tree-firegate.txt")"
run_wrk "nginx static file" "$RUN/wrk-tree-nginx.txt" "http://127.0.0.1:$NGINX_PORT/tree.json"
read -r NG_TREE NG_TREE_BAD NG_TREE_ERR <<<"$(wrk_numbers "$RUN/wrk-tree-nginx.txt")"
stop_pid "$NGINX_PID"; NGINX_PID=""

# ---------------------------------------------------------------------------------------------
# (b) durable single-document commits vs a plain fsync'd SQLite loop
echo
echo "== (b) durable single-document commits (${PAYLOAD}-byte payload per document)"
run_wrk "firegate :commit, one new document per request" "$RUN/wrk-commit.txt" \
    -s "$REPO/bench/commit.lua" "$DOCS:commit" -- "$PROJECT" commits "$PAYLOAD"
read -r FG_COMMIT FG_COMMIT_BAD FG_COMMIT_ERR <<<"$(wrk_numbers "$RUN/wrk-commit.txt")"

# every acknowledged commit must be there: count the documents written (warm-up included)
STORED="$(curl -fsS -X POST "$DOCS:runAggregationQuery" -H 'Content-Type: application/json' \
    -d '{"structuredAggregationQuery":{"structuredQuery":{"from":[{"collectionId":"commits"}]},"aggregations":[{"alias":"n","count":{}}]}}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["result"]["aggregateFields"]["n"]["integerValue"])')" || STORED="?"
echo "    documents stored by the commit phase (warm-up included): $STORED"
stop_pid "$FG_PID"; FG_PID=""

echo "--- plain SQLite loop: one fsync'd transaction per row, same disk"
python3 "$REPO/bench/sqlite_fsync.py" "$RUN/sqlite-ref.db" "$SECS" "$PAYLOAD" | tee "$RUN/sqlite.txt" | sed 's/^/    /'
SQLITE_RATE="$(awk '/^rows_per_sec/ {print $2}' "$RUN/sqlite.txt")"

# ---------------------------------------------------------------------------------------------
echo
set +e
python3 - "$FG_GET" "$NG_GET" "$FG_COMMIT" "$SQLITE_RATE" "$FG_GET_BAD" "$FG_GET_ERR" "$FG_COMMIT_BAD" \
    "$FG_COMMIT_ERR" "$NG_GET_BAD" "$NG_GET_ERR" "$FG_TREE" "$NG_TREE" "$FG_TREE_BAD" "$FG_TREE_ERR" \
    "$NG_TREE_BAD" "$NG_TREE_ERR" <<'EOF' | tee "$REPO/bench/out/documents-last.txt"
import json, os, sys
fg_get, ng_get, fg_commit, sqlite = (float(x) for x in sys.argv[1:5])
bad = [int(x) for x in sys.argv[5:11]]
fg_tree, ng_tree = float(sys.argv[11]), float(sys.argv[12])
tree_bad = [int(x) for x in sys.argv[13:17]]
get_ratio = fg_get / ng_get if ng_get else 0.0
tree_ratio = fg_tree / ng_tree if ng_tree else 0.0
commit_ratio = fg_commit / sqlite if sqlite else 0.0
if os.environ.get("BENCH_JSON") == "1":
    def emit(figure, value, unit, ref, ok):
        if ok:   # a phase with non-2xx answers gives no figure: the run failed
            print("@bench " + json.dumps({"figure": figure, "value": value, "unit": unit, "ref": ref}))
    emit("doc_get", fg_get, "req/s", ng_get, not (bad[0] or bad[4]))
    emit("tree_get", fg_tree, "req/s", ng_tree, not (tree_bad[0] or tree_bad[2]))
    emit("commit", fg_commit, "commits/s", sqlite, not bad[2])
rows = [
    ("GET firegate", f"{fg_get:,.0f} req/s", ""),
    ("GET nginx (static file)", f"{ng_get:,.0f} req/s", ""),
    ("GET ratio firegate/nginx", f"{get_ratio:.2f}x", "target >= 0.90x", get_ratio >= 0.9),
    ("tree GET firegate", f"{fg_tree:,.0f} req/s", ""),
    ("tree GET nginx (static file)", f"{ng_tree:,.0f} req/s", ""),
    ("tree GET ratio firegate/nginx", f"{tree_ratio:.2f}x", "target >= 0.75x", tree_ratio >= 0.75),
    ("commits firegate", f"{fg_commit:,.0f} commits/s", "target >= 15,000/s", fg_commit >= 15000),
    ("SQLite fsync loop", f"{sqlite:,.0f} rows/s", ""),
    ("commit ratio firegate/SQLite", f"{commit_ratio:.2f}x", "target >= 2.00x", commit_ratio >= 2.0),
]
print("== summary")
ok = True
for r in rows:
    verdict = ""
    if len(r) == 4:
        verdict = "PASS" if r[3] else "MISS"
        ok &= r[3]
    print(f"  {r[0]:<30} {r[1]:>20}   {r[2]:<18} {verdict}")
if any(bad):
    print(f"  errors: GET non-2xx {bad[0]} socket {bad[1]}; commit non-2xx {bad[2]} socket {bad[3]};"
          f" nginx non-2xx {bad[4]} socket {bad[5]}")
    ok = False if (bad[0] or bad[2] or bad[4]) else ok
if any(tree_bad):
    print(f"  errors: tree GET non-2xx {tree_bad[0]} socket {tree_bad[1]}; nginx non-2xx {tree_bad[2]} socket {tree_bad[3]}")
    ok = False if (tree_bad[0] or tree_bad[2]) else ok
print("all targets met" if ok else "TARGETS MISSED")
sys.exit(0 if ok else 1)
EOF
rc="${PIPESTATUS[0]}"
set -e
exit "$rc"
