#!/usr/bin/env python3
"""Tree-edge benchmarks (docs/edge-clients.md, the tree through a client), on 127.0.0.1, bounded in count and time.

(1) onDisconnect storm. N edge clients (ids p0…p{N-1}) each run the presence recipe: write
    `presence/p{i} = true` (`PUT /clients/p{i}/presence/p{i}.json?waitFor=ack`) and register
    `POST /clients/p{i}/onDisconnect {"path":"presence/p{i}","op":"remove"}` (answered registered).
    An observer streams the backend location `GET /presence.json` (Accept: text/event-stream) and
    has seen all N. Then the even half is forced offline at once (`POST /clients/p{i}:disableNetwork`,
    64 in flight). Measured: from the first disable sent until the observer's stream has shown every
    one of those N/2 removals (kernel receive time of the event), and the server is checked to hold
    exactly the odd half.
(2) Memory per idle tree client: on the same server after (1), RSS before and after creating M
    more clients that each made one acknowledged tree write and registered one onDisconnect (no
    stream open), divided by M.

Usage: python3 bench/presence.py [--clients 1000] [--idle-clients 2000] [--in-memory]
Target: storm < 1 s. With BENCH_JSON=1 one `@bench {json}` line per figure. Exit status 0 when the
run completed and every check held, 1 when a check failed, 2 when the run failed.
"""
import argparse
import asyncio
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgbench import (REPO, BenchError, ConnPool, Server, SSEConn, check_binary, emit, gather_limited, log, mib,  # noqa: E402
                     raise_nofile, settle_rss)

PROJECT = "bench-presence"
CONCURRENCY = 64


class Observer:
    """What the backend stream on /presence has shown: the set of present keys."""

    def __init__(self):
        self.present = set()
        self.removed_at = {}    # key -> kernel receive ns of the event that removed it
        self.waiter = None

    def on_event(self, conn, ev):
        if ev.event not in ("put", "patch"):
            return
        body = json.loads(ev.data)
        path, data = body["path"], body["data"]
        updates = {}
        if path == "/":
            self.present = set((data or {}).keys())
        elif ev.event == "put":
            updates[path.strip("/").split("/")[0]] = data
        else:
            for k, v in (data or {}).items():
                updates[(path.strip("/") + "/" + k).strip("/").split("/")[0]] = v
        for key, value in updates.items():
            if value is None:
                self.present.discard(key)
                self.removed_at[key] = ev.kernel_ns
            else:
                self.present.add(key)
        if self.waiter and self.waiter[0](self):
            self.waiter[1].set_result(True)
            self.waiter = None

    async def until(self, predicate, timeout):
        if predicate(self):
            return True
        fut = asyncio.get_running_loop().create_future()
        self.waiter = (predicate, fut)
        try:
            await asyncio.wait_for(fut, timeout)
            return True
        except asyncio.TimeoutError:
            return False


async def run(args) -> bool:
    binary = os.environ.get("FIREGATE_BIN", os.path.join(REPO, ".build/release/firegate"))
    check_binary(binary, args.allow_debug)
    raise_nofile(8192)
    server = Server(binary, PROJECT, durable=not args.in_memory, label="presence").start()
    ok = True
    pool = ConnPool(server.host, server.port, CONCURRENCY)
    observer = Observer()
    conn = None
    try:
        n = args.clients
        ns = f"?ns={PROJECT}"
        t = time.monotonic()
        await gather_limited([pool.json("PUT", f"/clients/p{i}", {"project": PROJECT, "namespace": PROJECT}) for i in range(n)], CONCURRENCY)

        async def presence(i):
            await pool.json("PUT", f"/clients/p{i}/presence/p{i}.json?waitFor=ack", True)
            reply = await pool.json("POST", f"/clients/p{i}/onDisconnect", {"path": f"presence/p{i}", "op": "remove"})
            if reply.get("state") != "registered":
                raise BenchError(f"client p{i}: onDisconnect not registered: {reply}")
        await gather_limited([presence(i) for i in range(n)], CONCURRENCY)
        conn = SSEConn(server.host, server.port, f"/presence.json{ns}", observer.on_event, headers={"Accept": "text/event-stream"})
        await conn.connect()
        await asyncio.wait_for(conn.opened, 30)
        if not await observer.until(lambda o: len(o.present) == n, 30):
            raise BenchError(f"the observer saw {len(observer.present)}/{n} present clients")
        log(f"    {n} clients present with onDisconnect registered in {time.monotonic() - t:.2f} s; RSS {mib(server.rss_kib())}")

        gone = [f"p{i}" for i in range(0, n, 2)]
        t0 = time.time_ns()
        await gather_limited([pool.json("POST", f"/clients/{key}:disableNetwork", b"") for key in gone], CONCURRENCY)
        sent_ms = (time.time_ns() - t0) / 1e6
        seen = await observer.until(lambda o: all(k in o.removed_at for k in gone), args.timeout)
        if not seen:
            ok = False
            log(f"    CHECK FAILED: the observer saw {sum(k in observer.removed_at for k in gone)}/{len(gone)} removals")
        storm_ms = (max(observer.removed_at.get(k, time.time_ns()) for k in gone) - t0) / 1e6
        server_value = await pool.json("GET", f"/presence.json{ns}")
        expected = {f"p{i}": True for i in range(1, n, 2)}
        if server_value != expected:
            ok = False
            log(f"    CHECK FAILED: the server holds {len(server_value or {})} keys, expected the {len(expected)} online ones")
        log(f"    storm: {len(gone)} clients forced offline (requests sent in {sent_ms:.0f} ms); every onDisconnect ran and the "
            f"observer saw it {storm_ms:.0f} ms after the first disable")
        emit("presence_storm", round(storm_ms, 1), "ms")

        m = args.idle_clients
        rss0 = await settle_rss(server)

        async def idle(i):
            await pool.json("PUT", f"/clients/idle{i}/idle/i{i}.json?waitFor=ack", True)
            await pool.json("POST", f"/clients/idle{i}/onDisconnect", {"path": f"idle/i{i}", "op": "remove"})
        await gather_limited([idle(i) for i in range(m)], CONCURRENCY)
        rss1 = await settle_rss(server)
        per_client = (rss1 - rss0) / m
        log(f"    {m} idle tree clients: RSS {mib(rss0)} -> {mib(rss1)}, {per_client:.2f} KiB per client")
        emit("tree_idle_client", round(per_client, 2), "KiB")
    finally:
        if conn:
            conn.close()
        pool.close()
        server.stop()
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--idle-clients", type=int, default=2000)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--in-memory", action="store_true")
    parser.add_argument("--allow-debug", action="store_true")
    args = parser.parse_args()
    try:
        ok = asyncio.run(run(args))
    except BenchError as error:
        log(f"FAILED: {error}")
        sys.exit(2)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
