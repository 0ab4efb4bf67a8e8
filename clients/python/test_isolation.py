"""Isolation: edge clients never see or change each other's cache, queue, listeners, gates,
network, garbage collection, lifecycle or onDisconnects; projects, databases and tree namespaces
never mix, through every route.

Deterministic: edge listeners are read up to a `gates:sync` marker; backend and tree listeners up
to a sentinel write made after the write that must not show (events arrive in commit order, so
the sentinel's event coming first proves the other one never came).
"""
import json
import time
import uuid

import pytest
import requests

from docs_support import Fs, assert_error, ff, ok, sq, w_delete, w_update
from sse import SSEStream
from test_edge import Client, backend_set, names
from tree_stream import TreeStream

T = 10  # seconds: the bound of every request and wait here


def _cache_get(client, doc):
    return client.get(doc, source="cache")


def _pending(client):
    r = requests.get(client.url + "/pendingWrites", timeout=T)
    assert r.status_code == 200, r.text
    return r.json()["writes"]


def _written_names(writes):
    out = []
    for batch in writes:
        for w in batch["writes"]:
            out.append(w["update"]["name"] if "update" in w else w.get("delete") or w["transform"]["document"])
    return [n.rsplit("/documents/", 1)[1] for n in out]


def _query(client, collection, **params):
    q = {"structuredQuery": {"from": [{"collectionId": collection}]}}
    r = requests.post(client.data + ":runQuery", params=params, json=q, timeout=T)
    assert r.status_code == 200, r.text
    return sorted(e["document"]["name"].rsplit("/", 1)[1] for e in r.json() if "document" in e)


def _pair(base_url, project, persistence="persistent"):
    return Client(base_url, project, persistence=persistence), Client(base_url, project, persistence=persistence)


# ------------------------------------------------------------------------------------------
# Edge clients: A and B in one project
# ------------------------------------------------------------------------------------------

def test_a_client_never_reads_another_clients_cache(base_url, project):
    backend_set(base_url, project, "c/known", n=1)
    a, b = _pair(base_url, project)
    assert a.get("c/known").status_code == 200          # only A caches it
    for c in (a, b):
        assert c.post("disableNetwork").status_code == 200
    assert a.set("c/mine", n=2).status_code == 200       # only A's local view has it
    assert _cache_get(a, "c/known").status_code == 200
    assert _cache_get(a, "c/mine").status_code == 200
    for doc in ("c/known", "c/mine"):
        r = _cache_get(b, doc)
        assert r.status_code == 503, f"B reads {doc} from A's cache: {r.status_code} {r.text}"
        assert b.get(doc).status_code == 503              # offline default read: the cache, then the SDK's error
    assert _query(a, "c") == ["known", "mine"]
    assert _query(b, "c") == [], "B's cached query shows A's documents"
    state_b = b.state()
    assert state_b["cache"]["documents"] == 0 and state_b["pendingWrites"] == 0, state_b
    assert a.state()["pendingWrites"] == 1


