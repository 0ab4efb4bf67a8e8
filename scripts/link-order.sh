#!/usr/bin/env bash
# Regenerates linker/firegate.order: the functions a release server runs as it starts and serves
# its common requests (scripts/link_order_workload.py), which the release link puts together
# (Package.swift, `releaseLinking`). Code that runs is then a few contiguous megabytes instead of
# pages spread over the whole executable, each one keeping 64 KiB resident around it.
#
# Needs valgrind (apt-get install valgrind). Takes a minute or two; run it after large changes
# (names that no longer exist are skipped by the linker, new functions fall where they would).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "link-order.sh needs valgrind (apt-get install valgrind)" >&2; exit 1; }
swift build -c release --static-swift-stdlib --product firegate
binary=.build/release/firegate
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
# valgrind 3.19 (Debian 12) cannot read DWARF 5: record on a copy without debug info.
objcopy --strip-debug "$binary" "$work/firegate"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no \
    --callgrind-out-file="$work/callgrind.out" "$work/firegate" --port "$port" --data-dir "$work/data" \
    >"$work/server.log" 2>&1 &
server=$!
for _ in $(seq 120); do
    curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break
    sleep 1
done
python3 scripts/link_order_workload.py "$port"
kill -INT "$server"
wait "$server" || true
# Every function that ran and is defined once in the executable's code, in callgrind's order. A
# name defined in many objects (a file-local helper such as `objectdestroyTm`) would pull every
# one of them, and the rest of their sections, into the region.
nm --defined-only "$work/firegate" | awk '$2 == "t" || $2 == "T" { print $3 }' | sort | uniq -u >"$work/defined"
sed -n 's/^fn=\(([0-9]*) \)\{0,1\}//p' "$work/callgrind.out" | awk '!seen[$0]++' >"$work/ran"
awk 'NR == FNR { defined[$0] = 1; next } ($0 in defined)' "$work/defined" "$work/ran" >linker/firegate.order
echo "linker/firegate.order: $(wc -l <linker/firegate.order) functions"
