"""The Realtime Database over WebSocket (docs/tree.md), with our own protocol client
(rtdb_socket.py, written from the protocol as docs/tree.md describes it): every request and push,
the framing, hashes, tagged queries, server values, onDisconnect on each kind of drop, auth,
and one engine with REST, SSE and edge clients.
"""
import base64
import json
import time

import pytest
import requests

from conftest import start_server, stop_server
from rtdb_socket import RealtimeSocket, SocketClosed, sdk_hash
from sse import SSEStream

TIMEOUT = 10


def rest(base, ns, path, **params):
    return requests.get(f"{base}/{path}.json", params={"ns": ns, **params}).json()


def wait_rest(base, ns, path, expected, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if rest(base, ns, path) == expected:
            return
        time.sleep(0.02)
    assert rest(base, ns, path) == expected


def jwt(claims):
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


def connection(base, conn_id):
    return requests.get(f"{base}/emulator/v1/connections/{conn_id}").json()


def conn_id_of(sock):
    return sock.hello["s"].split("-")[0]


@pytest.fixture
def sock(base_url, namespace):
    s = RealtimeSocket(base_url, namespace)
    yield s
    s.close()


# -- hello, ping, stats -------------------------------------------------------------------------
def test_the_hello_comes_first_with_server_time_version_host_and_session(base_url, namespace):
    before = int(time.time() * 1000)
    s = RealtimeSocket(base_url, namespace)
    hello = s.hello
    assert hello["v"] == "5" and hello["h"] == base_url.split("://")[1]
    assert abs(hello["ts"] - before) < 5000
    assert hello["s"] and connection(base_url, conn_id_of(s))["protocol"] == "rtdb-websocket"
    assert s.ping() == ("o", None)
    assert s.request("s", {"c": {"sdk.js.12-18-0": 1}}) == {"s": "ok", "d": ""}
    s.close()


def test_every_request_gets_exactly_one_reply(sock):
    requests_ = [("s", {"c": {}}), ("q", {"p": "/a", "h": ""}), ("n", {"p": "/a"}), ("p", {"p": "/a", "d": 1}),
                 ("m", {"p": "/b", "d": {"x": 1}}), ("o", {"p": "/c", "d": 1}), ("om", {"p": "/c", "d": {"y": 2}}),
                 ("oc", {"p": "/c", "d": None}), ("g", {"p": "/a"}), ("auth", {"cred": jwt({"sub": "u1"})}),
                 ("unauth", {}), ("gauth", {"cred": "owner"}), ("appcheck", {"token": "t"}), ("unappeck", {}),
                 ("nope", {}), ("p", {"p": "/bad.key", "d": 1})]
    numbers = [sock.send_request(a, b) for a, b in requests_]
    for r in numbers:
        sock.wait_reply(r)
    # Read a little longer: nothing is answered twice (pump asserts it).
    sock.ping()
    statuses = [sock.replies[r]["s"] for r in numbers]
    assert statuses[:-2] == ["ok"] * (len(requests_) - 2)
    assert statuses[-2:] == ["failure", "failure"]
    assert sock.replies[numbers[-2]]["d"] == 'Unknown action "nope".'
    assert sock.replies[numbers[8]]["d"] == 1  # the get
    replies_in_order = [entry[1] for entry in sock.log if entry[0] == "reply"]
    assert replies_in_order == numbers


# -- listens, pushes, order -----------------------------------------------------------------------
def test_a_listen_gets_its_data_pushed_before_its_reply_and_later_changes_as_pushes(base_url, namespace, sock):
    requests.put(f"{base_url}/room.json", params={"ns": namespace}, json={"a": 1, "b": {"c": 2}})
    assert sock.listen("/room") == {"s": "ok", "d": {}}
    kinds = [entry[0] for entry in sock.log]
    assert kinds == ["push", "reply"]
    assert sock.pushes[0] == ("d", {"p": "room", "d": {"a": 1, "b": {"c": 2}}})
    requests.patch(f"{base_url}/room.json", params={"ns": namespace}, json={"a": 5, "b/c": 3})
    assert sock.wait_push(lambda a, b: a == "m") == ("m", {"p": "room", "d": {"a": 5, "b/c": 3}})
    requests.delete(f"{base_url}/room/b.json", params={"ns": namespace})
    assert sock.wait_push(lambda a, b: b["p"] == "room/b") == ("d", {"p": "room/b", "d": None})
    assert sock.request("n", {"p": "/room"})["s"] == "ok"
    requests.put(f"{base_url}/room/z.json", params={"ns": namespace}, json=1)
    sock.ping()
    assert not any(b["p"] == "room/z" for _, b in sock.pushes)


def test_a_write_reaches_the_writers_own_listen_before_its_reply_and_others_after(base_url, namespace):
    a, b = RealtimeSocket(base_url, namespace), RealtimeSocket(base_url, namespace)
    a.listen("/chat")
    b.listen("/chat")
    r = a.send_request("p", {"p": "/chat/m1", "d": {"text": "hi"}})
    a.wait_reply(r)
    push_index = next(i for i, e in enumerate(a.log) if e[0] == "push" and e[2]["p"] == "chat/m1")
    reply_index = next(i for i, e in enumerate(a.log) if e[0] == "reply" and e[1] == r)
    assert push_index < reply_index
    assert b.wait_push(lambda act, body: body["p"] == "chat/m1") == ("d", {"p": "chat/m1", "d": {"text": "hi"}})
    assert rest(base_url, namespace, "chat") == {"m1": {"text": "hi"}}
    a.close(), b.close()


def test_the_listen_hash_is_not_needed_data_is_always_sent(base_url, namespace, sock):
    requests.put(f"{base_url}/h.json", params={"ns": namespace}, json={"x": 1})
    sock.listen("/h", h=sdk_hash({"x": 1}))
    assert sock.pushes[-1] == ("d", {"p": "h", "d": {"x": 1}})


def test_get_answers_the_value_and_a_query_result(base_url, namespace, sock):
    requests.put(f"{base_url}/s.json", params={"ns": namespace}, json={"a": 3, "b": 1, "c": 2})
    assert sock.request("g", {"p": "/s"}) == {"s": "ok", "d": {"a": 3, "b": 1, "c": 2}}
    assert sock.request("g", {"p": "/s", "q": {"i": ".value", "l": 2, "vf": "l"}}) == {"s": "ok", "d": {"b": 1, "c": 2}}
    assert sock.request("g", {"p": "/missing"}) == {"s": "ok", "d": None}


# -- tagged queries ------------------------------------------------------------------------------
def test_a_tagged_query_gets_its_window_with_its_tag_and_the_changes_to_it(base_url, namespace, sock):
    requests.put(f"{base_url}/scores.json", params={"ns": namespace}, json={"a": 5, "b": 1, "c": 3, "d": 9})
    q = {"i": ".value", "l": 2, "vf": "r"}  # limitToLast(2) by value
    assert sock.listen("/scores", query=q, tag=7)["s"] == "ok"
    assert sock.pushes[-1] == ("d", {"p": "scores", "d": {"a": 5, "d": 9}, "t": 7})
    requests.put(f"{base_url}/scores/b.json", params={"ns": namespace}, json=20)
    action, body = sock.wait_push(lambda a, b: b.get("t") == 7 and a == "m")
    assert body == {"p": "scores", "d": {"a": None, "b": 20}, "t": 7}
    requests.put(f"{base_url}/scores/c.json", params={"ns": namespace}, json=4)  # outside the window
    requests.put(f"{base_url}/scores/d.json", params={"ns": namespace}, json=10)
    assert sock.wait_push(lambda a, b: b["p"] == "scores/d") == ("d", {"p": "scores/d", "d": 10, "t": 7})
    assert not any(b["p"] == "scores/c" for _, b in sock.pushes)
    # A range: startAt(4) by value, with the SDK's [MIN_NAME].
    assert sock.listen("/scores", query={"i": ".value", "sp": 4, "sn": "[MIN_NAME]", "sin": True}, tag=8)["s"] == "ok"
    assert sock.pushes[-1] == ("d", {"p": "scores", "d": {"a": 5, "b": 20, "c": 4, "d": 10}, "t": 8})
    # startAfter(5) ([MAX_NAME], exclusive) and an end.
    assert sock.listen("/scores", query={"i": ".value", "sp": 5, "sn": "[MAX_NAME]", "sin": False, "ep": 15}, tag=9)["s"] == "ok"
    assert sock.pushes[-1] == ("d", {"p": "scores", "d": {"d": 10}, "t": 9})
    assert sock.request("n", {"p": "/scores", "q": q, "t": 7})["s"] == "ok"
    assert connection(base_url, conn_id_of(sock))["listens"] == 2


def test_many_listens_on_one_socket_are_kept_apart(base_url, namespace, sock):
    for i in range(40):
        assert sock.listen(f"/many/{i}")["s"] == "ok"
    for i in range(0, 40, 2):
        assert sock.request("n", {"p": f"/many/{i}"})["s"] == "ok"
    assert connection(base_url, conn_id_of(sock))["listens"] == 20
    for i in range(40):
        requests.put(f"{base_url}/many/{i}.json", params={"ns": namespace}, json=i)
    sock.wait_push(lambda a, b: b["p"] == "many/39" and b["d"] == 39)
    sock.ping()
    got = sorted(b["d"] for a, b in sock.pushes if b["d"] is not None)
    assert got == list(range(1, 40, 2))


def test_bad_query_objects_are_refused_with_a_reply(sock):
    for q in [{"l": -1}, {"i": 5}, {"sp": {"x": 1}}, {"zz": 1}, {"i": ".key", "sp": 3}, {"vf": "x", "l": 1}]:
        reply = sock.listen("/a", query=q, tag=1)
        assert reply["s"] == "failure" and reply["d"], q


# -- writes ---------------------------------------------------------------------------------------
def test_put_merge_server_values_and_priorities(base_url, namespace, sock):
    assert sock.put("/t", {"at": {".sv": "timestamp"}, "n": 5})["s"] == "ok"
    stored = rest(base_url, namespace, "t")
    assert abs(stored["at"] - int(time.time() * 1000)) < 5000
    assert sock.request("m", {"p": "/t", "d": {"n": {".sv": {"increment": 2}}, "deep/er": "x"}})["s"] == "ok"
    assert rest(base_url, namespace, "t/n") == 7 and rest(base_url, namespace, "t/deep") == {"er": "x"}
    assert sock.put("/prio", {"a": {".value": 1, ".priority": 5}, ".priority": "p"})["s"] == "ok"
    assert rest(base_url, namespace, "prio", format="export") == {"a": {".value": 1, ".priority": 5}, ".priority": "p"}
    sock.listen("/prio")
    assert sock.pushes[-1] == ("d", {"p": "prio", "d": {"a": {".value": 1, ".priority": 5}, ".priority": "p"}})
    assert sock.put("/prio/.priority", 9)["s"] == "ok"
    assert rest(base_url, namespace, "prio/.priority") == 9


def test_a_put_with_the_current_hash_is_written_and_a_stale_one_is_datastale(base_url, namespace, sock):
    requests.put(f"{base_url}/counter.json", params={"ns": namespace}, json={"n": 1, "by": {".value": "a", ".priority": 2}})
    current = rest(base_url, namespace, "counter", format="export")
    assert sock.put("/counter", {"n": 2}, h=sdk_hash(current)) == {"s": "ok", "d": ""}
    assert sock.put("/counter", {"n": 3}, h=sdk_hash(current)) == {"s": "datastale", "d": "Transaction hash does not match"}
    assert rest(base_url, namespace, "counter") == {"n": 2}
    assert sock.put("/fresh", 1, h="") == {"s": "ok", "d": ""}  # "" is the hash of nothing
    assert sock.put("/fresh", 2, h="") ["s"] == "datastale"
    for value in [True, 1.5, -3, "text", {"a": {"b": [1, 2]}}]:
        requests.put(f"{base_url}/v.json", params={"ns": namespace}, json=value)
        assert sock.put("/v", "next", h=sdk_hash(rest(base_url, namespace, "v", format="export")))["s"] == "ok", value


def test_bad_writes_get_a_failure_reply_and_write_nothing(base_url, namespace, sock):
    for body in [{"p": "/a", "d": {"b.c": 1}}, {"p": "/a/[x]", "d": 1}, {"p": "/a"}, {"d": 1}, {"p": "/a", "d": 1, "h": 5}]:
        reply = sock.request("p", body)
        assert reply["s"] == "failure" and reply["d"], body
    assert sock.request("m", {"p": "/a", "d": [1]})["s"] == "failure"
    assert sock.request("m", {"p": "/a", "d": {"x": 1, "x/y": 2}})["s"] == "failure"
    assert rest(base_url, namespace, "a") is None


# -- framing ----------------------------------------------------------------------------------------
def test_messages_over_16384_characters_are_split_both_ways_and_no_bare_number_is_sent(base_url, namespace, sock):
    big = "é" * 20000 + "x" * 20000  # 40 000 characters, more UTF-8 bytes
    sock.listen("/big")
    assert sock.put("/big", {"v": big})["s"] == "ok"
    assert ("d", {"p": "big", "d": {"v": big}}) in sock.pushes
    assert rest(base_url, namespace, "big/v") == big
    counts = [i for i, f in enumerate(sock.frames) if len(f) <= 6]
    assert counts, "the push should have come in pieces"
    for i in counts:
        n = int(sock.frames[i])
        assert n == 3 and all(len(p) <= 16384 for p in sock.frames[i + 1:i + 1 + n])
    assert sock.request("g", {"p": "/big/v"}) == {"s": "ok", "d": big}


# -- onDisconnect ------------------------------------------------------------------------------------
def register_presence(sock, path="presence/me"):
    assert sock.request("o", {"p": f"/{path}", "d": {"state": "offline", "at": {".sv": "timestamp"}}})["s"] == "ok"
    assert sock.put(f"/{path}", {"state": "online"})["s"] == "ok"


def test_ondisconnect_runs_once_when_the_client_closes_with_server_time_then(base_url, namespace):
    s = RealtimeSocket(base_url, namespace)
    register_presence(s)
    assert s.request("om", {"p": "/rooms", "d": {"r1/members/me": None, "r2/count": {".sv": {"increment": -1}}}})["s"] == "ok"
    requests.put(f"{base_url}/rooms.json", params={"ns": namespace}, json={"r1": {"members": {"me": True, "you": True}}, "r2": {"count": 2}})
    time.sleep(0.2)
    closed_at = int(time.time() * 1000)
    s.close()
    wait_rest(base_url, namespace, "rooms", {"r1": {"members": {"you": True}}, "r2": {"count": 1}})
    presence = rest(base_url, namespace, "presence/me")
    assert presence["state"] == "offline" and presence["at"] >= closed_at - 50
    time.sleep(0.3)
    assert rest(base_url, namespace, "rooms/r2/count") == 1  # exactly once


def test_a_reconnected_socket_registers_again_and_its_own_operations_run_when_it_closes(base_url, namespace):
    first = RealtimeSocket(base_url, namespace)
    register_presence(first)
    requests.post(f"{base_url}/emulator/v1/connections/{conn_id_of(first)}:drop")
    first.wait_closed()
    wait_rest(base_url, namespace, "presence/me/state", "offline")
    # The SDK reconnects with its last session id, registers again and writes "online".
    second = RealtimeSocket(base_url, namespace, ls=first.hello["s"])
    assert second.hello["s"] != first.hello["s"]
    assert second.request("o", {"p": "/presence/me", "d": {"state": "gone", "at": {".sv": "timestamp"}}})["s"] == "ok"
    assert second.put("/presence/me", {"state": "online"})["s"] == "ok"
    time.sleep(0.2)
    assert rest(base_url, namespace, "presence/me") == {"state": "online"}  # the first socket's ran once only
    second.close()
    wait_rest(base_url, namespace, "presence/me/state", "gone")


def test_ondisconnect_cancel_removes_the_operations_at_and_below_the_path(base_url, namespace):
    s = RealtimeSocket(base_url, namespace)
    s.request("o", {"p": "/x/a", "d": 1})
    s.request("o", {"p": "/x/b/c", "d": 2})
    s.request("o", {"p": "/y", "d": 3})
    assert s.request("oc", {"p": "/x", "d": None})["s"] == "ok"
    s.close()
    wait_rest(base_url, namespace, "y", 3)
    assert rest(base_url, namespace, "x") is None


@pytest.mark.parametrize("how", ["drop", "switch-id", "switch-appId", "switch-uid", "switch-namespace", "switch-project"])
def test_ondisconnect_runs_when_the_test_drops_or_switches_the_socket_offline(base_url, namespace, how):
    s = RealtimeSocket(base_url, namespace, headers={"X-Firebase-GMPID": f"app-{namespace}",
                                                     "Authorization": "Bearer " + jwt({"sub": f"uid-{namespace}"})})
    register_presence(s)
    cid = conn_id_of(s)
    assert connection(base_url, cid)["auth"]["uid"] == f"uid-{namespace}"
    key = how.split("-", 1)[-1]
    match = {"id": cid, "appId": f"app-{namespace}", "uid": f"uid-{namespace}", "namespace": namespace, "project": namespace}.get(key)
    if how == "drop":
        assert requests.post(f"{base_url}/emulator/v1/connections/{cid}:drop").status_code == 200
    else:
        r = requests.put(f"{base_url}/emulator/v1/connections/network", json={"match": {key: match}, "online": False})
        assert r.status_code == 200 and cid in r.json()["dropped"]
    code, reason = s.wait_closed()
    assert code == 1001 and ("network switch" in reason or "dropped by the test" in reason)
    wait_rest(base_url, namespace, "presence/me/state", "offline")
    if how != "drop":
        # Refused before the hello until the same match is online again (the SDK backs off).
        headers = {"X-Firebase-GMPID": f"app-{namespace}", "Authorization": "Bearer " + jwt({"sub": f"uid-{namespace}"})}
        if key != "id":
            with pytest.raises(Exception) as refused:
                RealtimeSocket(base_url, namespace, headers=headers)
            assert "503" in str(refused.value)
        requests.put(f"{base_url}/emulator/v1/connections/network", json={"match": {key: match}, "online": True})
        again = RealtimeSocket(base_url, namespace, headers=headers)
        assert again.request("g", {"p": "/presence/me/state"})["d"] == "offline"
        again.close()
    else:
        assert requests.get(f"{base_url}/emulator/v1/connections/{cid}").status_code == 404


def test_a_switch_leaves_other_connections_alone(base_url, namespace):
    a = RealtimeSocket(base_url, namespace, headers={"X-Firebase-GMPID": "device-a"})
    b = RealtimeSocket(base_url, namespace, headers={"X-Firebase-GMPID": "device-b"})
    r = requests.put(f"{base_url}/emulator/v1/connections/network", json={"match": {"appId": "device-a"}, "online": False})
    assert r.json()["dropped"] == [conn_id_of(a)]
    a.wait_closed()
    assert b.request("g", {"p": "/x"})["s"] == "ok"
    switches = requests.get(f"{base_url}/emulator/v1/connections/network").json()["switches"]
    assert {"match": {"appId": "device-a"}, "online": False, "latencyMs": 0} in switches
    requests.put(f"{base_url}/emulator/v1/connections/network", json={"match": {"appId": "device-a"}, "online": True})
    b.close()


def test_latency_delays_every_frame_both_ways(base_url, namespace):
    s = RealtimeSocket(base_url, namespace, headers={"X-Firebase-GMPID": f"slow-{namespace}"})
    start = time.monotonic()
    s.request("g", {"p": "/a"})
    fast = time.monotonic() - start
    requests.put(f"{base_url}/emulator/v1/connections/network", json={"match": {"appId": f"slow-{namespace}"}, "online": True, "latencyMs": 300})
    start = time.monotonic()
    numbers = [s.send_request("g", {"p": f"/a{i}"}) for i in range(3)]
    for r in numbers:
        s.wait_reply(r)
    slow = time.monotonic() - start
    assert slow >= 0.6 and fast < 0.3
    assert [e[1] for e in s.log if e[0] == "reply"][-3:] == numbers  # order kept
    requests.put(f"{base_url}/emulator/v1/connections/network", json={"match": {"appId": f"slow-{namespace}"}, "online": True, "latencyMs": 0})
    s.close()


def test_a_silent_socket_is_closed_after_the_idle_timeout_and_its_ondisconnect_runs(monkeypatch, namespace):
    monkeypatch.setenv("FIREGATE_WS_IDLE_TIMEOUT_SECONDS", "1")
    proc, base = start_server()
    try:
        s = RealtimeSocket(base, namespace)
        register_presence(s)
        start = time.monotonic()
        code, reason = s.wait_closed(timeout=5)
        assert code == 1001 and "too long" in reason and time.monotonic() - start >= 0.9
        wait_rest(base, namespace, "presence/me/state", "offline")
        # A socket that keeps talking stays open past the timeout.
        t = RealtimeSocket(base, namespace)
        for _ in range(4):
            time.sleep(0.5)
            t.ws.send("0")  # the SDK's keep-alive
        assert t.ping() == ("o", None)
        t.close()
    finally:
        stop_server(proc)


# -- auth -----------------------------------------------------------------------------------------------
def test_auth_gauth_unauth_and_a_revoked_token(base_url, namespace, sock):
    cid = conn_id_of(sock)
    reply = sock.request("auth", {"cred": jwt({"sub": "alice", "exp": 4102444800})})
    assert reply["s"] == "ok" and reply["d"]["auth"]["sub"] == "alice"
    assert connection(base_url, cid)["auth"]["uid"] == "alice"
    assert sock.request("auth", {"cred": "not-a-jwt"})["s"] == "invalid_token"
    assert sock.request("gauth", {"cred": "owner", "authvar": {"uid": "bob"}})["s"] == "ok"
    assert connection(base_url, cid)["auth"]["uid"] == "bob"
    assert sock.request("gauth", {"cred": "owner"})["s"] == "ok"
    assert connection(base_url, cid)["auth"]["uid"] is None
    assert sock.request("gauth", {"cred": "some-secret"})["s"] == "invalid_token"
    sock.request("auth", {"cred": jwt({"user_id": "carol"})})
    assert connection(base_url, cid)["auth"]["uid"] == "carol"
    r = requests.post(f"{base_url}/emulator/v1/connections/{cid}:revokeAuth", json={"status": "expired_token", "reason": "gone"})
    assert r.status_code == 200
    assert sock.wait_push(lambda a, b: a == "ac") == ("ac", {"s": "expired_token", "d": "gone"})
    assert connection(base_url, cid)["auth"]["uid"] is None
    assert sock.request("unauth", {})["s"] == "ok"
    assert requests.post(f"{base_url}/emulator/v1/connections/nope:revokeAuth").status_code == 404


# -- a revoked listen ------------------------------------------------------------------------------------
def test_a_reset_closes_sockets_without_running_their_ondisconnect(monkeypatch, namespace):
    proc, base = start_server()
    try:
        s = RealtimeSocket(base, namespace)
        s.request("o", {"p": "/after-reset", "d": True})
        assert requests.post(f"{base}/emulator/v1/reset").status_code == 200
        code, reason = s.wait_closed()
        assert code == 1001 and reason == "The emulator was reset."
        time.sleep(0.3)
        assert rest(base, namespace, "after-reset") is None
    finally:
        stop_server(proc)


# -- events, metrics, listing ----------------------------------------------------------------------------
def test_connections_are_listed_counted_and_reported_as_events(base_url, namespace):
    with SSEStream(f"{base_url}/emulator/v1/events") as events:
        s = RealtimeSocket(base_url, namespace, headers={"X-Firebase-GMPID": "app-x", "User-Agent": "Firebase/5/12.18.0/linux/Node"})
        cid = conn_id_of(s)
        s.listen("/a")
        s.listen("/b")
        info = connection(base_url, cid)
        assert info["appId"] == "app-x" and info["namespace"] == namespace and info["listens"] == 2
        assert info["userAgent"].startswith("Firebase/5/") and info["online"] is True
        metrics = requests.get(f"{base_url}/metrics").text
        line = next(l for l in metrics.splitlines() if l.startswith('firegate_connections{protocol="rtdb-websocket"}'))
        assert float(line.split()[-1]) >= 1
        s.close()
        opened, _ = events.read_until(lambda e: e.json().get("kind") == "connectionOpened" and e.json().get("connection") == cid, timeout=TIMEOUT)
        closed, last = events.read_until(lambda e: e.json().get("kind") == "connectionClosed" and e.json().get("connection") == cid, timeout=TIMEOUT)
        assert last.json()["protocol"] == "rtdb-websocket" and last.json()["reason"] == "The client closed the connection."


# -- one engine ---------------------------------------------------------------------------------------------
def test_rest_sse_and_sockets_end_on_the_same_value_after_a_burst_from_all_three(base_url, namespace):
    from rtdb_socket import apply_push, value_at
    writers = [RealtimeSocket(base_url, namespace) for _ in range(2)]
    watcher = RealtimeSocket(base_url, namespace)
    watcher.listen("/burst")
    with SSEStream(f"{base_url}/burst.json", params={"ns": namespace}) as sse:
        numbers = []
        for i in range(60):
            key = f"k{i % 7}"
            if i % 3 == 0:
                requests.put(f"{base_url}/burst/{key}.json", params={"ns": namespace}, json=i)
            elif i % 3 == 1:
                w = writers[i % 2]
                numbers.append((w, w.send_request("p", {"p": f"/burst/{key}", "d": i})))
            else:
                w = writers[i % 2]
                numbers.append((w, w.send_request("m", {"p": "/burst", "d": {key: {".sv": {"increment": i}}}})))
        for w, r in numbers:
            assert w.wait_reply(r)["s"] == "ok"
        final = rest(base_url, namespace, "burst")
        tree = None
        deadline = time.monotonic() + TIMEOUT
        while value_at(tree, "burst") != final and time.monotonic() < deadline:
            watcher.pump()
            tree = None
            for action, body in watcher.pushes:
                tree = apply_push(tree, action, body)
        assert value_at(tree, "burst") == final
        sse_value = None
        deadline = time.monotonic() + TIMEOUT
        while sse_value != final and time.monotonic() < deadline:
            event = sse.next(timeout=TIMEOUT)
            if event.event in ("put", "patch"):
                data = event.json()
                sse_value = sse_apply(sse_value, event.event, data)
        assert sse_value == final
    for w in writers + [watcher]:
        w.close()


def sse_apply(value, kind, data):
    from rtdb_socket import _set
    path = [k for k in data["path"].split("/") if k]
    if kind == "put":
        return _set(value, path, data["data"])
    for rel, v in data["data"].items():
        value = _set(value, path + [k for k in rel.split("/") if k], v)
    return value


# -- what the SDK expects that its own test suite does not cover (issue 40) ---------------------
def test_get_on_info_paths_answers_as_a_connected_socket(sock):
    """The SDK's get() asks the server for .info paths too (its listens are served locally)."""
    assert sock.request("g", {"p": "/.info/connected", "q": {}}) == {"s": "ok", "d": True}
    assert sock.request("g", {"p": ".info/serverTimeOffset", "q": {}}) == {"s": "ok", "d": 0}
    assert sock.request("g", {"p": "/.info/authenticated", "q": {}}) == {"s": "ok", "d": False}
    assert sock.request("g", {"p": "/.info/nothing", "q": {}}) == {"s": "ok", "d": None}
    assert sock.request("g", {"p": "/.info", "q": {}}) == {"s": "ok", "d": {"authenticated": False, "connected": True,
                                                                               "serverTimeOffset": 0}}
    assert sock.request("auth", {"cred": jwt({"sub": "ann", "user_id": "ann"})})["s"] == "ok"
    assert sock.request("g", {"p": "/.info/authenticated", "q": {}}) == {"s": "ok", "d": True}


def test_a_listen_on_an_order_the_rules_do_not_index_is_answered_with_no_index(base_url, namespace, sock):
    rules = '{"rules": {".read": true, ".write": true, "indexed": {".indexOn": ["score"]}}}'
    r = requests.put(f"{base_url}/.settings/rules.json", params={"ns": namespace}, data=rules,
                     headers={"Authorization": "Bearer owner"}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    try:
        unindexed = sock.request("q", {"p": "/plain", "h": "", "q": {"i": "score", "l": 5, "vf": "l"}, "t": 1})
        assert unindexed == {"s": "ok", "d": {"w": ["no_index"]}}
        indexed = sock.request("q", {"p": "/indexed", "h": "", "q": {"i": "score", "l": 5, "vf": "l"}, "t": 2})
        assert indexed == {"s": "ok", "d": {}}
        by_key = sock.request("q", {"p": "/plain", "h": "", "q": {"i": ".key", "l": 5, "vf": "l"}, "t": 3})
        assert by_key == {"s": "ok", "d": {}}
        assert sock.request("q", {"p": "/plain", "h": ""}) == {"s": "ok", "d": {}}
    finally:
        requests.delete(f"{base_url}/.settings/rules.json", params={"ns": namespace},
                        headers={"Authorization": "Bearer owner"}, timeout=TIMEOUT)


def test_a_reconnect_naming_its_last_session_ends_it_and_runs_its_ondisconnect_first(base_url, namespace):
    """The SDK reconnects with ls=<last session>: the old socket (say, one the network left
    half-open) ends, and its onDisconnect lands before anything the new session writes."""
    old = RealtimeSocket(base_url, namespace)
    assert old.request("o", {"p": "/presence/ann", "d": "offline"})["s"] == "ok"
    assert old.request("p", {"p": "/presence/ann", "d": "online"})["s"] == "ok"
    new = RealtimeSocket(base_url, namespace, ls=old.hello["s"])
    try:
        # Its first write comes after the old session's onDisconnect: online stays.
        assert new.request("p", {"p": "/presence/ann", "d": "online again"})["s"] == "ok"
        old.wait_closed()
        assert rest(base_url, namespace, "presence/ann") == "online again"
        assert requests.get(f"{base_url}/emulator/v1/connections/{conn_id_of(old)}").status_code == 404
        # An unknown or foreign session id is ignored.
        other = RealtimeSocket(base_url, namespace, ls="c999999-1")
        assert other.request("g", {"p": "/presence/ann", "q": {}}) == {"s": "ok", "d": "online again"}
        other.close()
    finally:
        new.close()
        old.close()
