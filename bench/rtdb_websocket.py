#!/usr/bin/env python3
"""The Realtime Database over WebSocket (issue 25), on 127.0.0.1, bounded in count and time,
against the server as users start it (SQLite data dir, default settings).

(1) Fan-out. N sockets (default 1 000) each listen to `/fan` (request `q`, answered `ok`); a
    writer socket sets `/fan/v` W times (request `p`). Measured per listener and write: from
    just before the writer sent the request to the kernel receive time (SO_TIMESTAMPNS) of the
    push carrying the value. p50 / p99 over all. Target p99 < 25 ms.
(2) Presence storm. P sockets (default 1 000) each register `o` (remove `presence/p{i}` on
    disconnect) and set `presence/p{i} = true`; the even ones connect with appId `storm-a`, the
    odd ones `storm-b`. An observer socket listens to `/presence` and has seen all P. Then one
    `PUT /emulator/v1/connections/network {"match":{"appId":"storm-a"},"online":false}` takes
    half offline at once. Measured: from that request until the observer has seen every one of
    those P/2 removals; the server must then hold exactly the odd half. Target < 1 s.
(3) Idle sockets, on a fresh server. I sockets (default 10 000), each with its hello read and
    one listen answered (on `/idle/{i % 500}`); the server's RSS after it settles.
    Target < 100 MB.

Usage: python3 bench/rtdb_websocket.py [--listeners 1000] [--writes 10] [--presence 1000] [--idle 10000]
With BENCH_JSON=1 one `@bench {json}` line per figure. Exit status 0 when the run completed and
every check held, 1 when a check failed, 2 when the run failed.
"""
import asyncio
import base64
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fgbench import (SO_TIMESTAMPNS, BenchError, Server, argument_parser, check_binary, emit, gather_limited, log,  # noqa: E402
                     mib, raise_nofile, run_script, settle_rss)

NS = "bench-ws"