def test_a_clients_queue_holds_only_its_own_writes(base_url, project):
    a, b = _pair(base_url, project)
    for c in (a, b):
        c.post("disableNetwork")
    ra1, ra2 = a.set("c/a1", n=1), a.set("c/a2", n=2)
    rb1 = b.set("c/b1", n=3)
    assert [_written_names(_pending(a))] == [["c/a1", "c/a2"]]
    assert [_written_names(_pending(b))] == [["c/b1"]]
    a_ids = [ra1.headers["Firegate-Write-Id"], ra2.headers["Firegate-Write-Id"]]
    b_ids = [rb1.headers["Firegate-Write-Id"]]
    # A write id names a write of that client only: another client's id is not found there, or
    # (ids count per client) is that client's own write.
    for wid in a_ids:
        r = requests.get(f"{b.url}/pendingWrites/{wid}", timeout=T)
        if wid in b_ids:
            assert r.status_code == 200 and r.json()["id"] == wid
            assert _written_names([p for p in _pending(b) if p["id"] == wid]) == ["c/b1"]
        else:
            assert_error(r, 404, "NOT_FOUND")
    # B flushing its queue sends B's write only; A's stay queued and off the backend.
    b.post("enableNetwork")
    assert b.post("waitForPendingWrites", params={"timeoutMs": 10000}).status_code == 200
    fs = Fs(base_url, project)
    assert fs.exists("c/b1")
    assert not fs.exists("c/a1") and not fs.exists("c/a2")
    assert _written_names(_pending(a)) == ["c/a1", "c/a2"]
    assert a.post("waitForPendingWrites", params={"timeoutMs": 200}).status_code == 504
    # B's gate releases and rejections never touch A's queue.
    r = requests.post(b.url + "/gates:releaseWrite", json={"fail": "PERMISSION_DENIED"}, timeout=T)
    assert r.status_code in (200, 412), r.text
    assert r.status_code != 200 or r.json()["released"] == []
    assert _written_names(_pending(a)) == ["c/a1", "c/a2"]


def test_a_listener_gets_nothing_from_another_clients_writes(base_url, project):
    backend_set(base_url, project, "c/base", n=0)
    a, b = _pair(base_url, project)
    with a.listen("c", includeMetadataChanges="true") as sa, b.listen("c", includeMetadataChanges="true") as sb:
        [first_a] = a.sync(sa)
        assert first_a and names(first_a[-1]) == ["base"]
        b.sync(sb)
        b.post("disableNetwork")
        b.set("c/from-b", n=1)
        b.set("c/base", n=99)
        requests.delete(f"{b.data}/c/base", timeout=T)
        [events_a] = a.sync(sa)
        assert events_a == [], f"A's listener saw B's offline writes or B's network switch: {events_a}"
        [events_b] = b.sync(sb)
        assert events_b and names(events_b[-1]) == ["from-b"], events_b
        assert a.state()["listeners"] == 1 and b.state()["listeners"] == 1
        # A sync marker asked of B reaches B's streams only.
        token_b, token_a = uuid.uuid4().hex, uuid.uuid4().hex
        requests.post(b.url + "/gates:sync", json={"token": token_b}, timeout=T)
        requests.post(a.url + "/gates:sync", json={"token": token_a}, timeout=T)
        before, _ = sa.read_until(lambda e: e.event == "sync" and e.json()["token"] == token_a, timeout=T)
        assert before == [], f"A's stream got {before} (B's marker is {token_b})"
        sb.read_until(lambda e: e.event == "sync" and e.json()["token"] == token_b, timeout=T)
        sb.close()
        [events_a] = a.sync(sa)                       # A's stream is still open and answering
        assert events_a == []


