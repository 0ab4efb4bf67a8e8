"""Convergence across every tree surface (issue 25): seeded random writes from sockets, REST and
edge clients, with random drops of sockets (the test's `:drop`, reconnecting as the SDK does)
and edge clients taken offline and back; afterwards every listener — each socket's pushes, an
SSE stream, each edge client's view — holds exactly the backend's value.
Seeded by FIREGATE_FUZZ_SEED (default 4242).
"""
import os
import random
import time
import uuid

import requests

from rtdb_socket import RealtimeSocket, SocketClosed, apply_push, value_at
from sse import SSEStream
from test_rtdb_websocket import sse_apply

TIMEOUT = 15
KEYS = [f"k{i}" for i in range(6)]


class SocketListener:
    """A socket listening to /conv that reconnects and listens again after a drop."""

    def __init__(self, base, ns):
        self.base, self.ns = base, ns
        self.connect()

    def connect(self):
        self.sock = RealtimeSocket(self.base, self.ns)
        self.sock.listen("/conv")

    @property
    def id(self):
        return self.sock.hello["s"].split("-")[0]

    def value(self):
        tree = None
        for action, body in self.sock.pushes:
            tree = apply_push(tree, action, body)
        return value_at(tree, "conv")

    def send(self, action, body):
        try:
            self.sock.send_request(action, body)
        except SocketClosed:
            self.connect()

    def settle_until(self, expected):
        deadline = time.monotonic() + TIMEOUT
        while self.value() != expected and time.monotonic() < deadline:
            try:
                self.sock.pump(0.2)
            except TimeoutError:
                pass
            except SocketClosed:
                self.connect()
        return self.value()


class EdgeWriter:
    def __init__(self, base, ns):
        self.url = f"{base}/clients/conv-{uuid.uuid4().hex[:8]}"
        assert requests.put(self.url, json={"namespace": ns}).status_code == 200
        self.online = True

    def write(self, path, value):
        requests.put(f"{self.url}/{path}.json", json=value)

    def network(self, online):
        requests.post(f"{self.url}:{'enableNetwork' if online else 'disableNetwork'}", json={})
        self.online = online

    def listen(self):
        """The edge client's own listener on /conv (an SSE stream of its events)."""
        self.stream = SSEStream(f"{self.url}/conv.json")
        return self.stream

    def last_value(self, expected):
        """Reads the listener's events until it shows `expected`; returns the last value seen."""
        last = None
        deadline = time.monotonic() + TIMEOUT
        while last != expected and time.monotonic() < deadline:
            for event in self.stream.drain():
                if event.event == "value":
                    last = event.json()["value"]
            time.sleep(0.05)
        return last


def test_random_writes_and_drops_on_every_surface_converge_on_the_backend_value(base_url, namespace):
    rng = random.Random(int(os.environ.get("FIREGATE_FUZZ_SEED", "4242")))
    listeners = [SocketListener(base_url, namespace) for _ in range(3)]
    edges = [EdgeWriter(base_url, namespace) for _ in range(2)]
    for edge in edges:
        edge.listen()
    drops = 0
    with SSEStream(f"{base_url}/conv.json", params={"ns": namespace}) as sse:
        for step in range(200):
            key = rng.choice(KEYS)
            roll = rng.random()
            if roll < 0.3:
                listener = rng.choice(listeners)
                action = rng.choice(["p", "m", "inc"])
                if action == "p":
                    listener.send("p", {"p": f"/conv/{key}", "d": rng.choice([step, None, {"n": step}])})
                elif action == "m":
                    listener.send("m", {"p": "/conv", "d": {key: step, rng.choice(KEYS) + "/x": step}})
                else:
                    listener.send("m", {"p": "/conv", "d": {key + "/c": {".sv": {"increment": 1}}}})
            elif roll < 0.55:
                if rng.random() < 0.7:
                    requests.put(f"{base_url}/conv/{key}.json", params={"ns": namespace}, json=step)
                else:
                    requests.delete(f"{base_url}/conv/{key}.json", params={"ns": namespace})
            elif roll < 0.8:
                rng.choice(edges).write(f"conv/{key}", rng.choice([step, {"e": step}]))
            elif roll < 0.9:
                victim = rng.choice(listeners)
                requests.post(f"{base_url}/emulator/v1/connections/{victim.id}:drop")
                victim.connect()
                drops += 1
            else:
                edge = rng.choice(edges)
                edge.network(not edge.online)
        for edge in edges:
            if not edge.online:
                edge.network(True)
        # The edge clients' queued writes reach the backend; then the value stops changing.
        final, stable_since = None, time.monotonic()
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            current = requests.get(f"{base_url}/conv.json", params={"ns": namespace}).json()
            pending = [requests.get(e.url).json().get("tree", {}).get("pendingWrites", 0) for e in edges]
            if current != final or any(pending):
                final, stable_since = current, time.monotonic()
            elif time.monotonic() - stable_since > 0.5:
                break
            time.sleep(0.05)
        for listener in listeners:
            assert listener.settle_until(final) == final
        sse_value = None
        sse_deadline = time.monotonic() + TIMEOUT
        while sse_value != final and time.monotonic() < sse_deadline:
            event = sse.next(timeout=TIMEOUT)
            if event.event in ("put", "patch"):
                sse_value = sse_apply(sse_value, event.event, event.json())
        assert sse_value == final
        for edge in edges:
            assert edge.last_value(final) == final
            time.sleep(0.2)
            assert all(e.json()["value"] == final for e in edge.stream.drain() if e.event == "value")
            edge.stream.close()
    assert isinstance(final, dict) and len(final) >= 3 and drops >= 5
    for listener in listeners:
        listener.sock.close()
