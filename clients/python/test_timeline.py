"""The timeline (docs/timeline.md): each edge client's and real SDK connection's steps, in order,
on the server's clock — through `GET /clients/{id}/timeline`, `GET /emulator/v1/connections/{id}/timeline`
and `GET /emulator/v1/timeline`, as JSON and as Server-Sent Events."""
import datetime
import queue
import threading
import time
import uuid

import grpc
import pytest
import requests

from conftest import start_server, stop_server
from rtdb_socket import RealtimeSocket
from sse import SSEStream
from test_grpc import SERVICE, ListenStream, db_name, host_of, query_target, rest_set
from google.cloud.firestore_v1.types import document as doc_types
from google.cloud.firestore_v1.types import firestore as fs
from google.cloud.firestore_v1.types import write as write_types

T = 10
RULES = """rules_version = '2';
service cloud.firestore {
  match /databases/{db}/documents {
    match /cities/{c} { allow read: if true; allow write: if request.resource.data.name != 'bad'; }
  }
}"""


def fields(**values):
    return {"fields": {k: {"stringValue": v} for k, v in values.items()}}


def timeline(url, **params):
    r = requests.get(url, params=params, timeout=T)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["firegate"] == "timeline" and body["version"] == 1 and body["capacity"] == 100000
    return body


def steps(events):
    """Each event as (kind, the facts a test compares), dropping what differs run to run."""
    out = []
    for e in events:
        facts = {k: v for k, v in e.items() if k not in ("seq", "lane", "time", "ms", "kind", "commitTime", "snapshotId", "decision", "readTime")}
        out.append((e["kind"], facts))
    return out


def subsequence(wanted, got):
    """Whether `wanted` occurs in `got` in order (other steps may come between)."""
    it = iter(got)
    return all(any(step == w for step in it) for w in wanted)


@pytest.fixture(scope="module")
def base_url():
    """A server of this module's own: the rules these tests load must not change how the
    session's server serves other modules (with rules active, reads leave the fast path)."""
    proc, base = start_server()
    yield base
    stop_server(proc)


@pytest.fixture
def client_id():
    return "tl-" + uuid.uuid4().hex[:8]


def offline_story(base_url, project, client_id):
    """A client listens, goes offline, writes twice, comes back: the second write breaks a rule."""
    r = requests.put(f"{base_url}/emulator/v1/projects/{project}:securityRules",
                     json={"rules": {"files": [{"name": "firestore.rules", "content": RULES}]}}, timeout=T)
    assert r.status_code == 200 and r.json()["issues"] == [], r.text
    assert requests.put(f"{base_url}/clients/{client_id}", json={"project": project}, timeout=T).status_code == 200
    docs = f"{base_url}/clients/{client_id}/v1/projects/{project}/databases/(default)/documents"
    listen = SSEStream(f"{docs}:listen", params={"includeMetadataChanges": "true", "query": '{"from":[{"collectionId":"cities"}]}'})
    listen.read_until(lambda e: e.event == "snapshot" and not e.json()["metadata"]["fromCache"], timeout=T)
    assert requests.post(f"{base_url}/clients/{client_id}:disableNetwork", timeout=T).status_code == 200
    assert requests.patch(f"{docs}/cities/SF", json=fields(name="San Francisco"), timeout=T).status_code == 200
    assert requests.patch(f"{docs}/cities/X", json=fields(name="bad"), timeout=T).status_code == 200
    assert requests.post(f"{base_url}/clients/{client_id}:enableNetwork", timeout=T).status_code == 200
    r = requests.post(f"{base_url}/clients/{client_id}:waitForPendingWrites", params={"timeoutMs": 5000}, timeout=T)
    assert r.status_code == 200, r.text
    listen.read_until(lambda e: e.event == "snapshot" and not e.json()["metadata"]["hasPendingWrites"], timeout=T)
    return listen


