"""Edge clients through the public HTTP surface: reads and writes offline, the SDK's errors,
gates, lifecycle, isolation and persistence. Deterministic: gates and the sync marker, no sleeps."""
import json
import uuid

import pytest
import requests

from conftest import start_server, stop_server
from sse import SSEStream

DB = "(default)"


def docs_path(project):
    return f"/v1/projects/{project}/databases/{DB}/documents"


def typed(value):
    if isinstance(value, bool):
        return {"booleanValue": value}
    if isinstance(value, int):
        return {"integerValue": str(value)}
    if isinstance(value, str):
        return {"stringValue": value}
    raise TypeError(value)


class Client:
    """One edge client: control calls, data calls and listeners."""

    def __init__(self, base, project, persistence="memory", cid=None):
        self.base, self.project = base, project
        self.id = cid or "c-" + uuid.uuid4().hex[:10]
        self.url = f"{base}/clients/{self.id}"
        self.data = self.url + docs_path(project)
        r = requests.put(self.url, json={"project": project, "persistence": persistence}, timeout=10)
        assert r.status_code == 200, r.text

    def post(self, verb, **kw):
        return requests.post(f"{self.url}:{verb}", timeout=30, **kw)

    def set(self, doc, **fields):
        return requests.patch(f"{self.data}/{doc}", json={"fields": {k: typed(v) for k, v in fields.items()}}, timeout=30)

    def get(self, doc, **params):
        return requests.get(f"{self.data}/{doc}", params=params, timeout=30)

    def gates(self, **g):
        r = requests.put(self.url + "/gates", json=g, timeout=10)
        assert r.status_code == 200, r.text

    def listen(self, collection, **params):
        query = json.dumps({"from": [{"collectionId": collection}], "orderBy": [{"field": {"fieldPath": "__name__"}}]})
        return SSEStream(f"{self.data}:listen", params={"query": query, **params})

    def sync(self, *streams):
        """The events each stream received since the last sync, in order."""
        token = uuid.uuid4().hex
        r = requests.post(self.url + "/gates:sync", json={"token": token}, timeout=10)
        assert r.status_code == 200
        out = []
        for s in streams:
            events, _ = s.read_until(lambda e: e.event == "sync" and e.json()["token"] == token, timeout=10)
            out.append([e.json() for e in events if e.event == "snapshot"])
        return out

    def state(self):
        return requests.get(self.url, timeout=10).json()


def backend_set(base, project, doc, **fields):
    r = requests.patch(f"{base}{docs_path(project)}/{doc}", json={"fields": {k: typed(v) for k, v in fields.items()}}, timeout=10)
    assert r.status_code == 200, r.text


def meta(event):
    return (event["metadata"]["fromCache"], event["metadata"]["hasPendingWrites"])


def names(event):
    return [d["name"].rsplit("/", 1)[-1] for d in event["documents"]]


def test_offline_reads_and_the_sdk_errors(base_url, project):
    backend_set(base_url, project, "c/known", n=1)
    a = Client(base_url, project)
    assert a.get("c/known").status_code == 200  # online read fills the cache
    a.post("disableNetwork")
    r = a.get("c/known")
    assert r.status_code == 200 and r.headers["Firegate-From-Cache"] == "true"
    assert r.headers["Firegate-Has-Pending-Writes"] == "false"
    r = a.get("c/unknown")
    assert r.status_code == 503
    assert r.json()["error"]["message"] == "Failed to get document because the client is offline."
    r = a.get("c/unknown", source="cache")
    assert r.status_code == 503 and r.json()["error"]["message"].startswith("Failed to get document from cache.")
    r = a.get("c/known", source="server")
    assert r.status_code == 503 and r.json()["error"]["status"] == "UNAVAILABLE"
    assert "does exist in the local cache" in r.json()["error"]["message"]
    # A query with nothing cached is empty and from cache, not an error.
    q = {"structuredQuery": {"from": [{"collectionId": "nothing"}]}}
    r = requests.post(a.data + ":runQuery", json=q, timeout=10)
    assert r.status_code == 200 and r.headers["Firegate-From-Cache"] == "true"
    assert r.json() == [{"readTime": r.json()[0]["readTime"]}]
    r = requests.post(a.data + ":runQuery", params={"source": "server"}, json=q, timeout=10)
    assert r.status_code == 503
    # Transactions need the network.
    r = requests.post(a.data + ":beginTransaction", json={}, timeout=10)
    assert r.status_code == 503


