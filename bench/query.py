#!/usr/bin/env python3
"""runQuery latency over a 10 000-document collection (no target: reported).

One server (release build, on a data dir under bench/out, 127.0.0.1). Set-up: D documents (default
10 000) in `items`, committed 500 a commit: `items/d{i:05}` with `kind` = "k{i % 100:02}",
`rank` = (i * 7919) mod D and a 200-byte `pad`. Then, in R rounds (default 3), alternating:

  filtered   `POST …/documents:runQuery` kind == "k37" order by rank desc limit 10   (10 documents back)
  full       `POST …/documents:runQuery` the whole collection, no filter            (D documents back)

N times each per round (default 20, after 2 unmeasured), one keep-alive connection, timed from the
request to the last byte of the answer. Every answer is checked (count, and for the filtered query
the expected names in order). Prints median/p90 per round.

Usage: python3 bench/query.py [--docs 10000] [--rounds 3] [--runs 20]
With BENCH_JSON=1 (bench/run) it prints one `@bench {json}` line per query and round:
runquery_filtered, runquery_full (median ms of the round).
Exit status: 0 when the run completed and every answer was right, 2 when it failed.
"""
import argparse
import asyncio
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgbench import (REPO, BenchError, HttpConn, Server, check_binary, doc_name, docs_root, emit, log,  # noqa: E402
                     percentile)

PROJECT = "bench-query"
BATCH = 500


def structured(filtered: bool) -> bytes:
    q = {"from": [{"collectionId": "items"}]}
    if filtered:
        q["where"] = {"fieldFilter": {"field": {"fieldPath": "kind"}, "op": "EQUAL", "value": {"stringValue": "k37"}}}
        q["orderBy"] = [{"field": {"fieldPath": "rank"}, "direction": "DESCENDING"}]
        q["limit"] = 10
    return json.dumps({"structuredQuery": q}, separators=(",", ":")).encode()


def rank_of(i: int, docs: int) -> int:
    return (i * 7919) % docs


async def run(args) -> int:
    docs = args.docs
    server = Server(args.bin, PROJECT, durable=True, label="query").start()
    conn = HttpConn(server.host, server.port, 120)
    root = docs_root(PROJECT)
    try:
        t = time.monotonic()
        pad = "x" * 200
        for start in range(0, docs, BATCH):
            writes = [{"update": {"name": doc_name(PROJECT, f"items/d{i:05}"), "fields": {
                "kind": {"stringValue": f"k{i % 100:02}"}, "rank": {"integerValue": str(rank_of(i, docs))},
                "pad": {"stringValue": pad}}}} for i in range(start, min(docs, start + BATCH))]
            await conn.json("POST", f"{root}:commit", {"writes": writes})
        log(f"== set-up: {docs} documents committed in {time.monotonic() - t:.1f} s (server pid {server.proc.pid})")
        want = [f"d{i:05}" for i in sorted((i for i in range(docs) if i % 100 == 37),
                                           key=lambda i: (-rank_of(i, docs), i))[:10]]
        # ties on rank are possible only when docs is not prime to 7919; the names are checked as a set then
        bodies = {"filtered": structured(True), "full": structured(False)}

        async def once(kind):
            t0 = time.perf_counter_ns()
            status, _, data = await conn.request("POST", f"{root}:runQuery", bodies[kind])
            ns = time.perf_counter_ns() - t0
            if status != 200:
                raise BenchError(f"runQuery ({kind}) -> {status}: {data[:300]!r}")
            got = [r["document"]["name"].rsplit("/", 1)[1] for r in json.loads(data) if "document" in r]
            expect = want if kind == "filtered" else None
            if expect is not None and got != expect and sorted(got) != sorted(expect):
                raise BenchError(f"runQuery (filtered) answered {got}, expected {expect}")
            if expect is None and len(got) != docs:
                raise BenchError(f"runQuery (full) answered {len(got)} documents, expected {docs}")
            return ns, len(data)
        for kind in bodies:
            for _ in range(2):
                await once(kind)
        for rnd in range(1, args.rounds + 1):
            for kind in ("filtered", "full"):
                lat, size = [], 0
                for _ in range(args.runs):
                    ns, size = await once(kind)
                    lat.append(ns)
                med = percentile(lat, 50) / 1e6
                log(f"    round {rnd} {kind:<8}: median {med:8.2f} ms  p90 {percentile(lat, 90) / 1e6:8.2f} ms  "
                    f"min {min(lat) / 1e6:8.2f} ms  ({args.runs} runs, answer {size / 1024:.0f} KiB)")
                emit(f"runquery_{kind}", round(med, 3), "ms", docs=docs, runs=args.runs,
                     p90=round(percentile(lat, 90) / 1e6, 3))
        return 0
    finally:
        conn.close()
        server.stop(keep=args.keep)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("FIREGATE_BIN", os.path.join(REPO, ".build/release/firegate")))
    ap.add_argument("--allow-debug", action="store_true", help="run on a debug build (to try the script)")
    ap.add_argument("--docs", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--max-seconds", type=float, default=120)
    ap.add_argument("--keep", action="store_true", help="keep the run folder under bench/out")
    args = ap.parse_args()
    if not (100 <= args.docs <= 200000 and 1 <= args.rounds <= 20 and 1 <= args.runs <= 500):
        ap.error("bounds: --docs 100..200000, --rounds 1..20, --runs 1..500")
    kind = check_binary(args.bin, args.allow_debug)
    log(f"firegate: {args.bin} ({kind} build); {os.cpu_count()} cores")
    try:
        return asyncio.run(asyncio.wait_for(run(args), args.max_seconds))
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    except asyncio.TimeoutError:
        print(f"bench: the run took longer than {args.max_seconds:.0f} s", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