def test_an_offline_write_rejected_by_a_rule_is_told_step_by_step(base_url, project, client_id):
    listen = offline_story(base_url, project, client_id)
    try:
        body = timeline(f"{base_url}/clients/{client_id}/timeline")
    finally:
        listen.close()
    assert body["lanes"] == [{"id": f"client:{client_id}", "kind": "client", "name": client_id, "protocol": "edge",
                              "opened": body["lanes"][0]["opened"], "project": project}]
    events = body["events"]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert [e["ms"] for e in events] == sorted(e["ms"] for e in events), "the server's clock orders them"
    assert {e["lane"] for e in events} == {f"client:{client_id}"}
    story = steps(events)
    assert story[0] == ("lifecycle", {"action": "created"})
    assert subsequence([
        ("listenOpened", {"listener": "1", "target": "cities"}),
        ("snapshot", {"listener": "1", "fromCache": False, "hasPendingWrites": False, "documents": 0, "changes": 0, "changed": []}),
        ("network", {"online": False, "cause": "networkSwitch"}),
        ("snapshot", {"listener": "1", "fromCache": True, "hasPendingWrites": False, "documents": 0, "changes": 0, "changed": []}),
        ("writeQueued", {"writeId": "1", "writes": 1, "documents": ["cities/SF"]}),
        ("snapshot", {"listener": "1", "fromCache": True, "hasPendingWrites": True, "documents": 1, "changes": 1,
                      "changed": [{"type": "added", "path": "cities/SF"}]}),
        ("writeQueued", {"writeId": "2", "writes": 1, "documents": ["cities/X"]}),
        ("network", {"online": True}),
        ("writeSent", {"writeId": "1"}),
        ("writeSent", {"writeId": "2"}),
        ("writeAcknowledged", {"writeId": "1"}),
        ("writeRejected", {"writeId": "2", "status": "PERMISSION_DENIED", "message": story[[k for k, _ in story].index("writeRejected")][1]["message"]}),
    ], story), "\n".join(map(repr, story))
    # After the rejection, the rolled-back document leaves the view; whether the acknowledgement's
    # snapshot comes before, with or after that one depends on when the watch confirms it.
    after = [f for k, f in story[[k for k, _ in story].index("writeRejected"):] if k == "snapshot"]
    assert any({"type": "removed", "path": "cities/X"} in f["changed"] for f in after), story
    assert story[-1][0] == "snapshot" and story[-1][1]["hasPendingWrites"] is False and story[-1][1]["documents"] == 1, story
    acknowledged = next(e for e in events if e["kind"] == "writeAcknowledged")
    assert requests.get(f"{base_url}/v1/projects/{project}/databases/(default)/documents/cities/SF", timeout=T).json()["updateTime"] == acknowledged["commitTime"]
    rejected = next(e for e in events if e["kind"] == "writeRejected")
    trace = requests.get(f"{base_url}/emulator/v1/rules/decisions/{rejected['decision']}", timeout=T)
    assert trace.status_code == 200 and trace.json()["outcome"] != "allow", trace.text
    assert trace.json()["client"] == client_id


def test_events_carry_the_frozen_server_clock():
    # A server of its own: a clock set ahead stays ahead for what the server hands out after.
    proc, base = start_server()
    try:
        requests.post(f"{base}/emulator/v1/clock", json={"time": "2031-05-01T10:00:00Z"}, timeout=T)
        assert requests.put(f"{base}/clients/A", json={}, timeout=T).status_code == 200
        requests.post(f"{base}/emulator/v1/clock", json={"advanceMs": 1500}, timeout=T)
        requests.post(f"{base}/clients/A:disableNetwork", timeout=T)
        events = timeline(f"{base}/clients/A/timeline")["events"]
    finally:
        stop_server(proc)
    assert [(e["kind"], e["time"]) for e in events] == [("lifecycle", "2031-05-01T10:00:00Z"), ("network", "2031-05-01T10:00:01.500Z")]
    epoch = datetime.datetime(2031, 5, 1, 10, 0, 1, 500000, tzinfo=datetime.timezone.utc).timestamp() * 1000
    assert events[1]["ms"] == epoch


