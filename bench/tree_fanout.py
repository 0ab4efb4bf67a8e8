#!/usr/bin/env python3
"""Stream fan-out benchmark for the tree backend.

Opens N streams (default 1000) on one location of a running Firegate, waits for each one's
first `put`, then makes W writes (default 30) to that location one after another. For every
write it records, per stream, the time from sending the PUT to that stream receiving the
event, and reports p50/p99 of those latencies and of the time to the *last* stream.

Loopback only, bounded in count and time; exits by itself. With BENCH_JSON=1 (bench/run) it also
prints `@bench {json}` lines: fanout_tree_p50, fanout_tree_p99 (every stream, ms).
"""
import argparse
import json
import os
import selectors
import socket
import statistics
import sys
import time
import urllib.request


def percentile(values, p):
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1)))))
    return ordered[k]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", default="http://127.0.0.1:8080")
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("--ns", default="bench-fanout")
    parser.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()

    host, port = args.url.removeprefix("http://").split(":")
    port = int(port)
    assert host in ("127.0.0.1", "localhost"), "loopback only"
    location = f"/fan.json?ns={args.ns}"
    urllib.request.urlopen(urllib.request.Request(f"{args.url}{location}", data=b'{"seq":-1}', method="PUT")).read()

    selector = selectors.DefaultSelector()
    buffers = {}
    request = f"GET {location} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode()
    for _ in range(args.streams):
        s = socket.create_connection((host, port))
        s.sendall(request)
        s.setblocking(False)
        selector.register(s, selectors.EVENT_READ)
        buffers[s] = b""

    deadline = time.time() + args.timeout

    def pump(marker, pending, seen_at):
        """Reads until every socket in `pending` has seen `marker`."""
        while pending and time.time() < deadline:
            for key, _ in selector.select(timeout=1):
                s = key.fileobj
                try:
                    chunk = s.recv(65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    raise SystemExit("a stream closed")
                now = time.perf_counter()
                data = buffers[s] + chunk
                if s in pending and marker in data:
                    pending.discard(s)
                    seen_at.append(now)
                    data = b""
                buffers[s] = data[-256:]
        if pending:
            raise SystemExit(f"{len(pending)} streams never saw {marker!r}")

    started = time.perf_counter()
    pump(b'"seq":-1', set(buffers), [])
    print(f"{args.streams} streams open and primed in {time.perf_counter() - started:.2f} s")

    put_socket = socket.create_connection((host, port))
    all_latencies, last_latencies = [], []
    for seq in range(args.writes):
        body = json.dumps({"seq": seq}).encode()
        put = (f"PUT {location}&print=silent HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
        seen_at = []
        sent = time.perf_counter()
        put_socket.sendall(put)
        pump(f'"seq":{seq}'.encode(), set(buffers), seen_at)
        response = put_socket.recv(4096)
        assert b"204" in response.split(b"\r\n", 1)[0], response[:100]
        latencies = [(t - sent) * 1000 for t in seen_at]
        all_latencies += latencies
        last_latencies.append(max(latencies))
        time.sleep(0.02)

    print(f"writes: {args.writes}, events delivered: {len(all_latencies)}")
    print(f"PUT -> event, every stream:  p50 {percentile(all_latencies, 50):.1f} ms  p99 {percentile(all_latencies, 99):.1f} ms")
    if os.environ.get("BENCH_JSON") == "1":
        for name, p in (("fanout_tree_p50", 50), ("fanout_tree_p99", 99)):
            print("@bench " + json.dumps({"figure": name, "value": round(percentile(all_latencies, p), 3), "unit": "ms",
                                          "listeners": args.streams, "writes": args.writes}), flush=True)
    print(f"PUT -> last of {args.streams} streams: p50 {percentile(last_latencies, 50):.1f} ms  p99 {percentile(last_latencies, 99):.1f} ms  max {max(last_latencies):.1f} ms")
    for key in list(selector.get_map().values()):
        key.fileobj.close()
    put_socket.close()


if __name__ == "__main__":
    sys.exit(main())
