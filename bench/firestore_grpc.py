#!/usr/bin/env python3
"""bench/firestore_grpc.py — Firestore over gRPC against the same server's REST (docs/benchmarks.md), on 127.0.0.1:

  (a) unary GetDocument over gRPC vs REST GET of the same document: h2load drives both, h2c for
      gRPC and HTTP/1.1 (--h1) for REST, same connections and duration, in alternating rounds
      (--rounds, gRPC first then REST first, …; each rate is the mean over its rounds).
                                                                              target ≥ 0.8×
  (b) durable one-document Commit over gRPC vs the same commit over REST (:commit), h2load both
      ways in alternating rounds, on a server with a data dir (fsync'd, group commit).
      Both gRPC rows: 64 connections × 10 calls in flight (how a client channel multiplexes its
      calls); REST: 64 connections × 1 request (all HTTP/1.1 allows).               target ≥ 1×
  (c) 1 000 Listen streams (10 HTTP/2 connections written by hand, see H2ListenConn) with a
      target on one document; a REST commit reaches all: latency from the commit's start to the
      kernel receive time of each stream's document_change, p50 and p99.
                                                                              target p99 < 25 ms
Prints `@bench` lines with BENCH_JSON=1 (bench/run): grpc_get (ref rest_get), grpc_commit
(ref rest_commit), grpc_listen_p50, grpc_listen_p99. Needs h2load (nghttp2-client) and grpcio
with google-cloud-firestore (its message classes build the requests).
"""
import asyncio
import json
import os
import re
import shutil
import socket
import statistics
import struct
import subprocess
import tempfile
import time
import urllib.request

import fgbench
from fgbench import BenchError, Server, emit, log

from google.cloud.firestore_v1.types import document as doc_types
from google.cloud.firestore_v1.types import firestore as fs
from google.cloud.firestore_v1.types import write as write_types

PROJECT = "bench"
DB = f"projects/{PROJECT}/databases/(default)"
SERVICE = "/google.firestore.v1.Firestore/"


def framed(message_bytes: bytes) -> bytes:
    return struct.pack(">BI", 0, len(message_bytes)) + message_bytes


def h2load(args, seconds, connections, streams):
    """Runs h2load for `seconds` (after a 1 s warm-up) and returns (req/s, failed)."""
    cmd = ["h2load", "-c", str(connections), "-m", str(streams), "-t", "1", "--warm-up-time=1", "-D", str(seconds)] + args
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 30).stdout
    rate = re.search(r"finished in [^,]+, ([0-9.]+) req/s", out)
    status = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    failed = re.search(r"requests: \d+ total, \d+ started, \d+ done, \d+ succeeded, (\d+) failed", out)
    if not rate or not status:
        raise BenchError(f"h2load printed no rate: {out[-800:]}")
    if int(failed.group(1)) or int(status.group(3)) or int(status.group(4)):
        raise BenchError(f"h2load saw failures: {out[-800:]}")
    return float(rate.group(1))


