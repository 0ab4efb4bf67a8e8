"""Bad input over the Realtime Database socket (issue 25): frames that are not JSON, binary
frames, unknown actions, a count followed by fewer pieces, oversize messages, bad paths and
keys, a socket that never speaks — and seeded random requests full of hostile values.

Each one gets an error reply or a closed socket with a reason, never a crash, a hang or a
second reply; the server still answers REST and new sockets afterwards. Seeded by
FIREGATE_FUZZ_SEED (default 4242); FIREGATE_FUZZ_REQUESTS requests (default 400).
"""
import json
import os
import random
import socket
import time

import pytest
import requests
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from conftest import start_server, stop_server
from rtdb_socket import RealtimeSocket, SocketClosed, ws_url

ACTIONS = ["s", "q", "n", "p", "m", "o", "om", "oc", "g", "auth", "gauth", "unauth", "appcheck", "unappeck", "nope", "", 5, None]


def still_serving(base_url, namespace):
    assert requests.get(f"{base_url}/healthz").status_code == 200
    s = RealtimeSocket(base_url, namespace)
    assert s.request("g", {"p": "/"})["s"] == "ok"
    s.close()


def closed_with(sock, timeout=10):
    code, reason = sock.wait_closed(timeout)
    assert code is not None and reason, (code, reason)
    return code, reason


def test_a_frame_that_is_not_json_closes_the_socket_with_a_reason(base_url, namespace):
    s = RealtimeSocket(base_url, namespace)
    s.ws.send("{not json")
    code, reason = closed_with(s)
    assert reason == "A message must be a JSON object (protocol v5)."
    still_serving(base_url, namespace)


def test_a_binary_frame_closes_the_socket_with_1003(base_url, namespace):
    s = RealtimeSocket(base_url, namespace)
    s.ws.send(b"\x00\x01binary")
    code, reason = closed_with(s)
    assert code == 1003 and "Binary frames" in reason


