#!/usr/bin/env bash
# Runs the examples in other languages against a Firegate server:
#
#   clients/node/offline_listen.mjs     Node.js 20+, built-in fetch, an edge listen over SSE
#   clients/node/rtdb_presence.mjs      Node.js 20+, built-in WebSocket: presence on a socket
#                                       switched offline by the test
#   clients/node/firegate_test_example.mjs  node:test with the test helpers (firegate-test.mjs)
#   clients/shell/walkthrough.sh        bash + curl + python3, the main flows
#
#   bash clients/examples.sh
#
# Starts FIREGATE_BIN (default .build/release/firegate, relative to the repository root) in
# memory on a free loopback port, waits for /healthz, runs each example, and stops the server
# (also when something fails). With FIREGATE_URL set, uses that server and starts nothing.
# The last line printed is "N passed, M failed"; the exit status is non-zero if any failed.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

EXAMPLE_TIMEOUT=${EXAMPLE_TIMEOUT:-120}   # seconds, per example (each also bounds itself)

SERVER_PID=""
SERVER_LOG=""

stop_server() {
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 100); do                      # up to 10 s for a clean shutdown
            kill -0 "$SERVER_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=""
    if [[ -n $SERVER_LOG ]]; then rm -f "$SERVER_LOG"; fi
}
trap stop_server EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts the server and waits (up to 30 s) until /healthz answers 200; sets FIREGATE_URL.
start_server() {
    local bin=${FIREGATE_BIN:-.build/release/firegate}
    if [[ ! -x $bin ]]; then
        echo "examples: no server binary at $bin (build it, or set FIREGATE_BIN or FIREGATE_URL)" >&2
        exit 2
    fi
    SERVER_LOG=$(mktemp)
    local attempt port url
    for attempt in 1 2 3; do                         # another process may take the port first
        port=$(free_port)
        url="http://127.0.0.1:$port"
        "$bin" serve --host 127.0.0.1 --port "$port" --in-memory --log-level warning >"$SERVER_LOG" 2>&1 &
        SERVER_PID=$!
        for _ in $(seq 300); do
            if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
            if [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url/healthz" || true) == 200 ]]; then
                export FIREGATE_URL=$url
                echo "examples: started $bin on $url (pid $SERVER_PID)"
                return 0
            fi
            sleep 0.1
        done
        echo "examples: the server did not become healthy (attempt $attempt):" >&2
        cat "$SERVER_LOG" >&2
        stop_server
        SERVER_LOG=$(mktemp)
    done
    echo "examples: could not start the server" >&2
    exit 2
}

if [[ -n ${FIREGATE_URL:-} ]]; then
    FIREGATE_URL=${FIREGATE_URL%/}
    echo "examples: using the server at $FIREGATE_URL"
else
    start_server
fi

# The examples, as "name|command…" (commands get the base URL as their last argument).
EXAMPLES=(
    "node/offline_listen.mjs|node clients/node/offline_listen.mjs"
    "node/rtdb_presence.mjs|node --experimental-websocket clients/node/rtdb_presence.mjs"
    "node/firegate_test_example.mjs|node clients/node/firegate_test_example.mjs"
    "shell/walkthrough.sh|bash clients/shell/walkthrough.sh"
)

LIMIT=()
if command -v timeout >/dev/null; then LIMIT=(timeout "$EXAMPLE_TIMEOUT"); fi

passed=0
failed=0
failures=()
for example in "${EXAMPLES[@]}"; do
    name=${example%%|*}
    read -r -a cmd <<<"${example#*|}"
    printf '\n═══ %s ═══\n' "$name"
    if ! command -v "${cmd[0]}" >/dev/null; then
        echo "FAIL $name: ${cmd[0]} is not installed"
        failed=$((failed + 1)); failures+=("$name")
        continue
    fi
    if "${LIMIT[@]}" "${cmd[@]}" "$FIREGATE_URL"; then
        passed=$((passed + 1))
    else
        status=$?
        echo "FAIL $name (exit status $status)"
        failed=$((failed + 1)); failures+=("$name")
    fi
done

if [[ $failed -gt 0 && -n $SERVER_LOG && -s $SERVER_LOG ]]; then
    echo
    echo "── server log ──"
    tail -n 50 "$SERVER_LOG"
fi

echo
if [[ $failed -gt 0 ]]; then echo "failed: ${failures[*]}"; fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
