"""The operations surface (docs/operations.md) through HTTP against the real binary: /metrics, the
operations event stream, reset, export/import archives (JSON and gzip, damaged ones refused),
the server clock, what databases and namespaces exist, and the serve flags --admin-token,
--tls-cert/--tls-key, --import, --export-on-exit and --log-format json.

What touches the whole server (reset, import, exact metric deltas and event sequence numbers)
runs on servers of this module's own, never on the shared session server. Every wait is
bounded: SSE reads have timeouts and polls have deadlines.
"""
import gzip
import json
import os
import re
import shutil
import subprocess
import time
import uuid
from datetime import datetime, timezone

import pytest
import requests

from conftest import start_server, stop_server
from docs_support import Fs, assert_error, ok, parse_ts, t_server_time, w_update
from sse import SSEStream, SSETimeout
from tree_stream import TreeStream

DB = "(default)"
WAIT = 10.0  # seconds: the bound of every wait in this file


def _uid(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _unavailable(why):
    if os.environ.get("CI"):
        pytest.fail(why + " (required when CI is set)")
    pytest.skip(why)


def wait_for(probe, what, timeout=WAIT):
    """Polls `probe` until it returns something truthy (returned); fails after `timeout` s."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


@pytest.fixture(scope="module")
def ops_base():
    """A server of this module's own, for operations that touch everything."""
    proc, base = start_server()
    yield base
    stop_server(proc)


# --------------------------------------------------------------------------------------------
# Helpers: metrics, events, edge clients, archives
# --------------------------------------------------------------------------------------------

_SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(base, **kw):
    """GET /metrics parsed: {(name, frozenset(labels)): value}."""
    r = requests.get(base + "/metrics", timeout=WAIT, **kw)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/plain"), r.headers
    samples = {}
    for line in r.text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        name, labels, value = m.groups()
        key = (name, frozenset(_LABEL.findall(labels or "")))
        assert key not in samples, f"sample repeated: {line!r}"
        samples[key] = float(value)
    return samples


def metric(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def events(base, headers=None, **params):
    return SSEStream(f"{base}/emulator/v1/events", params=params, headers=headers)


def next_op(stream, predicate=lambda op: True, timeout=WAIT):
    """The next operation event whose data satisfies `predicate` (others are skipped)."""
    def wanted(ev):
        return ev.event == "operation" and predicate(ev.json())

    _, ev = stream.read_until(wanted, timeout=timeout)
    op = ev.json()
    assert ev.id == str(op["seq"]), ev
    return op


def ops_now(stream, wait=0.3):
    """The operation events that arrive within `wait` s (to show that nothing old is replayed)."""
    out = []
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            ev = stream.next(timeout=max(0.001, deadline - time.monotonic()))
        except SSETimeout:
            break
        if ev.event == "operation":
            out.append(ev.json())
    return out


class Edge:
    """One edge client (control calls with an optional admin token; data under its prefix)."""

    def __init__(self, base, project, cid=None, headers=None, create=True, **settings):
        self.base, self.project, self.headers = base, project, headers or {}
        self.id = cid or _uid("c")
        self.url = f"{base}/clients/{self.id}"
        self.data = f"{self.url}/v1/projects/{project}/databases/{DB}/documents"
        if create:
            ok(requests.put(self.url, json={"project": project, **settings}, headers=self.headers, timeout=WAIT))

    def call(self, verb, **params):
        return ok(requests.post(f"{self.url}:{verb}", params=params, headers=self.headers, timeout=30))

    def network(self, **body):
        return ok(requests.put(self.url + "/network", json=body, headers=self.headers, timeout=WAIT))

    def state(self):
        return ok(requests.get(self.url, headers=self.headers, timeout=WAIT))

    def pending(self):
        return ok(requests.get(self.url + "/pendingWrites", headers=self.headers, timeout=WAIT))["writes"]

    def patch(self, path, flds, **params):
        body = {"fields": {k: {"stringValue": v} for k, v in flds.items()}}
        return requests.patch(f"{self.data}/{path}", params=params, json=body, timeout=30)

    def get(self, path, **params):
        return requests.get(f"{self.data}/{path}", params=params, timeout=30)


def tree_url(base, path, ns):
    return f"{base}/{path}.json?ns={ns}"


def tree_put(base, ns, path, value):
    r = requests.put(tree_url(base, path, ns), data=json.dumps(value), timeout=WAIT)
    assert r.status_code == 200, r.text
    return r.json()


def tree_get(base, ns, path, **params):
    r = requests.get(tree_url(base, path, ns), params=params, timeout=WAIT)
    assert r.status_code == 200, r.text
    return r.json()


def export(base, clients=False, **kw):
    if clients:
        r = requests.post(base + "/emulator/v1/export", json={"clients": True}, timeout=60, **kw)
    else:
        r = requests.get(base + "/emulator/v1/export", timeout=60, **kw)
    archive = ok(r)
    assert archive["firegate"] == "archive" and archive["version"] == 1, archive
    assert parse_ts(archive["exportedAt"])
    return archive


def comparable(archive):
    """An archive without its export time."""
    return {k: v for k, v in archive.items() if k != "exportedAt"}


def import_bytes(base, body, **kw):
    return requests.post(base + "/emulator/v1/import", data=body, timeout=60,
                         headers={"Content-Type": "application/octet-stream"}, **kw)


def reset(base, **kw):
    assert ok(requests.post(base + "/emulator/v1/reset", timeout=30, **kw)) == {}


def seed(base, project, namespace, n_docs=3):
    """Documents (a subcollection, several value types), a tree with priorities; returns Fs."""
    fs = Fs(base, project)
    for i in range(n_docs):
        fs.set(f"cities/c{i}", {"name": f"city {i}", "rank": i, "tags": ["a", "b"], "geo": {"x": 1.5}})
    fs.set("cities/c0/streets/main", {"len": 3})
    tree_put(base, namespace, "rooms", {"r1": {"title": "one", ".priority": 2},
                                        "r2": {"title": "two", ".priority": "b"}, ".priority": 1.5})
    return fs


# --------------------------------------------------------------------------------------------
# /metrics
# --------------------------------------------------------------------------------------------

def test_metrics_count_requests_latency_commits_and_clients(ops_base, project, namespace):
    m0 = scrape(ops_base)
    fs = Fs(ops_base, project)
    fs.set("things/a", {"v": 1})                          # documents PATCH 200, one commit
    ok(fs.commit([w_update(fs.name("things/b"), {"v": 2}), w_update(fs.name("things/c"), {"v": 3})]))
    assert_error(fs.get("things/missing"), 404, "NOT_FOUND")
    tree_put(ops_base, namespace, "x", 1)
    tree_put(ops_base, namespace, "y", 2)
    r = requests.put(tree_url(ops_base, "z", namespace), data="{not json", timeout=WAIT)
    assert r.status_code == 400, r.text
    m1 = scrape(ops_base)

    def delta(name, **labels):
        return metric(m1, name, **labels) - metric(m0, name, **labels)

    req = "firegate_requests_total"
    assert delta(req, surface="documents", method="PATCH", status="200") == 1
    assert delta(req, surface="documents", method="POST", status="200") == 1
    assert delta(req, surface="documents", method="GET", status="404") == 1
    assert delta(req, surface="tree", method="PUT", status="200") == 2
    assert delta(req, surface="tree", method="PUT", status="400") == 1
    assert delta(req, surface="operations", method="GET", status="200") == 1  # the first scrape
    hist = "firegate_request_duration_seconds"
    assert delta(hist + "_count", surface="documents") == 3
    assert delta(hist + "_count", surface="tree") == 3
    assert delta(hist + "_sum", surface="tree") > 0
    inf = metric(m1, hist + "_bucket", surface="tree", le="+Inf")
    assert inf == metric(m1, hist + "_count", surface="tree") > 0
    assert delta("firegate_commits_total", surface="documents") == 2
    assert delta("firegate_commits_total", surface="tree") == 2
    assert delta("firegate_documents") == 3

    # Clients by network state.
    online0 = metric(m1, "firegate_clients", state="online")
    offline0 = metric(m1, "firegate_clients", state="offline")
    client = Edge(ops_base, project)
    m2 = scrape(ops_base)
    assert metric(m2, "firegate_clients", state="online") == online0 + 1
    assert metric(m2, "firegate_clients", state="offline") == offline0
    assert metric(m2, req, surface="clients", method="PUT", status="200") == \
        metric(m1, req, surface="clients", method="PUT", status="200") + 1
    client.call("disableNetwork")
    m3 = scrape(ops_base)
    assert metric(m3, "firegate_clients", state="online") == online0
    assert metric(m3, "firegate_clients", state="offline") == offline0 + 1
    ok(requests.delete(client.url, timeout=WAIT))
    m4 = scrape(ops_base)
    assert metric(m4, "firegate_clients", state="online") == online0
    assert metric(m4, "firegate_clients", state="offline") == offline0


def test_metrics_sse_streams_gauge_follows_open_streams(ops_base, project, namespace):
    def streams(surface):
        return metric(scrape(ops_base), "firegate_sse_streams", surface=surface)

    surfaces = ("documents", "tree", "clients", "operations")
    before = {s: streams(s) for s in surfaces}
    fs = Fs(ops_base, project)
    fs.set("rooms/a", {"v": 1})
    client = Edge(ops_base, project)
    doc = SSEStream(fs.doc_url("rooms/a") + ":listen")
    tree = TreeStream(f"{ops_base}/rooms.json", params={"ns": namespace})
    edge = SSEStream(f"{client.data}/rooms/a:listen")
    ops = events(ops_base)
    try:
        assert doc.ok and edge.ok and ops.ok and tree.status_code == 200
        assert doc.next(timeout=WAIT).event == "snapshot"
        assert tree.next(timeout=WAIT)[0] == "put"
        assert edge.next(timeout=WAIT).event == "snapshot"
        for s in surfaces:
            wait_for(lambda: streams(s) == before[s] + 1, f"firegate_sse_streams{{surface={s}}} to go up by 1")
    finally:
        doc.close()
        tree.close()
        edge.close()
        ops.close()
    # Each stream's end is noticed when its client hangs up, not at the server's next write.
    def all_down():
        now = {s: streams(s) for s in surfaces}
        return now if now == before else None

    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline and not all_down():
        time.sleep(0.05)
    assert {s: streams(s) for s in surfaces} == before, "firegate_sse_streams after the streams closed"


# --------------------------------------------------------------------------------------------
# GET /emulator/v1/events
# --------------------------------------------------------------------------------------------

def test_events_live_commit_tree_network_and_write_outcomes(base_url, project, namespace):
    fs = Fs(base_url, project)
    with events(base_url) as s:
        assert s.ok, s.body
        assert s.headers["Content-Type"].startswith("text/event-stream")

        doc = fs.set("cities/SF", {"name": "San Francisco"})
        op = next_op(s, lambda o: o["kind"] == "commit" and o.get("project") == project)
        assert op["database"] == DB and op["changedDocuments"] == 1 and op["documents"] == ["cities/SF"], op
        assert op["commitTime"] == doc["updateTime"], (op, doc)
        parse_ts(op["time"])
        last = op["seq"]

        tree_put(base_url, namespace, "rooms/a", {"t": 1})
        op = next_op(s, lambda o: o["kind"] == "treeWrite" and o.get("namespace") == namespace)
        assert (op["path"], op["op"]) == ("/rooms/a", "set"), op
        assert op["seq"] > last
        last = op["seq"]

        client = Edge(base_url, project)
        op = next_op(s, lambda o: o.get("client") == client.id and o["kind"] == "client")
        assert op["action"] == "created", op
        client.call("disableNetwork")
        op = next_op(s, lambda o: o.get("client") == client.id and o["kind"] == "network")
        assert op["online"] is False and op["seq"] > last, op
        last = op["seq"]

        # A write queued offline, acknowledged once the client is back online.
        r = client.patch("cities/LA", {"name": "Los Angeles"})
        assert r.status_code == 200 and r.headers["Firegate-Write-State"] == "pending", r.text
        write_id = r.headers["Firegate-Write-Id"]
        client.call("enableNetwork")
        op = next_op(s, lambda o: o.get("client") == client.id and o["kind"] == "network")
        assert op["online"] is True and op["seq"] > last, op
        last = op["seq"]
        assert client.call("waitForPendingWrites", timeoutMs=10000) == {}
        op = next_op(s, lambda o: o.get("client") == client.id and o["kind"] in ("writeAcknowledged", "writeRejected"))
        assert op["kind"] == "writeAcknowledged" and op["writeId"] == write_id and op["seq"] > last, op
        last = op["seq"]

        # A write the backend refuses.
        client.network(rejectWrites={"count": 1, "status": "PERMISSION_DENIED"})
        r = client.patch("cities/NY", {"name": "New York"}, waitFor="ack")
        assert r.status_code == 403, r.text
        rejected_id = r.headers["Firegate-Write-Id"]
        op = next_op(s, lambda o: o.get("client") == client.id and o["kind"] in ("writeAcknowledged", "writeRejected"))
        assert op["kind"] == "writeRejected", op
        assert op["writeId"] == rejected_id and op["status"] == "PERMISSION_DENIED" and op["message"], op
        assert op["seq"] > last
        assert_error(fs.get("cities/NY"), 404, "NOT_FOUND")

        # A tree write through the client: its id is the one pendingWrites gives it (t<n>).
        r = requests.put(f"{base_url}/clients/{client.id}/rooms/b.json", json={"t": 2}, timeout=10)
        assert r.status_code == 200, r.text
        op = next_op(s, lambda o: o.get("client") == client.id and o["kind"] in ("writeAcknowledged", "writeRejected"))
        assert op["kind"] == "writeAcknowledged" and op["writeId"].startswith("t") and op["writeId"][1:].isdigit(), op


def test_events_backlog_and_last_event_id_resume(ops_base, namespace):
    reset(ops_base)  # nothing left behind by earlier tests writes to the log from here on
    for i in range(3):
        tree_put(ops_base, namespace, f"w{i}", i)

    with events(ops_base, backlog=2) as s:
        assert s.ok, s.body
        replay = [next_op(s), next_op(s)]
        assert [(o["kind"], o["path"]) for o in replay] == [("treeWrite", "/w1"), ("treeWrite", "/w2")], replay
        w1 = replay[0]["seq"]
        assert replay[1]["seq"] == w1 + 1
        tree_put(ops_base, namespace, "w3", 3)
        live = next_op(s)
        assert (live["path"], live["seq"]) == ("/w3", w1 + 2), live

    # Without backlog: live events only.
    with events(ops_base) as s:
        assert ops_now(s) == []
        tree_put(ops_base, namespace, "w4", 4)
        assert next_op(s)["path"] == "/w4"

    # A backlog larger than the log: everything kept, oldest first.
    with events(ops_base, backlog=100000) as s:
        before, last = s.read_until(lambda e: e.event == "operation" and e.json().get("path") == "/w4", timeout=WAIT)
        replay = [e.json() for e in before if e.event == "operation"] + [last.json()]
        kinds = [(o["kind"], o.get("path")) for o in replay]
        assert kinds[-5:] == [("treeWrite", f"/w{i}") for i in range(5)], kinds
        assert [o["seq"] for o in replay] == sorted(o["seq"] for o in replay)

    # Resume after the event of w1: w2, w3, w4, then live ones.
    with events(ops_base, headers={"Last-Event-ID": str(w1)}) as s:
        resumed = [next_op(s) for _ in range(3)]
        assert [o["path"] for o in resumed] == ["/w2", "/w3", "/w4"], resumed
        assert [o["seq"] for o in resumed] == [w1 + 1, w1 + 2, w1 + 3]
        assert ops_now(s) == []
        tree_put(ops_base, namespace, "w5", 5)
        assert next_op(s) | {"time": None} == {"seq": w1 + 4, "time": None, "kind": "treeWrite",
                                               "namespace": namespace, "path": "/w5", "op": "set"}

    # Resuming from the latest id sends nothing old.
    with events(ops_base, headers={"Last-Event-ID": str(w1 + 4)}) as s:
        assert s.ok and ops_now(s) == []


@pytest.mark.parametrize("params, headers", [
    ({"backlog": "-1"}, {}),
    ({"backlog": "lots"}, {}),
    ({}, {"Last-Event-ID": "abc"}),
    ({}, {"Last-Event-ID": "-3"}),
])
def test_events_bad_parameters(base_url, params, headers):
    r = requests.get(base_url + "/emulator/v1/events", params=params, headers=headers, timeout=WAIT)
    assert_error(r, 400, "INVALID_ARGUMENT")


# --------------------------------------------------------------------------------------------
# POST /emulator/v1/reset
# --------------------------------------------------------------------------------------------

def test_reset_ends_open_streams_and_clears_everything(ops_base, project, namespace):
    fs = Fs(ops_base, project)
    fs.set("rooms/a", {"v": 1})
    tree_put(ops_base, namespace, "rooms/a", {"v": 1})
    client = Edge(ops_base, project)
    doc = SSEStream(fs.doc_url("rooms/a") + ":listen")
    tree = TreeStream(f"{ops_base}/rooms.json", params={"ns": namespace})
    edge = SSEStream(f"{client.data}/rooms/a:listen")
    try:
        assert doc.ok and edge.ok and tree.status_code == 200
        first = doc.next(timeout=WAIT)
        assert first.event == "snapshot" and first.json()["exists"] is True, first
        assert tree.next(timeout=WAIT) == ("put", {"path": "/", "data": {"a": {"v": 1}}})
        first = edge.next(timeout=WAIT)
        assert first.event == "snapshot" and first.json()["exists"] is True, first

        reset(ops_base)

        for stream in (doc, edge):
            _, end = stream.read_until(lambda e: e.event == "error", timeout=WAIT)
            err = end.json()["error"]
            assert (err["code"], err["status"]) == (409, "ABORTED") and err["message"], end
            assert stream.read_to_end(timeout=WAIT) == []  # nothing after the error but the end
            assert stream.ended
        seen = []
        while True:
            event, data = tree.next(timeout=WAIT)
            seen.append((event, data))
            if event == "cancel":
                break
            assert event == "put" and data == {"path": "/", "data": None}, seen
        assert isinstance(seen[-1][1], str) and seen[-1][1], seen
        assert tree.closed.wait(WAIT), "the tree stream did not end after cancel"
    finally:
        doc.close()
        tree.close()
        edge.close()

    assert_error(fs.get("rooms/a"), 404, "NOT_FOUND")
    assert tree_get(ops_base, namespace, "rooms") is None
    ids = [c["id"] for c in ok(requests.get(ops_base + "/clients", timeout=WAIT))["clients"]]
    assert client.id not in ids
    assert ok(requests.get(ops_base + "/emulator/v1/databases", timeout=WAIT)) == {"databases": []}
    assert ok(requests.get(ops_base + "/emulator/v1/namespaces", timeout=WAIT)) == {"namespaces": []}
    archive = export(ops_base, clients=True)
    assert (archive["documents"], archive["tree"], archive["clients"]) == ([], [], [])
    samples = scrape(ops_base)
    assert metric(samples, "firegate_documents") == 0
    assert metric(samples, "firegate_clients", state="online") == 0


# --------------------------------------------------------------------------------------------
# Export and import
# --------------------------------------------------------------------------------------------

def test_export_reset_import_round_trip(ops_base, project, namespace):
    reset(ops_base)
    fs = seed(ops_base, project, namespace)
    other = Fs(ops_base, project, database="db2")
    other.set("notes/n1", {"text": "in a named database"})
    docs_before = {p: fs.get_ok(p) for p in ("cities/c0", "cities/c1", "cities/c2", "cities/c0/streets/main")}
    tree_before = tree_get(ops_base, namespace, "", format="export")
    assert tree_before["rooms"][".priority"] == 1.5

    client = Edge(ops_base, project, platform="android", cacheSizeBytes=20_000_000)
    ok(client.get("cities/c1"))                        # cached from the server
    client.call("disableNetwork")
    r = client.patch("cities/queued", {"name": "queued offline"})
    assert r.status_code == 200 and r.headers["Firegate-Write-State"] == "pending", r.text
    state_before = client.state()
    pending_before = client.pending()
    assert len(pending_before) == 1

    archive = export(ops_base, clients=True)
    assert [c["id"] for c in archive["clients"]] == [client.id]
    assert "clients" not in export(ops_base), "GET /export leaves clients out"
    raw = json.dumps(archive).encode()

    reset(ops_base)
    assert export(ops_base, clients=True)["documents"] == []
    assert_error(fs.get("cities/c0"), 404, "NOT_FOUND")

    answer = ok(import_bytes(ops_base, raw))
    assert answer == {"documents": 5, "namespaces": 1, "clients": 1}, answer
    assert comparable(export(ops_base, clients=True)) == comparable(archive)

    # Documents keep their create and update times; the tree keeps its priorities.
    for path, doc in docs_before.items():
        assert fs.get_ok(path) == doc
    assert other.get_ok("notes/n1")["fields"] == {"text": {"stringValue": "in a named database"}}
    assert tree_get(ops_base, namespace, "", format="export") == tree_before

    # The client: settings, the network switch (offline), cache and queue survive.
    state = client.state()
    assert state["settings"] == state_before["settings"]
    assert state["settings"]["platform"] == "android" and state["settings"]["cacheSizeBytes"] == 20_000_000
    assert state["network"]["online"] is False
    assert state["pendingWrites"] == 1
    assert client.pending() == pending_before
    cached = client.get("cities/c1", source="cache")
    assert cached.status_code == 200 and cached.json() == docs_before["cities/c1"], cached.text
    assert cached.headers["Firegate-From-Cache"] == "true"
    queued = client.get("cities/queued", source="cache")
    assert queued.status_code == 200 and queued.headers["Firegate-Has-Pending-Writes"] == "true", queued.text
    assert_error(fs.get("cities/queued"), 404, "NOT_FOUND")

    # Back online, the restored queue is sent to the backend.
    client.call("enableNetwork")
    assert client.call("waitForPendingWrites", timeoutMs=10000) == {}
    assert fs.get_ok("cities/queued")["fields"] == {"name": {"stringValue": "queued offline"}}
    assert client.state()["pendingWrites"] == 0


def test_import_without_clients_leaves_clients_alone(ops_base, project, namespace):
    reset(ops_base)
    seed(ops_base, project, namespace, n_docs=1)
    archive = export(ops_base)                        # no clients member
    client = Edge(ops_base, project)
    client.call("disableNetwork")
    assert ok(import_bytes(ops_base, json.dumps(archive).encode()))["clients"] == 0
    assert client.state()["network"]["online"] is False


def test_export_gzip_large_archive_and_import_of_the_gzip_bytes(ops_base, project, namespace):
    reset(ops_base)
    fs = Fs(ops_base, project)
    ok(fs.commit([w_update(fs.name(f"big/d{i:03}"), {"text": "x" * 200, "i": i}) for i in range(300)]))
    tree_put(ops_base, namespace, "big", {f"k{i}": {"v": "y" * 50, ".priority": i} for i in range(200)})

    r = requests.get(ops_base + "/emulator/v1/export", headers={"Accept-Encoding": "gzip"}, timeout=60)
    assert r.status_code == 200, r.text
    assert r.headers.get("Content-Encoding") == "gzip", r.headers
    archive = r.json()                                # decoded by requests
    assert archive["firegate"] == "archive" and len(archive["documents"][0]["documents"]) == 300

    raw = requests.get(ops_base + "/emulator/v1/export", headers={"Accept-Encoding": "gzip"},
                       stream=True, timeout=60)
    assert raw.headers.get("Content-Encoding") == "gzip"
    compressed = raw.raw.read(decode_content=False)
    assert compressed[:2] == b"\x1f\x8b"
    plain = gzip.decompress(compressed)
    assert len(compressed) < len(plain) / 4
    assert comparable(json.loads(plain)) == comparable(archive)

    # Not gzip when the client does not accept it.
    r = requests.get(ops_base + "/emulator/v1/export", headers={"Accept-Encoding": "identity"}, timeout=60)
    assert "Content-Encoding" not in r.headers and comparable(r.json()) == comparable(archive)

    reset(ops_base)
    answer = ok(import_bytes(ops_base, compressed))
    assert answer == {"documents": 300, "namespaces": 1, "clients": 0}, answer
    assert comparable(export(ops_base)) == comparable(archive)
    assert tree_get(ops_base, namespace, "big/k7", format="export") == {"v": "y" * 50, ".priority": 7}


def _damaged(archive):
    """(id, body bytes, words the error message must contain) for each kind of damage."""
    text = json.dumps(archive).encode()
    packed = gzip.compress(text)
    doc_db = archive["documents"][0]

    def variant(**changes):
        return json.dumps({**archive, **changes}).encode()

    outside = dict(doc_db, documents=doc_db["documents"] + [dict(doc_db["documents"][0], name="projects/elsewhere/databases/(default)/documents/c/d")])
    collection = dict(doc_db, documents=[dict(doc_db["documents"][0], name=doc_db["documents"][0]["name"].rsplit("/", 1)[0])])
    return [
        ("truncated-json", text[: len(text) // 2], ["JSON"]),
        ("truncated-gzip", packed[: len(packed) // 2], ["gzip"]),
        ("not-json", b"\x00\x01 hello", ["JSON"]),
        ("empty", b"", ["JSON"]),
        ("foreign-json", json.dumps({"rooms": {"a": 1}}).encode(), ["Firegate archive"]),
        ("foreign-array", b"[1, 2, 3]", ["Firegate archive"]),
        ("wrong-version", variant(version=2), ["version"]),
        ("document-outside-database", variant(documents=[outside]), ["name"]),
        ("collection-not-document", variant(documents=[collection]), ["name"]),
        ("bad-namespace", variant(tree=archive["tree"] + [{"namespace": "bad/ns", "value": 1}]), ["namespace"]),
        ("documents-not-array", variant(documents={"a": 1}), ["documents"]),
    ]


DAMAGE = ("truncated-json", "truncated-gzip", "not-json", "empty", "foreign-json", "foreign-array", "wrong-version",
          "document-outside-database", "collection-not-document", "bad-namespace", "documents-not-array")


@pytest.mark.parametrize("case", DAMAGE)
def test_damaged_archive_is_refused_and_changes_nothing(ops_base, project, namespace, case):
    reset(ops_base)
    seed(ops_base, project, namespace, n_docs=2)
    client = Edge(ops_base, project)
    client.call("disableNetwork")
    assert client.patch("cities/pending", {"v": "1"}).status_code == 200
    before = export(ops_base, clients=True)
    damaged = {c: (b, w) for c, b, w in _damaged(before)}
    assert set(damaged) == set(DAMAGE)
    body, words = damaged[case]

    err = assert_error(import_bytes(ops_base, body), 400, "INVALID_ARGUMENT")
    for word in words:
        assert word.lower() in err["message"].lower(), err
    after = export(ops_base, clients=True)
    assert comparable(after) == comparable(before)
    assert client.state()["network"]["online"] is False and len(client.pending()) == 1


# --------------------------------------------------------------------------------------------
# The clock
# --------------------------------------------------------------------------------------------

def _clock(base, body=None):
    if body is None:
        reading = ok(requests.get(base + "/emulator/v1/clock", timeout=WAIT))
    else:
        reading = ok(requests.post(base + "/emulator/v1/clock", json=body, timeout=WAIT))
    assert set(reading) == {"time", "epochMs", "frozen"}, reading
    secs, nanos = parse_ts(reading["time"])
    assert reading["epochMs"] == secs * 1000 + nanos // 1_000_000, reading
    assert isinstance(reading["frozen"], bool)
    return reading


def _near_wall(reading, offset_ms=0, slack_ms=60_000):
    return abs(reading["epochMs"] - (time.time() * 1000 + offset_ms)) < slack_ms


def _epoch_ms(rfc3339):
    secs, nanos = parse_ts(rfc3339)
    return secs * 1000 + nanos // 1_000_000


@pytest.fixture
def clock_base():
    """A server of the test's own: server timestamps never go back, so a clock set ahead
    leaves every later server timestamp of that server at or after it."""
    proc, base = start_server()
    yield base
    stop_server(proc)


@pytest.fixture(scope="module")
def clock_sandbox():
    """A server whose clock the bad-body tests set and release."""
    proc, base = start_server()
    yield base
    stop_server(proc)


def test_clock_freezes_server_timestamps_advances_and_returns_to_wall_time(clock_base, project, namespace):
    reading = _clock(clock_base)
    assert reading["frozen"] is False and _near_wall(reading), reading

    frozen_at = "2031-02-03T04:05:06.123456Z"
    with events(clock_base) as s:
        reading = _clock(clock_base, {"time": frozen_at})
        assert reading == {"time": frozen_at, "epochMs": _epoch_ms(frozen_at), "frozen": True}
        op = next_op(s, lambda o: o["kind"] == "clock")
        assert op["frozen"] is True and op["time"] == frozen_at, op
    assert _clock(clock_base) == reading                # it stands still

    fs = Fs(clock_base, project)
    result = ok(fs.commit([w_update(fs.name("t/a"), {"v": 1}, transforms=[t_server_time("at")])]))
    assert result["commitTime"] == frozen_at
    assert result["writeResults"][0]["transformResults"] == [{"timestampValue": frozen_at}]
    assert fs.get_ok("t/a")["fields"]["at"] == {"timestampValue": frozen_at}
    r = requests.put(tree_url(clock_base, "seen", namespace), json={".sv": "timestamp"}, timeout=WAIT)
    assert r.status_code == 200 and r.json() == _epoch_ms(frozen_at), r.text
    assert tree_get(clock_base, namespace, "seen") == _epoch_ms(frozen_at)

    advanced = "2031-02-03T04:05:07.623456Z"
    reading = _clock(clock_base, {"advanceMs": 1500})
    assert reading == {"time": advanced, "epochMs": _epoch_ms(frozen_at) + 1500, "frozen": True}
    assert _clock(clock_base) == reading
    r = requests.put(tree_url(clock_base, "later", namespace), json={".sv": "timestamp"}, timeout=WAIT)
    assert r.json() == _epoch_ms(advanced), r.text

    reading = _clock(clock_base, {"time": None})
    assert reading["frozen"] is False and _near_wall(reading), reading
    # Unfrozen, advancing moves the clock ahead of the wall clock, and null brings it back.
    reading = _clock(clock_base, {"advanceMs": 3_600_000})
    assert reading["frozen"] is False and _near_wall(reading, offset_ms=3_600_000), reading
    reading = _clock(clock_base, {"time": None})
    assert reading["frozen"] is False and _near_wall(reading), reading


@pytest.mark.parametrize("body", [
    b"{}",
    b'{"time": "next tuesday"}',
    b'{"time": 5}',
    b'{"time": "1969-12-31T23:59:59Z"}',
    b'{"advanceMs": -1}',
    b'{"advanceMs": 1.5}',
    b'{"advanceMs": true}',
    b'{"time": "2030-01-01T00:00:00Z", "advanceMs": 1}',
    b"[1]",
    b"not json",
])
def test_clock_bad_bodies_are_refused(clock_sandbox, body):
    before = _clock(clock_sandbox, {"time": "2032-01-01T00:00:00Z"})
    try:
        r = requests.post(clock_sandbox + "/emulator/v1/clock", data=body,
                          headers={"Content-Type": "application/json"}, timeout=WAIT)
        assert_error(r, 400, "INVALID_ARGUMENT")
        assert _clock(clock_sandbox) == before
    finally:
        assert _clock(clock_sandbox, {"time": None})["frozen"] is False


# --------------------------------------------------------------------------------------------
# What exists
# --------------------------------------------------------------------------------------------

def test_databases_and_namespaces_list_what_exists(base_url, project, namespace):
    def databases():
        listed = ok(requests.get(base_url + "/emulator/v1/databases", timeout=WAIT))["databases"]
        return sorted((d["database"], d["documents"]) for d in listed if d["project"] == project)

    def namespaces():
        listed = ok(requests.get(base_url + "/emulator/v1/namespaces", timeout=WAIT))["namespaces"]
        assert listed == sorted(listed), listed
        return namespace in listed

    assert databases() == [] and not namespaces()
    fs, other = Fs(base_url, project), Fs(base_url, project, database="db2")
    fs.set("a/1", {"v": 1})
    fs.set("a/2", {"v": 2})
    other.set("b/1", {"v": 1})
    tree_put(base_url, namespace, "x", 1)
    assert databases() == [(DB, 2), ("db2", 1)]
    assert namespaces()

    ok(other.delete("b/1"))
    assert databases() == [(DB, 2)]
    ok(requests.delete(tree_url(base_url, "", namespace), timeout=WAIT))
    assert not namespaces()


# --------------------------------------------------------------------------------------------
# --admin-token
# --------------------------------------------------------------------------------------------

def test_admin_token_guards_operations_and_client_control_only(project, namespace):
    token = "T-" + uuid.uuid4().hex
    proc, base = start_server("--admin-token", token)
    bearer = {"Authorization": f"Bearer {token}"}
    try:
        cid = _uid("adm")
        client = f"{base}/clients/{cid}"
        guarded = [
            ("GET", "/emulator/v1/clock", None),
            ("GET", "/emulator/v1/databases", None),
            ("GET", "/emulator/v1/namespaces", None),
            ("GET", "/emulator/v1/export", None),
            ("POST", "/emulator/v1/export", {"clients": True}),
            ("GET", "/clients", None),
            ("PUT", f"/clients/{cid}", {"project": project}),
            ("GET", f"/clients/{cid}", None),
            ("PUT", f"/clients/{cid}/network", {"latencyMs": 0}),
            ("GET", f"/clients/{cid}/pendingWrites", None),
            ("POST", f"/clients/{cid}:disableNetwork", None),
            ("POST", f"/clients/{cid}:enableNetwork", None),
        ]
        for method, path, body in guarded:
            for headers, params in (({}, {}), ({"Authorization": "Bearer wrong"}, {}), ({}, {"admin_token": "wrong"})):
                r = requests.request(method, base + path, json=body, headers=headers, params=params, timeout=WAIT)
                err = assert_error(r, 401, "UNAUTHENTICATED")
                assert "token" in err["message"].lower(), err
            r = requests.request(method, base + path, json=body, headers=bearer, timeout=WAIT)
            assert r.status_code == 200, (method, path, r.text)
            r = requests.request(method, base + path, json=body, params={"admin_token": token}, timeout=WAIT)
            assert r.status_code == 200, (method, path, r.text)
        assert_error(requests.post(base + "/emulator/v1/reset", timeout=WAIT), 401, "UNAUTHENTICATED")
        assert_error(requests.post(base + "/emulator/v1/import", data=b"{}", timeout=WAIT), 401, "UNAUTHENTICATED")

        # The event stream: refused without the token, open with it in the query (EventSource).
        refused = events(base)
        assert not refused.ok and refused.status_code == 401, refused.body
        assert refused.error_json()["error"]["status"] == "UNAUTHENTICATED"
        with events(base, admin_token=token) as s:
            assert s.ok, s.body
            tree_put(base, namespace, "x", 1)
            assert next_op(s, lambda o: o["kind"] == "treeWrite")["namespace"] == namespace

        # Data routes, health and metrics never need it.
        assert requests.get(base + "/healthz", timeout=WAIT).json() == {"status": "ok"}
        assert requests.get(base + "/metrics", timeout=WAIT).status_code == 200
        fs = Fs(base, project)
        fs.set("a/b", {"v": 1})
        assert fs.get_ok("a/b")["fields"] == {"v": {"integerValue": "1"}}
        assert tree_get(base, namespace, "x") == 1
        data = f"{client}/v1/projects/{project}/databases/{DB}/documents"
        r = requests.patch(f"{data}/a/c", json={"fields": {"v": {"stringValue": "edge"}}}, params={"waitFor": "ack"}, timeout=30)
        assert r.status_code == 200, r.text
        r = requests.get(f"{data}/a/b", timeout=30)
        assert r.status_code == 200 and r.json()["fields"] == {"v": {"integerValue": "1"}}, r.text
        with SSEStream(f"{data}/a/b:listen") as listen:
            assert listen.ok and listen.next(timeout=WAIT).event == "snapshot"
        assert fs.get_ok("a/c")["fields"] == {"v": {"stringValue": "edge"}}
        reset(base, headers=bearer)
        assert_error(fs.get("a/b"), 404, "NOT_FOUND")
    finally:
        stop_server(proc)


# --------------------------------------------------------------------------------------------
# --tls-cert / --tls-key
# --------------------------------------------------------------------------------------------

def test_tls_round_trip(tmp_path, project):
    if shutil.which("openssl") is None:
        _unavailable("the openssl command line tool is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        capture_output=True, timeout=60)
    assert made.returncode == 0, made.stderr.decode()

    proc, base = start_server("--tls-cert", cert, "--tls-key", key)
    try:
        assert base.startswith("https://127.0.0.1:")
        r = requests.get(base + "/healthz", verify=str(cert), timeout=WAIT)
        assert r.status_code == 200 and r.json() == {"status": "ok"}
        session = requests.Session()
        session.trust_env = False  # REQUESTS_CA_BUNDLE would otherwise win over session.verify
        session.verify = str(cert)
        fs = Fs(base, project, session=session)
        written = fs.set("secure/doc", {"over": "tls"})
        assert fs.get_ok("secure/doc") == written
        with SSEStream(fs.doc_url("secure/doc") + ":listen", session=session) as s:
            assert s.ok and s.next(timeout=WAIT).json()["document"] == written
        # The certificate is checked (it is not in the default trust store) ...
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(base + "/healthz", timeout=WAIT)
        # ... and plain HTTP on that port gets no answer.
        with pytest.raises(requests.exceptions.ConnectionError):
            requests.get(base.replace("https://", "http://") + "/healthz", timeout=WAIT)
        assert requests.get(base + "/healthz", verify=str(cert), timeout=WAIT).status_code == 200

        # gRPC under TLS: ALPN h2 on the same port, the same document.
        import grpc
        from google.cloud.firestore_v1.types import document as doc_types
        from google.cloud.firestore_v1.types import firestore as fs_types
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        with grpc.secure_channel(base.split("://", 1)[1], credentials) as channel:
            get = channel.unary_unary("/google.firestore.v1.Firestore/GetDocument",
                                      request_serializer=fs_types.GetDocumentRequest.serialize,
                                      response_deserializer=doc_types.Document.deserialize)
            got = get(fs_types.GetDocumentRequest(name=written["name"]), timeout=WAIT)
            assert got.fields["over"].string_value == "tls"

        # The Realtime Database's sockets under TLS: wss on the same port.
        import ssl
        from rtdb_socket import RealtimeSocket
        context = ssl.create_default_context(cafile=str(cert))
        sock = RealtimeSocket(base, "secure-ns", ssl=context)
        assert sock.put("/over", "wss") == {"s": "ok", "d": ""}
        assert sock.request("g", {"p": "/over"}) == {"s": "ok", "d": "wss"}
        sock.close()
    finally:
        stop_server(proc)


# --------------------------------------------------------------------------------------------
# --import and --export-on-exit
# --------------------------------------------------------------------------------------------

def test_export_on_exit_then_import_at_start(tmp_path, project, namespace):
    path = tmp_path / "exit-archive.json"
    proc, base = start_server("--export-on-exit", path)
    try:
        fs = seed(base, project, namespace, n_docs=2)
        doc = fs.get_ok("cities/c1")
        client = Edge(base, project, cid=_uid("exit"), platform="web")
        client.call("disableNetwork")
        assert client.patch("cities/later", {"v": "queued"}).status_code == 200
    finally:
        stop_server(proc)
    assert proc.returncode == 0, proc.stderr.read().decode()
    assert path.exists(), "no archive written on exit"
    archive = json.loads(path.read_bytes())
    assert archive["firegate"] == "archive" and archive["version"] == 1
    names = [d["name"] for db in archive["documents"] for d in db["documents"]]
    assert fs.name("cities/c1") in names and fs.name("cities/c0/streets/main") in names
    assert [t["namespace"] for t in archive["tree"]] == [namespace]
    assert archive["tree"][0]["value"]["rooms"][".priority"] == 1.5
    assert [c["id"] for c in archive["clients"]] == [client.id]

    proc, base = start_server("--import", path)
    try:
        fs2 = Fs(base, project)
        assert fs2.get_ok("cities/c1") == doc
        assert tree_get(base, namespace, "rooms", format="export")["r2"] == {"title": "two", ".priority": "b"}
        restored = Edge(base, project, cid=client.id, create=False)
        state = restored.state()
        assert state["settings"]["platform"] == "web" and state["network"]["online"] is False
        assert len(restored.pending()) == 1
        restored.call("enableNetwork")
        assert restored.call("waitForPendingWrites", timeoutMs=10000) == {}
        assert fs2.get_ok("cities/later")["fields"] == {"v": {"stringValue": "queued"}}
    finally:
        stop_server(proc)


def test_import_flag_with_a_damaged_archive_stops_the_server(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"firegate": "archive", "version": 99}')
    with pytest.raises(RuntimeError) as failed:
        proc, _ = start_server("--import", path)
        stop_server(proc)
    assert "version" in str(failed.value), failed.value


# --------------------------------------------------------------------------------------------
# --log-format json
# --------------------------------------------------------------------------------------------

def _json_log(project, namespace, level="debug"):
    """Runs a server logging JSON at `level`, makes known requests; returns (lines, requests made)."""
    proc, base = start_server("--log-level", level, "--log-format", "json")
    made = []
    try:
        fs = Fs(base, project)
        fs.set("logged/a", {"v": 1})
        made.append(("PATCH", f"/v1/projects/{project}/databases/{DB}/documents/logged/a", 200))
        assert_error(fs.get("logged/missing"), 404, "NOT_FOUND")
        made.append(("GET", f"/v1/projects/{project}/databases/{DB}/documents/logged/missing", 404))
        tree_put(base, namespace, "logged", {"v": 1})
        made.append(("PUT", "/logged.json", 200))
        assert requests.get(base + "/emulator/v1/clock", timeout=WAIT).status_code == 200
        made.append(("GET", "/emulator/v1/clock", 200))
    finally:
        stop_server(proc)
    text = proc.stderr.read().decode()
    lines = []
    for line in text.splitlines():
        if line.strip():
            entry = json.loads(line)                   # every line is one JSON object
            assert isinstance(entry, dict) and entry["level"] and entry["message"], line
            lines.append(entry)
    return lines, made


def test_json_log_has_one_line_per_request(project, namespace):
    lines, made = _json_log(project, namespace)
    requests_logged = [e for e in lines if e.get("message") == "request"]
    for method, path, status in made:
        matching = [e for e in requests_logged if e.get("path") == path and e.get("method") == method]
        assert len(matching) == 1, (method, path, requests_logged)
        entry = matching[0]
        assert int(entry["status"]) == status, entry
        assert float(entry["durationMs"]) >= 0, entry
        assert entry["level"] == "debug"  # shown with --log-level debug


def test_the_default_log_level_writes_no_line_per_request(project, namespace):
    # The server as users start it (and as bench/ measures it) does not pay for a request log.
    lines, made = _json_log(project, namespace, level="info")
    assert made and not [e for e in lines if e.get("message") == "request"], lines


def test_json_log_values_are_typed_for_log_collectors(project, namespace):
    """status and durationMs are JSON numbers, time is RFC 3339 with its zone."""
    lines, _ = _json_log(project, namespace)
    entry = next(e for e in lines if e.get("message") == "request")
    problems = []
    if not isinstance(entry["status"], int) or isinstance(entry["status"], bool):
        problems.append(f"status is not a JSON number: {entry['status']!r}")
    if not isinstance(entry["durationMs"], (int, float)) or isinstance(entry["durationMs"], bool):
        problems.append(f"durationMs is not a JSON number: {entry['durationMs']!r}")
    for e in lines:
        stamp = datetime.fromisoformat(e["time"].replace("Z", "+00:00"))
        if stamp.tzinfo is None:
            problems.append(f"time has no time zone (RFC 3339 needs Z or an offset): {e['time']!r}")
            break
        assert abs((datetime.now(timezone.utc) - stamp).total_seconds()) < 600, e
    assert not problems, "; ".join(problems)


def test_replicas_route_names_the_store(base_url):
    """GET /emulator/v1/replicas: on SQLite nothing is shared (an empty list); on PostgreSQL this
    replica is listed (what it owns: test_postgres_replicas.py)."""
    from conftest import postgres_store
    body = requests.get(f"{base_url}/emulator/v1/replicas", timeout=10).json()
    if postgres_store():
        assert body["store"] == "postgresql"
        assert body["self"] in {r["id"] for r in body["replicas"]}
        assert all(r["alive"] for r in body["replicas"] if r["id"] == body["self"])
    else:
        assert body == {"store": "sqlite", "replicas": []}
        assert "Firegate-Replica" not in requests.get(f"{base_url}/emulator/v1/replicas", timeout=10).headers