def test_filters_by_kind_time_and_count(base_url, project, client_id):
    offline_story(base_url, project, client_id).close()
    url = f"{base_url}/clients/{client_id}/timeline"
    everything = timeline(url)["events"]
    networks = timeline(url, kinds="network")["events"]
    assert [e["online"] for e in networks] == [False, True]
    writes = timeline(url, kinds="writeAcknowledged,writeRejected")["events"]
    assert [e["kind"] for e in writes] == ["writeAcknowledged", "writeRejected"]
    since = timeline(url, since=networks[1]["time"])["events"]
    assert since and all(e["ms"] >= networks[1]["ms"] for e in since) and len(since) < len(everything)
    assert timeline(url, since=str(networks[1]["ms"]))["events"] == since
    until = timeline(url, until=networks[0]["time"])["events"]
    assert until and all(e["ms"] <= networks[0]["ms"] for e in until)
    assert timeline(url, limit=3)["events"] == everything[-3:]
    assert timeline(url, afterSeq=everything[-2]["seq"])["events"] == everything[-1:]


@pytest.mark.parametrize("params, message", [
    ({"kinds": "network,nosuch"}, 'Unknown timeline kind "nosuch"'),
    ({"since": "yesterday"}, "since must be an RFC 3339 time"),
    ({"limit": "-1"}, 'Invalid value for limit: "-1"'),
    ({"afterSeq": "x"}, "afterSeq must be a non-negative number"),
])
def test_bad_filters_get_a_google_error(base_url, client_id, params, message):
    requests.put(f"{base_url}/clients/{client_id}", json={}, timeout=T)
    for url in (f"{base_url}/clients/{client_id}/timeline", f"{base_url}/emulator/v1/timeline"):
        r = requests.get(url, params=params, timeout=T)
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert error["status"] == "INVALID_ARGUMENT" and message in error["message"], error


def test_an_unknown_client_has_no_timeline_and_a_deleted_one_keeps_its_own(base_url, client_id):
    r = requests.get(f"{base_url}/clients/{client_id}/timeline", timeout=T)
    assert r.status_code == 404 and r.json()["error"]["status"] == "NOT_FOUND", r.text
    listed = requests.get(f"{base_url}/clients", timeout=T).json()["clients"]
    assert client_id not in [c["id"] for c in listed], "reading a timeline makes no client"
    requests.put(f"{base_url}/clients/{client_id}", json={}, timeout=T)
    assert requests.delete(f"{base_url}/clients/{client_id}", timeout=T).status_code == 200
    body = timeline(f"{base_url}/clients/{client_id}/timeline")
    assert [e["action"] for e in body["events"]] == ["created", "deleted"] and body["lanes"][0]["closed"]


def test_the_live_timeline_replays_then_streams_each_new_step(base_url, client_id):
    requests.put(f"{base_url}/clients/{client_id}", json={}, timeout=T)
    url = f"{base_url}/clients/{client_id}/timeline"
    with SSEStream(url, headers={"Accept": "text/event-stream"}) as live:
        assert live.ok
        first = live.next(timeout=T)
        assert first.event == "timeline" and first.json()["kind"] == "lifecycle" and first.id == str(first.json()["seq"])
        requests.post(f"{base_url}/clients/{client_id}:disableNetwork", timeout=T)
        step = live.next(timeout=T)
        assert step.event == "timeline" and step.json()["kind"] == "network" and step.json()["online"] is False
    requests.post(f"{base_url}/clients/{client_id}:enableNetwork", timeout=T)
    with SSEStream(url, params={"live": "true", "kinds": "network"}, headers={"Last-Event-ID": step.id}) as resumed:
        again = resumed.next(timeout=T)
        assert again.json()["kind"] == "network" and again.json()["online"] is True, "resumes after the last id it saw"


