#!/usr/bin/env python3
"""A mixed soak (docs/benchmarks.md: "5-minute mixed soak: zero errors, resident memory flat after
warm-up"), on 127.0.0.1, bounded in count and time.

One durable server (a data dir under bench/out) carries, for --seconds (default 300):
  - 1 000 SSE streams: 500 backend single-document listens on `soak/d{0..49}` (10 each), 300 tree
    streams on `/soak/n{0..29}` (10 each), 200 edge listeners (50 persistent edge clients, each
    with a query listener on its own collection `e{i}` and three document listeners on `soak/d…`);
    every second a few backend and tree streams hang up and reconnect, the backend ones with
    `Last-Event-ID` (resume);
  - writes: backend `:commit`s setting `soak/d{k}`, tree PUTs and multi-path PATCHes on
    `/soak/n{k}`, edge-client commits into `e{i}/x{0..9}` (a bounded key space, so the data does
    not grow);
  - reads: document GETs, a runQuery, tree GETs, edge reads (`GET /clients/{id}/v1/…`) and
    `GET /clients/{id}`;
  - clients of every protocol that come, do one thing and go (bench/churn.py's: gRPC unary and
    Listen, RTDB sockets, SSE, HTTP/1.1, edge clients created and deleted), --client-churn a second;
  - edge clients flipping offline and online (`:disableNetwork` / `:enableNetwork`, writing
    while offline) and restarting (`:restart`: a persistent client keeps its queue; its streams
    end and are reopened);
at a bounded rate (--rate requests/s, default 300). Every 5 s it samples the server's resident
memory (VmRSS) and open descriptors.

Before the load, the server's bounded buffers are filled, so that growth after the warm-up can
only be a leak: 20 000 commits (--prefill: the resume history a database keeps, DatabaseState)
and 1 000 commits per edge client (--prefill-edge: the settled write outcomes each keeps).

Errors counted: any unexpected HTTP status or connection failure, any `event: error` or `cancel`,
any stream that ends without this script having closed it (or restarted its client), a restart
that lost writes. At the end the load stops, every client comes online and
`:waitForPendingWrites`, and it checks that every stream's last event shows the last value
written (backend and tree listeners: each document's and location's final value; edge query
listeners: the client's ten documents with their final values and `hasPendingWrites:false`), and
that the backend holds every edge write.

Memory is "flat" when the median RSS of the last minute is within 10 % of the median of the
minute after warm-up (--warmup, default 60 s); the least-squares slope after warm-up is reported
too. The curve is printed and, with --write-results,
written into bench/RESULTS.md as its "## Soak" section (bench/run keeps that section).

Usage: python3 bench/soak.py [--seconds 300] [--rate 300] [--write-results]
Exit status 0: zero errors, every check held, memory flat; 1: otherwise; 2: the run failed.
"""
import asyncio
import datetime
import json
import os
import random
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgbench import (REPO, argument_parser, BenchError, check_binary, commit_body, ConnPool, docs_root,  # noqa: E402
                     gather_limited, log, mib, query_param, raise_nofile, run_script, Server, SSEConn)

PROJECT = "bench-soak"
NS = "bench-soak"
DOCS, TREE_NODES, EDGE_CLIENTS, EDGE_KEYS = 50, 30, 50, 10
DOC_STREAMS, TREE_STREAMS = 500, 300        # + EDGE_CLIENTS * 4 edge listeners = 1 000