def test_gates_are_per_client(base_url, project):
    a, b = _pair(base_url, project)
    a.gates(holdWatch=True, holdWrites=True)
    r = requests.put(a.url + "/gates", json={"scriptedWatch": True, "maxConcurrentLimboResolutions": 3}, timeout=T)
    assert r.status_code == 200 and r.json()["scriptedWatch"] is True, r.text
    assert requests.get(b.url, timeout=T).json()["gates"] == {"holdWatch": False, "holdWrites": False, "scriptedWatch": False,
                                                            "maxConcurrentLimboResolutions": 100}
    # A's scripted watch and injected faults are A's alone.
    r = requests.put(a.url + "/faults", json={"storage": ["Locally write mutations"]}, timeout=T)
    assert r.status_code == 200, r.text
    assert requests.get(b.url + "/faults", timeout=T).json() == {"storage": [], "recovering": 0}
    r = requests.put(a.url + "/faults", json={"storage": False}, timeout=T)
    assert r.status_code == 200, r.text
    held = a.set("c/held", n=1)
    assert held.headers["Firegate-Write-State"] == "pending"
    # B's writes are not held: answered by the server.
    r = requests.patch(f"{b.data}/c/free", params={"waitFor": "ack"}, json={"fields": {"n": {"integerValue": "2"}}}, timeout=T)
    assert r.status_code == 200 and r.headers["Firegate-Write-State"] == "acknowledged", r.text
    # B's watch is not held: a new listen gets the server's first answer.
    with b.listen("c") as sb:
        [events] = b.sync(sb)
        assert events and names(events[-1]) == ["free"], events
    # Releasing B's gates leaves A's write held.
    r = requests.post(b.url + "/gates:releaseWrite", json={"count": 1}, timeout=T)
    assert r.status_code == 200 and r.json()["released"] == [], r.text
    requests.post(b.url + "/gates:releaseWatch", timeout=T)
    assert _written_names(_pending(a)) == ["c/held"]
    assert not Fs(base_url, project).exists("c/held")
    assert requests.get(a.url, timeout=T).json()["gates"] == {"holdWatch": True, "holdWrites": True, "scriptedWatch": True,
                                                            "maxConcurrentLimboResolutions": 3}
    r = requests.post(a.url + "/gates:releaseWrite", json={"count": 1}, timeout=T)
    assert r.json()["released"][0]["state"] == "acknowledged"


def test_network_switch_and_conditions_are_per_client(base_url, project):
    backend_set(base_url, project, "c/x", n=1)
    a, b = _pair(base_url, project)
    a.post("disableNetwork")
    r = requests.put(a.url + "/network", json={"latencyMs": 5000, "rejectWrites": {"count": 5, "status": "PERMISSION_DENIED"}},
                     timeout=T)
    assert r.status_code == 200, r.text
    net_b = requests.get(b.url + "/network", timeout=T).json()
    assert net_b["online"] is True and net_b["latencyMs"] == 0 and not net_b.get("rejectWrites"), net_b
    r = b.get("c/x", source="server")
    assert r.status_code == 200 and r.headers["Firegate-From-Cache"] == "false"
    r = requests.patch(f"{b.data}/c/y", params={"waitFor": "ack"}, json={"fields": {}}, timeout=T)
    assert r.status_code == 200, f"A's injected rejections hit B: {r.status_code} {r.text}"
    assert r.elapsed.total_seconds() < 4, "A's latency slowed B"
    assert requests.post(f"{b.data}:beginTransaction", json={}, timeout=T).status_code == 200
    assert requests.post(f"{a.data}:beginTransaction", json={}, timeout=T).status_code == 503
    # B going offline and online again leaves A offline.
    b.post("disableNetwork")
    b.post("enableNetwork")
    assert requests.get(a.url, timeout=T).json()["network"]["online"] is False


def test_collect_garbage_is_per_client(base_url, project):
    for i in range(5):
        backend_set(base_url, project, f"c/d{i}", n=i)
    a, b = _pair(base_url, project)
    for c in (a, b):
        assert _query(c, "c") == [f"d{i}" for i in range(5)]     # fills each cache (no listener holds them)
    before_b = b.state()["cache"]
    r = a.post("collectGarbage", json={"thresholdBytes": 1, "percentile": 100})
    assert r.status_code == 200 and r.json()["documentsRemoved"] >= 5, r.text
    after_b = b.state()["cache"]
    assert after_b["documents"] == before_b["documents"] == 5, (before_b, after_b)
    assert after_b["evictions"] == before_b["evictions"]
    b.post("disableNetwork")
    assert _cache_get(b, "c/d0").status_code == 200, "A's garbage collection removed B's cached document"
    a.post("disableNetwork")
    assert _cache_get(a, "c/d0").status_code == 503


