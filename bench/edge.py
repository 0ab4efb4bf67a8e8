#!/usr/bin/env python3
"""Edge-client benchmarks (docs/edge-clients.md), on 127.0.0.1, bounded in count and time.

(1) Offline burst and reconnect. N edge clients (ids b0…b{N-1}, default settings), each with a
    listener on its own collection: `GET /clients/b{i}/v1/projects/{p}/databases/(default)/
    documents:listen?query={from c{i}}&includeMetadataChanges=true`, synced with the server
    (`fromCache:false`). Then:
      - the even half goes offline (`POST /clients/b{i}:disableNetwork`); their listeners must say
        `fromCache:true`;
      - every client writes a burst of W documents, one commit each, through
        `POST /clients/b{i}/v1/…/documents:commit` (answered at once: latency compensation);
      - the online half quiesces (timed from the start of the burst);
      - the offline half, its writes queued and applied locally (`hasPendingWrites:true`), comes
        back (`:enableNetwork`), and the time until everything is quiesced is measured: every
        client's listener has seen a snapshot with `hasPendingWrites:false, fromCache:false` and all
        its W documents (none with pending writes), and `GET /clients/b{i}` says `pendingWrites: 0`.
      - the backend is checked: every collection c{i} holds exactly W documents.
(2) Memory per idle client: on a fresh server, RSS (/proc/<pid>/status VmRSS) before and after
    creating M idle clients (`PUT /clients/idle{i}`), divided by M.

Usage: python3 bench/edge.py [--clients 500] [--writes 10] [--idle-clients 2000] [--in-memory]
(FIREGATE_BIN defaults to .build/release/firegate; a debug build is refused unless --allow-debug.)
docs/benchmarks.md: quiesce < 1 s, an idle client < 4 KiB; bench/run judges them (BENCH_JSON=1 prints one
`@bench {json}` line per figure). This script prints figures. Exit status 0 when the run completed and every check held,
1 when a check failed (a client that did not quiesce, missing documents), 2 when the run failed.
"""
import argparse
import asyncio
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgbench import (REPO, BenchError, ConnPool, HttpConn, Server, SSEConn, check_binary, commit_body, docs_root,  # noqa: E402
                     emit, gather_limited, log, mib, percentile, query_param, raise_nofile, run_script, settle_rss)

PROJECT = "bench-edge"
CONCURRENCY = 64


class ClientView:
    """What one client's listener last showed."""

    def __init__(self, i: int, writes: int):
        self.i = i
        self.writes = writes
        self.snapshots = 0
        self.metadata = None
        self.docs = 0
        self.pending_docs = 0
        self.errors = []
        self.history = []        # (user time ns, fromCache, hasPendingWrites, docs) per snapshot
        self.quiet_at = None     # time it last became quiesced
        self.waiter = None       # (predicate, future)

    def on_event(self, conn, ev):
        if ev.event != "snapshot":
            if ev.event not in ("sync",):
                self.errors.append(f"{ev.event}: {ev.data[:200]!r}")
            return
        body = json.loads(ev.data)
        self.snapshots += 1
        self.metadata = body.get("metadata", {})
        docs = body.get("documents", [])
        self.docs = len(docs)
        self.pending_docs = sum(1 for d in docs if d.get("metadata", {}).get("hasPendingWrites"))
        self.history.append((ev.user_ns, self.metadata.get("fromCache"), self.metadata.get("hasPendingWrites"), self.docs))
        self.quiet_at = ev.user_ns if self.quiesced() else None
        if self.waiter and self.waiter[0](self) and not self.waiter[1].done():
            self.waiter[1].set_result(ev.user_ns)

    def quiesced(self) -> bool:
        m = self.metadata or {}
        return (m.get("fromCache") is False and m.get("hasPendingWrites") is False
                and self.docs == self.writes and self.pending_docs == 0)

    async def wait(self, predicate, timeout: float):
        if predicate(self):
            return True
        fut = asyncio.get_running_loop().create_future()
        self.waiter = (predicate, fut)
        try:
            await asyncio.wait_for(fut, timeout)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            self.waiter = None


