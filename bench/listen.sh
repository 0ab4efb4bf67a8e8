#!/usr/bin/env bash
# SSE listen fan-out benchmarks (docs/benchmarks.md): see bench/listen.py for what is measured.
#
# Usage: bench/listen.sh [listen.py options]     (FIREGATE_BIN defaults to .build/release/firegate)
#   e.g. bench/listen.sh                          full run: 1 000 listeners x 20 commits, 10 000 idle streams
#        bench/listen.sh --in-memory              the same against an in-memory server
# Raises the open-file limit (this shell and, through listen.py, the server it starts) to the hard
# limit, writes the output to bench/out/listen-last.txt too.
# Exit status: 0 when every target is met, 1 when one is missed, 2 when the run itself failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
hard="$(ulimit -Hn)"
if [ "$hard" = "unlimited" ]; then ulimit -n 1048576; else ulimit -n "$hard"; fi
mkdir -p bench/out
set +e
python3 bench/listen.py "$@" 2>&1 | tee bench/out/listen-last.txt
exit "${PIPESTATUS[0]}"