def test_lifecycle_calls_are_per_client(base_url, project):
    backend_set(base_url, project, "c/x", n=1)
    a, b = _pair(base_url, project)
    for c in (a, b):
        assert c.get("c/x").status_code == 200
    with b.listen("c") as sb:
        b.sync(sb)
        assert a.post("restart").status_code == 200
        assert a.post("terminate").status_code == 200
        assert a.post("clearPersistence").status_code == 200
        assert a.get("c/x").status_code == 412
        assert b.get("c/x", source="cache").status_code == 200, "A's clearPersistence cleared B's cache"
        [events] = b.sync(sb)                 # B's listener survived A's restart and termination
        assert events == []
        assert requests.delete(a.url, timeout=T).status_code == 200
        assert b.state()["listeners"] == 1 and not b.state()["terminated"]
        backend_set(base_url, project, "c/y", n=2)
        _, ev = sb.read_until(lambda e: e.event == "snapshot", timeout=T)
        assert names(ev.json()) == ["x", "y"]


def test_on_disconnect_is_per_client(base_url, project, namespace):
    a = Client(base_url, project)
    requests.put(a.url, json={"namespace": namespace}, timeout=T)
    r = requests.post(a.url + "/onDisconnect", json={"path": "presence/a", "op": "set", "value": "gone"}, timeout=T)
    if r.status_code == 501:
        pytest.skip("onDisconnect is not available yet (501)")
    assert r.status_code == 200, r.text
    b = Client(base_url, project)
    requests.put(b.url, json={"namespace": namespace}, timeout=T)
    r = requests.post(b.url + "/onDisconnect", json={"path": "presence/b", "op": "set", "value": "gone"}, timeout=T)
    assert r.status_code == 200, r.text
    # B cancelling at A's path leaves A's registration; B dropping fires only B's.
    requests.delete(b.url + "/onDisconnect", params={"path": "presence/a"}, timeout=T)
    b.post("disableNetwork")
    # The server runs them once it sees the client gone, a moment after the switch answers.
    assert _presence_becomes(base_url, namespace, {"b": "gone"})
    a.post("disableNetwork")
    assert _presence_becomes(base_url, namespace, {"a": "gone", "b": "gone"})


def _presence_becomes(base_url, namespace, expected, timeout=5):
    deadline = time.monotonic() + timeout
    while True:
        tree = requests.get(f"{base_url}/presence.json", params={"ns": namespace}, timeout=T).json()
        if tree == expected:
            return True
        assert time.monotonic() < deadline, f"presence is {tree}, expected {expected}"
        time.sleep(0.02)


def test_clients_of_different_projects_see_only_their_project(base_url):
    p1, p2 = "p-" + uuid.uuid4().hex[:12], "p-" + uuid.uuid4().hex[:12]
    a, b = Client(base_url, p1), Client(base_url, p2)
    backend_set(base_url, p1, "c/x", n=1)
    backend_set(base_url, p2, "c/x", n=2)
    assert a.get("c/x").json()["fields"] == {"n": {"integerValue": "1"}}
    assert b.get("c/x").json()["fields"] == {"n": {"integerValue": "2"}}
    with a.listen("c") as sa:
        [events] = a.sync(sa)
        assert len(events) == 1
        backend_set(base_url, p2, "c/other", n=3)       # another project's commit: nothing for A
        [events] = a.sync(sa)
        assert events == [], events
        backend_set(base_url, p1, "c/mine", n=4)
        _, ev = sa.read_until(lambda e: e.event == "snapshot", timeout=T)
        assert names(ev.json()) == ["mine", "x"]
    # A write queued offline lands in the client's own project only.
    b.post("disableNetwork")
    b.set("c/queued", n=5)
    b.post("enableNetwork")
    assert b.post("waitForPendingWrites", params={"timeoutMs": 10000}).status_code == 200
    assert Fs(base_url, p2).exists("c/queued") and not Fs(base_url, p1).exists("c/queued")