def synced(v):
    return v.metadata is not None and v.metadata.get("fromCache") is False


def offline_view(v):
    return v.metadata is not None and v.metadata.get("fromCache") is True


def local_burst_view(v):
    return v.docs == v.writes and v.metadata.get("hasPendingWrites") is True


async def wait_views(views, predicate, timeout: float):
    """Waits until every view satisfies predicate; returns (done, latest satisfying time)."""
    results = await asyncio.gather(*(v.wait(predicate, timeout) for v in views))
    return sum(results), results


async def pending_zero(pool, views, deadline: float):
    """Polls GET /clients/{id} until every client has pendingWrites 0; returns (ok, time ns, counts)."""
    left = list(views)
    while left and time.monotonic() < deadline:
        states = await gather_limited([pool.json("GET", f"/clients/b{v.i}") for v in left], CONCURRENCY)
        left = [v for v, s in zip(left, states) if s.get("pendingWrites") != 0]
        if left:
            await asyncio.sleep(0.05)
    return not left, time.time_ns(), len(left)


async def burst_phase(binary, args) -> bool:
    n, w = args.clients, args.writes
    server = Server(binary, PROJECT, durable=not args.in_memory, label="edge").start()
    ok = True
    conns = []
    try:
        pool = ConnPool(server.host, server.port, CONCURRENCY)
        root = docs_root(PROJECT)
        log(f"== (1) {n} edge clients, one listener each (includeMetadataChanges), half offline, {w} one-document "
            f"commits per client ({'in-memory server' if args.in_memory else 'server on a data dir'}), pid {server.proc.pid}")
        rss0 = server.rss_kib()
        t = time.monotonic()
        await gather_limited([pool.json("PUT", f"/clients/b{i}", {"project": PROJECT}) for i in range(n)], CONCURRENCY)
        views = [ClientView(i, w) for i in range(n)]
        conns = []
        for v in views:
            q = {"from": [{"collectionId": f"c{v.i}"}]}
            path = f"/clients/b{v.i}{root}:listen?query={query_param(q)}&includeMetadataChanges=true"
            conns.append(SSEConn(server.host, server.port, path, v.on_event, tag=v.i))

        async def open_one(c):
            await c.connect()
            await asyncio.wait_for(c.opened, 30)
        await gather_limited([open_one(c) for c in conns], CONCURRENCY)
        done, _ = await wait_views(views, synced, 60)
        if done < n:
            raise BenchError(f"only {done}/{n} listeners synced with the server within 60 s")
        log(f"    clients created and listeners synced in {time.monotonic() - t:.2f} s; RSS {mib(rss0)} -> {mib(server.rss_kib())}")

        offline = [v for v in views if v.i % 2 == 0]
        online = [v for v in views if v.i % 2 == 1]
        t = time.monotonic()
        await gather_limited([pool.json("POST", f"/clients/b{v.i}:disableNetwork", b"") for v in offline], CONCURRENCY)
        done, _ = await wait_views(offline, offline_view, 10)
        log(f"    {len(offline)} clients offline in {time.monotonic() - t:.2f} s; "
            f"{done}/{len(offline)} listeners showed fromCache:true")
        if done < len(offline):
            ok = False
            log("    CHECK FAILED: a listener of an offline client did not raise a fromCache:true snapshot")

        # the burst: every client, W one-document commits, in order per client, all clients at once
        t_burst = time.time_ns()
        acks = []

        async def burst(v):
            conn = HttpConn(server.host, server.port)
            try:
                for j in range(w):
                    t0 = time.time_ns()
                    body = commit_body(PROJECT, {f"c{v.i}/d{j}": {"j": j, "client": v.i}})
                    status, hdrs, data = await conn.request("POST", f"/clients/b{v.i}{root}:commit", body)
                    if status != 200:
                        raise BenchError(f"client b{v.i} commit {j} -> {status}: {data[:300]!r}")
                    acks.append(time.time_ns() - t0)
            finally:
                conn.close()
        await gather_limited([burst(v) for v in views], CONCURRENCY)
        burst_s = (time.time_ns() - t_burst) / 1e9
        log(f"    burst: {n * w} commits answered in {burst_s:.2f} s "
            f"(answer p50 {percentile(acks, 50) / 1e6:.2f} ms, p99 {percentile(acks, 99) / 1e6:.2f} ms)")

        done, _ = await wait_views(online, ClientView.quiesced, args.timeout)
        pz_ok, pz_t, pz_left = await pending_zero(pool, online, time.monotonic() + args.timeout)
        if done < len(online) or not pz_ok:
            ok = False
            log(f"    CHECK FAILED: online half: {done}/{len(online)} listeners quiesced, {pz_left} clients with pending writes")
        q_online = max([v.quiet_at or 0 for v in online] + [pz_t]) - t_burst
        log(f"    online half quiesced {q_online / 1e6:.0f} ms after the burst started "
            f"(listeners {(max(v.quiet_at or 0 for v in online) - t_burst) / 1e6:.0f} ms)")

        done, _ = await wait_views(offline, local_burst_view, 10)
        log(f"    offline half: {done}/{len(offline)} listeners show their {w} documents locally with hasPendingWrites:true")
        if done < len(offline):
            ok = False
            log("    CHECK FAILED: latency-compensated view missing for an offline client")
        states = await gather_limited([pool.json("GET", f"/clients/b{v.i}") for v in offline], CONCURRENCY)
        queued = [s.get("pendingWrites") for s in states]
        log(f"    offline half: pendingWrites per client min {min(queued)} max {max(queued)} (expected {w})")

        # reconnect
        t_enable = time.time_ns()
        await gather_limited([pool.json("POST", f"/clients/b{v.i}:enableNetwork", b"") for v in offline], CONCURRENCY)
        enabled_s = (time.time_ns() - t_enable) / 1e9
        done, _ = await wait_views(views, ClientView.quiesced, args.timeout)
        listeners_t = max(v.quiet_at or 0 for v in views)
        pz_ok, pz_t, pz_left = await pending_zero(pool, views, time.monotonic() + args.timeout)
        if done < n or not pz_ok:
            ok = False
            stuck = [v for v in views if not v.quiesced()][:5]
            log(f"    CHECK FAILED: {done}/{n} listeners quiesced, {pz_left} clients with pending writes; e.g. "
                + "; ".join(f"b{v.i}: {v.metadata} docs={v.docs} pendingDocs={v.pending_docs}" for v in stuck))
        per_client = sorted((v.quiet_at or 0) - t_enable for v in offline)
        log(f"    {len(offline)} clients back online ({enabled_s:.2f} s to send the :enableNetwork calls)")
        log(f"    quiesced after reconnect: listeners {(listeners_t - t_enable) / 1e6:.0f} ms, "
            f"pendingWrites 0 confirmed at {(pz_t - t_enable) / 1e6:.0f} ms")
        log(f"    per reconnected client, time to its quiesced snapshot: p50 {percentile(per_client, 50) / 1e6:.0f} ms, "
            f"p99 {percentile(per_client, 99) / 1e6:.0f} ms, max {per_client[-1] / 1e6:.0f} ms")
        if args.verbose:
            for v in views[:2]:
                log(f"    b{v.i} snapshots (ms since the burst, fromCache, hasPendingWrites, documents): "
                    + ", ".join(f"({(t - t_burst) / 1e6:.0f}, {fc}, {pw}, {d})" for t, fc, pw, d in v.history))
        snaps = [v.snapshots for v in views]
        log(f"    snapshots per listener: min {min(snaps)} median {percentile(snaps, 50)} max {max(snaps)}; "
            f"stream errors {sum(len(v.errors) for v in views)}")
        errs = [e for v in views for e in v.errors]
        if errs:
            ok = False
            log(f"    CHECK FAILED: stream errors, first: {errs[0]}")

        # the backend has every document exactly once
        counts = await gather_limited([pool.json("GET", f"{root}/c{i}?pageSize=1000") for i in range(n)], CONCURRENCY)
        wrong = [(i, len(c.get("documents", []))) for i, c in enumerate(counts) if len(c.get("documents", [])) != w]
        log(f"    backend: {n - len(wrong)}/{n} collections hold exactly {w} documents")
        if wrong:
            ok = False
            log(f"    CHECK FAILED: e.g. {wrong[:5]}")
        log(f"    server RSS at the end {mib(server.rss_kib())}")
        pool.close()
        return ok, (pz_t - t_enable if pz_ok else None), (listeners_t - t_enable)
    finally:
        for c in conns:
            c.close()
        server.stop(keep=args.keep)


