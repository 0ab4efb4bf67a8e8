#!/usr/bin/env python3
"""bench/churn.py — clients that come, do one thing and go, per protocol: what they leave behind.

For each protocol, N clients one after another, each opened, used once and closed as a real
client closes it:
  grpc-unary   a grpcio channel, one GetDocument, channel.close()
  grpc-listen  a grpcio channel, a Listen until its first answer, then the channel closed
  websocket    an RTDB socket, one listen answered, then the socket closed
  sse          a document :listen over SSE until its first snapshot, then the socket closed
  http1        a keep-alive HTTP/1.1 connection, one GET, then closed
  edge         an edge client created, one write acknowledged, deleted (after --prefill commits
               have filled the database's bounded resume history, which each write would
               otherwise grow)
then the server's open descriptors, resident memory and connections registry compared with
before the protocol (after a settle of up to 10 s). Targets: +0 descriptors, +0 entries, and
< +8 MiB resident per protocol at 10 000 clients.

    python3 bench/churn.py [--clients 10000] [--only grpc-unary,websocket] [--bin …] [--allow-debug]

clients/python/test_churn.py runs it with 1 000 clients per protocol in the CI suite (descriptors
and entries exact; memory is bench/run's). Loopback only; every wait is bounded.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fgbench  # noqa: E402

PROJECT = "churn"
DB = f"projects/{PROJECT}/databases/(default)"
PROTOCOLS = ["grpc-unary", "grpc-listen", "websocket", "sse", "http1", "edge"]


def _get(base, path):
    with urllib.request.urlopen(base + path, timeout=10) as r:
        return json.loads(r.read())


def registry_size(base):
    return len(_get(base, "/emulator/v1/connections")["connections"])


def _request(base, method, path, body=None):
    request = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as r:
        return r.read()


class Churn:
    """One protocol's clients, against a server at `base`."""

    def __init__(self, base):
        self.base = base
        self.host, port = base.split("://", 1)[1].split(":")
        self.port = int(port)
        self.target = f"{self.host}:{self.port}"
        _request(base, "PATCH", f"/v1/{DB}/documents/c/d", {"fields": {"n": {"integerValue": "1"}}})

    def grpc_unary(self, i):
        import grpc
        from google.cloud.firestore_v1.types import document, firestore
        channel = grpc.insecure_channel(self.target)
        call = channel.unary_unary("/google.firestore.v1.Firestore/GetDocument", request_serializer=firestore.GetDocumentRequest.serialize,
                                   response_deserializer=document.Document.deserialize)
        call(firestore.GetDocumentRequest(name=f"{DB}/documents/c/d"), metadata=[("google-cloud-resource-prefix", DB)], timeout=10)
        channel.close()

    def grpc_listen(self, i):
        import grpc
        from google.cloud.firestore_v1.types import firestore
        channel = grpc.insecure_channel(self.target)
        listen = channel.stream_stream("/google.firestore.v1.Firestore/Listen", request_serializer=firestore.ListenRequest.serialize,
                                       response_deserializer=firestore.ListenResponse.deserialize)
        request = firestore.ListenRequest(database=DB, add_target={"target_id": 1, "documents": {"documents": [f"{DB}/documents/c/d"]}})
        pending = [request]

        def requests():
            while pending:
                yield pending.pop()
            while not closed:
                time.sleep(0.01)

        closed = False
        responses = listen(requests(), metadata=[("google-cloud-resource-prefix", DB)], timeout=10)
        next(responses)
        closed = True
        responses.cancel()
        channel.close()

    def websocket(self, i):
        from websockets.sync.client import connect
        with connect(f"ws://{self.target}/.ws?v=5&ns={PROJECT}", open_timeout=10, close_timeout=2) as ws:
            json.loads(ws.recv(timeout=10))  # the hello
            ws.send(json.dumps({"t": "d", "d": {"r": 1, "a": "q", "b": {"p": "/c", "h": ""}}}))
            while True:
                message = json.loads(ws.recv(timeout=10))
                if message.get("t") == "d" and message["d"].get("r") == 1:
                    break

    def sse(self, i):
        with socket.create_connection((self.host, self.port), timeout=10) as s:
            s.sendall(f"GET /v1/{DB}/documents/c/d:listen HTTP/1.1\r\nHost: {self.target}\r\nAccept: text/event-stream\r\n\r\n".encode())
            got = b""
            while b"event: snapshot" not in got:
                chunk = s.recv(65536)
                if not chunk:
                    raise fgbench.BenchError("the SSE stream ended before its first snapshot")
                got += chunk

    def http1(self, i):
        with socket.create_connection((self.host, self.port), timeout=10) as s:
            s.sendall(f"GET /v1/{DB}/documents/c/d HTTP/1.1\r\nHost: {self.target}\r\n\r\n".encode())
            got = b""
            while b"\r\n\r\n" not in got or len(got) < got.index(b"\r\n\r\n") + 4 + _length(got):
                chunk = s.recv(65536)
                if not chunk:
                    raise fgbench.BenchError("the connection closed before the answer")
                got += chunk

    def edge(self, i):
        client = f"/clients/churn-{i}"
        _request(self.base, "PUT", client, {"project": PROJECT})
        _request(self.base, "PATCH", f"{client}/v1/{DB}/documents/e/{i % 10}?waitFor=ack", {"fields": {"i": {"integerValue": str(i)}}})
        _request(self.base, "DELETE", client)


