"""Tree streaming (Accept: text/event-stream) over raw HTTP: headers, the first put, the
events for changes at, above and below the location, queries, several clients, keep-alive,
cancel, and slow readers."""
import json
import os
import queue
import socket
import time

import pytest
import requests

from conftest import start_server, stop_server
from tree_stream import TreeStream


def put(base, ns, path, value):
    r = requests.put(f"{base}/{path}.json?ns={ns}", data=json.dumps(value))
    assert r.status_code == 200, r.text


def patch(base, ns, path, value):
    r = requests.patch(f"{base}/{path}.json?ns={ns}", data=json.dumps(value))
    assert r.status_code == 200, r.text


def delete(base, ns, path):
    assert requests.delete(f"{base}/{path}.json?ns={ns}").status_code == 200


@pytest.fixture
def stream(base_url, namespace):
    opened = []

    def open_stream(path, **params):
        s = TreeStream(f"{base_url}/{path}.json", params={"ns": namespace, **params})
        opened.append(s)
        return s

    yield open_stream
    for s in opened:
        s.close()


def test_headers_and_first_event(base_url, namespace, stream):
    put(base_url, namespace, "room", {"a": 1})
    s = stream("room")
    assert s.status_code == 200
    assert s.headers["content-type"].startswith("text/event-stream")
    assert s.headers["cache-control"] == "no-cache"
    assert s.headers["transfer-encoding"] == "chunked"
    assert "content-length" not in s.headers
    assert s.next() == ("put", {"path": "/", "data": {"a": 1}})


def test_empty_location_starts_with_null(base_url, namespace, stream):
    assert stream("nothing").next() == ("put", {"path": "/", "data": None})


def test_changes_at_below_and_above(base_url, namespace, stream):
    s = stream("a/b")
    assert s.next() == ("put", {"path": "/", "data": None})
    put(base_url, namespace, "a/b", {"x": 1})                      # at
    assert s.next() == ("put", {"path": "/", "data": {"x": 1}})
    put(base_url, namespace, "a/b/y/z", 2)                         # below
    assert s.next() == ("put", {"path": "/y/z", "data": 2})
    patch(base_url, namespace, "a/b", {"x": 3, "y/w": 4})          # merge at
    assert s.next() == ("patch", {"path": "/", "data": {"x": 3, "y/w": 4}})
    patch(base_url, namespace, "a/b/y", {"z": None})               # merge below
    assert s.next() == ("patch", {"path": "/y", "data": {"z": None}})
    put(base_url, namespace, "a", {"b": "leaf", "c": 1})           # set above
    assert s.next() == ("put", {"path": "/", "data": "leaf"})
    patch(base_url, namespace, "", {"a/b": "new"})                 # merge above, covering
    assert s.next() == ("put", {"path": "/", "data": "new"})
    patch(base_url, namespace, "a", {"b/q": 1})                    # merge above, inside
    assert s.next() == ("patch", {"path": "/", "data": {"q": 1}})
    put(base_url, namespace, "a/c", 2)                             # sibling: nothing
    patch(base_url, namespace, "", {"other": 1})                   # elsewhere: nothing
    put(base_url, namespace, "a", {"b": {"q": 1}, "c": 5})         # above, b unchanged: nothing
    s.expect_none()
    delete(base_url, namespace, "a")                               # remove above
    assert s.next() == ("put", {"path": "/", "data": None})
    delete(base_url, namespace, "a/b")                             # remove of nothing at: still told
    assert s.next() == ("put", {"path": "/", "data": None})


def test_namespace_clear_reaches_streams(base_url, namespace, stream):
    put(base_url, namespace, "x", {"y": 1})
    s = stream("x")
    s.next()
    assert requests.delete(f"{base_url}/.json?ns={namespace}").status_code == 200
    assert s.next() == ("put", {"path": "/", "data": None})


def test_two_clients_see_the_same_events(base_url, namespace, stream):
    s1, s2 = stream("shared"), stream("shared")
    assert s1.next() == s2.next() == ("put", {"path": "/", "data": None})
    for i in range(5):
        put(base_url, namespace, f"shared/k{i}", i)
    for s in (s1, s2):
        assert [s.next() for _ in range(5)] == [("put", {"path": f"/k{i}", "data": i}) for i in range(5)]
    s1.close()
    put(base_url, namespace, "shared/after", True)
    assert s2.next() == ("put", {"path": "/after", "data": True})


def test_server_values_arrive_resolved(base_url, namespace, stream):
    s = stream("sv")
    s.next()
    put(base_url, namespace, "sv", {"n": {".sv": {"increment": 2}}, "t": {".sv": "timestamp"}})
    event, data = s.next()
    assert event == "put" and data["data"]["n"] == 2 and isinstance(data["data"]["t"], int)


