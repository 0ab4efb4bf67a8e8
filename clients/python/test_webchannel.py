"""The web SDK's stream transport, WebChannel (issue 43, docs/webchannel.md), through a client
written from the protocol (webchannel.py): sessions, both back-channel modes, ordering,
acknowledgement and resending, in-band errors, bad input, the connections registry and the
network switch — and where the official emulator shows what Firestore answers, the same script
run against it (the `firestore_emulator` fixture).
"""
import base64
import http.client
import json
import threading
import time
import urllib.parse
import uuid

import pytest
import requests

from conftest import start_server, stop_server
from webchannel import Channel, parse_chunks

ORIGIN = "http://localhost:3000"
T = 10


@pytest.fixture(scope="module")
def server():
    proc, base = start_server()
    yield base
    stop_server(proc)


@pytest.fixture
def db():
    return f"projects/wc-{uuid.uuid4().hex[:10]}/databases/(default)"


def jwt(sub):
    def b64(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    return f"{b64({'alg': 'none', 'type': 'JWT'})}.{b64({'sub': sub, 'user_id': sub, 'iat': 0, 'exp': 4102444800, 'aud': 'p', 'iss': 'x'})}."


def web_headers(app_id=None, token=None):
    headers = {"X-Goog-Api-Client": "gl-js/ fire/12.9.0", "Content-Type": "text/plain"}
    if app_id:
        headers["X-Firebase-GMPID"] = app_id
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def doc_target(db, target_id, *paths):
    return {"database": db, "addTarget": {"documents": {"documents": [f"{db}/documents/{p}" for p in paths]}, "targetId": target_id}}


def query_target(db, target_id, collection):
    return {"database": db, "addTarget": {"query": {"parent": f"{db}/documents", "structuredQuery": {"from": [{"collectionId": collection}]}},
                                          "targetId": target_id}}


def commit(base, db, *writes):
    r = requests.post(f"{base}/v1/{db}/documents:commit", json={"writes": list(writes)}, timeout=T)
    assert r.status_code == 200, r.text
    return r.json()


def update(db, path, **ints):
    return {"update": {"name": f"{db}/documents/{path}", "fields": {k: {"integerValue": str(v)} for k, v in ints.items()}}}


def kinds(messages):
    """Each message as its kind, and a target change's type ('NO_CHANGE' when absent)."""
    out = []
    for m in messages:
        kind = next(iter(m))
        if kind == "targetChange":
            out.append(m[kind].get("targetChangeType", "NO_CHANGE"))
        else:
            out.append(kind)
    return out


def wait_for(channel, predicate, timeout=T):
    """Long polls until `predicate(messages)` holds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate(channel.messages()):
            return channel.messages()
        response, _ = channel.poll(timeout_ms=5000, timeout=max(timeout, 40))
        assert response.status_code == 200, response.text
    raise AssertionError(f"not seen in {timeout} s: {channel.messages()}")


def consistent(messages):
    """A snapshot point: a target change with no targets and a read time."""
    return any("targetChange" in m and not m["targetChange"].get("targetIds") and "readTime" in m["targetChange"] for m in messages)


# ---- sessions, framing and both back-channel modes ----

def test_a_listen_session_opens_streams_its_first_bytes_at_once_and_sees_a_commit(server, db):
    commit(server, db, update(db, "rooms/r1", n=1))
    channel = Channel(server, "Listen", db, origin=ORIGIN)
    r = channel.open(doc_target(db, 2, "rooms/r1"))
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain")
    assert r.headers["Access-Control-Allow-Origin"] == ORIGIN and r.headers["Access-Control-Allow-Credentials"] == "true"
    assert "X-HTTP-Session-Id" in r.headers["Access-Control-Expose-Headers"]
    c = channel.handshake
    assert c[0] == "c" and len(c[1]) >= 16 and c[3] == 8 and c[5] > 0
    started = time.time()
    response, firsts = channel.stream(lambda arrays: consistent(channel.messages()))
    assert response.status_code == 200 and response.headers["Access-Control-Allow-Origin"] == ORIGIN
    assert firsts[0] - started < 1.0  # streaming: bytes at once, or the SDK falls back to long polling
    assert kinds(channel.messages())[:3] == ["ADD", "documentChange", "CURRENT"]
    assert channel.messages()[1]["documentChange"]["document"]["fields"] == {"n": {"integerValue": "1"}}
    commit(server, db, update(db, "rooms/r1", n=2))
    channel.stream(lambda arrays: any(m.get("documentChange", {}).get("document", {}).get("fields") == {"n": {"integerValue": "2"}}
                                      for m in channel.messages()))
    ids = [i for i, _ in channel.arrays]
    assert ids == sorted(ids) and len(set(ids)) == len(ids) and ids[0] == 1
    assert channel.terminate().status_code == 200


def test_long_polls_end_after_each_answer_and_a_quiet_one_ends_with_a_noop(server, db):
    channel = Channel(server, "Listen", db)
    assert channel.open(query_target(db, 4, "things")).status_code == 200
    wait_for(channel, consistent)
    started = time.time()
    response, new = channel.poll(timeout_ms=5000)
    assert response.status_code == 200
    assert [payload for _, payload in new] == [["noop"]]
    assert 4.5 < time.time() - started < 9
    holder = {}
    thread = threading.Thread(target=lambda: holder.setdefault("poll", channel.poll(timeout_ms=20000)))
    thread.start()
    time.sleep(0.3)
    commit(server, db, update(db, "things/a", n=1))
    thread.join(T)
    response, new = holder["poll"]
    assert any(p[0].get("documentChange") for _, p in new if isinstance(p[0], dict)), new


def test_long_polls_follow_each_other_on_one_keep_alive_connection(server, db):
    # As a browser does: the next long poll goes on the connection the last one came back on,
    # the moment it came back. Each must be answered there; none lost, none cut off.
    channel = Channel(server, "Listen", db)
    assert channel.open(query_target(db, 4, "things")).status_code == 200
    url = urllib.parse.urlsplit(channel.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=T)
    ports = set()
    try:
        for n in range(30):
            commit(server, db, update(db, "things/a", n=n))
            query = channel._query(RID="rpc", SID=channel.sid, AID=str(channel.last_array), CI="1", TO="5000", TYPE="xmlhttp", t="1")
            connection.request("GET", url.path + "?" + urllib.parse.urlencode(query))
            ports.add(connection.sock.getsockname()[1])
            started = time.time()
            response = connection.getresponse()
            text = response.read().decode()
            assert response.status == 200, text
            assert time.time() - started < 4, f"long poll {n} waited for its commit"
            chunks, rest = parse_chunks(text)
            assert rest == "" and chunks, text
            new = [array for chunk in chunks for array in channel._take(chunk)]
            assert any(isinstance(p[0], dict) and p[0].get("documentChange") for _, p in new), (n, new)
    finally:
        connection.close()
    assert len(ports) == 1, "every long poll went on the first connection"


def test_arrays_not_acknowledged_are_sent_again_and_acknowledged_ones_never(server, db):
    channel = Channel(server, "Listen", db)
    channel.open(doc_target(db, 2, "a/b"))
    wait_for(channel, consistent)
    received = list(channel.arrays)
    # The answer got lost: the next GET acknowledges less, and everything after is sent again.
    channel.last_array = 0
    channel.arrays = []
    response, again = channel.poll(timeout_ms=5000)
    assert [i for i, _ in again][:len(received)] == [i for i, _ in received]
    assert again[:len(received)] == received
    # Acknowledged now: a quiet poll brings only a fresh noop.
    response, new = channel.poll(timeout_ms=5000)
    assert len(new) == 1 and new[0][1] == ["noop"] and new[0][0] > received[-1][0]


def test_forward_maps_are_applied_once_in_map_order(server, db):
    channel = Channel(server, "Listen", db)
    channel.open(doc_target(db, 2, "a/one"))
    # Map 2 arrives before map 1 (concurrent POSTs over HTTP/2), then a retry repeats both.
    r, answer = channel.send(doc_target(db, 4, "a/three"), offset=2)
    assert r.status_code == 200 and len(answer) == 3
    r, _ = channel.send(doc_target(db, 3, "a/two"), doc_target(db, 4, "a/three"), offset=1)
    assert r.status_code == 200
    messages = wait_for(channel, lambda ms: sum(1 for m in ms if m.get("targetChange", {}).get("targetChangeType") == "CURRENT") == 3)
    adds = [m["targetChange"]["targetIds"] for m in messages if m.get("targetChange", {}).get("targetChangeType") == "ADD"]
    assert adds == [[2], [3], [4]]
    assert not any("error" in m for m in messages)


def test_the_forward_answer_reports_the_back_channel_and_what_is_outstanding(server, db):
    channel = Channel(server, "Listen", db)
    channel.open(doc_target(db, 2, "a/b"))
    r, answer = channel.send()
    assert r.status_code == 200 and answer[0] == 0 and answer[1] == 0  # no back channel has written yet
    wait_for(channel, consistent)
    r, answer = channel.send()
    assert answer[1] == channel.last_array and answer[2] == 0


# ---- the Write stream and errors in band ----

def test_a_write_session_hands_a_token_commits_in_order_and_fails_in_band(server, db):
    channel = Channel(server, "Write", db, headers=web_headers())
    assert channel.open({"database": db}).status_code == 200
    first = wait_for(channel, lambda ms: ms)[0]
    assert first["streamToken"] and "writeResults" not in first
    create = {**update(db, "w/one", n=1), "currentDocument": {"exists": False}}
    channel.send({"streamToken": first["streamToken"], "writes": [create]})
    result = wait_for(channel, lambda ms: len(ms) >= 2)[1]
    assert result["streamToken"] and result["commitTime"].endswith("Z") and len(result["writeResults"]) == 1
    assert requests.get(f"{server}/v1/{db}/documents/w/one", timeout=T).json()["fields"] == {"n": {"integerValue": "1"}}
    channel.send({"streamToken": result["streamToken"], "writes": [create]})
    error = wait_for(channel, lambda ms: any("error" in m for m in ms))[-1]["error"]
    assert error["status"] == "ALREADY_EXISTS" and error["message"]
    # The stream is over: the session takes nothing more.
    r, _ = channel.send({"streamToken": result["streamToken"], "writes": [update(db, "w/two", n=2)]})
    assert r.status_code == 400 and r.text.index("Unknown SID") > 0
    assert requests.get(f"{server}/v1/{db}/documents/w/two", timeout=T).status_code == 404


def test_write_errors_name_the_same_status_as_the_official_emulator(server, db, firestore_emulator):
    statuses = []
    for base in (server, firestore_emulator.base):
        channel = Channel(base, "Write", db, headers=web_headers())
        channel.open({"database": db})
        token = wait_for(channel, lambda ms: ms)[0]["streamToken"]
        channel.send({"streamToken": token, "writes": [{**update(db, "w/missing", n=1), "currentDocument": {"exists": True}}]})
        statuses.append(wait_for(channel, lambda ms: any("error" in m for m in ms))[-1]["error"]["status"])
    assert statuses == ["NOT_FOUND", "NOT_FOUND"]


def test_a_listen_script_gives_the_official_emulators_answers(server, firestore_emulator):
    results = []
    for base in (server, firestore_emulator.base):
        db = f"projects/wc-{uuid.uuid4().hex[:10]}/databases/(default)"
        commit(base, db, update(db, "rooms/r1", n=1))
        channel = Channel(base, "Listen", db)
        channel.open(query_target(db, 2, "rooms"))
        opening = kinds(wait_for(channel, consistent))
        commit(base, db, update(db, "rooms/r2", n=2))

        def r2_then_snapshot(ms):
            names = [m["documentChange"]["document"]["name"] for m in ms if "documentChange" in m]
            return names and names[-1].endswith("/rooms/r2") and consistent(ms[-1:])
        messages = wait_for(channel, r2_then_snapshot, timeout=40)
        documents = {m["documentChange"]["document"]["name"].rsplit("/", 1)[1]: m["documentChange"]["document"]["fields"]
                     for m in messages if "documentChange" in m}
        channel.send({"database": db, "removeTarget": 2})
        last = wait_for(channel, lambda ms: ms[-1].get("targetChange", {}).get("targetChangeType") == "REMOVE", timeout=40)[-1]
        results.append((opening, documents, last["targetChange"]["targetIds"]))
    # The same opening (ADD, the document, CURRENT, a snapshot point), the same documents and
    # the same REMOVE. (Between, the emulator resets the target on each commit and sends every
    # document again: a divergence docs/oracle.md records.)
    assert results[0] == results[1], results
    assert results[0][0] == ["ADD", "documentChange", "CURRENT", "NO_CHANGE"]


def test_a_message_that_is_not_a_listen_request_ends_the_stream_invalid_argument(server, db):
    channel = Channel(server, "Listen", db)
    channel.open(doc_target(db, 2, "a/b"))
    channel.send('{"addTarget": {"targetId": "not a number"')
    error = wait_for(channel, lambda ms: any("error" in m for m in ms))[-1]["error"]
    assert error["status"] == "INVALID_ARGUMENT"


# ---- bad input ----

def test_unknown_sessions_and_malformed_requests_get_clear_errors(server, db):
    url = f"{server}/google.firestore.v1.Firestore/Listen/channel"
    for params in ({"VER": "8", "SID": "nope", "AID": "0", "RID": "rpc", "CI": "1", "TYPE": "xmlhttp"},):
        r = requests.get(url, params=params, timeout=T)
        assert r.status_code == 400 and r.text.index("Unknown SID") > 0
    r = requests.post(url, params={"VER": "8", "SID": "nope", "RID": "2", "AID": "0"}, data="count=0&ofs=0", timeout=T)
    assert r.status_code == 400 and r.text.index("Unknown SID") > 0
    cases = [
        ("POST", {"VER": "8", "RID": "1"}, "count=1&ofs=0&req0___data__=%7B%7D"),  # no database
        ("POST", {"VER": "7", "database": db, "RID": "1"}, "count=0"),
        ("POST", {"VER": "8", "database": "projects//databases/x", "RID": "1"}, "count=0"),
        ("POST", {"VER": "8", "database": db, "RID": "1"}, "count=2&ofs=0&req0___data__=%7B%7D"),
        ("POST", {"VER": "8", "database": db, "RID": "1"}, "count=1&ofs=0&req0___data__=%E0%A4"),
        ("GET", {"VER": "8", "database": db, "SID": "x"}, None),
        ("PUT", {"VER": "8", "database": db}, "count=0"),
    ]
    for method, params, body in cases:
        r = requests.request(method, url, params=params, data=body, timeout=T)
        assert r.status_code == 400, (method, params, body, r.status_code, r.text)
        assert r.json()["error"]["status"] == "INVALID_ARGUMENT", r.text
    r = requests.post(f"{server}/google.firestore.v1.Firestore/Nope/channel", params={"VER": "8", "database": db}, data="", timeout=T)
    assert r.status_code == 404 and r.json()["error"]["status"] == "NOT_FOUND"


def test_a_huge_body_is_refused_and_the_session_goes_on(server, db):
    channel = Channel(server, "Listen", db)
    channel.open(doc_target(db, 2, "a/b"))
    huge = "count=1&ofs=1&req0___data__=" + "x" * (33 * 1024 * 1024)
    r = requests.post(channel.url, params={"VER": "8", "database": db, "SID": channel.sid, "RID": "9", "AID": "0"}, data=huge, timeout=60)
    assert r.status_code == 400 and "too large" in r.json()["error"]["message"]
    channel.next_map = 1
    channel.send(doc_target(db, 3, "a/c"))
    messages = wait_for(channel, lambda ms: any(m.get("targetChange", {}).get("targetIds") == [3] for m in ms))
    assert not any("error" in m for m in messages)


def test_a_terminated_session_is_forgotten(server, db):
    channel = Channel(server, "Listen", db)
    channel.open(doc_target(db, 2, "a/b"))
    assert channel.terminate().status_code == 200
    response, _ = channel.poll(timeout_ms=5000)
    assert response.status_code == 400 and response.text.index("Unknown SID") > 0


class StreamReader(threading.Thread):
    """Reads one streaming back-channel GET (CI=0) to its end in the background: its arrays go
    into the channel, with the time each chunk completed."""

    def __init__(self, channel, headers=None):
        super().__init__(daemon=True)
        self.channel = channel
        self.response = channel.http.get(channel.url, params=channel._query(RID="rpc", SID=channel.sid, AID=str(channel.last_array), CI="0",
                                                                            TYPE="xmlhttp", t="1"),
                                         headers={**channel._http_headers(post=False), **(headers or {})}, stream=True, timeout=(5, 30))
        self.received = []
        self.ended = None
        self.start()

    def run(self):
        buffered = ""
        try:
            for piece in self.response.iter_content(chunk_size=None, decode_unicode=True):
                buffered += piece
                chunks, buffered = parse_chunks(buffered)
                for chunk in chunks:
                    self.received += [(time.time(), array) for array in self.channel._take(chunk)]
        finally:
            self.ended = time.time()

    def wait(self, predicate, timeout=T):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if predicate(self.channel.messages()):
                return
            time.sleep(0.01)
        raise AssertionError(f"not seen in {timeout} s: {self.channel.messages()}")


def changed_to(n):
    return lambda ms: any(m.get("documentChange", {}).get("document", {}).get("fields") == {"n": {"integerValue": str(n)}} for m in ms)


# A streaming back channel is served on the connection's event loop (the fast path), a page's
# (Origin) with the CORS headers; one the fast path leaves alone (here `Connection: close`) by
# the full HTTP/1.1 path. All behave alike.
PATHS = [(None, {}), (ORIGIN, {}), (ORIGIN, {"Connection": "close"})]
PATH_IDS = ["event-loop", "event-loop-page", "full-path-page"]


@pytest.mark.parametrize("origin,headers", PATHS, ids=PATH_IDS)
def test_a_streaming_back_channel_hears_commits_until_the_next_supersedes_it_and_its_session_ends(server, db, origin, headers):
    commit(server, db, update(db, "rooms/s", n=1))
    channel = Channel(server, "Listen", db, origin=origin)
    assert channel.open(doc_target(db, 2, "rooms/s")).status_code == 200
    opened = time.time()
    first = StreamReader(channel, headers)
    assert first.response.status_code == 200 and first.response.headers["Content-Type"].startswith("text/plain")
    assert first.response.headers.get("Access-Control-Allow-Origin") == origin
    if origin:
        assert first.response.headers["Access-Control-Allow-Credentials"] == "true"
        assert "X-HTTP-Session-Id" in first.response.headers["Access-Control-Expose-Headers"]
    first.wait(consistent)
    assert first.received[0][0] - opened < 1.0
    commit(server, db, update(db, "rooms/s", n=2))
    first.wait(changed_to(2))
    assert first.ended is None
    # The client opens the next back channel: the first ends, the second goes on from there.
    second = StreamReader(channel, headers)
    first.join(T)
    assert first.ended is not None
    commit(server, db, update(db, "rooms/s", n=3))
    second.wait(changed_to(3))
    ids = [i for i, _ in channel.arrays]
    assert ids == sorted(ids) and len(set(ids)) == len(ids) and ids[0] == 1
    assert channel.terminate().status_code == 200
    second.join(T)
    assert second.ended is not None


@pytest.mark.parametrize("origin,headers", PATHS, ids=PATH_IDS)
def test_a_streaming_back_channel_waits_out_the_switchs_latency_and_hears_its_stop(db, origin, headers):
    proc, base = start_server()
    try:
        channel = Channel(base, "Listen", db, headers=web_headers(app_id="1:1:web:stream"), origin=origin)
        channel.open(doc_target(db, 2, "lag/x"))
        reader = StreamReader(channel, headers)
        reader.wait(consistent)
        r = requests.put(f"{base}/emulator/v1/connections/network", json={"match": {"appId": "1:1:web:stream"}, "online": True, "latencyMs": 500},
                         timeout=T)
        assert r.status_code == 200, r.text
        started = time.time()
        commit(base, db, update(db, "lag/x", n=7))
        reader.wait(changed_to(7))
        arrived = next(t for t, (_, p) in reader.received if isinstance(p[0], dict) and "documentChange" in p[0])
        assert arrived - started >= 0.45
        switch(base, {"appId": "1:1:web:stream"}, False)
        reader.join(T)
        assert reader.ended is not None and ["stop"] in [p for _, (_, p) in reader.received]
    finally:
        stop_server(proc)


def test_sessions_of_one_shape_share_a_commits_answer_and_each_keeps_its_own_targets(server, db):
    """A commit's answer is worked out once for sessions in the same state (docs/webchannel.md,
    "Fan-out"); each session still hears only its own targets, under its own ids."""
    def doc_changes(channel, n):
        return [(m["documentChange"]["targetIds"], m["documentChange"]["document"]["name"].rsplit("/", 1)[1])
                for m in channel.messages() if m.get("documentChange", {}).get("document", {}).get("fields", {}).get("n") == {"integerValue": str(n)}]

    a, b, c, d = (Channel(server, "Listen", db) for _ in range(4))
    a.open(doc_target(db, 2, "share/x"))
    b.open(doc_target(db, 2, "share/x"))
    c.open(doc_target(db, 4, "share/x"))
    d.open(doc_target(db, 2, "share/x"), doc_target(db, 3, "share/y"))
    for channel in (a, b, c, d):
        wait_for(channel, consistent)
    commit(server, db, update(db, "share/x", n=1))
    for channel, expected in ((a, [([2], "x")]), (b, [([2], "x")]), (c, [([4], "x")]), (d, [([2], "x")])):
        wait_for(channel, lambda ms: doc_changes(channel, 1))
        assert doc_changes(channel, 1) == expected
    tokens = {name: [m["targetChange"]["resumeToken"] for m in ch.messages() if "targetChange" in m and not m["targetChange"].get("targetIds")][-1]
              for name, ch in (("a", a), ("b", b), ("c", c), ("d", d))}
    assert len(set(tokens.values())) == 1
    commit(server, db, update(db, "share/y", n=2))
    wait_for(d, lambda ms: doc_changes(d, 2))
    assert doc_changes(d, 2) == [([3], "y")]
    # a changes its targets; b, in the old shape, goes on as before.
    a.send({"database": db, "removeTarget": 2}, doc_target(db, 5, "share/y"))
    wait_for(a, lambda ms: any(m.get("targetChange", {}).get("targetIds") == [5] and m["targetChange"].get("targetChangeType") == "CURRENT" for m in ms))
    commit(server, db, update(db, "share/x", n=3), update(db, "share/y", n=3))
    for channel, expected in ((a, [([5], "y")]), (b, [([2], "x")]), (c, [([4], "x")]), (d, [([2], "x"), ([3], "y")])):
        wait_for(channel, lambda ms: len(doc_changes(channel, 3)) == len(expected))
        assert doc_changes(channel, 3) == expected
    # y at n=2 reached d by the commit and a by its new target's first snapshot; b and c never.
    assert doc_changes(a, 2) == [([5], "y")] and doc_changes(b, 2) == doc_changes(c, 2) == []
    for channel in (a, b, c, d):
        assert channel.terminate().status_code == 200


# ---- rules, the registry and the network switch ----

def test_rules_deny_a_listen_target_in_band_and_the_stream_stays(db):
    proc, base = start_server()
    try:
        project = db.split("/")[1]
        rules = "rules_version = '2';\nservice cloud.firestore { match /databases/{d}/documents {\n" \
                "  match /open/{x} { allow read, write: if true; }\n  match /closed/{x} { allow read, write: if false; } } }"
        r = requests.put(f"{base}/emulator/v1/projects/{project}:securityRules", json={"rules": {"files": [{"content": rules}]}}, timeout=T)
        assert r.status_code == 200, r.text
        channel = Channel(base, "Listen", db, headers=web_headers(token=jwt("alice")))
        channel.open(doc_target(db, 2, "closed/x"))
        removed = wait_for(channel, lambda ms: any(m.get("targetChange", {}).get("targetChangeType") == "REMOVE" for m in ms))
        cause = next(m["targetChange"]["cause"] for m in removed if m.get("targetChange", {}).get("targetChangeType") == "REMOVE")
        assert cause["code"] == 7
        channel.send(doc_target(db, 3, "open/x"))
        wait_for(channel, lambda ms: any(m.get("targetChange", {}).get("targetChangeType") == "CURRENT" for m in ms))
        writer = Channel(base, "Write", db, headers=web_headers(token=jwt("alice")))
        writer.open({"database": db})
        token = wait_for(writer, lambda ms: ms)[0]["streamToken"]
        writer.send({"streamToken": token, "writes": [update(db, "closed/y", n=1)]})
        assert wait_for(writer, lambda ms: any("error" in m for m in ms))[-1]["error"]["status"] == "PERMISSION_DENIED"
    finally:
        stop_server(proc)


def registry(base):
    return requests.get(f"{base}/emulator/v1/connections", timeout=T).json()["connections"]


def switch(base, match, online):
    r = requests.put(f"{base}/emulator/v1/connections/network", json={"match": match, "online": online}, timeout=T)
    assert r.status_code == 200, r.text


def test_a_switch_takes_one_pages_firestore_offline_and_leaves_another_online(db):
    proc, base = start_server()
    try:
        a = Channel(base, "Listen", db, headers=web_headers(app_id="1:1:web:a", token=jwt("alice")))
        b = Channel(base, "Listen", db, headers=web_headers(app_id="1:1:web:b"))
        a.open(doc_target(db, 2, "x/y"))
        b.open(doc_target(db, 2, "x/y"))
        wait_for(a, consistent)
        wait_for(b, consistent)
        entries = [c for c in registry(base) if c["protocol"] == "firestore-webchannel"]
        by_app = {c["appId"]: c for c in entries}
        assert set(by_app) == {"1:1:web:a", "1:1:web:b"}
        assert by_app["1:1:web:a"]["auth"]["uid"] == "alice" and by_app["1:1:web:a"]["project"] == db.split("/")[1]
        assert by_app["1:1:web:a"]["listens"] == 1 and by_app["1:1:web:a"]["userAgent"] == "gl-js/ fire/12.9.0"
        switch(base, {"appId": "1:1:web:a"}, False)
        # The page's back channel gets `stop` (the SDK's channel errors and reconnects), and
        # the reconnection is refused while the switch holds.
        response, new = a.poll(timeout_ms=5000)
        assert ["stop"] in [p for _, p in new], new
        assert a.poll(timeout_ms=5000)[0].status_code == 400
        again = Channel(base, "Listen", db, headers=web_headers(app_id="1:1:web:a"))
        r = again.open(doc_target(db, 2, "x/y"))
        assert r.status_code == 503 and r.json()["error"]["status"] == "UNAVAILABLE"
        # The other page stays online and still hears commits.
        commit(base, db, update(db, "x/y", n=5))
        wait_for(b, lambda ms: any("documentChange" in m for m in ms))
        assert [c["appId"] for c in registry(base) if c["protocol"] == "firestore-webchannel"] == ["1:1:web:b"]
        switch(base, {"appId": "1:1:web:a"}, True)
        assert again.open(doc_target(db, 2, "x/y")).status_code == 200
        wait_for(again, lambda ms: any(m.get("documentChange", {}).get("document", {}).get("fields") == {"n": {"integerValue": "5"}} for m in ms))
        again.terminate()
        b.terminate()
        deadline = time.time() + T
        while time.time() < deadline and [c for c in registry(base) if c["protocol"] == "firestore-webchannel"]:
            time.sleep(0.05)
        assert [c for c in registry(base) if c["protocol"] == "firestore-webchannel"] == []
    finally:
        stop_server(proc)


def test_a_write_waits_out_the_switchs_latency(db):
    proc, base = start_server()
    try:
        channel = Channel(base, "Write", db, headers=web_headers(app_id="1:1:web:slow"))
        channel.open({"database": db})
        token = wait_for(channel, lambda ms: ms)[0]["streamToken"]
        r = requests.put(f"{base}/emulator/v1/connections/network", json={"match": {"appId": "1:1:web:slow"}, "online": True, "latencyMs": 400},
                         timeout=T)
        assert r.status_code == 200, r.text
        started = time.time()
        channel.send({"streamToken": token, "writes": [update(db, "s/x", n=1)]})
        wait_for(channel, lambda ms: len(ms) >= 2)
        assert time.time() - started >= 0.8  # the POST's way in, the result's way out
    finally:
        stop_server(proc)


# ---- volume: more than the official emulator's 10 000 pending messages ----

def test_a_listen_of_twelve_thousand_documents_arrives_whole(server, db):
    for start in range(0, 12_000, 500):
        commit(server, db, *[update(db, f"many/d{i:05}", n=i) for i in range(start, start + 500)])
    channel = Channel(server, "Listen", db)
    channel.open(query_target(db, 2, "many"))
    messages = wait_for(channel, consistent, timeout=120)
    names = [m["documentChange"]["document"]["name"] for m in messages if "documentChange" in m]
    assert len(names) == 12_000 == len(set(names))
    ids = [i for i, _ in channel.arrays]
    assert ids == list(range(1, len(ids) + 1))


def test_web_sessions_have_timeline_lanes_named_by_their_app(server, db):
    listen = Channel(server, "Listen", db, headers=web_headers(app_id="1:1:web:tl"))
    listen.open(doc_target(db, 3, "t/one"))
    wait_for(listen, consistent)
    write = Channel(server, "Write", db, headers=web_headers(app_id="1:1:web:tl"))
    write.open({"database": db})
    first = wait_for(write, lambda ms: ms)[0]
    write.send({"streamToken": first["streamToken"], "writes": [update(db, "t/one", n=5)]})
    wait_for(write, lambda ms: len(ms) >= 2)
    wait_for(listen, lambda ms: any(m.get("documentChange", {}).get("document", {}).get("fields") == {"n": {"integerValue": "5"}} for m in ms))
    project = db.split("/")[1]
    trace = requests.get(f"{server}/emulator/v1/timeline", timeout=T).json()
    lanes = [lane for lane in trace["lanes"] if lane.get("project") == project]
    assert {lane["protocol"] for lane in lanes} == {"firestore-webchannel"} and len(lanes) == 2
    assert {lane["appId"] for lane in lanes} == {"1:1:web:tl"}
    events = [e for e in trace["events"] if e["lane"] in {lane["id"] for lane in lanes}]
    described = [(e["kind"], e.get("listener"), e.get("writeId")) for e in events if e["kind"] != "lifecycle"]
    assert described[0] == ("listenOpened", "3", None)
    assert ("writeSent", None, "w1") in described and ("writeAcknowledged", None, "w1") in described
    snapshots = [e for e in events if e["kind"] == "snapshot"]
    assert snapshots[-1]["changed"] == [{"type": "changed", "path": "t/one"}]
    assert listen.terminate().status_code == 200 and write.terminate().status_code == 200