async def memory_phase(binary, args):
    m = args.idle_clients
    server = Server(binary, PROJECT, durable=not args.in_memory, label="edge-mem").start()
    try:
        pool = ConnPool(server.host, server.port, 16)
        await pool.json("GET", "/clients")
        log(f"== (2) memory of {m} idle edge clients (PUT /clients/idle{{i}}, default settings), fresh server pid {server.proc.pid}")
        before = await settle_rss(server, 1.0)
        t = time.monotonic()
        await gather_limited([pool.json("PUT", f"/clients/idle{i}", {"project": PROJECT}) for i in range(m)], 16)
        made = time.monotonic() - t
        listed = await pool.json("GET", "/clients")
        after = await settle_rss(server, 2.0)
        pool.close()
        per = (after - before) / m
        log(f"    created in {made:.2f} s; GET /clients lists {len(listed.get('clients', []))}")
        log(f"    RSS before {mib(before)}, after {mib(after)}: {per:.1f} KiB per idle client")
        return per
    finally:
        server.stop(keep=args.keep)


async def main(args) -> int:
    kind = check_binary(args.bin, args.allow_debug)
    limit = raise_nofile(args.clients * 3 + 500)
    log(f"firegate: {args.bin} ({kind} build); {os.cpu_count()} cores; open-file limit here {limit}")
    if kind == "debug":
        log("WARNING: debug build — trying the script out, the figures mean nothing")
    ok, reconnect_ns, listeners_ns = await asyncio.wait_for(burst_phase(args.bin, args), args.max_seconds)
    per = await asyncio.wait_for(memory_phase(args.bin, args), args.max_seconds)
    log("== summary")
    log(f"  {args.clients} clients x {args.writes} writes, half offline: quiesced "
        f"{'NOT' if reconnect_ns is None else f'{reconnect_ns / 1e6:.0f} ms'} after :enableNetwork "
        f"(listeners {listeners_ns / 1e6:.0f} ms)")
    log(f"  memory per idle client: {per:.1f} KiB ({args.idle_clients} clients)")
    if ok and reconnect_ns is not None:   # a failed check gives no figure: the run failed
        emit("edge_quiesce", round(reconnect_ns / 1e6, 1), "ms", clients=args.clients, writes=args.writes,
             listeners_ms=round(listeners_ns / 1e6, 1))
    emit("edge_idle_client", round(per, 2), "KiB", clients=args.idle_clients)
    log("all checks held" if ok else "CHECKS FAILED")
    return 0 if ok else 1


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("FIREGATE_BIN", os.path.join(REPO, ".build/release/firegate")))
    ap.add_argument("--allow-debug", action="store_true", help="run on a debug build (to try the script)")
    ap.add_argument("--clients", type=int, default=500)
    ap.add_argument("--writes", type=int, default=10, help="documents written per client (one commit each)")
    ap.add_argument("--idle-clients", type=int, default=2000)
    ap.add_argument("--in-memory", action="store_true", help="server --in-memory instead of a data dir")
    ap.add_argument("--timeout", type=float, default=120, help="bound on each wait for quiescence (s)")
    ap.add_argument("--max-seconds", type=float, default=600, help="bound on each phase (s)")
    ap.add_argument("--keep", action="store_true", help="keep the run folders under bench/out")
    ap.add_argument("--verbose", action="store_true", help="print the snapshot history of two clients")
    a = ap.parse_args(argv)
    if not (2 <= a.clients <= 2000 and 1 <= a.writes <= 100 and 1 <= a.idle_clients <= 10000):
        ap.error("bounds: --clients 2..2000, --writes 1..100, --idle-clients 1..10000")
    return a


if __name__ == "__main__":
    args = parse_args()
    run_script(lambda: main(args), 2 * args.max_seconds + 60)   # each phase has its own bound too