def put_doc(server, path, fields):
    body = json.dumps({"fields": fields}).encode()
    req = urllib.request.Request(f"{server.base}/v1/{DB}/documents/{path}", data=body, method="PATCH",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()


def alternating(grpc_run, rest_run, seconds, rounds):
    """Rates of the two ways over `rounds` rounds in alternating order (gRPC first, then REST
    first, …), each way's requests over its time: a drift while the phase runs (the WAL growing,
    the machine's neighbours) weighs on both alike instead of on whichever runs second."""
    grpc_total = rest_total = 0.0
    for round_ in range(rounds):
        runs = [("grpc", grpc_run), ("rest", rest_run)]
        for name, run in runs if round_ % 2 == 0 else reversed(runs):
            rate = run(seconds)
            if name == "grpc":
                grpc_total += rate
            else:
                rest_total += rate
    return grpc_total / rounds, rest_total / rounds


def unary_phase(server, work, seconds, rounds):
    put_doc(server, "rooms/r1", {"name": {"stringValue": "x" * 100}, "n": {"integerValue": "1"}})
    get = os.path.join(work, "get.bin")
    with open(get, "wb") as f:
        f.write(framed(fs.GetDocumentRequest.serialize(fs.GetDocumentRequest(name=f"{DB}/documents/rooms/r1"))))
    grpc_headers = ["-H", "content-type: application/grpc", "-H", "te: trailers", "-d", get]
    return alternating(lambda s: h2load(grpc_headers + [f"{server.base}{SERVICE}GetDocument"], s, 64, 10),
                       lambda s: h2load(["--h1", f"{server.base}/v1/{DB}/documents/rooms/r1"], s, 64, 1), seconds, rounds)


def commit_phase(server, work, seconds, rounds):
    doc = f"{DB}/documents/rooms/c1"
    request = fs.CommitRequest(database=DB, writes=[write_types.Write(update=doc_types.Document(
        name=doc, fields={"payload": doc_types.Value(string_value="y" * 200)}))])
    grpc_body = os.path.join(work, "commit.bin")
    with open(grpc_body, "wb") as f:
        f.write(framed(fs.CommitRequest.serialize(request)))
    rest_body = os.path.join(work, "commit.json")
    with open(rest_body, "w") as f:
        json.dump({"writes": [{"update": {"name": doc, "fields": {"payload": {"stringValue": "y" * 200}}}}]}, f)
    return alternating(lambda s: h2load(["-H", "content-type: application/grpc", "-H", "te: trailers", "-d", grpc_body,
                                         f"{server.base}{SERVICE}Commit"], s, 64, 10),
                       lambda s: h2load(["--h1", "-H", "content-type: application/json", "-d", rest_body,
                                         f"{server.base}/v1/{DB}/documents:commit"], s, 64, 1), seconds, rounds)


class H2ListenConn:
    """One plaintext HTTP/2 connection carrying Listen streams, on a raw non-blocking socket read
    from the asyncio loop: every DATA frame is stamped with the kernel's receive time
    (SO_TIMESTAMPNS), as the SSE and socket benchmarks stamp theirs, so the figure is the
    server's latency and not this single Python process's decoding of 1 000 streams. Requests are
    written by hand (HPACK literals without indexing); flow-control windows are opened wide at the
    start so the server never waits for this client."""

    PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

    def __init__(self, port, on_response):
        self.port = port
        self.on_response = on_response      # (stream_id, ListenResponse, kernel_ns)
        self.loop = asyncio.get_running_loop()
        self.sock = None
        self.buf = b""
        self.streams = {}                    # stream id -> bytes of gRPC messages not yet whole
        self.next_stream = 1
        self.error = None

    @staticmethod
    def frame(kind, flags, stream, payload=b""):
        return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload

    @staticmethod
    def literal(name, value):
        def string(text):
            data = text.encode()
            assert len(data) < 127
            return bytes([len(data)]) + data
        return b"\x00" + string(name) + string(value)

    async def connect(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.setsockopt(socket.SOL_SOCKET, fgbench.SO_TIMESTAMPNS, 1)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = s
        await asyncio.wait_for(self.loop.sock_connect(s, ("127.0.0.1", self.port)), 30)
        settings = struct.pack(">HI", 0x4, 2**31 - 1) + struct.pack(">HI", 0x2, 0)
        window = struct.pack(">I", 2**31 - 1 - 65535)
        await self.loop.sock_sendall(s, self.PREFACE + self.frame(0x4, 0, 0, settings) + self.frame(0x8, 0, 0, window))
        self.loop.add_reader(s.fileno(), self._readable)

    def open_listen(self, request_bytes):
        stream = self.next_stream
        self.next_stream += 2
        headers = b"".join(self.literal(k, v) for k, v in [
            (":method", "POST"), (":scheme", "http"), (":path", SERVICE + "Listen"), (":authority", f"127.0.0.1:{self.port}"),
            ("content-type", "application/grpc"), ("te", "trailers"), ("google-cloud-resource-prefix", DB)])
        message = b"\x00" + struct.pack(">I", len(request_bytes)) + request_bytes
        self.streams[stream] = b""
        self.sock.send(self.frame(0x1, 0x4, stream, headers) + self.frame(0x0, 0, stream, message))
        return stream

    def _readable(self):
        try:
            data, anc, _flags, _addr = self.sock.recvmsg(1 << 20, socket.CMSG_SPACE(16))
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self.error = f"read error: {e!r}"
            self.close()
            return
        kernel_ns = time.time_ns()
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == fgbench.SO_TIMESTAMPNS and len(payload) >= 16:
                sec, nsec = struct.unpack("qq", payload[:16])
                kernel_ns = sec * 1_000_000_000 + nsec
        if not data:
            self.error = self.error or "the server closed the connection"
            self.close()
            return
        self.buf += data
        while len(self.buf) >= 9:
            length = int.from_bytes(self.buf[:3], "big")
            if len(self.buf) < 9 + length:
                break
            kind, flags = self.buf[3], self.buf[4]
            stream = int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF
            payload, self.buf = self.buf[9:9 + length], self.buf[9 + length:]
            if kind == 0x4 and not flags & 0x1:
                self.sock.send(self.frame(0x4, 0x1, 0))
            elif kind == 0x6 and not flags & 0x1:
                self.sock.send(self.frame(0x6, 0x1, 0, payload))
            elif kind in (0x3, 0x7):
                self.error = f"the server sent {'RST_STREAM' if kind == 3 else 'GOAWAY'} {payload.hex()}"
            elif kind == 0x1 and flags & 0x1 and stream in self.streams:
                self.error = f"stream {stream} ended by the server"
            elif kind == 0x0 and stream in self.streams:
                if flags & 0x8:   # padded
                    payload = payload[1:len(payload) - payload[0]]
                pending = self.streams[stream] + payload
                while len(pending) >= 5 and len(pending) >= 5 + int.from_bytes(pending[1:5], "big"):
                    size = int.from_bytes(pending[1:5], "big")
                    self.on_response(stream, fs.ListenResponse.deserialize(pending[5:5 + size]), kernel_ns)
                    pending = pending[5 + size:]
                self.streams[stream] = pending

    def close(self):
        if self.sock is not None:
            try:
                self.loop.remove_reader(self.sock.fileno())
            except (ValueError, OSError):
                pass
            self.sock.close()
            self.sock = None


async def listen_phase(server, listeners, commits, connections=10):
    """p50 and p99 (ms) from a commit's start to each listener's receipt. `server` needs `port`
    and `base` (bench/emulator.py passes the official emulator)."""
    put_doc(server, "rooms/hot", {"n": {"integerValue": "0"}})
    received = {}                        # n -> kernel receive times (ns)
    initial = set()                      # (connection, stream) that saw their first snapshot
    request = fs.ListenRequest.serialize(fs.ListenRequest(database=DB, add_target=fs.Target(
        target_id=1, documents=fs.Target.DocumentsTarget(documents=[f"{DB}/documents/rooms/hot"]))))

    def follower(index):
        def on_response(stream, response, kernel_ns):
            key = (index, stream)
            if "document_change" in response:
                if key in initial:
                    n = int(response.document_change.document.fields["n"].integer_value)
                    received.setdefault(n, []).append(kernel_ns)
            elif "target_change" in response and not response.target_change.target_ids \
                    and response.target_change.target_change_type == fs.TargetChange.TargetChangeType.NO_CHANGE:
                initial.add(key)
        return on_response

    conns = [H2ListenConn(server.port, follower(i)) for i in range(connections)]
    try:
        for conn in conns:
            await conn.connect()
        for i in range(listeners):
            conns[i % len(conns)].open_listen(request)
        deadline = time.monotonic() + 60
        while len(initial) < listeners and time.monotonic() < deadline:
            errors = [c.error for c in conns if c.error]
            if errors:
                raise BenchError(errors[0])
            await asyncio.sleep(0.01)
        if len(initial) < listeners:
            raise BenchError(f"{len(initial)} of {listeners} Listen streams got their first snapshot")
        latencies = []
        for n in range(1, commits + 1):
            await asyncio.sleep(0.2)
            started = time.time_ns()
            await asyncio.get_running_loop().run_in_executor(None, put_doc, server, "rooms/hot", {"n": {"integerValue": str(n)}})
            deadline = time.monotonic() + 10
            while len(received.get(n, [])) < listeners and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
            got = received.get(n, [])
            if len(got) < listeners:
                raise BenchError(f"commit {n} reached {len(got)} of {listeners} listeners")
            latencies += [(t - started) / 1e6 for t in got]
        latencies.sort()
        return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99) - 1]
    finally:
        for conn in conns:
            conn.close()


