#!/usr/bin/env python3
"""SSE listen fan-out benchmarks (docs/benchmarks.md), all on 127.0.0.1, bounded in count and time:

  (a) N concurrent SSE listeners on one document (`…/documents/fan/doc:listen`); C commits, one
      at a time, each changing the document. Latency of one delivery = the kernel's receive time of
      the listener's event (SO_TIMESTAMPNS) minus the time just before the commit request was sent.
      p50/p99 over all N×C deliveries.                                      target p99 < 25 ms
      The listeners are this one Python process, on the server's cores: reading a thousand events
      costs it about as much CPU as the server spends sending them, and while it reads it takes a
      core from the server. So by default it does not read during a fan-out: right after sending
      a commit it sleeps --reader-pause-ms (200), then reads. The kernel stamps each event when it
      arrives, whenever it is read, so the latencies are the server's own, as listeners on other
      machines would see them. Phase (a) then measures the same again with the reader reading
      at once (`fanout_doc_eager_*`, reported): the figure when listeners share the server's cores.
  (b) the same with N listeners on one query (orderBy over a 10-document collection; each commit
      moves one document, so every listener gets a `modified` change and the full result).
                                                                            target p99 < 25 ms
  (c) S idle streams (single-document listens) on a fresh server: its resident memory
      (/proc/<pid>/status VmRSS) before and after, and per stream.    target S=10 000 < 64 MB (docs/benchmarks.md)

The server is started by this script (release build only; `--allow-debug` to try the script on a
debug build — its figures mean nothing) with RLIMIT_NOFILE raised to the hard limit, on a data dir
under bench/out (durable commits: the commit is fsync'd before the feed publishes it) or with
`--in-memory`. One asyncio process holds every connection; the open-file limit of this process is
raised too (bench/listen.sh also runs `ulimit -n`).

Usage: bench/listen.sh [--listeners 1000] [--commits 20] [--idle 10000] [--in-memory] [--only a,b,c]
With BENCH_JSON=1 (bench/run) it also prints one `@bench {json}` line per figure.
Exit status: 0 when every target is met, 1 when one is missed, 2 when the run itself failed.
"""
import argparse
import asyncio
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgbench import (REPO, BenchError, HttpConn, Server, SSEConn, check_binary, commit_body, docs_root,  # noqa: E402
                     emit, fmt_ms, gather_limited, log, mib, percentile, query_param, raise_nofile, settle_rss)

K_RE = re.compile(rb'"k":\{"integerValue":"(-?\d+)"\}')
PAD = "x" * 200          # a document of a realistic size (~300 bytes of JSON)
P99_TARGET_MS = 25.0
RSS_TARGET_MB = 64.0
OPEN_CONCURRENCY = 200


class FanOut:
    """N listeners; per commit k, the receive time of every listener's event for k."""

    def __init__(self, n: int):
        self.n = n
        self.received = {}        # k -> {listener index: kernel_ns}
        self.user_received = {}   # k -> {listener index: user_ns}
        self.waiters = {}         # k -> Future set when all n have k
        self.first = 0
        self.first_done = asyncio.get_running_loop().create_future()
        self.errors = []
        self.other_events = 0

    def on_event(self, conn: SSEConn, ev):
        if ev.event != "snapshot":
            self.errors.append(f"listener {conn.tag}: {ev.event} {ev.data[:200]!r}")
            return
        ks = [int(m) for m in K_RE.findall(ev.data)]
        if not ks:
            self.other_events += 1
            return
        k = max(ks)
        if k < 0:   # the first event: the initial state
            self.first += 1
            if self.first == self.n and not self.first_done.done():
                self.first_done.set_result(True)
            return
        got = self.received.setdefault(k, {})
        if conn.tag in got:
            self.other_events += 1
            return
        got[conn.tag] = ev.kernel_ns
        self.user_received.setdefault(k, {})[conn.tag] = ev.user_ns
        if len(got) == self.n:
            w = self.waiters.get(k)
            if w and not w.done():
                w.set_result(True)

    async def wait_all(self, k: int, timeout: float) -> bool:
        if len(self.received.get(k, {})) == self.n:
            return True
        w = self.waiters.setdefault(k, asyncio.get_running_loop().create_future())
        try:
            await asyncio.wait_for(asyncio.shield(w), timeout)
            return True
        except asyncio.TimeoutError:
            return False


async def open_listeners(server: Server, path: str, n: int, fan: FanOut, timeout: float):
    conns = [SSEConn(server.host, server.port, path, fan.on_event, tag=i) for i in range(n)]

    async def one(c):
        await c.connect()
        await asyncio.wait_for(c.opened, timeout)
    t0 = time.monotonic()
    await gather_limited([one(c) for c in conns], OPEN_CONCURRENCY)
    try:
        await asyncio.wait_for(asyncio.shield(fan.first_done), timeout)
    except asyncio.TimeoutError:
        raise BenchError(f"only {fan.first}/{n} listeners got their first event within {timeout:.0f} s")
    return conns, time.monotonic() - t0


