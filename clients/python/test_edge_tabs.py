"""Tabs of one shared web persistence (`PUT /clients/{id}` with `sharedWith`): they share the
cache and the mutation queue, one primary tab owns the network, and the primary lease moves by
the web SDK's rules (IndexedDbPersistence.canActAsPrimary) — on a tab's metadata refresh, which
runs every 4 s on the server clock, at once with `runTimer client_metadata_refresh`, and when a
tab's visibility or network changes."""
import json
import time
import uuid

import requests

from conftest import start_server, stop_server
from test_edge import docs_path, typed
from sse import SSEStream


class Tab:
    def __init__(self, base, project, key, visible=True, manager="multiple", cid=None):
        self.base, self.project = base, project
        self.id = cid or "tab-" + uuid.uuid4().hex[:10]
        self.url = f"{base}/clients/{self.id}"
        self.data = self.url + docs_path(project)
        self.opened = requests.put(self.url, json={"project": project, "platform": "web", "persistence": "persistent",
                                                    "sharedWith": key, "tabManager": manager, "visible": visible}, timeout=10)

    def post(self, verb, **kw):
        return requests.post(f"{self.url}:{verb}", timeout=30, **kw)

    def refresh(self):
        r = self.post("runTimer", json={"timer": "client_metadata_refresh"})
        assert r.status_code == 200, r.text

    def tab(self):
        return requests.get(self.url, timeout=10).json()["tab"]

    def set(self, doc, **fields):
        return requests.patch(f"{self.data}/{doc}", json={"fields": {k: typed(v) for k, v in fields.items()}}, timeout=30)

    def listen(self, collection):
        query = json.dumps({"from": [{"collectionId": collection}], "orderBy": [{"field": {"fieldPath": "__name__"}}]})
        return SSEStream(f"{self.data}:listen", params={"query": query, "includeMetadataChanges": "true"})


def key():
    return "db-" + uuid.uuid4().hex[:8]


def snapshots_until(stream, predicate, timeout=10):
    events, match = stream.read_until(lambda e: e.event == "snapshot" and predicate(e.json()), timeout=timeout)
    return [e.json() for e in events if e.event == "snapshot"] + [match.json()]


def meta(snapshot):
    return (snapshot["metadata"]["fromCache"], snapshot["metadata"]["hasPendingWrites"])


def test_two_tabs_hand_over_the_network_and_flush_a_secondarys_write(base_url, project):
    k = key()
    a, b = Tab(base_url, project, k), Tab(base_url, project, k)
    assert a.opened.status_code == 200 and b.opened.status_code == 200, (a.opened.text, b.opened.text)
    assert a.tab()["primary"] and not b.tab()["primary"]
    assert a.tab()["activeTabs"] == 2
    with a.listen("notes") as sa, b.listen("notes") as sb:
        snapshots_until(sa, lambda s: meta(s) == (False, False))
        snapshots_until(sb, lambda s: meta(s) == (False, False))
        # The primary goes offline: a tab with its network on is better placed, so A gives up
        # the lease at once and nobody holds it until B refreshes. The shared listeners go to cache.
        assert a.post("disableNetwork").status_code == 200
        assert not a.tab()["primary"] and a.tab()["primaryTab"] is None
        snapshots_until(sa, lambda s: meta(s) == (True, False))
        # B (a secondary) writes: the write is in the shared queue, visible to both tabs, unsent.
        assert b.set("notes/n1", text="from B").status_code == 200
        assert [d["name"].rsplit("/", 1)[-1] for d in snapshots_until(sa, lambda s: meta(s) == (True, True))[-1]["documents"]] == ["n1"]
        snapshots_until(sb, lambda s: s["metadata"]["hasPendingWrites"])
        assert requests.get(f"{base_url}{docs_path(project)}/notes/n1", timeout=10).status_code == 404
        # A is hidden: it still cannot be primary. B refreshes, takes the lease and flushes.
        assert a.post("setVisibility", json={"visible": False}).json()["visible"] is False
        assert b.tab()["primaryTab"] is None
        b.refresh()
        assert b.tab()["primary"] and a.tab()["primaryTab"] == b.id
        snapshots_until(sa, lambda s: meta(s) == (False, False))
        snapshots_until(sb, lambda s: meta(s) == (False, False))
    assert requests.get(f"{base_url}{docs_path(project)}/notes/n1", timeout=10).json()["fields"]["text"] == {"stringValue": "from B"}


