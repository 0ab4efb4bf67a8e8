#!/usr/bin/env python3
"""Edge watch cost: one backend write under many edge clients listening to a large query, on
127.0.0.1, bounded in count and time (issue 12: "the cost follows the change, not the result").

Setup, on one in-memory server:
  - collection `big` holds D documents (default 10 000), collection `small` holds 10;
  - C edge clients (default 100) each listen to the whole of `big`
    (`GET /clients/w{i}/v1/…/documents:listen?query={from big}&changesOnly=true`), and C other
    clients each listen to the whole of `small` — the reference: the same fan-out with a result
    a thousand times smaller;
  - every listener must first show its whole result from the server (`fromCache:false`, D or 10
    documents added).
Then, W times (default 10), alternating: one backend `:commit` updates one document of `big`, and
one updates one document of `small`. For each write: the time from just before the commit is sent
until the LAST of the C listeners has received the snapshot carrying that change (kernel receive
times, SO_TIMESTAMPNS). Every snapshot is checked: exactly one `modified` change, the written
value, `fromCache:false`.

If an edge client re-ran each touched listener's query on the backend (or over its whole cache)
per commit, the `big` figure would grow with D; fed by the backend's change sets it should stay
close to the `small` one. The figure is the median over the writes; the reference the median of
the `small` writes; the ratio big/small. With BENCH_JSON=1 (bench/run) it prints one
`@bench {"figure": "edge_watch", "value": …, "ref": …}` line.

Usage: python3 bench/edge_watch.py [--clients 100] [--documents 10000] [--writes 10]
(FIREGATE_BIN defaults to .build/release/firegate; a debug build is refused unless --allow-debug.)
Exit status 0 when every check held, 1 when one failed, 2 when the run failed.
"""
import asyncio
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgbench import (argument_parser, BenchError, check_binary, commit_body, ConnPool, docs_root, emit,  # noqa: E402
                     gather_limited, log, mib, percentile, query_param, raise_nofile, run_script, Server,
                     SSEConn)

PROJECT = "bench-edge-watch"
CONCURRENCY = 32
SMALL = 10


class Listener:
    """One client's listener: the value of the last change it saw, and when."""

    def __init__(self, collection: str, expected: int):
        self.collection = collection
        self.expected = expected
        self.synced = False
        self.errors = []
        self.seen = {}            # value written -> kernel receive time (ns)
        self.waiters = {}         # value -> future

    def on_event(self, conn, ev):
        if ev.event != "snapshot":
            self.errors.append(f"{ev.event}: {ev.data[:200]!r}")
            return
        body = json.loads(ev.data)
        if "documents" in body:
            self.errors.append("a changesOnly snapshot carried documents")
        changes = body.get("changes", [])
        if not self.synced:
            added = sum(1 for c in changes if c.get("type") == "added")
            if body.get("metadata", {}).get("fromCache") is False and added == self.expected:
                self.synced = True
                self._wake("synced", ev.kernel_ns)
            return
        if len(changes) != 1 or changes[0].get("type") != "modified" or body["metadata"].get("fromCache") is not False:
            self.errors.append(f"unexpected snapshot: {ev.data[:300]!r}")
            return
        value = int(changes[0]["document"]["fields"]["v"]["integerValue"])
        self.seen[value] = ev.kernel_ns
        self._wake(value, ev.kernel_ns)

    def _wake(self, key, t):
        fut = self.waiters.pop(key, None)
        if fut and not fut.done():
            fut.set_result(t)

    async def wait(self, key, timeout: float):
        if key == "synced" and self.synced:
            return True
        if key in self.seen:
            return True
        fut = asyncio.get_running_loop().create_future()
        self.waiters[key] = fut
        try:
            await asyncio.wait_for(fut, timeout)
            return True
        except asyncio.TimeoutError:
            return False


async def seed(pool, collection: str, count: int):
    batch = 500
    for start in range(0, count, batch):
        docs = {f"{collection}/d{i:05d}": {"n": i, "v": 0} for i in range(start, min(count, start + batch))}
        await pool.json("POST", f"{docs_root(PROJECT)}:commit", commit_body(PROJECT, docs))