DATA_ROUTES = [
    ("GET", "/c/x", None),
    ("GET", "/c", None),
    ("PATCH", "/c/x", {"fields": {}}),
    ("POST", "/c?documentId=new", {"fields": {}}),
    ("DELETE", "/c/x", None),
    ("POST", ":runQuery", {"structuredQuery": {"from": [{"collectionId": "c"}]}}),
    ("POST", "/c/x:runQuery", {"structuredQuery": {"from": [{"collectionId": "s"}]}}),
    ("POST", ":runAggregationQuery", {"structuredAggregationQuery": {"structuredQuery": {"from": [{"collectionId": "c"}]},
                                                                     "aggregations": [{"alias": "n", "count": {}}]}}),
    ("POST", ":commit", {"writes": []}),
    ("POST", ":batchGet", {"documents": []}),
    ("POST", ":beginTransaction", {}),
    ("POST", ":rollback", {"transaction": "AAAA"}),
    ("POST", ":listCollectionIds", {}),
    ("POST", "/c/x:listCollectionIds", {}),
    ("GET", "/c/x:listen", None),
    ("GET", ":listen?query=" + requests.utils.quote(json.dumps({"from": [{"collectionId": "c"}]})), None),
]


@pytest.mark.parametrize("wrong", ["project", "database"])
@pytest.mark.parametrize("method,route,body", DATA_ROUTES, ids=[f"{m} {r.split('?')[0]}" for m, r, _ in DATA_ROUTES])
def test_a_clients_data_routes_refuse_another_project_or_database(base_url, project, wrong, method, route, body):
    a = Client(base_url, project)
    other = f"/v1/projects/not-{project}/databases/(default)/documents" if wrong == "project" else \
        f"/v1/projects/{project}/databases/other/documents"
    r = requests.request(method, f"{a.url}{other}{route}", json=body, timeout=T,
                         headers={"Accept": "text/event-stream"} if route.endswith("listen") or ":listen?" in route else {})
    assert_error(r, 400, "INVALID_ARGUMENT")
    assert "This client is configured for" in r.json()["error"]["message"], r.text
    assert a.state()["pendingWrites"] == 0


# ------------------------------------------------------------------------------------------
# Backend: projects and databases
# ------------------------------------------------------------------------------------------

@pytest.fixture(params=["projects", "databases"])
def two_databases(request, base_url, project):
    """Two document databases that must never mix: two projects, or two databases of one."""
    if request.param == "projects":
        return Fs(base_url, project), Fs(base_url, "q-" + uuid.uuid4().hex[:12])
    return Fs(base_url, project), Fs(base_url, project, database="other")


def _setup_both(one, two):
    for fs, tag in ((one, "one"), (two, "two")):
        ok(fs.commit([
            w_update(fs.name("c/x"), {"who": tag, "n": 1}),
            w_update(fs.name(f"c/only-{tag}"), {"who": tag, "n": 2}),
            w_update(fs.name(f"c/x/sub-{tag}/y"), {"who": tag}),
        ]))


def test_documents_never_mix_between_databases(two_databases):
    one, two = two_databases
    _setup_both(one, two)
    for fs, tag, other in ((one, "one", "two"), (two, "two", "one")):
        assert fs.get_ok("c/x")["fields"]["who"] == {"stringValue": tag}
        assert_error(fs.get(f"c/only-{other}"), 404, "NOT_FOUND")
        listed = ok(fs.list("c"))
        assert sorted(d["name"].rsplit("/", 1)[1] for d in listed["documents"]) == sorted(["x", f"only-{tag}"])
        assert all(d["name"].startswith(fs.root + "/") for d in listed["documents"])
        assert sorted(fs.query_paths(sq("c"))) == sorted(["c/x", f"c/only-{tag}"])
        assert fs.query_paths(sq("c", where=ff("who", "EQUAL", other))) == []
        all_y = fs.query_paths({"from": [{"collectionId": f"sub-{other}", "allDescendants": True}]})
        assert all_y == []
        agg = ok(fs.run_agg(sq("c"), [{"alias": "n", "count": {}}]))
        assert agg[0]["result"]["aggregateFields"]["n"] == {"integerValue": "2"}
        ids = ok(fs.list_collection_ids(parent="c/x"))
        assert ids.get("collectionIds") == [f"sub-{tag}"], ids
        got = ok(fs.batch_get(["c/x", f"c/only-{other}"]))
        found = [e["found"]["fields"]["who"]["stringValue"] for e in got if "found" in e]
        missing = [e["missing"] for e in got if "missing" in e]
        assert found == [tag] and missing == [fs.name(f"c/only-{other}")], got