async def fanout_phase(server: Server, label: str, listen_path: str, write, n: int, commits: int, warmup: int,
                       deadline: float, pause_s: float = 0.0):
    """Opens n listeners, runs warmup+commits commits; returns the figures. With `pause_s`, this
    process sleeps that long right after sending each commit, before reading any event."""
    fan = FanOut(n)
    conns, open_s = await open_listeners(server, listen_path, n, fan, timeout=max(10.0, deadline - time.monotonic()))
    log(f"    {n} listeners open and synced in {open_s:.2f} s; server RSS {mib(server.rss_kib())}, "
        f"{server.open_fds()} fds")
    http = HttpConn(server.host, server.port)
    lat, user_lat, per_commit_max, commit_rtt, missing = [], [], [], [], 0
    cpu0 = server.cpu_seconds()
    try:
        for k in range(warmup + commits):
            if time.monotonic() > deadline:
                raise BenchError(f"{label}: out of time after {k} commits")
            sent = {}
            status, _, body = await http.request("POST", *write(k), on_sent=lambda: sent.setdefault("t", time.time_ns()),
                                                 after_sent=(lambda: time.sleep(pause_s)) if pause_s else None)
            acked = time.time_ns()
            if status != 200:
                raise BenchError(f"{label}: commit {k} -> {status}: {body[:300]!r}")
            complete = await fan.wait_all(k, timeout=min(10.0, max(1.0, deadline - time.monotonic())))
            if k < warmup:
                if k == warmup - 1:
                    cpu0 = server.cpu_seconds()
                continue
            t0 = sent["t"]
            got = fan.received.get(k, {})
            missing += n - len(got)
            if not complete:
                log(f"    commit {k}: only {len(got)}/{n} listeners got it within 10 s")
            d = [t - t0 for t in got.values()]
            lat += d
            user_lat += [t - t0 for t in fan.user_received.get(k, {}).values()]
            if d:
                per_commit_max.append(max(d))
            commit_rtt.append(acked - t0)
        cpu = server.cpu_seconds() - cpu0
    finally:
        http.close()
        for c in conns:
            c.close()
    if fan.errors:
        log(f"    stream errors: {len(fan.errors)}; first: {fan.errors[0]}")
    return {
        "label": label, "n": n, "commits": commits, "samples": len(lat), "missing": missing,
        "p50": percentile(lat, 50), "p99": percentile(lat, 99), "max": max(lat) if lat else float("nan"),
        "user_p50": percentile(user_lat, 50), "user_p99": percentile(user_lat, 99),
        "all_p50": percentile(per_commit_max, 50), "all_p99": percentile(per_commit_max, 99),
        "rtt_p50": percentile(commit_rtt, 50), "errors": len(fan.errors), "extra": fan.other_events,
        "cpu_per_commit": cpu / commits,
    }


def emit_fanout(kind: str, r):
    if r["missing"] == 0 and r["errors"] == 0:   # an incomplete fan-out gives no figure: the run failed
        emit(f"fanout_{kind}_p50", round(r["p50"] / 1e6, 3), "ms", listeners=r["n"], commits=r["commits"])
        emit(f"fanout_{kind}_p99", round(r["p99"] / 1e6, 3), "ms", listeners=r["n"], commits=r["commits"])


def report_fanout(r) -> bool:
    log(f"    deliveries measured: {r['samples']} ({r['n']} listeners x {r['commits']} commits), "
        f"missing {r['missing']}, stream errors {r['errors']}")
    log(f"    commit -> event received (kernel time)   p50 {fmt_ms(r['p50'])}   p99 {fmt_ms(r['p99'])}   max {fmt_ms(r['max'])}")
    log(f"    commit -> event read by this process     p50 {fmt_ms(r['user_p50'])}   p99 {fmt_ms(r['user_p99'])}")
    log(f"    commit -> the LAST listener has it       p50 {fmt_ms(r['all_p50'])}   p99 {fmt_ms(r['all_p99'])}")
    log(f"    commit HTTP round trip (ack)             p50 {fmt_ms(r['rtt_p50'])}")
    log(f"    server CPU per commit (user+sys)             {r['cpu_per_commit'] * 1e3:8.2f} ms "
        f"= {r['cpu_per_commit'] * 1e6 / r['n']:.1f} us per listener")
    return r["missing"] == 0 and r["errors"] == 0 and r["p99"] / 1e6 < P99_TARGET_MS


