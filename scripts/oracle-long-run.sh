#!/usr/bin/env bash
# The oracle's longer run (docs/oracle.md): test_oracle.py and test_oracle_rules.py with ten times
# CI's cases over several seeds, against the firegate binary given (default: the release build,
# else the debug build). Each seed's failure prints its reproduction; the script exits non-zero if
# any seed failed.
#   scripts/oracle-long-run.sh [BINARY] [SEEDS…]        e.g. scripts/oracle-long-run.sh .build/release/firegate 1 2 3
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BIN="${1:-}"
[ -n "$BIN" ] && shift
if [ -z "$BIN" ]; then
    if [ -x .build/release/firegate ]; then BIN=.build/release/firegate; else BIN=.build/debug/firegate; fi
fi
SEEDS=("$@")
[ "${#SEEDS[@]}" -gt 0 ] || SEEDS=(1 2 3)
failed=0
for seed in "${SEEDS[@]}"; do
    echo "== seed $seed"
    FIREGATE_BIN="$BIN" ORACLE_SEED="$seed" ORACLE_CASES="${ORACLE_CASES:-20000}" ORACLE_RULESETS="${ORACLE_RULESETS:-300}" \
        python3 -m pytest -q -x clients/python/test_oracle.py clients/python/test_oracle_rules.py || failed=1
done
exit "$failed"