def prefill_history(base, commits):
    """Fills the database's resume history (the last 20 000 commits it keeps, bounded) before
    the edge clients' writes are measured, so that its growth is not counted as theirs."""
    import http.client
    host, port = base.split("://", 1)[1].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    for i in range(commits):
        body = json.dumps({"writes": [{"update": {"name": f"{DB}/documents/h/{i % 10}", "fields": {"i": {"integerValue": str(i)}}}}]})
        connection.request("POST", f"/v1/{DB}/documents:commit", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise fgbench.BenchError(f"prefill commit answered {response.status}")
    connection.close()


def _length(head):
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 0


def settle(server, base, fds_before, entries_before, seconds=10.0):
    """Waits (bounded) for descriptors and entries to come back; returns (fds, entries)."""
    deadline = time.monotonic() + seconds
    while True:
        fds, entries = server.open_fds(), registry_size(base)
        if (fds <= fds_before and entries <= entries_before) or time.monotonic() > deadline:
            return fds, entries
        time.sleep(0.1)


def run(server, clients, protocols, say=fgbench.log, prefill=0):
    """Churns each protocol; returns {protocol: {"fds": Δ, "entries": Δ, "rss_mib": Δ, "seconds": s}}.
    `prefill`: commits made before the edge clients' (see prefill_history)."""
    churn = Churn(server.base)
    results = {}
    for protocol in protocols:
        if protocol == "edge" and prefill:
            prefill_history(server.base, prefill)
        use = getattr(churn, protocol.replace("-", "_"))
        use(-1)  # one first client: what is made once per server is not churn
        fds0, entries0 = settle(server, server.base, 0, 0, seconds=2)
        rss0 = server.rss_kib()
        started = time.monotonic()
        for i in range(clients):
            use(i)
        elapsed = time.monotonic() - started
        fds, entries = settle(server, server.base, fds0, entries0)
        time.sleep(0.5)
        results[protocol] = {"fds": fds - fds0, "entries": entries - entries0, "rss_mib": (server.rss_kib() - rss0) / 1024,
                             "seconds": elapsed}
        r = results[protocol]
        say(f"{protocol:12} {clients} clients in {elapsed:6.1f} s: descriptors {r['fds']:+d}, registry {r['entries']:+d}, "
            f"resident {r['rss_mib']:+.1f} MiB")
    return results


def main():
    ap = fgbench.argument_parser(__doc__)
    ap.add_argument("--clients", type=int, default=10000)
    ap.add_argument("--only", default=",".join(PROTOCOLS))
    ap.add_argument("--prefill", type=int, default=20000,
                    help="commits before the edge clients' writes: the resume history a database keeps is full then")
    args = ap.parse_args()
    fgbench.check_binary(args.bin, args.allow_debug)
    fgbench.raise_nofile(65536)
    server = fgbench.Server(args.bin, PROJECT, durable=False, label="churn").start()
    failed = False
    try:
        results = run(server, args.clients, [p for p in args.only.split(",") if p], prefill=args.prefill)
        for protocol, r in results.items():
            fgbench.emit(f"churn_{protocol}_rss", round(r["rss_mib"], 2), "MiB")
            failed |= r["fds"] > 0 or r["entries"] > 0 or r["rss_mib"] >= 8
        fgbench.emit("churn_leaked", sum(max(0, r["fds"]) + max(0, r["entries"]) for r in results.values()), "count")
        if not server.alive():
            raise fgbench.BenchError("the server died")
    finally:
        server.stop()
    return 1 if failed else 0


if __name__ == "__main__":
    fgbench.run_main(main)