async def phase_doc(binary, args, deadline):
    project = "bench-doc"
    server = Server(binary, project, durable=not args.in_memory, label="listen-doc").start()
    try:
        http = HttpConn(server.host, server.port)
        root = docs_root(project)
        await http.json("POST", f"{root}:commit", commit_body(project, {"fan/doc": {"k": -1, "pad": PAD}}))
        http.close()

        def write(k):
            return f"{root}:commit", commit_body(project, {"fan/doc": {"k": k, "pad": PAD}})
        log(f"== (a) {args.listeners} SSE listeners on one document, {args.commits} commits "
            f"({'in memory' if args.in_memory else 'durable, fsync'}), server pid {server.proc.pid}")
        r = await fanout_phase(server, "doc", f"{root}/fan/doc:listen", write, args.listeners, args.commits,
                               args.warmup, deadline, args.reader_pause_ms / 1000)
        emit_fanout("doc", r)
        ok = report_fanout(r)
        if args.reader_pause_ms > 0:
            log("    the same, the reader reading at once (listeners competing with the server for its cores):")
            http = HttpConn(server.host, server.port)
            await http.json("POST", f"{root}:commit", commit_body(project, {"fan/doc": {"k": -1, "pad": PAD}}))
            http.close()
            eager = await fanout_phase(server, "doc", f"{root}/fan/doc:listen", write, args.listeners, args.commits,
                                       args.warmup, deadline)
            emit_fanout("doc_eager", eager)
            report_fanout(eager)
            ok = ok and eager["missing"] == 0 and eager["errors"] == 0
        return r, ok
    finally:
        server.stop(keep=args.keep)


async def phase_query(binary, args, deadline):
    project = "bench-query"
    server = Server(binary, project, durable=not args.in_memory, label="listen-query").start()
    try:
        http = HttpConn(server.host, server.port)
        root = docs_root(project)
        await http.json("POST", f"{root}:commit",
                        commit_body(project, {f"fanq/d{i}": {"k": i - 10, "pad": PAD} for i in range(10)}))
        http.close()
        query = {"from": [{"collectionId": "fanq"}], "orderBy": [{"field": {"fieldPath": "k"}, "direction": "ASCENDING"}]}

        def write(k):   # moves one document from the front to the end of the result
            return f"{root}:commit", commit_body(project, {f"fanq/d{k % 10}": {"k": k, "pad": PAD}})
        log(f"== (b) {args.listeners} SSE listeners on one query (10 documents, orderBy k), {args.commits} commits "
            f"({'in memory' if args.in_memory else 'durable, fsync'}), server pid {server.proc.pid}")
        r = await fanout_phase(server, "query", f"{root}:listen?query={query_param(query)}", write, args.listeners,
                               args.commits, args.warmup, deadline)
        emit_fanout("query", r)
        return r, report_fanout(r)
    finally:
        server.stop(keep=args.keep)


async def phase_idle(binary, args, deadline):
    project = "bench-idle"
    n = args.idle
    server = Server(binary, project, durable=not args.in_memory, label="listen-idle").start()
    try:
        http = HttpConn(server.host, server.port)
        root = docs_root(project)
        await http.json("POST", f"{root}:commit", commit_body(project, {"idle/doc": {"k": -1, "pad": PAD}}))
        log(f"== (c) {n} idle SSE streams (single-document listens), fresh server pid {server.proc.pid}, "
            f"its open-file limit {server.nofile_limit()}")
        before = await settle_rss(server, 1.0)
        fan = FanOut(n)
        conns, open_s = await open_listeners(server, f"{root}/idle/doc:listen", n, fan,
                                             timeout=max(10.0, deadline - time.monotonic()))
        after = await settle_rss(server, 2.0)
        parts = server.rss_parts_kib()
        fds = server.open_fds()
        # the streams are alive: one commit reaches every one of them
        http.close()
        http = HttpConn(server.host, server.port)
        sent = {}
        status, _, body = await http.request("POST", f"{root}:commit", commit_body(project, {"idle/doc": {"k": 0, "pad": PAD}}),
                                             on_sent=lambda: sent.setdefault("t", time.time_ns()))
        if status != 200:
            raise BenchError(f"commit -> {status}: {body[:300]!r}")
        complete = await fan.wait_all(0, timeout=30)
        got = fan.received.get(0, {})
        d = [t - sent["t"] for t in got.values()]
        after_commit = server.rss_kib()
        http.close()
        for c in conns:
            c.close()
        per = (after - before) / n
        log(f"    {n} streams open and synced in {open_s:.2f} s; server fds {fds}")
        log(f"    server RSS before {mib(before)}, with {n} streams {mib(after)}, after one commit to all {mib(after_commit)}")
        log(f"    per stream {per:.1f} KiB")
        log(f"    with the streams, by kind: anonymous {mib(parts.get('RssAnon', 0))}, "
            f"file-backed (the executable's code and libraries) {mib(parts.get('RssFile', 0))}")
        log(f"    one commit to all {n}: {len(got)} received{'' if complete else ' (INCOMPLETE)'}, "
            f"p50 {fmt_ms(percentile(d, 50))}  p99 {fmt_ms(percentile(d, 99))}  max {fmt_ms(max(d) if d else float('nan'))}")
        total_mb = after * 1024 / 1e6
        if complete and not fan.errors:
            emit("idle_streams_rss", round(total_mb, 1), "MB", streams=n, per_stream_kib=round(per, 2))
        ok = total_mb < RSS_TARGET_MB and complete and not fan.errors
        if fan.errors:
            log(f"    stream errors: {len(fan.errors)}; first: {fan.errors[0]}")
        return {"n": n, "before": before, "after": after, "after_commit": after_commit, "per": per,
                "total_mb": total_mb, "received": len(got)}, ok
    finally:
        server.stop(keep=args.keep)