async def run(args) -> int:
    kind = check_binary(args.bin, args.allow_debug)
    raise_nofile(args.clients * 4 + 500)
    log(f"firegate: {args.bin} ({kind} build); {os.cpu_count()} cores")
    if kind == "debug":
        log("WARNING: debug build — trying the script out, the figures mean nothing")
    server = Server(args.bin, PROJECT, durable=False, label="edge-watch").start()
    conns = []
    ok = True
    try:
        pool = ConnPool(server.host, server.port, 8)
        root = docs_root(PROJECT)
        t = time.monotonic()
        await seed(pool, "big", args.documents)
        await seed(pool, "small", SMALL)
        log(f"== {args.documents} documents in big, {SMALL} in small, written in {time.monotonic() - t:.2f} s; "
            f"{args.clients} edge clients listen to each (changesOnly), pid {server.proc.pid}")
        groups = {"big": [], "small": []}
        t = time.monotonic()
        for collection, expected in (("big", args.documents), ("small", SMALL)):
            await gather_limited([pool.json("PUT", f"/clients/{collection}{i}", {"project": PROJECT})
                                  for i in range(args.clients)], CONCURRENCY)
            q = query_param({"from": [{"collectionId": collection}]})
            for i in range(args.clients):
                lis = Listener(collection, expected)
                groups[collection].append(lis)
                conns.append(SSEConn(server.host, server.port, f"/clients/{collection}{i}{root}:listen?query={q}&changesOnly=true",
                                     lis.on_event))

        async def open_one(c):
            await c.connect()
            await asyncio.wait_for(c.opened, 60)
        await gather_limited([open_one(c) for c in conns], CONCURRENCY)
        every = groups["big"] + groups["small"]
        synced = await asyncio.gather(*(lis.wait("synced", args.timeout) for lis in every))
        if not all(synced):
            raise BenchError(f"only {sum(synced)}/{len(every)} listeners showed their whole result within {args.timeout} s")
        log(f"    listeners synced in {time.monotonic() - t:.2f} s; server RSS {mib(server.rss_kib())}")

        times = {"big": [], "small": []}
        for w in range(1, args.writes + 1):
            for collection in ("big", "small"):
                doc = f"{collection}/d{(w * 7) % (args.documents if collection == 'big' else SMALL):05d}"
                body = commit_body(PROJECT, {doc: {"n": -1, "v": w}})
                t0 = time.time_ns()
                await pool.json("POST", f"{root}:commit", body)
                arrived = await asyncio.gather(*(lis.wait(w, args.timeout) for lis in groups[collection]))
                if not all(arrived):
                    ok = False
                    log(f"    CHECK FAILED: write {w} to {collection}: {sum(arrived)}/{args.clients} listeners saw it")
                    continue
                last = max(lis.seen[w] for lis in groups[collection])
                times[collection].append((last - t0) / 1e6)
                await asyncio.sleep(0.05)
        errors = [e for lis in every for e in lis.errors]
        if errors:
            ok = False
            log(f"    CHECK FAILED: {len(errors)} stream errors, first: {errors[0]}")
        log(f"    server RSS at the end {mib(server.rss_kib())}")
        pool.close()
    finally:
        for c in conns:
            c.close()
        server.stop()
    if not times["big"] or not times["small"]:
        raise BenchError("no write reached every listener")
    big, small = statistics.median(times["big"]), statistics.median(times["small"])
    log("== one write, the time until all listeners have its snapshot (ms): "
        f"big p50 {big:.1f} max {max(times['big']):.1f}; small p50 {small:.1f} max {max(times['small']):.1f}; "
        f"big/small {big / small:.2f}x")
    log(f"    big:   {', '.join(f'{x:.1f}' for x in times['big'])}")
    log(f"    small: {', '.join(f'{x:.1f}' for x in times['small'])}")
    if ok:
        emit("edge_watch", round(big, 2), "ms", ref=round(small, 2), clients=args.clients, documents=args.documents,
             p99=round(percentile(times["big"], 99), 2))
    log("all checks held" if ok else "CHECKS FAILED")
    return 0 if ok else 1


def parse_args(argv=None):
    ap = argument_parser(__doc__)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--documents", type=int, default=10000)
    ap.add_argument("--writes", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=60, help="bound on each wait (s)")
    ap.add_argument("--max-seconds", type=float, default=240, help="bound on the whole run (s)")
    a = ap.parse_args(argv)
    if not (1 <= a.clients <= 1000 and SMALL <= a.documents <= 100000 and 1 <= a.writes <= 100):
        ap.error("bounds: --clients 1..1000, --documents 10..100000, --writes 1..100")
    return a


if __name__ == "__main__":
    args = parse_args()
    run_script(lambda: run(args), args.max_seconds)