def test_the_lease_moves_when_the_primary_closes_and_prefers_a_visible_tab(base_url, project):
    k = key()
    a = Tab(base_url, project, k, visible=False)
    b = Tab(base_url, project, k, visible=False)
    c = Tab(base_url, project, k, visible=True)
    # A holds a valid lease: neither a hidden nor a visible newcomer takes it.
    assert [t.tab()["primary"] for t in (a, b, c)] == [True, False, False]
    assert requests.delete(a.url, timeout=10).status_code == 200
    # Nobody is primary until a tab refreshes; hidden B defers to visible C.
    b.refresh()
    assert b.tab()["primaryTab"] is None
    c.refresh()
    assert c.tab()["primary"]
    assert c.tab()["activeTabs"] == 2
    listed = {s["id"]: s for s in requests.get(f"{base_url}/clients", timeout=10).json()["clients"]}
    assert listed[c.id]["tab"]["primary"] and not listed[b.id]["tab"]["primary"]


def test_tabs_share_the_cache_and_a_closed_tabs_listeners_end(base_url, project):
    k = key()
    a, b = Tab(base_url, project, k), Tab(base_url, project, k)
    assert a.set("notes/shared", v=1).status_code == 200
    assert requests.post(f"{a.url}:waitForPendingWrites", timeout=30).status_code == 200
    assert a.post("disableNetwork").status_code == 200
    r = requests.get(f"{b.data}/notes/shared", params={"source": "cache"}, timeout=10)
    assert r.status_code == 200 and r.json()["fields"]["v"] == {"integerValue": "1"}
    with b.listen("notes") as sb, a.listen("notes") as sa:
        snapshots_until(sb, lambda s: len(s["documents"]) == 1)
        snapshots_until(sa, lambda s: len(s["documents"]) == 1)
        assert requests.delete(b.url, timeout=10).status_code == 200
        sb.read_to_end(timeout=10)  # B's listener ends with B; A's stays
        assert requests.get(a.url, timeout=10).json()["listeners"] == 1


def test_a_single_tab_persistence_refuses_a_second_tab(base_url, project):
    k = key()
    a = Tab(base_url, project, k, manager="single")
    assert a.opened.status_code == 200
    b = Tab(base_url, project, k)
    assert b.opened.status_code == 412  # FAILED_PRECONDITION in an edge client's lifecycle: 412 (docs/edge-clients.md)
    error = b.opened.json()["error"]
    assert error["status"] == "FAILED_PRECONDITION"
    assert error["message"].startswith("Failed to obtain exclusive access to the persistence layer.")
    c = Tab(base_url, project, key())
    d = Tab(base_url, project, c.opened.json()["tab"]["sharedWith"], manager="single")
    assert d.opened.status_code == 412 and "not in the required state" in d.opened.json()["error"]["message"]
    # Bad requests are 400s that open nothing.
    bad = requests.put(f"{base_url}/clients/x-{uuid.uuid4().hex[:6]}", json={"sharedWith": k, "persistence": "memory", "platform": "web"}, timeout=10)
    assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
    bad = requests.put(f"{base_url}/clients/x-{uuid.uuid4().hex[:6]}", json={"sharedWith": k, "tabManager": "some"}, timeout=10)
    assert bad.status_code == 400


def wait_for(condition, what):
    for _ in range(500):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(what)


