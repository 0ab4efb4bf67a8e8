#!/usr/bin/env bash
# Fuzzes the security rules parser, checker and evaluator with libFuzzer (the Swift toolchain's),
# starting from the kept corpus; new crashes land in Tests/FiregateRulesTests/FuzzCorpus/crashes/.
#   scripts/fuzz-rules.sh [seconds, default 300] [extra libFuzzer flags]
# The build goes to .build/fuzz so the normal build is untouched. What a run finds is kept in
# Tests/FiregateRulesTests/FuzzCorpus, which RulesFuzzTests replays on every `swift test`.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-300}"
shift || true
swift build --scratch-path .build/fuzz --product firegate-rules-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -parse-as-library -Xswiftc -Xclang-linker -Xswiftc -fuse-ld=lld
corpus=Tests/FiregateRulesTests/FuzzCorpus
mkdir -p "$corpus/crashes" .build/fuzz/corpus
# New inputs go to a scratch corpus first; merge the interesting ones back by hand (-merge=1).
.build/fuzz/debug/firegate-rules-fuzz .build/fuzz/corpus "$corpus" -max_total_time="$seconds" -max_len=4096 \
  -timeout=10 -artifact_prefix="$corpus/crashes/" -print_final_stats=1 "$@"