def raw_socket(base_url, namespace):
    """A socket opened by hand, for frames no WebSocket library sends: returns it after the hello."""
    import base64 as b64
    host, port = base_url.split("://")[1].split(":")
    raw = socket.create_connection((host, int(port)), timeout=5)
    key = b64.b64encode(os.urandom(16)).decode()
    raw.sendall(f"GET /.ws?v=5&ns={namespace} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += raw.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return raw, read_frame(raw)


def read_frame(raw):
    """(opcode, payload) of the next server frame."""
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = raw.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data
    first, second = exactly(2)
    length = second & 0x7F
    if length == 126:
        length = int.from_bytes(exactly(2), "big")
    elif length == 127:
        length = int.from_bytes(exactly(8), "big")
    return first & 0x0F, exactly(length)


def frame(opcode, payload, fin=True, masked=True, rsv=0):
    mask = os.urandom(4) if masked else b""
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    length = bytes([n]) if n < 126 else bytes([126]) + n.to_bytes(2, "big")
    if masked:
        length = bytes([length[0] | 0x80]) + length[1:]
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + length + mask + payload


def test_fragmented_messages_are_joined_and_websocket_pings_answered(base_url, namespace):
    raw, hello = raw_socket(base_url, namespace)
    assert hello[0] == 1 and json.loads(hello[1])["d"]["t"] == "h"
    raw.sendall(frame(0x9, b"hi"))
    assert read_frame(raw) == (0xA, b"hi")
    message = json.dumps({"t": "d", "d": {"r": 1, "a": "g", "b": {"p": "/"}}}).encode()
    raw.sendall(frame(0x1, message[:10], fin=False) + frame(0x0, message[10:20], fin=False))
    raw.sendall(frame(0x9, b"in between"))  # control frames may come between fragments
    assert read_frame(raw) == (0xA, b"in between")
    raw.sendall(frame(0x0, message[20:]))
    opcode, payload = read_frame(raw)
    assert opcode == 1 and json.loads(payload) == {"t": "d", "d": {"r": 1, "b": {"s": "ok", "d": None}}}
    raw.close()


@pytest.mark.parametrize("bad, code, words", [
    (frame(0x1, b"{}", masked=False), 1002, "masked"),
    (frame(0x1, b"{}", rsv=0x40), 1002, "Reserved bits"),
    (frame(0x0, b"{}"), 1002, "continuation"),
    (frame(0x3, b""), 1002, "Unknown opcode"),
    (frame(0x9, b"x" * 126), 1002, "Control frames"),
    (frame(0x1, b"{", fin=False) + frame(0x1, b"}"), 1002, "began before"),
])
def test_broken_framing_closes_the_socket_with_a_protocol_error(base_url, namespace, bad, code, words):
    raw, _ = raw_socket(base_url, namespace)
    raw.sendall(bad)
    opcode, payload = read_frame(raw)
    assert opcode == 8 and int.from_bytes(payload[:2], "big") == code and words in payload[2:].decode()
    raw.close()


def test_json_that_names_no_request_gets_a_server_error_and_the_socket_stays(base_url, namespace):
    s = RealtimeSocket(base_url, namespace)
    for message in [[1, 2], {"t": "x", "d": {}}, {"t": "d"}, {"t": "d", "d": 5}, {"t": "d", "d": {"a": "q", "b": {}}}, {"t": "c", "d": {}}]:
        s.send_json(message)
        s.pump()
        assert s.controls[-1][0] == "e" and s.controls[-1][1], message
    assert s.request("g", {"p": "/"})["s"] == "ok"
    s.close()


def test_a_count_followed_by_fewer_pieces_is_bounded_and_ends_with_the_socket(base_url, namespace):
    s = RealtimeSocket(base_url, namespace)
    s.ws.send("3")
    s.ws.send('{"t":"d","d":{"r":1,')
    s.ws.send('"a":"g","b":{"p":"/"}}}')
    # Two pieces of three: nothing is answered yet; closing leaves nothing behind.
    with pytest.raises(TimeoutError):
        s.pump(0.5)
    s.close()
    # Pieces that join into something that is not JSON close the socket.
    t = RealtimeSocket(base_url, namespace)
    t.ws.send("2")
    t.ws.send('{"t":"d",')
    t.ws.send('oops')
    assert closed_with(t)[1] == "A message must be a JSON object (protocol v5)."
    still_serving(base_url, namespace)


def test_oversize_messages_are_refused_by_count_and_by_size(base_url, namespace):
    s = RealtimeSocket(base_url, namespace)
    s.ws.send("999999")
    code, reason = closed_with(s)
    assert "larger than" in reason
    # One frame past the limit: the server stops reading it at the limit and closes (1009),
    # possibly while the client is still sending (then the client sees a reset).
    t = RealtimeSocket(base_url, namespace)
    cid = t.hello["s"].split("-")[0]
    try:
        t.ws.send("x" * (33 * 1024 * 1024))
        code, _ = t.wait_closed(30)
        assert code == 1009
    except ConnectionClosed as e:
        assert e.rcvd is None or e.rcvd.code == 1009, e
    except (ConnectionError, OSError) as e:
        assert "reset" in str(e).lower(), e
    deadline = time.monotonic() + 10
    while requests.get(f"{base_url}/emulator/v1/connections/{cid}").status_code != 404:
        assert time.monotonic() < deadline, "the oversize socket is still open"
        time.sleep(0.05)
    still_serving(base_url, namespace)


def test_a_write_over_the_size_limit_is_refused_and_writes_nothing(base_url, namespace):
    s = RealtimeSocket(base_url, namespace)
    reply = s.request("p", {"p": "/big", "d": "x" * (16 * 1024 * 1024 + 10)}, timeout=60)
    assert reply["s"] == "failure" and reply["d"]
    assert requests.get(f"{base_url}/big.json", params={"ns": namespace}).json() is None
    s.close()


def test_bad_upgrades_get_an_rtdb_error_body(base_url, namespace):
    host, port = base_url.split("://")[1].split(":")
    for head, status in [
        (f"GET /.ws?ns={namespace} HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (f"GET /.ws?ns={namespace} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 8\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", 400),
        ("GET /.ws?ns=bad/name HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", 400),
    ]:
        with socket.create_connection((host, int(port)), timeout=5) as raw:
            raw.sendall(head.encode())
            answer = b""
            while True:
                chunk = raw.recv(65536)
                if not chunk:
                    break
                answer += chunk
        status_line, _, rest = answer.partition(b"\r\n")
        assert status_line.startswith(f"HTTP/1.1 {status}".encode()), answer
        body = json.loads(rest.split(b"\r\n\r\n", 1)[1])
        assert body["error"]


def test_ws_as_a_plain_request_behind_another_gets_an_rtdb_error(base_url, namespace):
    session = requests.Session()
    assert session.get(f"{base_url}/healthz").status_code == 200
    for method in ("GET", "POST"):
        r = session.request(method, f"{base_url}/.ws", params={"v": "5", "ns": namespace})
        assert r.status_code == 400 and "WebSocket endpoint" in r.json()["error"]
    assert requests.get(f"{base_url}/.ws", params={"v": "5"}).status_code == 400


def test_a_socket_that_never_speaks_is_closed_after_the_idle_timeout(monkeypatch, namespace):
    monkeypatch.setenv("FIREGATE_WS_IDLE_TIMEOUT_SECONDS", "1")
    proc, base = start_server()
    try:
        ws = connect(ws_url(base, namespace), open_timeout=5)
        ws.recv(timeout=5)  # the hello
        start = time.monotonic()
        with pytest.raises(Exception):
            while True:
                ws.recv(timeout=5)
        assert 0.8 <= time.monotonic() - start < 4 and ws.close_code == 1001
    finally:
        stop_server(proc)


def test_a_head_that_never_ends_is_closed_after_the_idle_timeout(monkeypatch, namespace):
    monkeypatch.setenv("FIREGATE_WS_IDLE_TIMEOUT_SECONDS", "1")
    proc, base = start_server()
    try:
        host, port = base.split("://")[1].split(":")
        with socket.create_connection((host, int(port)), timeout=5) as raw:
            raw.sendall(b"GET /.ws?ns=x HTTP/1.1\r\nHost: x\r\n")
            start = time.monotonic()
            assert raw.recv(100) == b""
            assert 0.8 <= time.monotonic() - start < 4
    finally:
        stop_server(proc)


def test_an_upgrade_after_a_fast_path_request_on_the_same_connection(base_url, namespace):
    """A connection may read a location first and then become a socket (the request order is kept)."""
    import base64 as b64
    requests.put(f"{base_url}/first.json", params={"ns": namespace}, json=1)
    host, port = base_url.split("://")[1].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        key = b64.b64encode(os.urandom(16)).decode()
        raw.sendall(f"GET /first.json?ns={namespace} HTTP/1.1\r\nHost: x\r\n\r\n"
                    f"GET /.ws?v=5&ns={namespace} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
        data = b""
        while data.count(b"\r\n\r\n") < 2:
            data += raw.recv(4096)
        first, rest = data.split(b"\r\n\r\n", 1)
        assert first.startswith(b"HTTP/1.1 200") and rest.startswith(b"1HTTP/1.1 101 Switching Protocols")
        opcode, payload = read_frame_after(raw, rest.split(b"\r\n\r\n", 1)[1])
        assert opcode == 1 and json.loads(payload)["d"]["t"] == "h"


def read_frame_after(raw, already):
    class Replay:
        def __init__(self, data):
            self.data = data

        def recv(self, n):
            if self.data:
                out, self.data = self.data[:n], self.data[n:]
                return out
            return raw.recv(n)
    return read_frame(Replay(already))


def hostile_json(rng, depth=0):
    kind = rng.randrange(10 if depth < 6 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 2 ** 53, 1e308, -0.0, 3.5, 2 ** 63])
    if kind == 3:
        return rng.choice(["", "a", ".sv", "timestamp", "\u2603", "x" * 300, "[MIN_NAME]", "/a/b", "a.b", "$key"])
    if kind == 4:
        return {".sv": rng.choice(["timestamp", {"increment": rng.choice([1, "x", None])}, "nope", 5])}
    if kind == 5:
        return {".value": rng.choice([1, "x", {"a": 1}]), ".priority": rng.choice([1, "p", True, None])}
    if kind in (6, 7):
        return {rng.choice(["a", "b/c", ".priority", "$x", "", "a.b", "[", "\u00e9", "1"]): hostile_json(rng, depth + 1) for _ in range(rng.randrange(4))}
    return [hostile_json(rng, depth + 1) for _ in range(rng.randrange(4))]


def hostile_body(rng):
    body = {}
    if rng.random() < 0.9:
        body["p"] = rng.choice(["/", "/a", "a/b", "/a/.priority", "/.info/connected", "/a#b", "/" + "/".join(["d"] * 40), 5, None, "/a/\u00e9"])
    if rng.random() < 0.7:
        body["d"] = hostile_json(rng)
    if rng.random() < 0.3:
        body["q"] = rng.choice([hostile_json(rng), {"i": ".value", "l": rng.choice([1, -2, "3", 2.5])}, {"sp": 1, "sn": 3}])
        body["t"] = rng.choice([1, "x", None])
    if rng.random() < 0.2:
        body["h"] = rng.choice(["", "abc", 5, None])
    if rng.random() < 0.2:
        body["cred"] = rng.choice(["owner", "a.b.c", "x", None, 5])
        body["authvar"] = hostile_json(rng)
    return rng.choice([body, body, body, hostile_json(rng), None])


def test_seeded_random_requests_each_get_exactly_one_reply_or_a_closed_socket(base_url, namespace):
    seed = int(os.environ.get("FIREGATE_FUZZ_SEED", "4242"))
    count = int(os.environ.get("FIREGATE_FUZZ_REQUESTS", "400"))
    rng = random.Random(seed)
    s = RealtimeSocket(base_url, namespace)
    answered = closed = 0
    for i in range(count):
        action = rng.choice(ACTIONS)
        r = s.next_r
        s.next_r += 1
        try:
            s.send_json({"t": "d", "d": {"r": r, "a": action, "b": hostile_body(rng)}})
            reply = s.wait_reply(r, timeout=10)
            assert isinstance(reply.get("s"), str), reply
            if reply["s"] != "ok":
                assert reply.get("d"), (action, reply)
            answered += 1
        except SocketClosed:
            assert s.ws.close_reason, f"request {i} closed the socket without a reason"
            closed += 1
            s = RealtimeSocket(base_url, namespace)
    assert answered > count * 0.9
    still_serving(base_url, namespace)
    s.close()
