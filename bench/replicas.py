#!/usr/bin/env python3
"""Two replicas on one PostgreSQL (docs/replicas.md): how fast a commit on the owner reaches the
listeners of a follower, and how long writes stop when the owner dies.

  (a) fan-out across replicas: 1 000 SSE listeners on replica B on one document, commits made on
      replica A (the owner), one at a time; latency from A's request sent to each event received
      from B. Target p99 < 50 ms.
  (b) failover: replica A is killed (kill -9) while a writer keeps committing to B, which
      forwards its writes to A while A owns the database, and is refused (A unreachable) until
      A's lease runs out; the time from the kill to B's first accepted write. Target ≤ lease +
      2 s (lease 3 s here).

PostgreSQL: FIREGATE_TEST_STORE, else a throwaway cluster. Exit 0 when both targets are met, 1
when one is missed, 2 when the run failed.

    python3 bench/replicas.py [--listeners 1000] [--commits 30] [--bin .build/release/firegate]
"""
import asyncio
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgbench import (BenchError, BenchPostgres, HttpConn, Server, argument_parser, check_binary, commit_body,  # noqa: E402
                     docs_root, emit, fmt_ms, log, percentile, raise_nofile, run_script, settle_rss)
from listen import PAD, FanOut, open_listeners  # noqa: E402

LEASE = 3
PROJECT = "bench-replicas"


def replica(binary, url, name):
    return Server(binary, PROJECT, durable=True, label=f"replica-{name}",
                  extra_args=["--store", url, "--replica-id", name, "--lease-seconds", str(LEASE)]).start()


async def fanout(a: Server, b: Server, n: int, commits: int):
    root = docs_root(PROJECT)
    writer = HttpConn(a.host, a.port)
    status, _, body = await writer.request("POST", f"{root}:commit", commit_body(PROJECT, {"hot/doc": {"k": -1, "pad": PAD}}))
    if status != 200:
        raise BenchError(f"first commit on A -> {status}: {body}")
    fan = FanOut(n)
    before = b.rss_kib()
    conns, open_s = await open_listeners(b, f"{root}/hot/doc:listen", n, fan, timeout=30)
    after = await settle_rss(b, 1.0)
    log(f"    {n} listeners on B open and synced in {open_s:.2f} s; B's RSS {before / 1024:.1f} → {after / 1024:.1f} MiB "
        f"({(after - before) / n:.1f} KiB a listener); A's RSS {a.rss_kib() / 1024:.1f} MiB")
    await asyncio.sleep(LEASE / 3 + 0.5)   # A has seen B's heartbeat: it rings the doorbell
    lat, missing = [], 0
    try:
        for k in range(commits + 2):
            sent = {}
            status, _, body = await writer.request("POST", f"{root}:commit", commit_body(PROJECT, {"hot/doc": {"k": k, "pad": PAD}}),
                                                   on_sent=lambda: sent.setdefault("t", time.time_ns()))
            if status != 200:
                raise BenchError(f"commit {k} on A -> {status}: {body[:300]!r}")
            complete = await fan.wait_all(k, timeout=10)
            got = fan.received.get(k, {})
            if k < 2:
                continue   # warm-up
            missing += n - len(got)
            if not complete:
                log(f"    commit {k}: only {len(got)}/{n} listeners on B got it within 10 s")
            lat += [t - sent["t"] for t in got.values()]
    finally:
        writer.close()
        for c in conns:
            c.close()
    return lat, missing, len(fan.errors)


async def failover(a: Server, b: Server):
    root = docs_root(PROJECT)
    writer = HttpConn(b.host, b.port)
    try:
        status, headers, _ = await writer.request("POST", f"{root}:commit", commit_body(PROJECT, {"fail/doc": {"k": 0}}))
        if status != 200 or headers.get("firegate-forwarded-to") != "a":
            raise BenchError(f"a write on B while A owns the database should go to A, was {status} {headers}")
        a.proc.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        k = 0
        while True:
            k += 1
            status, _, body = await writer.request("POST", f"{root}:commit", commit_body(PROJECT, {"fail/doc": {"k": k}}))
            if status == 200:
                return time.monotonic() - killed
            if status != 503:
                raise BenchError(f"write on B during failover -> {status}: {body[:300]!r}")
            if time.monotonic() - killed > LEASE + 10:
                raise BenchError("B never took the database over")
            await asyncio.sleep(0.02)
    finally:
        writer.close()


async def main(args) -> int:
    check_binary(args.bin, args.allow_debug)
    raise_nofile(args.listeners * 2 + 100)
    with BenchPostgres() as postgres:
        url = postgres.database()
        a, b = replica(args.bin, url, "a"), replica(args.bin, url, "b")
        try:
            log(f"== (a) fan-out: commits on A reach {args.listeners} listeners on B")
            lat, missing, errors = await fanout(a, b, args.listeners, args.commits)
            p50, p99 = percentile(lat, 50), percentile(lat, 99)
            log(f"    {len(lat)} deliveries: p50 {fmt_ms(p50)}  p99 {fmt_ms(p99)}  max {fmt_ms(max(lat) if lat else float('nan'))}"
                f"  missing {missing}  stream errors {errors}")
            if missing == 0 and errors == 0:
                emit("replica_fanout_p50", round(p50 / 1e6, 3), "ms", listeners=args.listeners, commits=args.commits)
                emit("replica_fanout_p99", round(p99 / 1e6, 3), "ms", listeners=args.listeners, commits=args.commits)
            fan_ok = missing == 0 and errors == 0 and p99 / 1e6 < 50
            log(f"== (b) failover: A killed, writes on B until one is accepted (lease {LEASE} s)")
            took = await failover(a, b)
            log(f"    B accepted a write {took:.2f} s after A was killed")
            emit("replica_failover", round(took * 1000, 1), "ms", lease_seconds=LEASE)
            fail_ok = took <= LEASE + 2
        finally:
            for server in (a, b):
                if server.proc and server.proc.poll() is None:
                    server.proc.terminate()
                    server.proc.wait(timeout=10)
    log(f"  (a) fan-out to 1 000 listeners on another replica, p99  {fmt_ms(p99)}  target < 50 ms  {'PASS' if fan_ok else 'MISS'}")
    log(f"  (b) failover, kill -9 of the owner to the next write     {took:.2f} s  target <= {LEASE + 2} s  {'PASS' if fail_ok else 'MISS'}")
    return 0 if fan_ok and fail_ok else 1


if __name__ == "__main__":
    ap = argument_parser(__doc__)
    ap.add_argument("--listeners", type=int, default=1000)
    ap.add_argument("--commits", type=int, default=30)
    run_script(lambda: main(ap.parse_args()), 300)