def test_offline_write_is_local_then_flushed(base_url, project):
    a = Client(base_url, project)
    a.post("disableNetwork")
    r = a.set("c/x", n=5)
    assert r.status_code == 200
    assert r.headers["Firegate-Write-State"] == "pending" and r.headers["Firegate-Has-Pending-Writes"] == "true"
    write_id = r.headers["Firegate-Write-Id"]
    assert r.json()["fields"] == {"n": {"integerValue": "5"}}
    r = a.get("c/x", source="cache")
    assert r.headers["Firegate-Has-Pending-Writes"] == "true" and r.json()["fields"]["n"] == {"integerValue": "5"}
    assert requests.get(f"{base_url}{docs_path(project)}/c/x", timeout=10).status_code == 404  # not on the server yet
    pending = requests.get(a.url + "/pendingWrites", timeout=10).json()["writes"]
    assert [w["id"] for w in pending] == [write_id] and pending[0]["state"] == "pending"
    # waitForPendingWrites never completes while offline.
    assert a.post("waitForPendingWrites", params={"timeoutMs": 200}).status_code == 504
    a.post("enableNetwork")
    assert a.post("waitForPendingWrites", params={"timeoutMs": 10000}).status_code == 200
    assert requests.get(f"{a.url}/pendingWrites/{write_id}", timeout=10).json()["state"] == "acknowledged"
    server = requests.get(f"{base_url}{docs_path(project)}/c/x", timeout=10).json()
    assert server["fields"] == {"n": {"integerValue": "5"}}


def test_listener_metadata_through_gates(base_url, project):
    backend_set(base_url, project, "c/a", n=1)
    a = Client(base_url, project)
    a.gates(holdWatch=True, holdWrites=True)
    with a.listen("c", includeMetadataChanges="true") as s:
        [events] = a.sync(s)
        assert events == [], "empty cache, maybe online: the first snapshot waits for the server"
        requests.post(a.url + "/gates:releaseWatch", timeout=10)
        [events] = a.sync(s)
        assert len(events) == 1 and meta(events[0]) == (False, False) and names(events[0]) == ["a"]
        assert events[0]["changes"][0]["type"] == "added"
        a.set("c/b", n=2)
        [events] = a.sync(s)
        assert len(events) == 1 and meta(events[0]) == (False, True) and names(events[0]) == ["a", "b"]
        assert events[0]["documents"][1]["metadata"] == {"hasPendingWrites": True}
        assert [(c["type"], c["newIndex"]) for c in events[0]["changes"]] == [("added", 1)]
        # The ack alone changes nothing visible: the watch has not confirmed the write yet.
        r = requests.post(a.url + "/gates:releaseWrite", json={"count": 1}, timeout=10)
        assert r.json()["released"][0]["state"] == "acknowledged"
        [events] = a.sync(s)
        assert events == []
        requests.post(a.url + "/gates:releaseWatch", timeout=10)
        [events] = a.sync(s)
        assert len(events) == 1 and meta(events[0]) == (False, False)
        assert [(c["type"], c["oldIndex"], c["newIndex"]) for c in events[0]["changes"]] == [("modified", 1, 1)]
        # Offline: a metadata-only snapshot, fromCache.
        a.post("disableNetwork")
        [events] = a.sync(s)
        assert len(events) == 1 and meta(events[0]) == (True, False) and events[0]["changes"] == []


def test_metadata_only_changes_are_suppressed_without_include_metadata_changes(base_url, project):
    backend_set(base_url, project, "c/a", n=1)
    a = Client(base_url, project)
    a.gates(holdWrites=True)
    with a.listen("c") as s:
        [events] = a.sync(s)
        assert [meta(e) for e in events] == [(False, False)]
        a.post("disableNetwork")
        a.set("c/b", n=2)
        [events] = a.sync(s)
        assert [meta(e) for e in events] == [(True, True)], "the offline flip alone is suppressed; the write is not"