def test_query_stream_window(base_url, namespace, stream):
    put(base_url, namespace, "scores", {"a": {"s": 1}, "b": {"s": 2}, "c": {"s": 3}})
    s = stream("scores", orderBy='"s"', limitToLast="2")
    assert s.next() == ("put", {"path": "/", "data": {"b": {"s": 2}, "c": {"s": 3}}})
    put(base_url, namespace, "scores/a/s", 0)       # outside the window: nothing
    s.expect_none()
    put(base_url, namespace, "scores/c/name", "x")  # inside a child that stays
    assert s.next() == ("put", {"path": "/c/name", "data": "x"})
    put(base_url, namespace, "scores/d", {"s": 9})  # enters, pushes b out
    event, data = s.next()
    assert event == "patch" and data["path"] == "/" and data["data"] == {"d": {"s": 9}, "b": None}
    delete(base_url, namespace, "scores/c")         # c leaves, b comes back
    event, data = s.next()
    assert event == "patch" and data["data"] == {"b": {"s": 2}, "c": None}


def test_ordering_only_query_streams_everything(base_url, namespace, stream):
    s = stream("o", orderBy='"$key"')
    assert s.next() == ("put", {"path": "/", "data": None})
    put(base_url, namespace, "o/a", 1)
    assert s.next() == ("put", {"path": "/a", "data": 1})


def test_stream_with_bad_query_is_400(base_url, namespace):
    r = requests.get(f"{base_url}/x.json?ns={namespace}&limitToFirst=1", headers={"Accept": "text/event-stream"})
    assert r.status_code == 400 and "orderBy" in r.json()["error"]


def test_format_export_stream(base_url, namespace, stream):
    put(base_url, namespace, "p", {".value": 1, ".priority": 2})
    s = stream("p", format="export")
    assert s.next() == ("put", {"path": "/", "data": {".value": 1, ".priority": 2}})


def test_curl_style_raw_socket(base_url, namespace):
    """A bare HTTP/1.1 client sees chunked framing and the first event without buffering."""
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(f"GET /raw.json?ns={namespace} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
        data = b""
        while b"event: put" not in data or not data.endswith(b"\r\n"):
            chunk = sock.recv(4096)
            assert chunk
            data += chunk
        assert b"transfer-encoding: chunked" in data.lower()
        assert b'data: {"path":"/","data":null}' in data


@pytest.fixture(scope="module")
def tuned_server():
    """A server with 1 s keep-alives, 64 KiB stream buffers and a 4 KiB stream size limit."""
    if os.environ.get("FIREGATE_URL"):
        pytest.skip("needs its own server")
    settings = {"FIREGATE_TREE_KEEPALIVE_SECONDS": "1", "FIREGATE_TREE_STREAM_BUFFER_BYTES": "65536",
                "FIREGATE_TREE_STREAM_MAX_BYTES": "4096"}
    os.environ.update(settings)
    try:
        proc, base = start_server()
    finally:
        for k in settings:
            del os.environ[k]
    yield base
    stop_server(proc)


def test_keep_alive(tuned_server, namespace):
    s = TreeStream(f"{tuned_server}/k.json", params={"ns": namespace})
    try:
        assert s.next() == ("put", {"path": "/", "data": None})
        assert s.next(timeout=3, skip_keepalive=False) == ("keep-alive", None)
    finally:
        s.close()


def test_cancel_when_location_too_large(tuned_server, namespace):
    put(tuned_server, namespace, "big", "x" * 5000)
    s = TreeStream(f"{tuned_server}/big.json", params={"ns": namespace})
    try:
        event, data = s.next()
        assert event == "cancel" and "exceeds the maximum size" in data
        assert s.closed.wait(5)
    finally:
        s.close()


def test_slow_reader_is_resynced_not_buffered(tuned_server, namespace):
    """A client that stops reading gets a full put when it catches up; memory stays bounded."""
    s = TreeStream(f"{tuned_server}/slow.json", params={"ns": namespace}, rcvbuf=4096)
    try:
        assert s.next() == ("put", {"path": "/", "data": None})
        s.pause()
        payload = "y" * 20000
        writes = 300  # ~6 MB of events against a 64 KiB stream buffer and full socket buffers
        for i in range(writes):
            put(tuned_server, namespace, f"slow/k{i % 3}", payload + str(i))
        put(tuned_server, namespace, "slow/final", True)
        s.resume()
        seen, final = 0, None
        deadline = time.time() + 30
        while time.time() < deadline:
            event, data = s.next(timeout=10)
            seen += 1
            if data["path"] == "/final" or (data["path"] == "/" and isinstance(data["data"], dict) and "final" in data["data"]):
                final = data
                break
        assert final is not None
        # Events were dropped and replaced by a full put: fewer than all writes arrived, and
        # the resync carried the complete current value.
        assert seen < writes
    finally:
        s.close()
