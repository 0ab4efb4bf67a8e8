"""The edge-client seed scenario, end to end over plain HTTP + SSE.

Client A listens to a query with includeMetadataChanges, goes offline, writes, reads the document
back from its cache, comes back online and flushes its queue. No gates: the watch and the writes
run freely, so the test waits for states (and uses the client's sync marker, never sleeps) and
accepts exactly the event sequences the SDK can produce.
"""
import json
import threading
import uuid

import requests

from sse import SSEStream

TIMEOUT = 10


def _snapshots(events):
    out = []
    for e in events:
        assert e.event in ("snapshot", "sync"), f"unexpected event {e!r}"
        if e.event == "snapshot":
            out.append(e.json())
    return out


class Client:
    def __init__(self, base_url, project):
        self.base = base_url
        self.id = "A-" + uuid.uuid4().hex[:10]
        self.url = f"{base_url}/clients/{self.id}"
        self.project = project
        self.docs = f"{self.url}/v1/projects/{project}/databases/(default)/documents"
        self.backend = f"{base_url}/v1/projects/{project}/databases/(default)/documents"

    def name(self, path):
        return f"projects/{self.project}/databases/(default)/documents/{path}"

    def sync(self, stream):
        """Puts a marker into the client's streams; returns the snapshots before it."""
        token = uuid.uuid4().hex
        r = requests.post(f"{self.url}/gates:sync", json={"token": token}, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        before, _ = stream.read_until(lambda e: e.event == "sync" and json.loads(e.data).get("token") == token,
                                      timeout=TIMEOUT)
        return _snapshots(before)

    def wait_for(self, stream, predicate, what):
        """Reads snapshots until one satisfies `predicate`; returns all read, that one last."""
        seen = []
        while True:
            ev = stream.next(timeout=TIMEOUT)
            assert ev.event in ("snapshot", "sync"), f"unexpected event {ev!r} while waiting for {what}"
            if ev.event != "snapshot":
                continue
            snap = ev.json()
            seen.append(snap)
            if predicate(snap):
                return seen


def _md(snap):
    return snap["metadata"]["fromCache"], snap["metadata"]["hasPendingWrites"]


def _keys(snap):
    return [d["name"].rsplit("/documents/", 1)[1] for d in snap["documents"]]


def _changes(snap):
    return [(c["type"], c["document"]["name"].rsplit("/documents/", 1)[1],
             c["document"]["metadata"]["hasPendingWrites"]) for c in snap["changes"]]


def test_seed_offline_write_then_flush(base_url, project):
    a = Client(base_url, project)
    # A document already on the server, so the first snapshot has content.
    r = requests.post(f"{a.backend}:commit", json={"writes": [
        {"update": {"name": a.name("rooms/r0"), "fields": {"name": {"stringValue": "hall"}}}}]}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text

    r = requests.put(a.url, json={"project": project, "database": "(default)", "persistence": "persistent"},
                     timeout=TIMEOUT)
    assert r.status_code in (200, 201), r.text

    query = {"from": [{"collectionId": "rooms"}]}
    with SSEStream(f"{a.docs}:listen", params={"query": json.dumps(query), "includeMetadataChanges": "true"}) as s:
        assert s.ok, (s.status_code, s.body)

        # 1. Initial snapshot: an empty fresh cache raises nothing until the watch is CURRENT,
        #    so the first snapshot is the server's (fromCache false) with everything added.
        first = a.wait_for(s, lambda snap: True, "the first snapshot")
        assert len(first) == 1
        snap = first[0]
        assert _md(snap) == (False, False), snap["metadata"]
        assert _keys(snap) == ["rooms/r0"]
        assert _changes(snap) == [("added", "rooms/r0", False)]
        assert snap["changes"][0]["oldIndex"] == -1 and snap["changes"][0]["newIndex"] == 0
        assert snap["documents"][0]["fields"] == {"name": {"stringValue": "hall"}}
        assert a.sync(s) == []

        # 2. Offline: one metadata-only snapshot (fromCache flips, no document changes).
        r = requests.post(f"{a.url}:disableNetwork", json={}, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        snaps = a.sync(s)
        assert len(snaps) == 1, snaps
        assert _md(snaps[0]) == (True, False)
        assert snaps[0]["changes"] == []
        assert _keys(snaps[0]) == ["rooms/r0"]

        # 3. Offline write: applied locally at once, queued; the listener sees it pending.
        r = requests.post(f"{a.docs}:commit", json={"writes": [
            {"update": {"name": a.name("rooms/r1"), "fields": {"name": {"stringValue": "lobby"}}}}]},
            timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        write_id = r.headers.get("Firegate-Write-Id")
        assert write_id
        assert r.headers.get("Firegate-Write-State") == "pending"
        snaps = a.sync(s)
        assert len(snaps) == 1, snaps
        assert _md(snaps[0]) == (True, True)
        assert _changes(snaps[0]) == [("added", "rooms/r1", True)]
        assert snaps[0]["changes"][0]["newIndex"] == 1
        assert _keys(snaps[0]) == ["rooms/r0", "rooms/r1"]
        assert [d["metadata"]["hasPendingWrites"] for d in snaps[0]["documents"]] == [False, True]

        # 4. Read it back from the cache.
        r = requests.get(f"{a.docs}/rooms/r1", params={"source": "cache"}, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        assert r.headers.get("Firegate-From-Cache") == "true"
        assert r.headers.get("Firegate-Has-Pending-Writes") == "true"
        assert r.json()["fields"] == {"name": {"stringValue": "lobby"}}
        state = requests.get(a.url, timeout=TIMEOUT).json()
        assert state["pendingWrites"] == 1
        assert state["network"]["online"] is False
        # The server has not seen it.
        assert requests.get(f"{a.backend}/rooms/r1", timeout=TIMEOUT).status_code == 404
        assert a.sync(s) == []

        # 5. waitForPendingWrites does not complete while offline; it does once back online.
        done = {}

        def flush():
            done["r"] = requests.post(f"{a.url}:waitForPendingWrites", params={"timeoutMs": 15000}, json={},
                                      timeout=30)

        t = threading.Thread(target=flush, daemon=True)
        t.start()
        t.join(0.3)
        assert t.is_alive(), "waitForPendingWrites completed while the client was offline"
        r = requests.post(f"{a.url}:enableNetwork", json={}, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        t.join(20)
        assert not t.is_alive() and done["r"].status_code == 200, done.get("r") and done["r"].text
        w = requests.get(f"{a.url}/pendingWrites/{write_id}", timeout=TIMEOUT).json()
        assert w["state"] == "acknowledged", w

        # 6. Back online: the view turns fromCache false and the write is confirmed. The SDK
        #    raises either one snapshot (the watch caught up with the acknowledged write before
        #    the target was current again) or two (current first, still pending; then the write
        #    confirmed). Never a fromCache:true or a document added/removed again.
        snaps = a.wait_for(s, lambda snap: _md(snap) == (False, False), "the synced snapshot")
        snaps += a.sync(s)
        assert len(snaps) in (1, 2), snaps
        last = snaps[-1]
        assert _md(last) == (False, False)
        assert _keys(last) == ["rooms/r0", "rooms/r1"]
        assert [d["metadata"]["hasPendingWrites"] for d in last["documents"]] == [False, False]
        assert _changes(last) == [("modified", "rooms/r1", False)]
        if len(snaps) == 2:
            assert _md(snaps[0]) == (False, True)
            assert snaps[0]["changes"] == []
        state = requests.get(a.url, timeout=TIMEOUT).json()
        assert state["pendingWrites"] == 0
        assert state["network"]["online"] is True
        r = requests.get(f"{a.backend}/rooms/r1", timeout=TIMEOUT)
        assert r.status_code == 200 and r.json()["fields"] == {"name": {"stringValue": "lobby"}}
        r = requests.get(f"{a.docs}/rooms/r1", timeout=TIMEOUT)
        assert r.headers.get("Firegate-Has-Pending-Writes") == "false"

    requests.delete(a.url, timeout=TIMEOUT)