def test_changes_only_listener_carries_changes_without_the_whole_result(base_url, project):
    for i in range(3):
        backend_set(base_url, project, f"c/d{i}", n=i)
    a = Client(base_url, project)
    with a.listen("c", changesOnly="true") as s, a.listen("c") as full:
        [events, full_events] = a.sync(s, full)
        assert [meta(e) for e in events] == [(False, False)] and "documents" not in events[0]
        assert [(c["type"], c["newIndex"]) for c in events[0]["changes"]] == [("added", 0), ("added", 1), ("added", 2)]
        assert len(full_events[0]["documents"]) == 3, "the same listener without changesOnly lists the result"
        backend_set(base_url, project, "c/d1", n=10)
        [events, _] = a.sync(s, full)
        assert len(events) == 1 and "documents" not in events[0]
        [change] = events[0]["changes"]
        assert (change["type"], change["oldIndex"], change["newIndex"]) == ("modified", 1, 1)
        assert change["document"]["fields"]["n"] == {"integerValue": "10"}
    r = requests.get(f"{a.data}:listen", params={"query": json.dumps({"from": [{"collectionId": "c"}]}), "changesOnly": "maybe"},
                     timeout=10)
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_rejected_write_reverts_the_local_view(base_url, project):
    a = Client(base_url, project)
    a.gates(holdWrites=True)
    with a.listen("c", includeMetadataChanges="true") as s:
        a.sync(s)
        r = a.set("c/doomed", n=1)
        write_id = r.headers["Firegate-Write-Id"]
        [events] = a.sync(s)
        assert names(events[-1]) == ["doomed"]
        r = requests.post(a.url + "/gates:releaseWrite", json={"fail": "PERMISSION_DENIED"}, timeout=10)
        assert r.json()["released"][0]["state"] == "rejected"
        [events] = a.sync(s)
        assert len(events) == 1 and names(events[0]) == [] and events[0]["changes"][0]["type"] == "removed"
    state = requests.get(f"{a.url}/pendingWrites/{write_id}", timeout=10).json()
    assert state["state"] == "rejected" and state["error"]["status"] == "PERMISSION_DENIED"


def test_transient_failure_keeps_the_write_queued(base_url, project):
    a = Client(base_url, project)
    a.gates(holdWrites=True)
    a.set("c/x", n=1)
    r = requests.post(a.url + "/gates:releaseWrite", json={"fail": "UNAVAILABLE"}, timeout=10)
    assert r.json()["released"][0]["state"] == "pending"
    assert a.state()["pendingWrites"] == 1
    r = requests.post(a.url + "/gates:releaseWrite", json={"count": 1}, timeout=10)
    assert r.json()["released"][0]["state"] == "acknowledged"
    assert a.state()["pendingWrites"] == 0


def test_wait_for_ack_returns_the_servers_answer_or_error(base_url, project):
    a = Client(base_url, project)
    r = requests.patch(f"{a.data}/c/x", params={"waitFor": "ack"}, json={"fields": {"n": typed(1)}}, timeout=30)
    assert r.status_code == 200 and r.headers["Firegate-Write-State"] == "acknowledged"
    assert r.json()["updateTime"] == requests.get(f"{base_url}{docs_path(project)}/c/x", timeout=10).json()["updateTime"]
    r = requests.post(f"{a.data}/c", params={"documentId": "x", "waitFor": "ack"}, json={"fields": {}}, timeout=30)
    assert r.status_code == 409 and r.json()["error"]["status"] == "ALREADY_EXISTS"


def test_injected_write_rejections(base_url, project):
    a = Client(base_url, project)
    r = requests.put(a.url + "/network", json={"rejectWrites": {"count": 1, "status": "PERMISSION_DENIED"}}, timeout=10)
    assert r.status_code == 200 and r.json()["rejectWrites"] == {"count": 1, "status": "PERMISSION_DENIED"}
    r = requests.patch(f"{a.data}/c/x", params={"waitFor": "ack"}, json={"fields": {}}, timeout=30)
    assert r.status_code == 403
    r = requests.patch(f"{a.data}/c/y", params={"waitFor": "ack"}, json={"fields": {}}, timeout=30)
    assert r.status_code == 200