def test_refreshes_run_on_the_server_clock(tmp_path):
    proc, base = start_server(data_dir=tmp_path)
    try:
        advance = lambda ms: requests.post(f"{base}/emulator/v1/clock", json={"advanceMs": ms}, timeout=10)
        k = key()
        a, b = Tab(base, "p-tabs", k), Tab(base, "p-tabs", k)
        assert requests.delete(a.url, timeout=10).status_code == 200
        assert b.tab()["primaryTab"] is None
        assert advance(4500).status_code == 200
        wait_for(lambda: b.tab()["primary"], "B's scheduled refresh took the free lease")

        # A frozen primary stops refreshing: 5 s after its last refresh its lease expires and
        # the next tab to refresh (on the clock) takes it. It acts as primary until it resumes.
        c = Tab(base, "p-tabs", k)
        with c.listen("notes") as sc:
            assert b.post("freeze").json()["frozen"] is True
            advance(4100)  # C's refresh: B's lease (4.1 s old) is still valid
            time.sleep(0.2)
            assert c.tab()["primaryTab"] == b.id
            advance(4100)  # B's lease is 8.2 s old: C takes it
            wait_for(lambda: c.tab()["primary"], "C took the expired lease")
            assert b.tab()["primary"] and b.tab()["primaryTab"] == c.id, "frozen B still believes it is primary"
            assert b.tab()["activeTabs"] == 1, "B's metadata is too old to count as active"
            assert b.post("resume").json()["primary"] is False
            assert c.tab()["activeTabs"] == 2
            # C owns the network: its listener gets the server's answer.
            snapshots_until(sc, lambda s: meta(s) == (False, False))
    finally:
        stop_server(proc)


def test_a_shared_persistence_survives_export_and_import(tmp_path):
    proc, base = start_server(data_dir=tmp_path)
    try:
        k = key()
        a = Tab(base, "p-arch", k)
        assert a.set("notes/kept", v=1).status_code == 200
        assert requests.post(f"{a.url}:waitForPendingWrites", timeout=30).status_code == 200
        assert a.post("disableNetwork").status_code == 200
        assert a.set("notes/queued", v=2).status_code == 200
        archive = requests.post(f"{base}/emulator/v1/export", json={"clients": True}, timeout=10).json()
        assert [c["id"] for c in archive["clients"]] == [f"sharedWith/{k}"]
        assert requests.post(f"{base}/emulator/v1/import", json=archive, timeout=10).status_code == 200
        assert requests.get(f"{base}/clients", timeout=10).json()["clients"] == [], "the import opens no tab"
        b = Tab(base, "p-arch", k)
        assert b.opened.status_code == 200 and b.tab()["primary"]
        r = requests.get(f"{b.data}/notes/kept", params={"source": "cache"}, timeout=10)
        assert r.status_code == 200 and r.json()["fields"]["v"] == {"integerValue": "1"}
        # The queued write comes back with the persistence and is sent by its new primary.
        assert requests.post(f"{b.url}:waitForPendingWrites", timeout=30).status_code == 200
        assert requests.get(f"{base}{docs_path('p-arch')}/notes/queued", timeout=10).status_code == 200
        bad = requests.put(f"{base}/clients/sharedWith%2F{k}", json={}, timeout=10)
        assert bad.status_code == 400 and bad.json()["error"]["status"] == "INVALID_ARGUMENT"
    finally:
        stop_server(proc)


def test_tabs_hear_the_shared_client_state_notifications(base_url, project):
    k = key()
    a, b = Tab(base_url, project, k), Tab(base_url, project, k)
    with SSEStream(f"{b.url}/sharedClientState") as notes, a.listen("notes") as sa:

        def next_notification(predicate):
            _, match = notes.read_until(lambda e: e.event == "clientState" and predicate(e.json()), timeout=10)
            return match.json()

        assert next_notification(lambda n: n["type"] == "onlineState") == {"type": "onlineState", "state": "online"}
        # The primary's watch makes A's query target current: every tab hears it.
        snapshots_until(sa, lambda s: meta(s) == (False, False))
        assert next_notification(lambda n: n["type"] == "queryTarget")["state"] == "current"
        # A write is pending, then acknowledged once the primary sends it.
        assert requests.put(f"{a.url}/gates", json={"holdWrites": True}, timeout=10).status_code == 200
        write = b.set("notes/n", v=1)
        batch = write.headers["Firegate-Write-Id"]
        assert next_notification(lambda n: n["type"] == "mutationBatch") == {"type": "mutationBatch", "batchId": batch, "state": "pending"}
        requests.post(f"{a.url}/gates:releaseWrite", json={"count": 1}, timeout=10)
        assert next_notification(lambda n: n["type"] == "mutationBatch")["state"] == "acknowledged"
        # The primary goes offline: the shared online state follows.
        a.post("disableNetwork")
        assert next_notification(lambda n: n["type"] == "onlineState")["state"] == "offline"
