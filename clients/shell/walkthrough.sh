#!/usr/bin/env bash
# Firegate with curl: the main flows, each answer checked.
#
#   bash clients/shell/walkthrough.sh [BASE_URL]        (or FIREGATE_URL=… bash …)
#
# Needs bash, curl and python3 (for the JSON checks; no jq). Works in a fresh project and tree
# namespace, so it can run against any server. Exits non-zero at the first answer that is not
# what it should be, printing the request and the body.
#
#   1. documents: create, get, patch with an update mask, query, list, delete
#   2. tree: PUT, GET, multi-path PATCH
#   3. an edge client: offline, a queued write in /pendingWrites, back online,
#      :waitForPendingWrites, the write on the backend
set -euo pipefail

BASE=${1:-${FIREGATE_URL:-http://127.0.0.1:8080}}
BASE=${BASE%/}

RUN=$(python3 -c 'import uuid; print(uuid.uuid4().hex[:8])')
PROJECT="shell-example-$RUN"
NS="shell-example-$RUN"
CLIENT="shell-$RUN"

NAME="projects/$PROJECT/databases/(default)/documents"   # resource-name prefix of our documents
DOCS="$BASE/v1/$NAME"                                     # the documents backend
EDGE="$BASE/clients/$CLIENT"                              # the edge client's control calls
EDGE_DOCS="$EDGE/v1/$NAME"                                # the same REST API, through the client

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ─────────────────────────────── helpers ───────────────────────────────

step() { printf '\n▶ %s\n' "$*"; }

fail() {
    printf '  ✗ %s\n' "$1" >&2
    printf '    request: %s\n' "$REQUEST" >&2
    printf '    status:  %s\n' "$STATUS" >&2
    printf '    body:    %s\n' "$(head -c 2000 "$TMP/body")" >&2
    exit 1
}

# call EXPECTED_STATUS METHOD URL [JSON_BODY]
# Sends the request; the body goes to $TMP/body, the headers to $TMP/headers, the status to
# $STATUS. Fails unless the status is EXPECTED_STATUS.
call() {
    local expect=$1 method=$2 url=$3
    local args=(-sS -X "$method" --max-time 30 -o "$TMP/body" -D "$TMP/headers" -w '%{http_code}')
    if [[ $# -ge 4 ]]; then
        args+=(-H 'Content-Type: application/json' --data-binary "$4")
    fi
    REQUEST="$method ${url#"$BASE"}"
    STATUS=$(curl "${args[@]}" "$url") || { STATUS="(curl failed)"; : >"$TMP/body"; fail "no answer"; }
    [[ $STATUS == "$expect" ]] || fail "expected HTTP $expect"
    printf '  %s → %s\n' "$REQUEST" "$STATUS"
}

# check DESCRIPTION PYTHON_EXPRESSION
# Evaluates the expression with `j` = the last answer's JSON body and `h` = its headers
# (lower-case names); fails with the body unless it is true.
check() {
    python3 - "$TMP/body" "$TMP/headers" "$2" <<'PY' || fail "$1"
import json, sys
body, headers, expr = sys.argv[1:4]
raw = open(body, encoding="utf-8").read()
j = json.loads(raw) if raw.strip() else None
h = {}
for line in open(headers, encoding="latin-1").read().splitlines()[1:]:
    name, sep, value = line.partition(":")
    if sep:
        h[name.strip().lower()] = value.strip()
sys.exit(0 if eval(expr, {"j": j, "h": h}) else 1)
PY
    printf '    ✓ %s\n' "$1"
}

echo "Firegate at $BASE — project $PROJECT, namespace $NS, edge client $CLIENT"

# ─────────────────────────────── 1. documents ───────────────────────────────

step "1. Documents (Firestore REST v1)"

call 200 POST "$DOCS/cities?documentId=SF" '{"fields": {
    "name": {"stringValue": "San Francisco"}, "state": {"stringValue": "CA"},
    "population": {"integerValue": "860000"}}}'
check "created cities/SF" "j['name'] == '$NAME/cities/SF' and 'createTime' in j"

call 200 POST "$DOCS/cities?documentId=NY" '{"fields": {
    "name": {"stringValue": "New York"}, "state": {"stringValue": "NY"},
    "population": {"integerValue": "8300000"}}}'

call 200 GET "$DOCS/cities/SF"
check "read it back" "j['fields']['name'] == {'stringValue': 'San Francisco'}"

call 200 PATCH "$DOCS/cities/SF?updateMask.fieldPaths=population&currentDocument.exists=true" \
    '{"fields": {"population": {"integerValue": "870000"}}}'