class Soak:
    def __init__(self, server: Server, args):
        self.server = server
        self.args = args
        self.rng = random.Random(args.seed)
        self.root = docs_root(PROJECT)
        self.pool = ConnPool(server.host, server.port, 24, timeout=60)
        self.errors = []
        self.ops = {}
        self.counter = 0
        self.doc_value = {}             # soak/d{k} -> last value acknowledged
        self.node_value = {}            # n{k} -> last value acknowledged
        self.edge_value = {}            # (i, j) -> last value the client accepted
        self.streams = []               # every open Stream
        self.client_streams = {i: [] for i in range(EDGE_CLIENTS)}
        self.offline = set()
        self.busy_clients = set()       # clients being flipped or restarted right now
        self.writing = set()            # keys with a write in flight: one at a time, so the last
                                        # write answered is the last one applied
        self.samples = []               # (seconds since start, rss KiB, open fds)
        self.reconnects = 0
        self.stopping = False
        self.load_ops = {}              # requests made during the load, by kind

    def error(self, what: str):
        self.errors.append(what)
        if len(self.errors) <= 10:
            log(f"    ERROR: {what}")

    def count(self, op: str):
        self.ops[op] = self.ops.get(op, 0) + 1

    def next_value(self) -> int:
        self.counter += 1
        return self.counter

    async def call(self, op: str, method: str, path: str, body=None):
        try:
            result = await self.pool.json(method, path, body)
            self.count(op)
            return result
        except (BenchError, OSError, asyncio.TimeoutError, ConnectionError) as e:
            self.error(f"{op}: {method} {path}: {e!r}"[:400])
            return None

    # ---- streams ----------------------------------------------------------------------------

    async def open_stream(self, kind: str, key, path: str, headers=None, client=None):
        stream = Stream(self, kind, key, path, client)
        await stream.open(headers)
        self.streams.append(stream)
        if client is not None:
            self.client_streams[client].append(stream)
        return stream

    async def seed(self):
        """Every document and tree location exists before the load starts (reads expect them)."""
        v = self.next_value()
        await self.call("doc commit", "POST", f"{self.root}:commit",
                        commit_body(PROJECT, {f"soak/d{k}": {"v": v, "k": k} for k in range(DOCS)}))
        await self.call("tree PUT", "PUT", f"/soak.json?ns={NS}", {f"n{k}": {"v": v, "k": k} for k in range(TREE_NODES)})
        self.doc_value = {k: v for k in range(DOCS)}
        self.node_value = {k: v for k in range(TREE_NODES)}
        # The database keeps its last 20 000 commits for resuming listens (DatabaseState): a
        # bounded buffer that would otherwise fill during most of the run. Filling it first
        # means any growth after the warm-up is not that buffer.
        t = time.monotonic()

        async def writer(w: int):     # one writer per document, so the last answer is the last write
            keys = [k for k in range(DOCS) if k % 32 == w]
            for n in range(self.args.prefill // 32):
                k = keys[n % len(keys)]
                v = self.next_value()
                if await self.call("prefill commit", "POST", f"{self.root}:commit",
                                   commit_body(PROJECT, {f"soak/d{k}": {"v": v, "k": k}})) is not None:
                    self.doc_value[k] = v
        await asyncio.gather(*(writer(w) for w in range(32)))
        # Each edge client keeps the outcomes of its last 1 000 settled writes (WriteOutcomes):
        # filled first too.
        edge_writes = self.args.prefill_edge

        async def client_writer(i: int):
            for n in range(edge_writes):
                j, v = n % EDGE_KEYS, self.next_value()
                if await self.call("prefill edge commit", "POST", f"/clients/c{i}{self.root}:commit",
                                   commit_body(PROJECT, {f"e{i}/x{j}": {"v": v}})) is not None:
                    self.edge_value[(i, j)] = v
        await gather_limited([client_writer(i) for i in range(EDGE_CLIENTS)], 25)
        for i in range(EDGE_CLIENTS):
            await self.call("waitForPendingWrites", "POST", f"/clients/c{i}:waitForPendingWrites?timeoutMs=60000", b"")
        log(f"    bounded buffers filled first, in {time.monotonic() - t:.1f} s: {self.ops.get('prefill commit', 0)} commits "
            f"(the resume history), {self.ops.get('prefill edge commit', 0)} edge commits (each client's settled write outcomes)")

    async def open_all(self):
        tasks = []
        for n in range(DOC_STREAMS):
            k = n % DOCS
            tasks.append(self.open_stream("doc", k, f"{self.root}/soak/d{k}:listen"))
        for n in range(TREE_STREAMS):
            k = n % TREE_NODES
            tasks.append(self.open_stream("tree", k, f"/soak/n{k}.json?ns={NS}"))
        for i in range(EDGE_CLIENTS):
            tasks.append(self.open_client_streams(i))
        for chunk in range(0, len(tasks), 64):
            await asyncio.gather(*tasks[chunk:chunk + 64])

    async def open_client_streams(self, i: int):
        q = query_param({"from": [{"collectionId": f"e{i}"}]})
        await self.open_stream("edge-query", i, f"/clients/c{i}{self.root}:listen?query={q}&includeMetadataChanges=true", client=i)
        for m in range(3):
            k = (i * 3 + m) % DOCS
            await self.open_stream("edge-doc", k, f"/clients/c{i}{self.root}/soak/d{k}:listen", client=i)

    async def churn(self):
        """Every second a few backend and tree streams hang up and reconnect."""
        while not self.stopping:
            await asyncio.sleep(1)
            plain = [s for s in self.streams if s.kind in ("doc", "tree") and s.conn is not None and s.conn.opened.done()]
            for stream in self.rng.sample(plain, min(self.args.churn, len(plain))):
                stream.retire()
                self.streams.remove(stream)
                headers = {"Last-Event-ID": stream.last_id} if stream.kind == "doc" and stream.last_id else None
                try:
                    again = await self.open_stream(stream.kind, stream.key, stream.path, headers)
                    # A resumed stream with nothing new sends nothing: it still shows the old
                    # value. One that already had an event (a tree stream's first `put`, sent as
                    # it opens) shows something newer than the old stream may have seen.
                    if not again.seen:
                        again.value = stream.value
                    self.reconnects += 1
                except (OSError, asyncio.TimeoutError, BenchError) as e:
                    self.error(f"reconnect {stream.path}: {e!r}")

    # ---- load -------------------------------------------------------------------------------

    async def one_op(self):
        r = self.rng.random()
        if r < 0.42:
            await self.one_write(r)
        elif r < 0.60:
            await self.call("doc GET", "GET", f"{self.root}/soak/d{self.rng.randrange(DOCS)}")
        elif r < 0.66:
            q = {"structuredQuery": {"from": [{"collectionId": "soak"}],
                                     "orderBy": [{"field": {"fieldPath": "v"}, "direction": "DESCENDING"}], "limit": 10}}
            await self.call("runQuery", "POST", f"{self.root}:runQuery", q)
        elif r < 0.80:
            await self.call("tree GET", "GET", f"/soak/n{self.rng.randrange(TREE_NODES)}.json?ns={NS}")
        elif r < 0.92:
            # one of the documents the client listens to, so it is cached also while offline
            i = self.rng.randrange(EDGE_CLIENTS)
            await self.call("edge GET", "GET", f"/clients/c{i}{self.root}/soak/d{(i * 3 + self.rng.randrange(3)) % DOCS}")
        else:
            await self.call("client state", "GET", f"/clients/c{self.rng.randrange(EDGE_CLIENTS)}")

    async def one_write(self, r: float):
        if r < 0.15:
            key = ("doc", self.rng.randrange(DOCS))
        elif r < 0.27:
            key = ("tree", self.rng.randrange(TREE_NODES))
        else:
            key = ("edge", self.rng.randrange(EDGE_CLIENTS))
            if key[1] in self.busy_clients:
                return
        if key in self.writing:
            return
        self.writing.add(key)
        try:
            v = self.next_value()
            kind, k = key
            if kind == "doc":
                if await self.call("doc commit", "POST", f"{self.root}:commit",
                                   commit_body(PROJECT, {f"soak/d{k}": {"v": v, "k": k}})) is not None:
                    self.doc_value[k] = v
            elif kind == "tree":
                if self.rng.random() < 0.5:
                    ok = await self.call("tree PUT", "PUT", f"/soak/n{k}.json?ns={NS}", {"v": v, "k": k})
                else:
                    ok = await self.call("tree PATCH", "PATCH", f"/soak.json?ns={NS}", {f"n{k}/v": v, f"n{k}/k": k})
                if ok is not None:
                    self.node_value[k] = v
            else:
                j = self.rng.randrange(EDGE_KEYS)
                if await self.call("edge commit", "POST", f"/clients/c{k}{self.root}:commit",
                                   commit_body(PROJECT, {f"e{k}/x{j}": {"v": v}})) is not None:
                    self.edge_value[(k, j)] = v
        finally:
            self.writing.discard(key)

    async def load(self, deadline: float):
        """Request workers at --rate requests/s in all."""
        workers = 16
        interval = workers / self.args.rate

        async def worker():
            next_at = time.monotonic()
            while time.monotonic() < deadline and not self.stopping:
                await self.one_op()
                next_at += interval
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        await asyncio.gather(*(worker() for _ in range(workers)))

    async def flip_and_restart(self, deadline: float):
        """Clients go offline and online; now and then one restarts (persistent: keeps its queue)."""
        while time.monotonic() < deadline and not self.stopping:
            await asyncio.sleep(0.25)
            i = self.rng.randrange(EDGE_CLIENTS)
            if i in self.busy_clients or ("edge", i) in self.writing:
                continue
            self.busy_clients.add(i)
            try:
                if self.rng.random() < self.args.restarts:
                    for stream in self.client_streams[i]:
                        stream.retire()
                        self.streams.remove(stream)
                    self.client_streams[i] = []
                    result = await self.call("client restart", "POST", f"/clients/c{i}:restart", b"")
                    if result is not None and result.get("lostWrites") != 0:
                        self.error(f"restart of c{i} lost writes: {result}")
                    await self.open_client_streams(i)
                elif i in self.offline:
                    await self.call("enableNetwork", "POST", f"/clients/c{i}:enableNetwork", b"")
                    self.offline.discard(i)
                else:
                    await self.call("disableNetwork", "POST", f"/clients/c{i}:disableNetwork", b"")
                    self.offline.add(i)
            finally:
                self.busy_clients.discard(i)

    async def client_churn(self, deadline: float):
        """Clients of every protocol (bench/churn.py's: gRPC unary and Listen, RTDB sockets, SSE,
        HTTP/1.1, edge clients) that come, do one thing and go, one after another: --client-churn
        a second, in a thread (grpcio and the socket client block)."""
        if self.args.client_churn <= 0:
            return
        import churn as churning
        clients = churning.Churn(self.server.base)
        interval, i = 1 / self.args.client_churn, 0
        while time.monotonic() < deadline and not self.stopping:
            protocol = churning.PROTOCOLS[i % len(churning.PROTOCOLS)]
            try:
                await asyncio.to_thread(getattr(clients, protocol.replace("-", "_")), i)
                self.count(f"churn {protocol}")
            except Exception as failure:  # noqa: BLE001 — every failure of a client is an error of the run
                self.error(f"churned {protocol} client {i}: {failure!r}")
            i += 1
            await asyncio.sleep(interval)

    async def sample(self, start: float):
        while not self.stopping:
            self.samples.append((time.monotonic() - start, self.server.rss_kib(), self.server.open_fds()))
            await asyncio.sleep(5)

    # ---- the end ----------------------------------------------------------------------------

    async def settle_and_check(self) -> list:
        failures = []
        for i in range(EDGE_CLIENTS):
            await self.call("enableNetwork", "POST", f"/clients/c{i}:enableNetwork", b"")
        self.offline.clear()
        for i in range(EDGE_CLIENTS):
            await self.call("waitForPendingWrites", "POST", f"/clients/c{i}:waitForPendingWrites?timeoutMs=30000", b"")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            failures = self.stale_streams()
            if not failures:
                break
            await asyncio.sleep(0.5)
        for (i, j), v in sorted(self.edge_value.items()):
            got = await self.call("final GET", "GET", f"{self.root}/e{i}/x{j}")
            have = int(got["fields"]["v"]["integerValue"]) if got else None
            if have != v:
                failures.append(f"backend e{i}/x{j}: v={have}, the client accepted v={v} last")
        for i in range(EDGE_CLIENTS):
            state = await self.call("client state", "GET", f"/clients/c{i}")
            if state and state.get("pendingWrites") != 0:
                failures.append(f"c{i}: pendingWrites {state.get('pendingWrites')} after waitForPendingWrites")
        return failures

    def stale_streams(self) -> list:
        stale = []
        for s in self.streams:
            if s.kind in ("doc", "edge-doc"):
                want = self.doc_value.get(s.key)
            elif s.kind == "tree":
                want = self.node_value.get(s.key)
            else:
                want = {j: v for (i, j), v in self.edge_value.items() if i == s.key} or None
            if want is not None and s.value != want:
                stale.append(f"{s.kind} {s.path}: last event shows {s.value!r}, expected {want!r}")
            if s.kind == "edge-query" and s.pending:
                stale.append(f"{s.path}: hasPendingWrites still true")
        return stale


class Stream:
    """One SSE stream and the value its last event showed."""

    def __init__(self, soak: Soak, kind: str, key, path: str, client):
        self.soak, self.kind, self.key, self.path, self.client = soak, kind, key, path, client
        self.value = None
        self.seen = False           # whether a data event arrived
        self.pending = False
        self.last_id = None
        self.retiring = False
        self.conn = None

    async def open(self, headers):
        self.conn = SSEConn(self.soak.server.host, self.soak.server.port, self.path, self.on_event, headers=headers)
        await self.conn.connect()
        await asyncio.wait_for(self.conn.opened, 30)
        if self.conn.status != 200:
            raise BenchError(f"{self.path}: status {self.conn.status}")
        self.conn.closed.add_done_callback(self.on_closed)

    def retire(self):
        self.retiring = True
        self.conn.close()

    def on_closed(self, _fut):
        if not self.retiring and not self.soak.stopping:
            self.soak.error(f"{self.kind} stream {self.path} ended: {self.conn.error}")

    def on_event(self, _conn, ev):
        if self.soak.stopping:      # the server is shutting down: its goodbyes are not errors
            return
        if ev.event in ("error", "cancel"):
            self.soak.error(f"{self.kind} stream {self.path}: event {ev.event}: {ev.data[:200]!r}")
            return
        if ev.id:
            self.last_id = ev.id
        if ev.event in ("sync", "keep-alive"):
            return
        body = json.loads(ev.data)
        self.seen = True
        if self.kind == "doc" or self.kind == "edge-doc":
            doc = body.get("document")
            self.value = int(doc["fields"]["v"]["integerValue"]) if doc else None
        elif self.kind == "tree":
            path, data = body.get("path"), body.get("data")
            if ev.event == "put" and path == "/":
                self.value = data.get("v") if isinstance(data, dict) else None
            elif ev.event == "put" and path == "/v":
                self.value = data
            elif ev.event == "patch" and path == "/" and isinstance(data, dict) and "v" in data:
                self.value = data["v"]
        else:
            self.value = {int(d["name"].rsplit("/x", 1)[1]): int(d["fields"]["v"]["integerValue"])
                          for d in body.get("documents", [])} or None
            self.pending = bool(body.get("metadata", {}).get("hasPendingWrites"))


def slope(samples, warmup: float) -> float:
    """Least-squares growth of RSS after the warm-up, in MiB per minute."""
    pts = [(t, rss / 1024) for t, rss, _ in samples if t >= warmup]
    if len(pts) < 2:
        return 0.0
    mt = sum(t for t, _ in pts) / len(pts)
    mr = sum(r for _, r in pts) / len(pts)
    den = sum((t - mt) ** 2 for t, _ in pts)
    return 60 * sum((t - mt) * (r - mr) for t, r in pts) / den if den else 0.0


def flatness(samples, warmup: float):
    """(median RSS in the minute after warm-up, median RSS in the last minute, growth fraction)."""
    end = samples[-1][0]
    first = [rss for t, rss, _ in samples if warmup <= t < warmup + 60]
    last = [rss for t, rss, _ in samples if t >= end - 60]
    if not first or not last:
        return None
    a, b = statistics.median(first), statistics.median(last)
    return a, b, (b - a) / a


def results_section(args, soak, flat, failures, elapsed, head) -> str:
    ops = sum(soak.load_ops.values())
    lines = [
        "## Soak",
        "",
        f"Written by `bench/soak.py --seconds {args.seconds} --rate {args.rate}` on "
        f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, commit `{head}`, release binary, "
        f"durable server (data dir). {elapsed:.0f} s of load: {ops} requests "
        f"({ops / elapsed:.0f}/s), 1 000 SSE streams, {soak.reconnects} stream reconnects.",
        "",
        f"**Errors: {len(soak.errors)}. End checks: {'all held' if not failures else f'{len(failures)} FAILED'}. "
        + (f"Resident memory: {mib(flat[0])} in the minute after warm-up ({args.warmup:.0f} s), {mib(flat[1])} in the last "
           f"minute ({flat[2] * 100:+.1f} %; least-squares slope after warm-up {slope(soak.samples, args.warmup):+.2f} MiB/min): "
           f"{'flat' if abs(flat[2]) <= 0.10 else 'NOT flat'}.**" if flat else "**"),
        "",
        "Requests during the load, by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(soak.load_ops.items())) + ". "
        f"Before it (not counted): {soak.ops.get('prefill commit', 0)} commits and {soak.ops.get('prefill edge commit', 0)} "
        "edge commits filling the bounded buffers, 50 clients created, 1 000 streams opened.",
        "",
        "| s | RSS | open fds |",
        "|---|---|---|",
    ]
    for t, rss, fds in soak.samples[::3]:
        lines.append(f"| {t:.0f} | {mib(rss)} | {fds} |")
    lines.append("")
    return "\n".join(lines)


def write_results(section: str):
    path = os.path.join(REPO, "bench", "RESULTS.md")
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    if "\n## Soak" in text:
        text = text[:text.index("\n## Soak")]
    with open(path, "w") as f:
        f.write(text.rstrip("\n") + "\n\n" + section)


async def run(args) -> int:
    kind = check_binary(args.bin, args.allow_debug)
    raise_nofile(4000)
    log(f"firegate: {args.bin} ({kind} build); {os.cpu_count()} cores")
    server = Server(args.bin, PROJECT, durable=True, label="soak").start()
    soak = Soak(server, args)
    try:
        for i in range(EDGE_CLIENTS):
            await soak.call("client create", "PUT", f"/clients/c{i}", {"project": PROJECT, "persistence": "persistent"})
        await soak.seed()
        await soak.open_all()
        log(f"== soak: {len(soak.streams)} streams open, {args.rate} requests/s for {args.seconds} s, pid {server.proc.pid}")
        start = time.monotonic()    # the curve and the warm-up count from here, after the setup
        setup_ops = dict(soak.ops)
        sampler = asyncio.create_task(soak.sample(start))
        churn = asyncio.create_task(soak.churn())
        deadline = time.monotonic() + args.seconds
        progress = asyncio.create_task(report_progress(soak, start, deadline))
        await asyncio.gather(soak.load(deadline), soak.flip_and_restart(deadline), soak.client_churn(deadline))
        elapsed = time.monotonic() - start
        soak.load_ops = {k: v - setup_ops.get(k, 0) for k, v in soak.ops.items() if v > setup_ops.get(k, 0)}
        churn.cancel()
        progress.cancel()
        await asyncio.sleep(0.5)
        failures = await soak.settle_and_check()
        soak.stopping = True
        sampler.cancel()
        soak.samples.append((time.monotonic() - start, server.rss_kib(), server.open_fds()))
        if not server.alive():
            soak.error("the server died")
    finally:
        soak.stopping = True
        for s in soak.streams:
            s.retire()
        soak.pool.close()
        server.stop()
    flat = flatness(soak.samples, args.warmup)
    log("== memory (s, RSS, open fds): " + ", ".join(f"{t:.0f}:{mib(r)}:{f}" for t, r, f in soak.samples[::3]))
    log("== requests: " + ", ".join(f"{k} {v}" for k, v in sorted(soak.ops.items())))
    for f in failures[:20]:
        log(f"    CHECK FAILED: {f}")
    if flat:
        log(f"== RSS: {mib(flat[0])} in the minute after warm-up, {mib(flat[1])} in the last minute ({flat[2] * 100:+.1f} %); "
            f"slope after warm-up {slope(soak.samples, args.warmup):+.2f} MiB/min")
    log(f"== {len(soak.errors)} errors, {len(failures)} failed end checks, {soak.reconnects} stream reconnects")
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    if args.write_results:
        write_results(results_section(args, soak, flat, failures, elapsed, head))
        log("wrote the Soak section of bench/RESULTS.md")
    return 0 if not soak.errors and not failures and flat and abs(flat[2]) <= 0.10 else 1


async def report_progress(soak: Soak, start: float, deadline: float):
    while time.monotonic() < deadline:
        await asyncio.sleep(30)
        t, rss, fds = soak.samples[-1] if soak.samples else (0, 0, 0)
        log(f"    {time.monotonic() - start:.0f} s: {sum(soak.ops.values())} requests, {len(soak.errors)} errors, "
            f"RSS {mib(rss)}, {fds} fds, {len(soak.offline)} clients offline")


def parse_args(argv=None):
    ap = argument_parser(__doc__)
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--warmup", type=float, default=60)
    ap.add_argument("--rate", type=float, default=300, help="requests per second, all kinds together")
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--churn", type=int, default=6, help="streams that hang up and reconnect each second")
    ap.add_argument("--client-churn", type=float, default=20,
                    help="clients of every protocol opened, used once and closed each second (bench/churn.py's)")
    ap.add_argument("--restarts", type=float, default=0.2, help="share of the clients' offline/online steps that restart instead")
    ap.add_argument("--prefill", type=int, default=20000, help="commits written before the load (the resume history's size)")
    ap.add_argument("--prefill-edge", type=int, default=1000,
                    help="commits per edge client before the load (the settled write outcomes each keeps)")
    ap.add_argument("--write-results", action="store_true", help="write the Soak section of bench/RESULTS.md")
    a = ap.parse_args(argv)
    if not (10 <= a.seconds <= 3600 and 0 <= a.warmup < a.seconds and 1 <= a.rate <= 5000):
        ap.error("bounds: --seconds 10..3600, --warmup below --seconds, --rate 1..5000")
    return a


if __name__ == "__main__":
    args = parse_args()
    run_script(lambda: run(args), args.seconds + 180)