async def main(args) -> int:
    binary = args.bin
    kind = check_binary(binary, args.allow_debug)
    need = max(args.listeners, args.idle) + 200
    limit = raise_nofile(need)
    if limit < need:
        raise BenchError(f"open-file limit {limit} < {need} needed: run `ulimit -n {need}` (or bench/listen.sh)")
    log(f"firegate: {binary} ({kind} build); {os.cpu_count()} cores; open-file limit here {limit}")
    if kind == "debug":
        log("WARNING: debug build — trying the script out, the figures mean nothing")
    deadline = time.monotonic() + args.max_seconds
    phases = set(args.only.split(","))
    rows = []
    ok = True
    if "a" in phases:
        r, good = await phase_doc(binary, args, deadline)
        rows.append((f"(a) doc, {r['n']} listeners: p99 delivery", f"{r['p99'] / 1e6:.2f} ms", f"< {P99_TARGET_MS:.0f} ms", good))
        rows.append(("    p50 delivery", f"{r['p50'] / 1e6:.2f} ms", "", None))
        ok &= good
    if "b" in phases:
        r, good = await phase_query(binary, args, deadline)
        rows.append((f"(b) query, {r['n']} listeners: p99 delivery", f"{r['p99'] / 1e6:.2f} ms", f"< {P99_TARGET_MS:.0f} ms", good))
        rows.append(("    p50 delivery", f"{r['p50'] / 1e6:.2f} ms", "", None))
        ok &= good
    if "c" in phases:
        r, good = await phase_idle(binary, args, deadline)
        rows.append((f"(c) {r['n']} idle streams: server RSS", f"{r['total_mb']:.1f} MB", f"< {RSS_TARGET_MB:.0f} MB", good))
        rows.append(("    per stream", f"{r['per']:.1f} KiB", "", None))
        ok &= good
    log("== summary")
    for label, value, target, good in rows:
        verdict = "" if good is None else ("PASS" if good else "MISS")
        log(f"  {label:<42} {value:>12}   {target:<10} {verdict}")
    if len(phases & {"a", "b", "c"}) == 3 and args.listeners >= 1000 and args.idle >= 10000:
        log("all targets met" if ok else "TARGETS MISSED")
    else:
        log("(reduced counts: not the docs/benchmarks.md figures)")
    return 0 if ok else 1


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("FIREGATE_BIN", os.path.join(REPO, ".build/release/firegate")))
    ap.add_argument("--allow-debug", action="store_true", help="run on a debug build (to try the script)")
    ap.add_argument("--listeners", type=int, default=1000, help="listeners in (a) and (b) (default 1000)")
    ap.add_argument("--commits", type=int, default=20, help="measured commits in (a) and (b) (default 20)")
    ap.add_argument("--warmup", type=int, default=2, help="unmeasured commits first (default 2)")
    ap.add_argument("--idle", type=int, default=10000, help="idle streams in (c) (default 10000)")
    ap.add_argument("--reader-pause-ms", type=float, default=200,
                    help="sleep after sending each commit before reading events (0: read at once)")
    ap.add_argument("--in-memory", action="store_true", help="server --in-memory instead of a data dir")
    ap.add_argument("--only", default="a,b,c", help="phases to run, e.g. a,c")
    ap.add_argument("--max-seconds", type=float, default=900, help="bound on the whole run (default 900)")
    ap.add_argument("--keep", action="store_true", help="keep the run folders under bench/out")
    a = ap.parse_args(argv)
    if not (1 <= a.listeners <= 5000 and 1 <= a.commits <= 200 and 0 <= a.warmup <= 20 and 1 <= a.idle <= 15000):
        ap.error("bounds: --listeners 1..5000, --commits 1..200, --warmup 0..20, --idle 1..15000")
    return a


if __name__ == "__main__":
    args = parse_args()
    try:
        sys.exit(asyncio.run(main(args)))
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(2)
