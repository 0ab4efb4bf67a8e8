"""Edge clients on the tree, end to end over HTTP + SSE: offline queries exactly as the SDK answers
them, presence with two clients, onDisconnect on every kind of drop, keepSynced, the write queue
through restarts, gates, declarative transactions, auth and `.info`.

Synchronisation is by the client's `gates:sync` marker (a `sync` event once everything the backend
sent is applied) or by waiting for an expected event; never by sleeping.
"""
import time
import uuid

import pytest
import requests

from conftest import start_server, stop_server
from sse import SSEStream, SSETimeout

TIMEOUT = 10
BY_VALUE = {"orderBy": '"$value"'}


class TreeClient:
    """One edge client on a fresh namespace, with helpers for its tree URLs."""

    def __init__(self, base, namespace, name="c", **settings):
        self.base = base
        self.ns = namespace
        self.id = f"{name}-{uuid.uuid4().hex[:8]}"
        self.url = f"{base}/clients/{self.id}"
        r = requests.put(self.url, json={"namespace": namespace, **settings})
        assert r.status_code == 200, r.text

    def at(self, path):
        return f"{self.url}/{path}.json"

    def stream(self, path, **params):
        return SSEStream(self.at(path), params=params or None)

    def post(self, verb, body=None):
        r = requests.post(f"{self.url}:{verb}", json=body if body is not None else {})
        assert r.status_code == 200, r.text
        return r.json()

    def sync(self, stream):
        """Events of `stream` up to the client's sync marker (everything applied so far)."""
        token = uuid.uuid4().hex
        assert requests.post(f"{self.url}/gates:sync", json={"token": token}).status_code == 200
        events, _ = stream.read_until(lambda e: e.event == "sync" and e.json()["token"] == token, timeout=TIMEOUT)
        return [e for e in events if not e.is_comment]

    def state(self):
        return requests.get(self.url).json()


def server_value(base, ns, path):
    return requests.get(f"{base}/{path}.json", params={"ns": ns}).json()


def events_of(events):
    return [(e.event, e.json().get("key"), e.json().get("value"), e.json().get("previousChildKey")) for e in events]