def test_writes_and_deletes_stay_in_their_database(two_databases):
    one, two = two_databases
    _setup_both(one, two)
    ok(one.commit([w_delete(one.name("c/x")), w_update(one.name("c/new"), {"n": 5})]))
    ok(one.batch_write([w_update(one.name("c/bw"), {"n": 6})]))
    assert one.delete("c/only-one").status_code == 200
    assert two.get_ok("c/x")["fields"]["who"] == {"stringValue": "two"}
    for path in ("c/new", "c/bw", "c/only-one"):
        assert_error(two.get(path), 404, "NOT_FOUND")
    assert two.exists("c/only-two")
    # Names of the other database in a body are refused, and nothing is written.
    for r in (one.commit([w_update(two.name("c/intruder"), {"n": 1})]),
              one.batch_write([w_update(two.name("c/intruder"), {"n": 1})]),
              one.batch_get(["c/x"], documents=[two.name("c/x")]),
              one.commit([w_delete(two.name("c/x"))])):
        assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT", r.text
    assert not two.exists("c/intruder") and two.exists("c/x")
    # Resetting one database leaves the other.
    assert one.reset().status_code == 200
    assert not one.exists("c/new")
    assert two.exists("c/x") and two.exists("c/only-two")


def test_transactions_belong_to_their_database(two_databases):
    one, two = two_databases
    _setup_both(one, two)
    tx = ok(one.begin())["transaction"]
    for r in (two.get("c/x", transaction=tx), two.commit([], transaction=tx), two.rollback(tx),
              two.run_query(sq("c"), transaction=tx)):
        assert r.status_code == 400, f"a transaction of {one.db} used in {two.db}: {r.status_code} {r.text}"
    # The foreign attempts did not touch it: it still reads and commits in its own database.
    assert ok(one.get("c/x", transaction=tx))["fields"]["who"] == {"stringValue": "one"}
    ok(one.commit([w_update(one.name("c/x"), {"who": "one", "n": 7})], transaction=tx))
    assert two.get_ok("c/x")["fields"]["n"] == {"integerValue": "1"}


def test_listeners_never_see_another_databases_commits(two_databases):
    one, two = two_databases
    _setup_both(one, two)
    query = json.dumps({"from": [{"collectionId": "c"}]})
    doc_stream = SSEStream(one.doc_url("c/x") + ":listen")
    query_stream = SSEStream(one.url(one.root) + ":listen", params={"query": query})
    try:
        for s in (doc_stream, query_stream):
            assert s.ok, s.body
            assert s.next(timeout=T).event == "snapshot"
        # The other database: the same document, the same collection, then a reset of it.
        two.set("c/x", {"who": "two", "n": 100})
        two.set("c/more", {"n": 1})
        two.delete("c/only-two")
        assert two.reset().status_code == 200
        # The sentinel in our own database.
        one.set("c/x", {"who": "one", "n": 42})
        ev = doc_stream.next(timeout=T)
        assert ev.event == "snapshot" and ev.json()["document"]["fields"]["n"] == {"integerValue": "42"}, ev
        ev = query_stream.next(timeout=T)
        body = ev.json()
        assert ev.event == "snapshot", ev
        assert [(c["type"], c["document"]["name"].rsplit("/", 1)[1]) for c in body["changes"]] == [("modified", "x")], body
        # A resume token of one database is not a position in the other.
        r = SSEStream(two.doc_url("c/x") + ":listen", headers={"Last-Event-ID": ev.id})
        try:
            first = r.next(timeout=T)
            assert first.json().get("reset") is True and first.json()["exists"] is False, first
        finally:
            r.close()
    finally:
        doc_stream.close()
        query_stream.close()


