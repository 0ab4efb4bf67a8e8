#!/usr/bin/env python3
"""The requests scripts/link-order.sh makes while it records which functions run: a server's
common work on every surface (documents, queries, listens, the tree and its streams, edge
clients, a Realtime Database socket). Standard library only.

Usage: link_order_workload.py PORT
"""
import base64
import http.client
import json
import os
import socket
import sys
from urllib.parse import quote

PORT = int(sys.argv[1])
DOCS = "/v1/projects/order/databases/(default)/documents"


def call(method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
    data = json.dumps(body).encode() if body is not None else None
    conn.request(method, path, body=data, headers=headers or {})
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    if response.status >= 500:
        raise SystemExit(f"{method} {path} -> {response.status}: {payload[:200]!r}")
    return response.status, payload


def stream_first_event(path, then=None):
    """Opens an event stream, reads its first event, runs `then` (a write), reads one more."""
    sock = socket.create_connection(("127.0.0.1", PORT), timeout=60)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".encode())
    sock.recv(65536)
    if then:
        then()
        sock.recv(65536)
    sock.close()


def fields(**values):
    return {k: ({"integerValue": str(v)} if isinstance(v, int) else {"stringValue": v}) for k, v in values.items()}


def commit(path, **values):
    name = f"projects/order/databases/(default)/documents/{path}"
    return call("POST", f"{DOCS}:commit", {"writes": [{"update": {"name": name, "fields": fields(**values)}}]})


def documents():
    call("GET", "/healthz")
    for i in range(20):
        commit(f"cities/c{i}", name=f"city {i}", population=i * 1000)
    call("GET", f"{DOCS}/cities/c1")
    call("GET", f"{DOCS}/cities?pageSize=5")
    call("PATCH", f"{DOCS}/cities/c2?updateMask.fieldPaths=population", {"fields": fields(population=7)})
    query = {"structuredQuery": {"from": [{"collectionId": "cities"}],
                                 "where": {"fieldFilter": {"field": {"fieldPath": "population"}, "op": "GREATER_THAN",
                                                           "value": {"integerValue": "3000"}}},
                                 "orderBy": [{"field": {"fieldPath": "population"}}], "limit": 5}}
    call("POST", f"{DOCS}:runQuery", query)
    call("POST", f"{DOCS}:runAggregationQuery", {"structuredAggregationQuery": {
        "structuredQuery": {"from": [{"collectionId": "cities"}]}, "aggregations": [{"alias": "n", "count": {}}]}})
    call("POST", f"{DOCS}:batchGet", {"documents": [f"projects/order/databases/(default)/documents/cities/c{i}" for i in range(3)]})
    _, body = call("POST", f"{DOCS}:beginTransaction", {})
    transaction = json.loads(body)["transaction"]
    call("POST", f"{DOCS}:commit", {"transaction": transaction, "writes": []})
    call("DELETE", f"{DOCS}/cities/c19")
    stream_first_event(f"{DOCS}/cities/c1:listen", then=lambda: commit("cities/c1", name="renamed", population=1))
    structured = json.dumps({"from": [{"collectionId": "cities"}], "limit": 3}, separators=(",", ":"))
    stream_first_event(f"{DOCS}:listen?query={quote(structured)}",
                       then=lambda: commit("cities/c0", name="first", population=0))
    call("GET", "/metrics")


def tree():
    call("PUT", "/order/users/u1.json", {"name": "Ada", "score": 1})
    call("PATCH", "/order/users/u1.json", {"score": 2})
    call("POST", "/order/log.json", {"at": {".sv": "timestamp"}})
    call("GET", "/order.json")
    call("GET", "/order/users.json?orderBy=%22score%22&limitToFirst=1")
    stream_first_event("/order/users.json", then=lambda: call("PUT", "/order/users/u2.json", {"name": "Bo"}))
    call("DELETE", "/order/log.json")


def edge_client():
    base = "/clients/order-client"
    call("PUT", base, {})
    call("POST", f"{base}{DOCS}:commit", {"writes": [{"update": {
        "name": "projects/order/databases/(default)/documents/edge/e1", "fields": fields(n=1)}}]})
    call("GET", f"{base}{DOCS}/edge/e1")
    call("POST", f"{base}:disableNetwork")
    call("POST", f"{base}{DOCS}:runQuery", {"structuredQuery": {"from": [{"collectionId": "edge"}]}})
    call("POST", f"{base}:enableNetwork")
    call("POST", f"{base}:waitForPendingWrites")
    call("PUT", f"{base}/edge/tree.json", {"x": 1})
    call("GET", f"{base}/edge/tree.json")
    call("POST", f"{base}:terminate")


def realtime_socket():
    """A Realtime Database socket: handshake, one listen, one set, then close."""
    sock = socket.create_connection(("127.0.0.1", PORT), timeout=60)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /.ws?v=5&ns=order HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    sock.recv(65536)

    def send(message):
        payload = json.dumps(message).encode()
        mask = os.urandom(4)
        header = bytes([0x81, 0x80 | len(payload)]) if len(payload) < 126 else bytes([0x81, 0xFE]) + len(payload).to_bytes(2, "big")
        sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    send({"t": "d", "d": {"r": 1, "a": "q", "b": {"p": "/order/users", "h": ""}}})
    send({"t": "d", "d": {"r": 2, "a": "p", "b": {"p": "/order/users/u3", "d": {"name": "Cy"}}}})
    sock.recv(65536)
    sock.close()


if __name__ == "__main__":
    documents()
    tree()
    edge_client()
    realtime_socket()
    call("GET", "/healthz")
