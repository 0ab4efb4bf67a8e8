#!/usr/bin/env bash
# Tree backend benchmark: GET and durable PUT throughput with wrk, then stream fan-out
# (1000 streams on one location, time from a PUT to the streams' events).
#
# Usage: bench/tree.sh            (builds the release binary if missing)
#        FIREGATE_BIN=path DURATION=10s CONNECTIONS=32 STREAMS=1000 WRITES=30 IDLE_STREAMS=10000 bench/tree.sh
#        TREE_PHASES=get,put,fanout,idle (default: all) picks the phases; PORT (default: a free one).
# Tree GET against nginx serving the same JSON is in bench/documents.sh (its reference lives there).
# With BENCH_JSON=1 (bench/run) the fan-out prints `@bench {json}` lines (see tree_fanout.py).
# Loopback only; every step is bounded in time. Needs wrk (apt-get install -y wrk) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${FIREGATE_BIN:-.build/release/firegate}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-32}
THREADS=${THREADS:-2}
STREAMS=${STREAMS:-1000}
WRITES=${WRITES:-30}
PORT=${PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
PHASES=",${TREE_PHASES:-get,put,fanout,idle},"
URL="http://127.0.0.1:$PORT"

if [ ! -x "$BIN" ]; then
  swift build -c release --product firegate
fi
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }

DATA=$(mktemp -d)
OUT=bench/out
mkdir -p "$OUT"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true  # streams need a descriptor each
"$BIN" serve --host 127.0.0.1 --port "$PORT" --data-dir "$DATA" &
PID=$!
trap 'kill $PID 2>/dev/null || true; wait $PID 2>/dev/null || true; rm -rf "$DATA"' EXIT
for _ in $(seq 1 100); do curl -sf "$URL/healthz" >/dev/null && break; sleep 0.05; done

echo "== seed"
curl -sf -X PUT "$URL/bench/item.json?ns=bench" \
  -d '{"name":"Ada Lovelace","born":1815,"tags":["math","engines"],"address":{"city":"London","zip":"W1"}}' >/dev/null
curl -sf "$URL/bench/item.json?ns=bench"; echo

if [[ $PHASES == *,get,* ]]; then
echo "== GET /bench/item.json (from memory), $CONNECTIONS connections, $DURATION"
wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "$URL/bench/item.json?ns=bench" | tee "$OUT/tree-get.txt"
fi

cat > "$OUT/put.lua" <<'LUA'
wrk.method = "PUT"
wrk.body = '{"name":"Ada Lovelace","born":1815,"count":1}'
wrk.headers["Content-Type"] = "application/json"
counter = 0
request = function()
  counter = counter + 1
  return wrk.format(nil, "/bench/put/" .. (counter % 1000) .. ".json?ns=bench&print=silent")
end
LUA
if [[ $PHASES == *,put,* ]]; then
echo "== PUT /bench/put/{0..999}.json (durable: fsync'd group commit), $CONNECTIONS connections, $DURATION"
wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -s "$OUT/put.lua" "$URL" | tee "$OUT/tree-put.txt"
fi

if [[ $PHASES == *,fanout,* ]]; then
echo "== stream fan-out: $STREAMS streams on one location, $WRITES writes"
timeout 180 python3 bench/tree_fanout.py --url "$URL" --streams "$STREAMS" --writes "$WRITES" | tee "$OUT/tree-fanout.txt"
fi

if [[ $PHASES == *,idle,* ]]; then
IDLE=${IDLE_STREAMS:-10000}
echo "== $IDLE idle streams (memory)"
timeout 180 python3 bench/tree_idle_streams.py --url "$URL" --pid "$PID" --streams "$IDLE" | tee "$OUT/tree-idle.txt"
fi
