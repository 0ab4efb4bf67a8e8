#!/usr/bin/env python3
"""bench/firestore_grpc.py — Firestore over gRPC against the same server's REST (DESIGN §3), on 127.0.0.1:

  (a) unary GetDocument over gRPC vs REST GET of the same document: h2load drives both, h2c for
      gRPC and HTTP/1.1 (--h1) for REST, same connections and duration, one after the other.
                                                                              target ≥ 0.8×
  (b) durable one-document Commit over gRPC vs the same commit over REST (:commit), h2load both
      ways, on a server with a data dir (fsync'd, group commit).               target ≥ 1×
  (c) 1 000 Listen streams (python grpc.aio, 10 channels) with a target on one document; a REST
      commit reaches all: latency from the commit's start to each stream's document_change, p50
      and p99, measured at this (single Python) client, so its own decoding is included.
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
import statistics
import struct
import subprocess
import tempfile
import time
import urllib.request

import fgbench
from fgbench import BenchError, Server, emit, log

import grpc
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


def unary_phase(server, work, seconds):
    put_doc(server, "rooms/r1", {"name": {"stringValue": "x" * 100}, "n": {"integerValue": "1"}})
    get = os.path.join(work, "get.bin")
    with open(get, "wb") as f:
        f.write(framed(fs.GetDocumentRequest.serialize(fs.GetDocumentRequest(name=f"{DB}/documents/rooms/r1"))))
    grpc_headers = ["-H", "content-type: application/grpc", "-H", "te: trailers", "-d", get]
    grpc_rate = h2load(grpc_headers + [f"{server.base}{SERVICE}GetDocument"], seconds, 64, 10)
    rest_rate = h2load(["--h1", f"{server.base}/v1/{DB}/documents/rooms/r1"], seconds, 64, 1)
    return grpc_rate, rest_rate


def commit_phase(server, work, seconds):
    doc = f"{DB}/documents/rooms/c1"
    request = fs.CommitRequest(database=DB, writes=[write_types.Write(update=doc_types.Document(
        name=doc, fields={"payload": doc_types.Value(string_value="y" * 200)}))])
    grpc_body = os.path.join(work, "commit.bin")
    with open(grpc_body, "wb") as f:
        f.write(framed(fs.CommitRequest.serialize(request)))
    rest_body = os.path.join(work, "commit.json")
    with open(rest_body, "w") as f:
        json.dump({"writes": [{"update": {"name": doc, "fields": {"payload": {"stringValue": "y" * 200}}}}]}, f)
    grpc_rate = h2load(["-H", "content-type: application/grpc", "-H", "te: trailers", "-d", grpc_body,
                        f"{server.base}{SERVICE}Commit"], seconds, 64, 4)
    rest_rate = h2load(["--h1", "-H", "content-type: application/json", "-d", rest_body,
                        f"{server.base}/v1/{DB}/documents:commit"], seconds, 64, 1)
    return grpc_rate, rest_rate


async def listen_phase(server, listeners, commits):
    put_doc(server, "rooms/hot", {"n": {"integerValue": "0"}})
    channels = [grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") for _ in range(10)]
    received = {}
    ready = asyncio.Event()
    initial = [0]
    calls = []

    async def follow(index):
        channel = channels[index % len(channels)]
        request = fs.ListenRequest(database=DB, add_target=fs.Target(target_id=1, documents=fs.Target.DocumentsTarget(
            documents=[f"{DB}/documents/rooms/hot"])))
        call = channel.stream_stream(SERVICE + "Listen", request_serializer=fs.ListenRequest.serialize,
                                     response_deserializer=fs.ListenResponse.deserialize)(iter([request]))
        calls.append(call)
        seen_initial = False
        async for response in call:
            now = time.monotonic()
            if "document_change" in response:
                n = int(response.document_change.document.fields["n"].integer_value)
                if seen_initial:
                    received.setdefault(n, []).append(now)
            elif "target_change" in response and not response.target_change.target_ids and not seen_initial \
                    and response.target_change.target_change_type == fs.TargetChange.TargetChangeType.NO_CHANGE:
                seen_initial = True
                initial[0] += 1
                if initial[0] == listeners:
                    ready.set()

    tasks = [asyncio.create_task(follow(i)) for i in range(listeners)]
    try:
        await asyncio.wait_for(ready.wait(), 60)
        latencies = []
        for n in range(1, commits + 1):
            await asyncio.sleep(0.2)
            started = time.monotonic()
            await asyncio.get_running_loop().run_in_executor(None, put_doc, server, "rooms/hot", {"n": {"integerValue": str(n)}})
            deadline = time.monotonic() + 10
            while len(received.get(n, [])) < listeners and time.monotonic() < deadline:
                await asyncio.sleep(0.005)
            got = received.get(n, [])
            if len(got) < listeners:
                raise BenchError(f"commit {n} reached {len(got)} of {listeners} listeners")
            latencies += [(t - started) * 1000 for t in got]
        latencies.sort()
        return latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99) - 1]
    finally:
        for call in calls:
            call.cancel()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for channel in channels:
            await channel.close()


async def main():
    ap = fgbench.argument_parser(__doc__)
    ap.add_argument("--seconds", type=int, default=3)
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
        grpc_get, rest_get = unary_phase(server, work, args.seconds)
    finally:
        server.stop()
    log(f"unary GetDocument over gRPC: {grpc_get:,.0f} req/s; REST GET: {rest_get:,.0f} req/s; ratio {grpc_get / rest_get:.2f}× (target ≥ 0.8×)")
    emit("grpc_get", grpc_get, "req/s", ref=rest_get)
    status |= grpc_get / rest_get < 0.8

    server = Server(binary, PROJECT, durable=True, label="grpc-commit").start()
    try:
        grpc_commit, rest_commit = commit_phase(server, work, args.seconds)
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
