#!/usr/bin/env bash
# The peer suite of issue 24: google-cloud-firestore's own system tests (tests/system of the
# PyPI sdist of the client version installed here), run against Firegate the way that client's
# CI runs them against the Firestore emulator (its noxfile's system_emulated session: only
# FIRESTORE_EMULATOR_HOST set, no project; the tests skip what the emulator lacks by their own
# markers). Nothing of it is kept: it is downloaded into a temporary folder per run.
#
# Usage: .ci/firestore-system-tests.sh FIREGATE_BINARY
set -euo pipefail

BIN="$1"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

VERSION="$("$PYTHON" -c 'import importlib.metadata as m; print(m.version("google-cloud-firestore"))')"
echo "google-cloud-firestore $VERSION: fetching its sdist for tests/system"
"$PYTHON" -m pip download -q --no-deps --no-binary :all: -d "$WORK" "google-cloud-firestore==$VERSION"
tar -xzf "$WORK"/google_cloud_firestore-"$VERSION".tar.gz -C "$WORK"

# The test dependencies its noxfile installs, in a venv of their own so the project's suite
# keeps its plugins as they are.
"$PYTHON" -m venv --system-site-packages "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q "pytest-asyncio==0.21.2" mock google-cloud-testutils pytest-timeout

PORT="$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$BIN" serve --host 127.0.0.1 --port "$PORT" --in-memory --log-level warning &
SERVER_PID=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.1; done

cd "$WORK/google_cloud_firestore-$VERSION"
env -u GCLOUD_PROJECT -u GOOGLE_CLOUD_PROJECT FIRESTORE_EMULATOR_HOST="127.0.0.1:$PORT" \
    "$WORK/venv/bin/python" -m pytest tests/system -q -p no:cacheprovider --timeout=120
kill -0 "$SERVER_PID" || { echo "the server died during the suite"; exit 1; }