def test_listing_operations_tell_databases_apart(base_url, project):
    one, two = Fs(base_url, project), Fs(base_url, project, database="other")
    _setup_both(one, two)
    listed = requests.get(f"{base_url}/emulator/v1/databases", timeout=T).json()["databases"]
    mine = [d for d in listed if d.get("project") == project]
    assert {d.get("database") for d in mine} == {"(default)", "other"}, mine


# ------------------------------------------------------------------------------------------
# Tree namespaces
# ------------------------------------------------------------------------------------------

def test_tree_namespaces_never_mix(base_url, namespace):
    n1, n2 = namespace, namespace + "-two"
    url = f"{base_url}/room"

    def put(ns, path, value, **kw):
        r = requests.put(f"{base_url}{path}.json", params={"ns": ns}, data=json.dumps(value), timeout=T, **kw)
        assert r.status_code == 200, r.text
        return r

    def get(ns, path="/", **params):
        r = requests.get(f"{base_url}{path}.json", params={"ns": ns, **params}, timeout=T)
        assert r.status_code == 200, r.text
        return r.json()

    put(n1, "/room", {"a": 1, "who": "one", "scores": {"x": 1, "y": 2}})
    put(n2, "/room", {"b": 2, "who": "two", "scores": {"z": 3}})
    assert get(n1, "/room") == {"a": 1, "who": "one", "scores": {"x": 1, "y": 2}}
    assert get(n2, "/room") == {"b": 2, "who": "two", "scores": {"z": 3}}
    assert get(n1, "/room", shallow="true") == {"a": True, "who": True, "scores": True}
    assert get(n2, "/room/scores", orderBy='"$value"', limitToLast="5") == {"z": 3}
    requests.patch(f"{url}.json", params={"ns": n1}, data=json.dumps({"who": "one!", "scores/w": 0}), timeout=T)
    pushed = requests.post(f"{url}/log.json", params={"ns": n1}, data="1", timeout=T).json()["name"]
    requests.delete(f"{url}/b.json", params={"ns": n1}, timeout=T)   # n1 has no b: n2's stays
    assert get(n2, "/room") == {"b": 2, "who": "two", "scores": {"z": 3}}
    assert get(n2, f"/room/log/{pushed}") is None
    # ETags are per namespace: n2's ETag of the same path does not match n1's value.
    etag2 = requests.get(f"{url}.json", params={"ns": n2}, headers={"X-Firebase-ETag": "true"}, timeout=T).headers["ETag"]
    r = requests.put(f"{url}/who.json", params={"ns": n1}, data='"x"', headers={"if-match": etag2}, timeout=T)
    assert r.status_code == 412
    # Streams: n2's writes never reach a stream on n1.
    s = TreeStream(f"{base_url}/room.json", params={"ns": n1})
    try:
        event, data = s.next(timeout=T)
        assert event == "put" and data["path"] == "/" and data["data"]["who"] == "one!"
        put(n2, "/room/intruder", 1)
        requests.patch(f"{url}.json", params={"ns": n2}, data=json.dumps({"who": "two!"}), timeout=T)
        requests.delete(f"{base_url}/.json", params={"ns": n2}, timeout=T)
        put(n1, "/room/sentinel", 7)
        assert s.next(timeout=T) == ("put", {"path": "/sentinel", "data": 7})
    finally:
        s.close()
    # Clearing n2 left n1.
    assert get(n2) is None
    assert get(n1, "/room/sentinel") == 7
    listed = requests.get(f"{base_url}/emulator/v1/namespaces", timeout=T).json()
    text = json.dumps(listed)
    assert n1 in text and f'"{n2}"' not in text, listed