def test_a_grpc_connection_has_a_lane_of_its_listens_snapshots_and_writes(base_url, project):
    rest_set(base_url, project, "rooms/a", {"n": {"integerValue": "1"}})
    channel = grpc.insecure_channel(host_of(base_url))
    try:
        stream = ListenStream(channel, fs.ListenRequest(database=db_name(project), add_target=query_target(project, 7)))
        stream.until_global_snapshot()
        requests_q = queue.Queue()
        requests_q.put(fs.WriteRequest(database=db_name(project)))
        call = channel.stream_stream(SERVICE + "Write", request_serializer=fs.WriteRequest.serialize,
                                     response_deserializer=fs.WriteResponse.deserialize)
        responses = call(iter(requests_q.get, None), metadata=[("authorization", "Bearer owner"),
                                                               ("google-cloud-resource-prefix", db_name(project))], timeout=20)
        handshake = next(responses)
        requests_q.put(fs.WriteRequest(stream_token=handshake.stream_token, writes=[write_types.Write(update=doc_types.Document(
            name=f"{db_name(project)}/documents/rooms/b", fields={"n": doc_types.Value(integer_value=2)}))]))
        answer = next(responses)
        stream.until_global_snapshot()
        # A unary Commit (the server SDKs' write) on the same connection.
        channel.unary_unary(SERVICE + "Commit", request_serializer=fs.CommitRequest.serialize, response_deserializer=fs.CommitResponse.deserialize)(
            fs.CommitRequest(database=db_name(project), writes=[write_types.Write(update=doc_types.Document(
                name=f"{db_name(project)}/documents/rooms/c", fields={"n": doc_types.Value(integer_value=3)}))]),
            metadata=[("authorization", "Bearer owner"), ("google-cloud-resource-prefix", db_name(project))], timeout=10)
        stream.until_global_snapshot()
        connections = requests.get(f"{base_url}/emulator/v1/connections", timeout=T).json()["connections"]
        ids = [c["id"] for c in connections if c.get("project") == project]
        assert ids, connections
        lanes = [timeline(f"{base_url}/emulator/v1/connections/{i}/timeline") for i in ids]
        events = [e for body in lanes for e in body["events"]]
        story = steps(sorted(events, key=lambda e: e["seq"]))
        assert subsequence([
            ("lifecycle", {"action": "opened"}),
            ("listenOpened", {"listener": "7", "target": "rooms"}),
            ("snapshot", {"listener": "stream", "fromCache": False, "changes": 1,
                          "changed": [{"type": "changed", "path": "rooms/a"}]}),
            ("writeSent", {"writeId": "w1", "writes": 1, "documents": ["rooms/b"]}),
            ("writeAcknowledged", {"writeId": "w1"}),
        ], story), story
        snapshots = [f for k, f in story if k == "snapshot"]
        assert [s["changed"] for s in snapshots[-2:]] == [[{"type": "changed", "path": "rooms/b"}], [{"type": "changed", "path": "rooms/c"}]]
        # A unary Commit: on the event loop's path one step at its answer (the server SDKs' hot
        # path), on the full path sent then answered.
        unary = [(k, f) for k, f in story if f.get("writeId", "").startswith("u")]
        u = unary[0][1]["writeId"]
        assert unary in ([("writeAcknowledged", {"writeId": u, "writes": 1})],
                         [("writeSent", {"writeId": u, "writes": 1, "documents": ["rooms/c"]}), ("writeAcknowledged", {"writeId": u})]), story
        acknowledged = next(e for e in events if e["kind"] == "writeAcknowledged")
        stored = requests.get(f"{base_url}/v1/{db_name(project)}/documents/rooms/b", timeout=T).json()
        assert acknowledged["commitTime"] == stored["updateTime"] and answer.commit_time
        lane = lanes[0]["lanes"][0]
        assert lane["kind"] == "connection" and lane["protocol"] == "firestore-grpc" and lane["project"] == project
        # A switch takes the connection offline: the lane says so, then that it closed.
        match = {"project": project}
        r = requests.put(f"{base_url}/emulator/v1/connections/network", json={"match": match, "online": False}, timeout=T)
        assert r.status_code == 200 and r.json()["dropped"], r.text
        requests.put(f"{base_url}/emulator/v1/connections/network", json={"match": match, "online": True}, timeout=T)
        deadline = time.time() + T
        while time.time() < deadline:
            tail = steps(timeline(f"{base_url}/emulator/v1/connections/{ids[0]}/timeline")["events"])
            if tail[-1][0] == "lifecycle":
                break
            time.sleep(0.05)
        assert ("network", {"online": False, "cause": "networkSwitch"}) in tail
        assert tail[-1][0] == "lifecycle" and tail[-1][1]["action"] == "closed", tail
        requests_q.put(None)
        stream.close()
    finally:
        channel.close()