def test_lifecycle_restart_terminate_clear(base_url, project):
    a = Client(base_url, project, persistence="memory")
    a.post("disableNetwork")
    a.set("c/x", n=1)
    r = a.post("restart")
    assert r.json() == {"lostWrites": 1}
    assert a.state()["network"]["online"] is False, "the network switch models the device: it survives"
    assert a.get("c/x", source="cache").status_code == 503
    assert a.post("clearPersistence").status_code == 412  # FAILED_PRECONDITION before terminate
    a.post("terminate")
    r = a.get("c/x", source="cache")
    assert r.status_code == 412 and r.json()["error"]["message"] == "The client has already been terminated."
    assert a.post("clearPersistence").status_code == 200
    a.post("restart")
    assert a.get("c/x", source="cache").status_code == 503


def test_persistent_queue_survives_restart(base_url, project):
    a = Client(base_url, project, persistence="persistent")
    a.post("disableNetwork")
    a.set("c/x", n=7)
    assert a.post("restart").json() == {"lostWrites": 0}
    r = a.get("c/x", source="cache")
    assert r.status_code == 200 and r.headers["Firegate-Has-Pending-Writes"] == "true"
    a.post("enableNetwork")
    assert a.post("waitForPendingWrites", params={"timeoutMs": 10000}).status_code == 200


def test_settings_rules(base_url, project):
    a = Client(base_url, project)
    r = requests.put(a.url, json={"cacheSizeBytes": 5}, timeout=10)
    assert r.status_code == 400 and r.json()["error"]["message"] == "cacheSizeBytes must be at least 1048576"
    r = requests.put(a.url, json={"platform": "web"}, timeout=10)
    assert r.json()["settings"]["persistence"] == "memory" and r.json()["settings"]["garbageCollector"] == "eager"
    a.get("c/x")  # starts the client
    r = requests.put(a.url, json={"cacheSizeBytes": -1}, timeout=10)
    assert r.status_code == 412 and r.json()["error"]["status"] == "FAILED_PRECONDITION"
    other = requests.get(f"{base_url}/clients/{a.id}/v1/projects/other/databases/{DB}/documents/c/x", timeout=10)
    assert other.status_code == 400


def test_clients_are_isolated(base_url, project):
    a, b = Client(base_url, project), Client(base_url, project)
    a.post("disableNetwork")
    b.post("disableNetwork")
    a.set("c/mine", n=1)
    assert a.get("c/mine", source="cache").status_code == 200
    assert b.get("c/mine", source="cache").status_code == 503
    assert b.state()["pendingWrites"] == 0 and a.state()["pendingWrites"] == 1
    listed = requests.get(base_url + "/clients", timeout=10).json()["clients"]
    assert {a.id, b.id} <= {c["id"] for c in listed}


def test_persistent_client_survives_a_server_restart(tmp_path):
    proc, base = start_server(data_dir=tmp_path)
    project = "p-" + uuid.uuid4().hex[:8]
    try:
        a = Client(base, project, persistence="persistent", cid="survivor")
        backend_set(base, project, "c/seen", n=1)
        assert a.get("c/seen").status_code == 200
        a.post("disableNetwork")
        a.set("c/queued", n=2)
    finally:
        stop_server(proc)
    proc, base = start_server(data_dir=tmp_path)
    try:
        url = f"{base}/clients/survivor"
        data = url + docs_path(project)
        assert requests.get(url, timeout=10).json()["settings"]["persistence"] == "persistent"
        assert requests.get(f"{data}/c/seen", params={"source": "cache"}, timeout=10).status_code == 200
        # The device's network switch is restored with the client (offline, its write queued);
        # once the test switches it back, the queued write goes.
        assert requests.get(url, timeout=10).json()["network"]["online"] is False
        assert requests.get(f"{data}/c/queued", params={"source": "cache"}, timeout=10).status_code == 200
        assert requests.get(f"{base}{docs_path(project)}/c/queued", timeout=10).status_code == 404
        assert requests.post(url + ":enableNetwork", timeout=10).status_code == 200
        assert requests.post(url + ":waitForPendingWrites", params={"timeoutMs": 10000}, timeout=20).status_code == 200
        assert requests.get(f"{base}{docs_path(project)}/c/queued", timeout=10).status_code == 200
    finally:
        stop_server(proc)