async def main():
    ap = fgbench.argument_parser(__doc__)
    ap.add_argument("--seconds", type=int, default=3, help="each way, per round")
    ap.add_argument("--rounds", type=int, default=4, help="alternating rounds of the unary and commit phases")
    ap.add_argument("--listeners", type=int, default=1000)
    ap.add_argument("--commits", type=int, default=10)
    args = ap.parse_args()
    fgbench.check_binary(args.bin, args.allow_debug)
    binary = args.bin
    if not shutil.which("h2load"):
        raise BenchError("h2load is missing (apt-get install nghttp2-client)")
    fgbench.raise_nofile(65536)
    os.makedirs(os.path.join(fgbench.REPO, "bench", "out"), exist_ok=True)
    work = tempfile.mkdtemp(prefix="grpc.", dir=os.path.join(fgbench.REPO, "bench", "out"))
    status = 0

    server = Server(binary, PROJECT, durable=False, label="grpc-get").start()
    try:
        grpc_get, rest_get = unary_phase(server, work, args.seconds, args.rounds)
    finally:
        server.stop()
    log(f"unary GetDocument over gRPC: {grpc_get:,.0f} req/s; REST GET: {rest_get:,.0f} req/s; ratio {grpc_get / rest_get:.2f}× (target ≥ 0.8×)")
    emit("grpc_get", grpc_get, "req/s", ref=rest_get)
    status |= grpc_get / rest_get < 0.8

    server = Server(binary, PROJECT, durable=True, label="grpc-commit").start()
    try:
        grpc_commit, rest_commit = commit_phase(server, work, args.seconds, args.rounds)
    finally:
        server.stop()
    log(f"durable Commit over gRPC: {grpc_commit:,.0f}/s; REST :commit: {rest_commit:,.0f}/s; ratio {grpc_commit / rest_commit:.2f}× (target ≥ 1×)")
    emit("grpc_commit", grpc_commit, "commits/s", ref=rest_commit)
    status |= grpc_commit < rest_commit

    server = Server(binary, PROJECT, durable=False, label="grpc-listen").start()
    try:
        p50, p99 = await listen_phase(server, args.listeners, args.commits)
    finally:
        server.stop()
    log(f"{args.listeners} Listen streams on one document, a commit reaches all: p50 {p50:.1f} ms, p99 {p99:.1f} ms (target p99 < 25 ms)")
    emit("grpc_listen_p50", p50, "ms")
    emit("grpc_listen_p99", p99, "ms")
    status |= p99 >= 25
    return int(status)


if __name__ == "__main__":
    fgbench.run_script(main, 240)