def wait_for_value(base, ns, path, expected, timeout=TIMEOUT):
    """Bounded wait for the server to hold `expected` at `path` (onDisconnect runs on the server)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        current = server_value(base, ns, path)
        if current == expected:
            return
        time.sleep(0.02)
    assert server_value(base, ns, path) == expected


# -- offline queries --------------------------------------------------------------------------


def test_the_seed_offline_query_example_holds_exactly(base_url, namespace):
    requests.put(f"{base_url}/scores.json", params={"ns": namespace}, json={"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6})
    c = TreeClient(base_url, namespace)
    with c.stream("scores", **BY_VALUE, limitToLast="4") as s:
        events, _ = s.read_until(lambda e: e.event == "value", timeout=TIMEOUT)
        assert [k for (t, k, _, _) in events_of(events) if t == "child_added"] == ["c", "d", "e", "f"]
    c.post("disableNetwork")
    assert c.post("restart") == {"lostWrites": 0}

    with c.stream("scores", **BY_VALUE, limitToLast="2") as last2:
        assert events_of(c.sync(last2)) == [
            ("child_added", "e", 5, None), ("child_added", "f", 6, "e")]  # and no value

    with c.stream("scores", **BY_VALUE, limitToLast="6") as last6:
        assert events_of(c.sync(last6)) == [
            ("child_added", "c", 3, None), ("child_added", "d", 4, "c"),
            ("child_added", "e", 5, "d"), ("child_added", "f", 6, "e")]
        c.post("enableNetwork")
        events, value = last6.read_until(lambda e: e.event == "value", timeout=TIMEOUT)
        assert events_of([e for e in events if not e.is_comment] + [value]) == [
            ("child_added", "a", 1, None), ("child_added", "b", 2, "a"),
            ("value", "scores", {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6}, None)]


def test_offline_reads_answer_what_the_cache_knows(base_url, namespace):
    requests.put(f"{base_url}/room.json", params={"ns": namespace}, json={"x": 1, "y": {"z": 2}})
    c = TreeClient(base_url, namespace)
    assert requests.get(c.at("room/y")).json() == {"z": 2}  # read online: cached as complete
    c.post("disableNetwork")
    r = requests.get(c.at("room/y"))
    assert r.status_code == 200 and r.json() == {"z": 2}
    assert r.headers["Firegate-From-Cache"] == "true" and r.headers["Firegate-Complete"] == "true"
    r = requests.get(c.at("room/x"))
    assert r.status_code == 503 and "client offline" in r.json()["error"]
    # An offline set makes the location complete locally.
    assert requests.put(c.at("room/x"), json=7).status_code == 200
    r = requests.get(c.at("room/x"))
    assert r.json() == 7 and r.headers["Firegate-Has-Pending-Writes"] == "true"


# -- presence and onDisconnect -----------------------------------------------------------------


def test_presence_recipe_end_to_end_with_two_clients(base_url, namespace):
    app = TreeClient(base_url, namespace, "app")
    watcher = TreeClient(base_url, namespace, "watcher")
    with watcher.stream("users/u") as observer, app.stream(".info/connected") as connected:
        first = connected.next(timeout=TIMEOUT)
        assert (first.event, first.json()["value"]) == ("value", True)
        # The recipe: on connected, push a connection removed on disconnect, stamp lastOnline.
        key = requests.post(app.at("users/u/connections"), json=True).json()["name"]
        r = requests.post(f"{app.url}/onDisconnect", json={"path": f"users/u/connections/{key}", "op": "remove"})
        assert r.json()["state"] == "registered"
        requests.post(f"{app.url}/onDisconnect", json={"path": "users/u/lastOnline", "op": "set", "value": {".sv": "timestamp"}})
        observer.read_until(lambda e: e.event == "value" and e.json()["value"] == {"connections": {key: True}}, timeout=TIMEOUT)

        before = int(time.time() * 1000)
        app.post("disableNetwork")
        flip = connected.next(timeout=TIMEOUT)
        assert (flip.event, flip.json()["value"]) == ("value", False)
        events, last = observer.read_until(lambda e: e.event == "value" and "lastOnline" in (e.json()["value"] or {}), timeout=TIMEOUT)
        kinds = [(e.event, e.json()["key"]) for e in events if not e.is_comment]
        assert ("child_removed", "connections") in kinds
        assert last.json()["value"]["lastOnline"] >= before - 1000
    assert server_value(base_url, namespace, "users/u") == {"lastOnline": last.json()["value"]["lastOnline"]}


DROPS = ["disableNetwork", "networkConditions", "restart", "terminate", "delete"]


@pytest.mark.parametrize("drop", DROPS)
def test_on_disconnect_runs_once_on_every_kind_of_drop(base_url, namespace, drop):
    c = TreeClient(base_url, namespace)
    requests.put(c.at("status"), params={"waitFor": "ack"}, json="online")
    r = requests.post(f"{c.url}/onDisconnect", json={"path": "status", "op": "set", "value": "offline"})
    assert r.status_code == 200 and r.json()["state"] == "registered"
    if drop == "networkConditions":
        assert requests.put(f"{c.url}/network", json={"online": False}).status_code == 200
    elif drop == "delete":
        assert requests.delete(c.url).status_code == 200
    else:
        c.post(drop)
    wait_for_value(base_url, namespace, "status", "offline")
    # Not re-registered: the next drop leaves the value alone.
    requests.put(f"{base_url}/status.json", params={"ns": namespace}, json="back")
    if drop in ("disableNetwork", "networkConditions"):
        requests.put(f"{c.url}/network", json={"online": True})
        c.post("disableNetwork")
    elif drop in ("restart", "terminate"):
        c.post("restart")
        requests.get(c.at(".info/connected"))
        c.post("restart")
    assert requests.get(f"{c.url}").status_code == 200
    assert server_value(base_url, namespace, "status") == "back"


def test_on_disconnect_registered_offline_is_sent_on_reconnect_and_cancel_covers_a_subtree(base_url, namespace):
    c = TreeClient(base_url, namespace)
    requests.get(c.at(".info/connected"))
    c.post("disableNetwork")
    r = requests.post(f"{c.url}/onDisconnect", json={"path": "a/b", "op": "update", "value": {"x": 1, "y/z": 2}})
    assert r.json()["state"] == "queued"
    requests.post(f"{c.url}/onDisconnect", json={"path": "keep", "op": "set", "value": {".sv": {"increment": 1}}})
    c.post("disableNetwork")  # already offline: nothing queued runs
    assert server_value(base_url, namespace, "a") is None
    c.post("enableNetwork")
    assert [op["state"] for op in c.state()["tree"]["onDisconnect"]] == ["registered", "registered"]
    r = requests.delete(f"{c.url}/onDisconnect", params={"path": "a"})
    assert r.json() == {"cancelled": 1}
    c.post("disableNetwork")
    wait_for_value(base_url, namespace, "keep", 1)
    assert server_value(base_url, namespace, "a") is None


def test_on_disconnect_runs_when_the_heartbeat_times_out(tmp_path):
    proc, base = start_server()
    try:
        ns = "hb"
        c = TreeClient(base, ns, heartbeatTimeoutMs=5000)
        requests.post(f"{c.url}/onDisconnect", json={"path": "seen", "op": "set", "value": "gone"})
        assert requests.post(f"{base}/emulator/v1/clock", json={"advanceMs": 4000}).status_code == 200
        assert server_value(base, ns, "seen") is None  # still within the timeout
        requests.post(f"{base}/emulator/v1/clock", json={"advanceMs": 2000})
        wait_for_value(base, ns, "seen", "gone")
        assert c.state()["tree"]["connected"] is False  # the harness's own calls are not the app's
        assert requests.get(c.at(".info/connected")).json() is True  # a call from the app reconnects it
    finally:
        stop_server(proc)


def test_the_heartbeat_counts_silence_from_the_moment_the_last_stream_closed(tmp_path):
    # docs/edge-clients.md: "without a call from the app" for heartbeatTimeoutMs — an open stream is activity
    # until it closes. The server clock is advanced by hand, so every step is exact.
    proc, base = start_server()
    try:
        ns = "hb-stream"
        c = TreeClient(base, ns, heartbeatTimeoutMs=5000)
        requests.post(f"{c.url}/onDisconnect", json={"path": "seen", "op": "set", "value": "gone"})
        advance = lambda ms: requests.post(f"{base}/emulator/v1/clock", json={"advanceMs": ms})
        with c.stream("anything") as s:
            c.sync(s)
            for _ in range(2):
                advance(5000)  # the stream keeps the connection alive through two timeouts
                time.sleep(0.2)
            advance(2500)
            time.sleep(0.2)
        time.sleep(0.3)  # the stream closed 12.5 s in: silence counts from here
        advance(2500)
        time.sleep(0.5)
        assert server_value(base, ns, "seen") is None, "ran 2.5 s after the stream closed"
        assert c.state()["tree"]["connected"] is True
        advance(2600)
        wait_for_value(base, ns, "seen", "gone")
    finally:
        stop_server(proc)


def test_on_disconnect_bad_input_is_a_clear_400(base_url, namespace):
    c = TreeClient(base_url, namespace)
    for body, text in [({"path": "a", "op": "explode"}, "op must be"), ({"path": "a", "op": "set"}, "needs a value"),
                       ({"path": ".info/x", "op": "remove"}, ".info"), ({"path": "a$b", "op": "remove"}, "Invalid"),
                       ({"path": "a", "op": "update", "value": 3}, "update needs")]:
        r = requests.post(f"{c.url}/onDisconnect", json=body)
        assert r.status_code == 400, (body, r.text)
        assert text in r.json()["error"]["message"], r.text


# -- keepSynced, writes, gates ---------------------------------------------------------------


def test_keep_synced_follows_a_location_with_no_listener(base_url, namespace):
    requests.put(f"{base_url}/config.json", params={"ns": namespace}, json={"v": 1})
    c = TreeClient(base_url, namespace)
    r = requests.post(f"{c.url}/keepSynced", json={"path": "config", "enabled": True})
    assert r.status_code == 200
    requests.put(f"{base_url}/config/v.json", params={"ns": namespace}, json=2)
    with c.stream(".info/connected") as s:
        c.sync(s)
    assert c.state()["tree"]["keepSynced"] == ["/config"]
    c.post("disableNetwork")
    r = requests.get(c.at("config"))
    assert r.json() == {"v": 2} and r.headers["Firegate-Complete"] == "true"


def test_the_write_queue_survives_restart_and_flushes_in_order(base_url, namespace):
    c = TreeClient(base_url, namespace)
    c.post("disableNetwork")
    assert requests.put(c.at("q/a"), json=1).headers["Firegate-Write-State"] == "pending"
    requests.patch(c.at("q"), json={"b": 2, "c/d": 3})
    key = requests.post(c.at("q/list"), json="x").json()["name"]
    assert [w["path"] for w in requests.get(f"{c.url}/pendingWrites").json()["treeWrites"]] == ["/q/a", "/q", f"/q/list/{key}"]
    assert c.post("restart") == {"lostWrites": 0}
    assert requests.get(c.at("q")).json() == {"a": 1, "b": 2, "c": {"d": 3}, "list": {key: "x"}}
    c.post("enableNetwork")
    r = requests.put(c.at("q/e"), params={"waitFor": "ack"}, json=True)
    assert r.status_code == 200 and r.headers["Firegate-Write-State"] == "acknowledged"
    assert server_value(base_url, namespace, "q") == {"a": 1, "b": 2, "c": {"d": 3}, "e": True, "list": {key: "x"}}


def test_a_memory_client_loses_its_queue_on_restart(base_url, namespace):
    c = TreeClient(base_url, namespace, persistence="memory")
    c.post("disableNetwork")
    requests.put(c.at("lost"), json=1)
    assert c.post("restart") == {"lostWrites": 1}
    c.post("enableNetwork")
    requests.put(c.at("after"), params={"waitFor": "ack"}, json=1)
    assert server_value(base_url, namespace, "lost") is None


def test_queued_writes_survive_a_server_restart(tmp_path):
    proc, base = start_server(data_dir=tmp_path)
    ns = "restart"
    try:
        c = TreeClient(base, ns)
        c.post("disableNetwork")
        requests.put(c.at("kept"), json={"n": {".sv": {"increment": 5}}})
    finally:
        stop_server(proc)
    proc, base = start_server(data_dir=tmp_path)
    try:
        url = f"{base}/clients/{c.id}"
        assert requests.get(f"{url}/pendingWrites").json()["treeWrites"][0]["path"] == "/kept"
        requests.post(f"{url}:enableNetwork")
        wait_for_value(base, ns, "kept", {"n": 5})
    finally:
        stop_server(proc)


def test_gates_hold_tree_writes_and_watch(base_url, namespace):
    c = TreeClient(base_url, namespace)
    with c.stream("g") as s:
        c.sync(s)
        requests.put(f"{c.url}/gates", json={"holdWrites": True, "holdWatch": True})
        r = requests.put(c.at("g/mine"), json=1)
        write_id = r.headers["Firegate-Write-Id"]
        assert events_of(c.sync(s)) == [("child_added", "mine", 1, None), ("value", "g", {"mine": 1}, None)]
        assert server_value(base_url, namespace, "g") is None
        released = requests.post(f"{c.url}/gates:releaseWrite", json={"count": 1}).json()["released"]
        assert [(w["id"], w["state"]) for w in released] == [(write_id, "acknowledged")]
        requests.put(f"{base_url}/g/theirs.json", params={"ns": namespace}, json=2)
        assert events_of(c.sync(s)) == []  # the watch gate holds the server's data
        requests.post(f"{c.url}/gates:releaseWatch")
        assert events_of(c.sync(s)) == [("child_added", "theirs", 2, "mine"), ("value", "g", {"mine": 1, "theirs": 2}, None)]
        requests.put(f"{c.url}/gates", json={"holdWatch": False})
        requests.put(c.at("g/denied"), json=3)
        assert events_of(c.sync(s))[0] == ("child_added", "denied", 3, None)
        released = requests.post(f"{c.url}/gates:releaseWrite", json={"fail": "PERMISSION_DENIED"}).json()["released"]
        assert released[0]["state"] == "rejected"
        assert events_of(c.sync(s)) == [("child_removed", "denied", 3, None), ("value", "g", {"mine": 1, "theirs": 2}, None)]


def test_event_types_can_be_selected(base_url, namespace):
    c = TreeClient(base_url, namespace)
    with c.stream("sel", events="child_added") as s:
        requests.put(c.at("sel/a"), json=1)
        requests.put(c.at("sel/a"), json=2)
        assert [e.event for e in c.sync(s)] == ["child_added"]
    assert requests.get(c.at("sel"), headers={"Accept": "text/event-stream"}, params={"events": "boom"}).status_code == 400


# -- transactions, auth, .info ----------------------------------------------------------------


def test_declarative_transactions(base_url, namespace):
    requests.put(f"{base_url}/t.json", params={"ns": namespace}, json={"n": 10, "name": "x"})
    c = TreeClient(base_url, namespace)
    c.post("disableNetwork")
    for _ in range(3):
        assert requests.post(f"{c.url}/transaction", json={"path": "t/n", "increment": 1}).status_code == 200
    assert len(requests.get(f"{c.url}/pendingWrites").json()["treeWrites"]) == 3
    c.post("enableNetwork")
    r = requests.post(f"{c.url}/transaction", params={"waitFor": "ack"}, json={"path": "t/n", "max": 100})
    assert r.json() == {"committed": True, "value": 100}
    assert server_value(base_url, namespace, "t/n") == 100
    # Nothing cached at t/name: the first run sees null and aborts at once, as the SDK's does.
    r = requests.post(f"{c.url}/transaction", params={"waitFor": "ack"}, json={"path": "t/name", "compareAndSet": {"expect": "x", "set": "z"}})
    assert r.json() == {"committed": False, "value": None}
    assert requests.get(c.at("t/name")).json() == "x"  # now cached
    r = requests.post(f"{c.url}/transaction", params={"waitFor": "ack"}, json={"path": "t/name", "compareAndSet": {"expect": "x", "set": "z"}})
    assert r.json() == {"committed": True, "value": "z"}
    r = requests.post(f"{c.url}/transaction", params={"waitFor": "ack"}, json={"path": "t/name", "compareAndSet": {"expect": "z", "set": "q"}})
    assert r.json() == {"committed": True, "value": "q"}
    r = requests.post(f"{c.url}/transaction", params={"waitFor": "ack"}, json={"path": "t/list", "append": {"v": 1}})
    assert list(r.json()["value"].values()) == [{"v": 1}]
    r = requests.post(f"{c.url}/transaction", params={"waitFor": "ack"}, json={"path": "t/name", "setIfAbsent": "w"})
    assert r.json()["committed"] is False
    r = requests.post(f"{c.url}/transaction", json={"path": "t/n", "increment": 1, "max": 3})
    assert r.status_code == 400 and "exactly one" in r.json()["error"]["message"]


def test_an_expired_token_pauses_writes_until_reauth(base_url, namespace):
    c = TreeClient(base_url, namespace)
    r = requests.put(f"{c.url}/auth", json={"uid": "alice", "token": "t1", "expiresAt": 1000})
    assert r.json()["writesPaused"] is True and c.state()["auth"]["uid"] == "alice"
    requests.put(c.at("paused"), json=1)
    assert len(requests.get(f"{c.url}/pendingWrites").json()["treeWrites"]) == 1
    requests.put(f"{c.url}/auth", json={"uid": "alice", "token": "t2", "expiresAt": int(time.time() * 1000) + 3_600_000})
    wait_for_value(base_url, namespace, "paused", 1)
    assert requests.put(f"{c.url}/auth", json={"uid": 5}).status_code == 400


def test_info_paths_are_per_client_and_read_only(base_url, namespace):
    # The client's clock runs 1.5 s behind the server's: serverTimeOffset is the handshake's
    # `ts` − local now = +1500 (docs/wire/realtime-database.md, `.info`).
    c = TreeClient(base_url, namespace, clockOffsetMs=-1500)
    assert requests.get(c.at(".info/serverTimeOffset")).json() == 1500
    assert requests.get(c.at(".info/connected")).json() is True
    c.post("disableNetwork")
    assert requests.get(c.at(".info/connected")).json() is False
    r = requests.put(c.at(".info/connected"), json=True)
    assert r.status_code == 400 and ".info" in r.json()["error"]


def test_an_offline_server_timestamp_is_local_time_plus_the_server_time_offset(base_url, namespace):
    # The SDK resolves {".sv":"timestamp"} written offline to local now + serverTimeOffset, its
    # estimate of the server's clock (docs/wire/realtime-database.md, Server values): with the client an hour ahead, that is
    # still the server's time, not an hour in the future.
    hour = 3_600_000
    c = TreeClient(base_url, namespace, clockOffsetMs=hour)
    assert requests.get(c.at(".info/serverTimeOffset")).json() == -hour
    c.post("disableNetwork")
    server_before = requests.get(f"{base_url}/emulator/v1/clock").json()["epochMs"]
    assert requests.put(c.at("stamped"), json={".sv": "timestamp"}).status_code == 200
    local = requests.get(c.at("stamped")).json()
    server_after = requests.get(f"{base_url}/emulator/v1/clock").json()["epochMs"]
    assert server_before - 1000 <= local <= server_after + 1000, (server_before, local, server_after)


def test_the_tree_cache_is_pruned_to_its_size_least_recently_used_first(base_url, namespace):
    blob = {f"k{i:03d}": "x" * 1000 for i in range(450)}  # ~450 KiB per location
    for name in ("a", "b", "c"):
        requests.put(f"{base_url}/big/{name}.json", params={"ns": namespace}, json=blob)
    c = TreeClient(base_url, namespace, treeCacheSizeBytes=1024 * 1024)
    assert requests.get(c.at("big/a")).status_code == 200  # read first: least recently used
    assert requests.get(c.at("big/b")).status_code == 200
    requests.post(f"{c.url}/keepSynced", json={"path": "big/c", "enabled": True})
    with c.stream(".info/connected") as s:
        c.sync(s)
    tree = requests.post(f"{c.url}:collectGarbage", json={}).json()["tree"]
    assert tree["queriesPruned"] == 1 and tree["bytesBefore"] > 1024 * 1024 >= tree["bytesAfter"], tree
    c.post("disableNetwork")
    assert requests.get(c.at("big/a")).status_code == 503
    assert requests.get(c.at("big/b")).json() == blob
    assert requests.get(c.at("big/c")).json() == blob  # kept synced: never pruned
    r = requests.put(c.url, json={"treeCacheSizeBytes": 1000})
    assert r.status_code == 400 and "at least 1MB" in r.json()["error"]["message"]


def test_on_disconnect_runs_before_what_the_client_sends_after_reconnecting(base_url, namespace):
    c = TreeClient(base_url, namespace)
    requests.post(f"{c.url}/onDisconnect", json={"path": "seat", "op": "set", "value": "released"})
    c.post("disableNetwork")
    requests.put(c.at("seat"), json="taken again")  # queued while offline
    c.post("enableNetwork")
    r = requests.put(c.at("done"), params={"waitFor": "ack"}, json=True)
    assert r.headers["Firegate-Write-State"] == "acknowledged"
    assert server_value(base_url, namespace, "seat") == "taken again"


def test_auth_is_kept_across_restart_with_persistence(base_url, namespace):
    c = TreeClient(base_url, namespace)
    requests.put(f"{c.url}/auth", json={"uid": "bob", "token": "t", "expiresAt": int(time.time() * 1000) + 3_600_000})
    c.post("restart")
    assert c.state()["auth"]["uid"] == "bob"
    m = TreeClient(base_url, namespace, persistence="memory")
    requests.put(f"{m.url}/auth", json={"uid": "eve"})
    assert c.state()["auth"]["writesPaused"] is False
    assert requests.put(f"{m.url}/auth", json={}).json()["uid"] is None


def test_the_tree_cache_is_checked_after_a_thousand_server_writes(base_url, namespace):
    blob = {f"k{i:03d}": "x" * 1000 for i in range(450)}
    for name in ("a", "b", "c"):
        requests.put(f"{base_url}/big/{name}.json", params={"ns": namespace}, json=blob)
    c = TreeClient(base_url, namespace, treeCacheSizeBytes=1024 * 1024)
    for name in ("a", "b", "c"):
        assert requests.get(c.at(f"big/{name}")).status_code == 200
    assert c.state()["tree"]["cache"]["trackedQueries"] == 3  # over its size: nothing checks yet
    with c.stream("tick", events="value") as s, requests.Session() as session:
        for i in range(1001):
            session.put(f"{base_url}/tick.json", params={"ns": namespace}, json=i)
        c.sync(s)
    state = c.state()["tree"]["cache"]
    assert state["bytes"] <= 1024 * 1024 < 3 * 450_000, state
    c.post("disableNetwork")
    assert requests.get(c.at("big/a")).status_code == 503  # least recently used went first
    assert requests.get(c.at("big/c")).status_code == 200


def test_an_archive_carries_each_clients_tree_cache_queue_and_user(tmp_path):
    proc, base = start_server(data_dir=tmp_path)
    try:
        ns = "arch"
        requests.put(f"{base}/room.json", params={"ns": ns}, json={"x": 1})
        c = TreeClient(base, ns)
        assert requests.get(c.at("room")).json() == {"x": 1}
        requests.put(f"{c.url}/auth", json={"uid": "ann"})
        c.post("disableNetwork")
        requests.put(c.at("room/y"), json=2)
        archive = requests.post(f"{base}/emulator/v1/export", json={"clients": True}).json()
        r = requests.post(f"{base}/emulator/v1/import", json=archive, headers={"Content-Type": "application/json"})
        assert r.status_code == 200, r.text
        state = c.state()
        assert state["tree"]["pendingWrites"] == 1 and state["auth"]["uid"] == "ann" and state["network"]["online"] is False
        r = requests.get(c.at("room"))
        assert r.json() == {"x": 1, "y": 2} and r.headers["Firegate-From-Cache"] == "true"
        c.post("enableNetwork")
        wait_for_value(base, ns, "room", {"x": 1, "y": 2})
        archive["clients"][0]["tree"]["writes"] = [{"id": 1, "path": "a"}]
        r = requests.post(f"{base}/emulator/v1/import", json=archive)
        assert r.status_code == 400 and "tree.writes[0]" in r.json()["error"]["message"], r.text
    finally:
        stop_server(proc)