class WSConn:
    """One Realtime Database socket on a raw non-blocking socket read from the asyncio loop:
    the upgrade, masked text frames out, unmasked frames in (joined by the protocol's piece
    count), every message stamped with the kernel's receive time."""

    def __init__(self, host, port, on_message=None, app_id=None):
        self.host, self.port, self.app_id = host, port, app_id
        self.on_message = on_message
        self.loop = asyncio.get_running_loop()
        self.sock = None
        self.buf = b""
        self.head_done = False
        self.hello = self.loop.create_future()
        self.replies = {}
        self.next_r = 1
        self.pieces = None
        self.closed = False

    async def connect(self, timeout=30):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = s
        await asyncio.wait_for(self.loop.sock_connect(s, (self.host, self.port)), timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        head = [f"GET /.ws?v=5&ns={NS} HTTP/1.1", f"Host: {self.host}:{self.port}", "Upgrade: websocket",
                "Connection: Upgrade", f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        if self.app_id:
            head.append(f"X-Firebase-GMPID: {self.app_id}")
        await self.loop.sock_sendall(s, ("\r\n".join(head) + "\r\n\r\n").encode())
        self.loop.add_reader(s.fileno(), self._readable)
        await asyncio.wait_for(self.hello, timeout)

    def _readable(self):
        try:
            data, anc, _flags, _addr = self.sock.recvmsg(1 << 18, socket.CMSG_SPACE(16))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data, anc = b"", []
        kernel_ns = time.time_ns()
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= 16:
                sec, nsec = struct.unpack("qq", payload[:16])
                kernel_ns = sec * 1_000_000_000 + nsec
        if not data:
            self.close()
            return
        self.buf += data
        if not self.head_done:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            if not self.buf.startswith(b"HTTP/1.1 101"):
                if not self.hello.done():
                    self.hello.set_exception(BenchError(f"upgrade refused: {self.buf[:200]!r}"))
                self.close()
                return
            self.head_done, self.buf = True, self.buf[end + 4:]
        while len(self.buf) >= 2:
            length, offset = self.buf[1] & 0x7F, 2
            if length == 126:
                if len(self.buf) < 4:
                    return
                length, offset = struct.unpack(">H", self.buf[2:4])[0], 4
            elif length == 127:
                if len(self.buf) < 10:
                    return
                length, offset = struct.unpack(">Q", self.buf[2:10])[0], 10
            if len(self.buf) < offset + length:
                return
            opcode, payload = self.buf[0] & 0x0F, self.buf[offset:offset + length]
            self.buf = self.buf[offset + length:]
            if opcode == 1:
                self._text(payload, kernel_ns)
            elif opcode == 8:
                self.close()
                return

    def _text(self, payload, kernel_ns):
        if self.pieces is None and len(payload) <= 6 and payload.isdigit():
            self.pieces = [int(payload), b""]
            return
        if self.pieces is not None:
            self.pieces[1] += payload
            self.pieces[0] -= 1
            if self.pieces[0] > 0:
                return
            payload, self.pieces = self.pieces[1], None
        message = json.loads(payload)
        if message["t"] == "c":
            if message["d"]["t"] == "h" and not self.hello.done():
                self.hello.set_result(message["d"]["d"])
            return
        if "r" in message["d"]:
            fut = self.replies.pop(message["d"]["r"], None)
            if fut and not fut.done():
                fut.set_result(message["d"]["b"])
        elif self.on_message:
            self.on_message(self, message["d"]["a"], message["d"]["b"], kernel_ns)

    def send_request(self, action, body):
        r = self.next_r
        self.next_r += 1
        fut = self.loop.create_future()
        self.replies[r] = fut
        data = json.dumps({"t": "d", "d": {"r": r, "a": action, "b": body}}, separators=(",", ":")).encode()
        mask = os.urandom(4)
        n = len(data)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.send(header + mask + masked)
        return fut

    async def request(self, action, body, timeout=30):
        reply = await asyncio.wait_for(self.send_request(action, body), timeout)
        if reply["s"] != "ok":
            raise BenchError(f"{action} {body}: {reply}")
        return reply

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.loop.remove_reader(self.sock.fileno())
        except (ValueError, OSError):
            pass
        self.sock.close()


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def fanout(server, n, writes):
    received = {}   # value -> [kernel_ns per listener]

    def on_message(conn, action, body, kernel_ns):
        if action == "d" and body.get("p") == "fan/v":
            received.setdefault(body["d"], []).append(kernel_ns)
    listeners = [WSConn(server.host, server.port, on_message) for _ in range(n)]
    await gather_limited([c.connect() for c in listeners], 64)
    await gather_limited([c.request("q", {"p": "/fan", "h": ""}) for c in listeners], 64)
    writer = WSConn(server.host, server.port)
    await writer.connect()
    latencies = []
    for i in range(writes):
        value = 1000 + i
        t0 = time.time_ns()
        await writer.request("p", {"p": "/fan/v", "d": value})
        deadline = time.monotonic() + 10
        while len(received.get(value, [])) < n and time.monotonic() < deadline:
            await asyncio.sleep(0.002)
        got = received.get(value, [])
        if len(got) < n:
            raise BenchError(f"write {i}: {len(got)}/{n} listeners got it")
        latencies += [(k - t0) / 1e6 for k in got]
        await asyncio.sleep(0.05)
    for c in listeners + [writer]:
        c.close()
    return percentile(latencies, 50), percentile(latencies, 99)


async def presence(server, n):
    present, removed_at = set(), {}

    def on_message(conn, action, body, kernel_ns):
        path = [k for k in body["p"].split("/") if k]
        if action == "d" and path == ["presence"]:
            present.clear()
            present.update((body["d"] or {}).keys())
            return
        updates = {}
        if action == "d" and len(path) >= 2:
            updates[path[1]] = body["d"]
        elif action == "m":
            for rel, value in body["d"].items():
                updates[(path + [k for k in rel.split("/") if k])[1]] = value
        for key, value in updates.items():
            if value is None:
                present.discard(key)
                removed_at[key] = kernel_ns
            else:
                present.add(key)
    observer = WSConn(server.host, server.port, on_message)
    await observer.connect()
    await observer.request("q", {"p": "/presence", "h": ""})
    clients = [WSConn(server.host, server.port, app_id="storm-a" if i % 2 == 0 else "storm-b") for i in range(n)]
    await gather_limited([c.connect() for c in clients], 64)

    async def join(i, c):
        await c.request("o", {"p": f"/presence/p{i}", "d": None})
        await c.request("p", {"p": f"/presence/p{i}", "d": True})
    await gather_limited([join(i, c) for i, c in enumerate(clients)], 64)
    deadline = time.monotonic() + 30
    while len(present) < n and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    if len(present) < n:
        raise BenchError(f"the observer saw {len(present)}/{n} present")
    gone = [f"p{i}" for i in range(0, n, 2)]
    t0 = time.time_ns()
    reader, writer = await asyncio.open_connection(server.host, server.port)
    body = json.dumps({"match": {"appId": "storm-a"}, "online": False}).encode()
    writer.write(f"PUT /emulator/v1/connections/network HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 30)
    writer.close()
    if b" 200 " not in answer.split(b"\r\n", 1)[0]:
        raise BenchError(f"the switch was refused: {answer[:300]!r}")
    deadline = time.monotonic() + 30
    while not all(k in removed_at for k in gone) and time.monotonic() < deadline:
        await asyncio.sleep(0.002)
    ok = all(k in removed_at for k in gone)
    if not ok:
        log(f"    CHECK FAILED: the observer saw {sum(k in removed_at for k in gone)}/{len(gone)} removals")
    storm_ms = (max(removed_at.get(k, time.time_ns()) for k in gone) - t0) / 1e6
    value = await observer.request("g", {"p": "/presence"})
    expected = {f"p{i}": True for i in range(1, n, 2)}
    if value["d"] != expected:
        ok = False
        log(f"    CHECK FAILED: the server holds {len(value['d'] or {})} keys, expected the {len(expected)} online ones")
    for c in clients + [observer]:
        c.close()
    return storm_ms, ok


async def idle(server, n):
    rss0 = server.rss_kib()
    conns = [WSConn(server.host, server.port) for _ in range(n)]
    await gather_limited([c.connect(60) for c in conns], 128)
    await gather_limited([c.request("q", {"p": f"/idle/{i % 500}", "h": ""}, 60) for i, c in enumerate(conns)], 128)
    rss1 = await settle_rss(server)
    for c in conns:
        c.close()
    return rss0, rss1


async def main():
    ap = argument_parser(__doc__)
    ap.add_argument("--listeners", type=int, default=1000)
    ap.add_argument("--writes", type=int, default=10)
    ap.add_argument("--presence", type=int, default=1000)
    ap.add_argument("--idle", type=int, default=10000)
    args = ap.parse_args()
    check_binary(args.bin, args.allow_debug)
    raise_nofile(2 * args.idle + 4096)
    ok = True
    server = Server(args.bin, "bench-ws", durable=True, label="ws").start()
    try:
        p50, p99 = await fanout(server, args.listeners, args.writes)
        log(f"    fan-out: {args.listeners} socket listeners, {args.writes} writes: p50 {p50:.1f} ms, p99 {p99:.1f} ms")
        emit("ws_fanout_p50", round(p50, 2), "ms")
        emit("ws_fanout_p99", round(p99, 2), "ms")
        storm_ms, storm_ok = await presence(server, args.presence)
        ok = ok and storm_ok
        log(f"    storm: {args.presence // 2} of {args.presence} sockets switched offline; every onDisconnect seen in {storm_ms:.0f} ms")
        emit("ws_presence_storm", round(storm_ms, 1), "ms")
    finally:
        server.stop()
    server = Server(args.bin, "bench-ws", durable=True, label="ws-idle").start()
    try:
        rss0, rss1 = await idle(server, args.idle)
        log(f"    {args.idle} idle sockets (one listen each): server RSS {mib(rss0)} -> {mib(rss1)}")
        emit("ws_idle_rss", round(rss1 / 1024, 1), "MB")
    finally:
        server.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    run_script(main, 300)