def test_a_persistent_target_keeps_its_documents_across_changes_and_a_restart(tmp_path):
    """A commit that only changes a listened document saves the target's position, not its
    documents; the documents stored are still the server's result after a server restart."""
    proc, base = start_server(data_dir=tmp_path)
    project = "p-" + uuid.uuid4().hex[:8]
    try:
        for doc in ("a", "b"):
            backend_set(base, project, f"c/{doc}", n=1)
        a = Client(base, project, persistence="persistent", cid="targets")
        with a.listen("c", changesOnly="true") as s:
            a.sync(s)
            backend_set(base, project, "c/a", n=2)      # the target's documents stay
            backend_set(base, project, "c/new", n=3)    # one joins
            backend_set(base, project, "c/b", n=4)      # the target's documents stay
            [events] = a.sync(s)
            assert [[c["type"] for c in e["changes"]] for e in events] == [["modified"], ["added"], ["modified"]]
    finally:
        stop_server(proc)
    proc, base = start_server(data_dir=tmp_path)
    try:
        assert requests.get(f"{base}/clients/targets", timeout=10).json()["settings"]["persistence"] == "persistent"
        archive = requests.post(f"{base}/emulator/v1/export", json={"clients": True}, timeout=20).json()
        [client] = [c for c in archive["clients"] if c["id"] == "targets"]
        [target] = client["targets"]
        assert sorted(d.rsplit("/", 1)[-1] for d in target["documents"]) == ["a", "b", "new"]
        a = Client(base, project, persistence="persistent", cid="targets")
        a.post("disableNetwork")
        with a.listen("c") as s:
            [events] = a.sync(s)
            assert [meta(e) for e in events] == [(True, False)]
            assert {d["name"].rsplit("/", 1)[-1]: d["fields"]["n"]["integerValue"] for d in events[0]["documents"]} == \
                {"a": "2", "b": "4", "new": "3"}
    finally:
        stop_server(proc)


def test_bad_control_input_is_a_clear_400(base_url, project):
    a = Client(base_url, project)
    assert requests.put(a.url + "/gates", json={"holdWatch": "yes"}, timeout=10).status_code == 400
    assert requests.put(a.url + "/network", json={"latencyMs": -1}, timeout=10).status_code == 400
    r = requests.post(a.url + "/gates:releaseWrite", json={"fail": "NOPE"}, timeout=10)
    assert r.status_code == 400
    assert requests.put(a.url, data="{not json", timeout=10).status_code == 400
    assert a.post("noSuchVerb").status_code == 404


def test_a_listener_ends_when_its_http_client_hangs_up(base_url, project):
    import time
    a = Client(base_url, project)
    stream = a.listen("c")
    a.sync(stream)
    assert a.state()["listeners"] == 1
    stream.close()
    deadline = time.monotonic() + 5
    while a.state()["listeners"] != 0:
        assert time.monotonic() < deadline, "the listener outlived its connection"
        time.sleep(0.02)


def test_a_resumed_listen_puts_a_document_deleted_while_offline_in_limbo_first(base_url, project):
    """As the SDK (and against the official emulator): back online, the new result comes first
    with the deleted document still shown, from cache (it is in limbo), then its lookup removes it."""
    a = Client(base_url, project)
    for doc, n in (("a", 1), ("b", 2), ("c", 3)):
        backend_set(base_url, project, f"l/{doc}", n=n)
    stream = a.listen("l", includeMetadataChanges="true")
    try:
        first, = a.sync(stream)
        assert [d["name"].rsplit("/", 1)[1] for d in first[-1]["documents"]] == ["a", "b", "c"]
        assert first[-1]["metadata"]["fromCache"] is False
        assert a.post("disableNetwork").status_code == 200
        backend_set(base_url, project, "l/a", n=10)
        assert requests.delete(f"{base_url}{docs_path(project)}/l/b", timeout=10).status_code == 200
        backend_set(base_url, project, "l/d", n=4)
        a.sync(stream)
        assert a.post("enableNetwork").status_code == 200
        snapshots, = a.sync(stream)
        shown = [([d["name"].rsplit("/", 1)[1] for d in s["documents"]], s["metadata"]["fromCache"]) for s in snapshots]
        assert shown == [(["a", "b", "c", "d"], True), (["a", "c", "d"], False)], shown
        assert snapshots[0]["documents"][0]["fields"]["n"] == {"integerValue": "10"}
    finally:
        stream.close()