def test_a_realtime_socket_has_a_lane_of_its_listens_writes_and_on_disconnect(base_url, namespace):
    socket = RealtimeSocket(base_url, namespace)
    assert socket.request("q", {"p": "/rooms", "h": ""})["s"] == "ok"
    assert socket.request("p", {"p": "/rooms/a", "d": {"n": 1}})["s"] == "ok"
    assert socket.request("o", {"p": "/presence/me", "d": "offline"})["s"] == "ok"
    assert socket.request("p", {"p": "/.info/x", "d": 1})["s"] != "ok"
    connections = requests.get(f"{base_url}/emulator/v1/connections", timeout=T).json()["connections"]
    (conn,) = [c for c in connections if c.get("namespace") == namespace]
    socket.close()
    url = f"{base_url}/emulator/v1/connections/{conn['id']}/timeline"
    deadline = time.time() + T
    while time.time() < deadline:
        story = steps(timeline(url)["events"])
        if ("onDisconnectRan", {"path": "/presence/me", "op": "set"}) in story:
            break
        time.sleep(0.05)
    assert subsequence([
        ("lifecycle", {"action": "opened"}),
        ("listenOpened", {"listener": "/rooms", "target": "/rooms"}),
        ("writeSent", {"writeId": "r2", "writes": 1, "documents": ["/rooms/a"]}),
        ("snapshot", {"listener": "/rooms", "changes": 1, "changed": [{"type": "changed", "path": "/rooms"}]}),
        ("writeAcknowledged", {"writeId": "r2"}),
        ("onDisconnectRegistered", {"path": "/presence/me", "op": "set"}),
        ("writeSent", {"writeId": "r4", "writes": 1, "documents": ["/.info/x"]}),
        ("lifecycle", {"action": "closed", "reason": "The client closed the connection."}),
    ], [s for s in story if s[0] != "onDisconnectRan"]), "\n".join(map(repr, story))
    assert [k for k, _ in story].count("writeRejected") == 1
    assert ("onDisconnectRan", {"path": "/presence/me", "op": "set"}) in story


def test_the_trace_holds_every_lane_and_a_reset_starts_it_afresh(tmp_path):
    proc, base = start_server()
    try:
        for name in ("A", "B"):
            assert requests.put(f"{base}/clients/{name}", json={}, timeout=T).status_code == 200
        requests.post(f"{base}/clients/B:disableNetwork", timeout=T)
        socket = RealtimeSocket(base, "ns-trace")
        trace = timeline(f"{base}/emulator/v1/timeline")
        lanes = {lane["id"]: lane for lane in trace["lanes"]}
        assert set(lanes) == {"client:A", "client:B", f"connection:{socket_id(base)}"}
        assert [(e["lane"], e["kind"]) for e in trace["events"]] == [
            ("client:A", "lifecycle"), ("client:B", "lifecycle"), ("client:B", "network"), (f"connection:{socket_id(base)}", "lifecycle")]
        narrowed = timeline(f"{base}/emulator/v1/timeline", lanes="client:B")
        assert [lane["id"] for lane in narrowed["lanes"]] == ["client:B"] and len(narrowed["events"]) == 2
        assert requests.post(f"{base}/emulator/v1/reset", timeout=T).status_code == 200
        socket.wait_closed()
        after = timeline(f"{base}/emulator/v1/timeline")
        # Only the socket the reset closed may still say so, as its close lands after the reset.
        assert not [lane for lane in after["lanes"] if lane["kind"] == "client"], after
        assert all(e["kind"] == "lifecycle" and e["action"] == "closed" for e in after["events"]), after
    finally:
        stop_server(proc)


def socket_id(base):
    (conn,) = requests.get(f"{base}/emulator/v1/connections", timeout=T).json()["connections"]
    return conn["id"]