check "patched population only, the other fields kept" \
    "j['fields']['population'] == {'integerValue': '870000'} and j['fields']['state'] == {'stringValue': 'CA'}"

call 200 POST "$DOCS:runQuery" '{"structuredQuery": {
    "from": [{"collectionId": "cities"}],
    "where": {"fieldFilter": {"field": {"fieldPath": "state"}, "op": "EQUAL", "value": {"stringValue": "CA"}}},
    "orderBy": [{"field": {"fieldPath": "population"}, "direction": "DESCENDING"}]}}'
check "the query finds only cities/SF" \
    "[e['document']['name'] for e in j if 'document' in e] == ['$NAME/cities/SF']"

call 200 GET "$DOCS/cities"
check "the collection lists both cities" "len(j['documents']) == 2"

call 200 DELETE "$DOCS/cities/NY"
call 404 GET "$DOCS/cities/NY"
check "cities/NY is gone" "j['error']['status'] == 'NOT_FOUND'"

# ─────────────────────────────── 2. tree ───────────────────────────────

step "2. Tree (Realtime Database REST)"

call 200 PUT "$BASE/users/alan.json?ns=$NS" '{"name": "Alan Turing", "born": 1912}'
check "PUT answers the written value" "j == {'name': 'Alan Turing', 'born': 1912}"

call 200 GET "$BASE/users/alan/name.json?ns=$NS"
check "GET of a child" "j == 'Alan Turing'"

call 200 PATCH "$BASE/users.json?ns=$NS" '{"alan/nick": "A", "grace/nick": "G"}'
call 200 GET "$BASE/users.json?ns=$NS"
check "the multi-path PATCH updated both users, alan's other children kept" \
    "j == {'alan': {'name': 'Alan Turing', 'born': 1912, 'nick': 'A'}, 'grace': {'nick': 'G'}}"

# ─────────────────────────────── 3. edge client ───────────────────────────────

step "3. An edge client offline"

call 200 PUT "$EDGE" "{\"project\": \"$PROJECT\", \"persistence\": \"memory\"}"
check "client created, online" "j['id'] == '$CLIENT' and j['network']['online'] is True"

call 200 POST "$EDGE:disableNetwork"
check "client offline" "j['network']['online'] is False"

call 200 PATCH "$EDGE_DOCS/cities/LA" '{"fields": {"name": {"stringValue": "Los Angeles"}}}'
check "the write is answered at once from the cache, pending" \
    "h['firegate-write-state'] == 'pending' and h['firegate-from-cache'] == 'true' and j['fields']['name'] == {'stringValue': 'Los Angeles'}"
WRITE_ID=$(grep -i '^firegate-write-id:' "$TMP/headers" | tr -d '\r' | cut -d: -f2 | tr -d ' ')
echo "    write id: $WRITE_ID"

call 200 GET "$EDGE/pendingWrites"
check "the write waits in the client's queue" \
    "[(w['id'], w['state'], w['writes'][0]['update']['name']) for w in j['writes']] == [('$WRITE_ID', 'pending', '$NAME/cities/LA')]"

call 200 GET "$EDGE_DOCS/cities/LA?source=cache"
check "the client reads its own write from the cache" "h['firegate-has-pending-writes'] == 'true'"

call 404 GET "$DOCS/cities/LA"
check "the backend does not have it yet" "j['error']['status'] == 'NOT_FOUND'"

call 504 POST "$EDGE:waitForPendingWrites?timeoutMs=300"
check "waitForPendingWrites does not complete while offline" "j['error']['status'] == 'DEADLINE_EXCEEDED'"

step "3b. Back online"

call 200 POST "$EDGE:enableNetwork"
check "client online" "j['network']['online'] is True"

call 200 POST "$EDGE:waitForPendingWrites?timeoutMs=10000"
check "every queued write is settled" "j == {}"

call 200 GET "$EDGE/pendingWrites/$WRITE_ID"
check "the write was acknowledged" "j['state'] == 'acknowledged' and 'commitTime' in j"

call 200 GET "$EDGE/pendingWrites"
check "the queue is empty" "j.get('writes', []) == []"

call 200 GET "$DOCS/cities/LA"
check "the backend has cities/LA" "j['fields']['name'] == {'stringValue': 'Los Angeles'}"

# ─────────────────────────────── clean up ───────────────────────────────

step "Clean up"
call 200 DELETE "$EDGE"
call 200 DELETE "$BASE/emulator/v1/$NAME"
call 200 DELETE "$BASE/.json?ns=$NS"

printf '\nPASS walkthrough\n'
