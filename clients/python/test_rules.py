"""Security rules through the public surfaces (docs/security-rules.md, docs/wire/security-rules.md): loading
at the emulators' URLs, identities, the denial bodies of each surface, commits judged as one,
list rules against queries, edge clients judged when they sync, and every decision traced.

The rulesets are the ones a user would write (rulesets/: a chat app, a marketplace with roles
from custom claims and getAfter in batches, an RTDB presence and leaderboard app). The rules
tests run on a server of their own: a loaded ruleset changes how every request is served.
"""
import base64
import json
import queue
import time
import uuid
from pathlib import Path

import grpc
import pytest
import requests
from google.cloud.firestore_v1.types import document as doc_types
from google.cloud.firestore_v1.types import firestore as fs

from conftest import start_server, stop_server
from rtdb_socket import RealtimeSocket
from sse import SSEStream

RULESETS = Path(__file__).resolve().parent / "rulesets"
DB = "(default)"


@pytest.fixture(scope="module")
def server():
    proc, base = start_server()
    yield base
    stop_server(proc)


def jwt(sub, **claims):
    """An unsigned token as @firebase/rules-unit-testing makes one (alg none, empty signature)."""
    def b64(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    payload = {"iss": "https://securetoken.google.com/p", "aud": "p", "iat": 0, "exp": 3600, "auth_time": 0,
               "sub": sub, "user_id": sub, "firebase": {"sign_in_provider": "custom", "identities": {}}, **claims}
    return f"{b64({'alg': 'none', 'type': 'JWT'})}.{b64(payload)}."


def as_user(sub, **claims):
    return {"Authorization": f"Bearer {jwt(sub, **claims)}"}


OWNER = {"Authorization": "Bearer owner"}


def load_firestore(base, project, source, **extra):
    return requests.put(f"{base}/emulator/v1/projects/{project}:securityRules",
                        json={"rules": {"files": [{"content": source}]}, **extra}, timeout=10)


def docs(base, project):
    return f"{base}/v1/projects/{project}/databases/{DB}/documents"


def fields(**values):
    def typed(v):
        if isinstance(v, bool):
            return {"booleanValue": v}
        if isinstance(v, int):
            return {"integerValue": str(v)}
        if isinstance(v, str):
            return {"stringValue": v}
        if isinstance(v, list):
            return {"arrayValue": {"values": [typed(x) for x in v]}}
        raise TypeError(v)
    return {"fields": {k: typed(v) for k, v in values.items()}}


def trace(base, response):
    ids = response.headers["Firegate-Rules-Decision"].split(", ")
    r = requests.get(f"{base}/emulator/v1/rules/decisions/{ids[-1]}", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture
def chat(server):
    project = "chat-" + uuid.uuid4().hex[:8]
    r = load_firestore(server, project, (RULESETS / "chat.rules").read_text())
    assert r.status_code == 200 and r.json() == {"issues": []}, r.text
    return project


# ---------------------------------------------------------------------------------------------
# Loading


def test_a_ruleset_with_errors_is_refused_with_its_issues_and_changes_nothing(server):
    project = "load-" + uuid.uuid4().hex[:8]
    assert requests.get(f"{server}/emulator/v1/projects/{project}:securityRules", timeout=10).status_code == 404
    bad = "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{d}/documents {\n    allow read: if nosuch(1);\n  }\n}\n"
    r = load_firestore(server, project, bad)
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["error"]["status"] == "INVALID_ARGUMENT"
    [issue] = body["issues"]
    assert issue["severity"] == "ERROR" and issue["sourcePosition"]["line"] == 4 and "nosuch" in issue["description"]
    # Nothing was loaded: the project stays open.
    r = requests.patch(f"{docs(server, project)}/a/b", json=fields(n=1), timeout=10)
    assert r.status_code == 200 and "Firegate-Rules-Decision" not in r.headers
    # The CLI's way: ignore_errors gets a 200 with the issues, and still loads nothing.
    r = load_firestore(server, project, bad, ignore_errors=True)
    assert r.status_code == 200 and r.json()["issues"][0]["severity"] == "ERROR"
    assert requests.get(f"{server}/emulator/v1/projects/{project}:securityRules", timeout=10).status_code == 404
    good = "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{d}/documents/{doc=**} {\n    allow read: if false;\n  }\n}\n"
    assert load_firestore(server, project, good).status_code == 200
    r = requests.get(f"{server}/emulator/v1/projects/{project}:securityRules", timeout=10)
    assert r.json()["rules"]["files"][0]["content"] == good
    assert requests.get(f"{docs(server, project)}/a/b", timeout=10).status_code == 403
    # DELETE goes back to the startup rules (none here): open again.
    assert requests.delete(f"{server}/emulator/v1/projects/{project}:securityRules", timeout=10).status_code == 200
    assert requests.get(f"{docs(server, project)}/a/b", timeout=10).status_code == 200


def test_tree_rules_need_the_owner_and_report_parse_errors_in_the_trees_shape(server):
    ns = "load-" + uuid.uuid4().hex[:8]
    source = (RULESETS / "presence.rules.json").read_text()
    r = requests.put(f"{server}/.settings/rules.json", params={"ns": ns}, data=source, timeout=10)
    assert r.status_code == 401 and "error" in r.json()
    r = requests.put(f"{server}/.settings/rules.json", params={"ns": ns}, data='{"rules": {".read": }}', headers=OWNER, timeout=10)
    assert r.status_code == 400 and r.json()["error"].startswith("Line 1")
    r = requests.put(f"{server}/.settings/rules.json", params={"ns": ns, "auth": "owner"}, data=source, timeout=10)
    assert r.status_code == 200, r.text
    assert requests.get(f"{server}/.settings/rules.json", params={"ns": ns}, timeout=10).text == source


# ---------------------------------------------------------------------------------------------
# Documents over REST


def test_denials_carry_the_emulators_body_and_a_traced_decision(server, chat):
    base = docs(server, chat)
    r = requests.patch(f"{base}/rooms/r1", json=fields(name="general", members=["alice", "bob"]), headers=as_user("alice"), timeout=10)
    assert r.status_code == 200, r.text
    r = requests.get(f"{base}/rooms/r1", headers=as_user("mallory"), timeout=10)
    assert r.status_code == 403
    assert r.content == b'{"error":{"code":403,"message":"\\nfalse for \'get\' @ L13","status":"PERMISSION_DENIED"}}'
    decision = trace(server, r)
    assert decision["outcome"] == "deny" and decision["uid"] == "mallory" and decision["surface"] == "rest"
    [evaluation] = decision["evaluations"]
    assert evaluation["method"] == "get" and evaluation["path"] == "/rooms/r1"
    [rule] = evaluation["rules"]
    assert rule["line"] == 13 and rule["bindings"]["room"] == "r1" and rule["source"].startswith("allow get: if isMember(room)")
    assert {"path": f"/databases/{DB}/documents/rooms/r1", "call": "get", "found": True} in evaluation["accesses"]
    assert any(e.get("value") == {"boolValue": False} for e in evaluation["expressions"])
    # A member reads it; the answer names its decision too.
    r = requests.get(f"{base}/rooms/r1", headers=as_user("bob"), timeout=10)
    assert r.status_code == 200 and trace(server, r)["outcome"] == "allow"
    # No allow for the method: the emulator's other message.
    r = requests.patch(f"{base}/elsewhere/x", json=fields(n=1), headers=as_user("bob"), timeout=10)
    assert r.status_code == 403 and r.json()["error"]["message"] == "\nNo matching allow statements"
    # The admin bypasses rules; a token that is not a JWT is refused.
    r = requests.get(f"{base}/rooms/r1", headers=OWNER, timeout=10)
    assert r.status_code == 200 and "Firegate-Rules-Decision" not in r.headers
    r = requests.get(f"{base}/rooms/r1", headers={"Authorization": "Bearer not-a-token"}, timeout=10)
    assert r.status_code == 401 and r.json()["error"]["status"] == "UNAUTHENTICATED"


def test_a_denied_read_of_a_missing_document_says_nothing_of_its_existence(server, chat):
    r = requests.get(f"{docs(server, chat)}/rooms/none", headers=as_user("alice"), timeout=10)
    assert r.status_code == 403 and r.json()["error"]["message"] == "\nNull value error. for 'get' @ L13"


def test_message_rules_check_authorship_and_the_fields_an_update_changes(server, chat):
    base = docs(server, chat)
    requests.patch(f"{base}/rooms/r", json=fields(name="r", members=["alice", "bob"]), headers=OWNER, timeout=10)
    r = requests.patch(f"{base}/rooms/r/messages/m1", json=fields(author="alice", text="hi"), headers=as_user("alice"), timeout=10)
    assert r.status_code == 200, r.text
    r = requests.patch(f"{base}/rooms/r/messages/m2", json=fields(author="alice", text="forged"), headers=as_user("bob"), timeout=10)
    assert r.status_code == 403
    r = requests.patch(f"{base}/rooms/r/messages/m1", params={"updateMask.fieldPaths": "text"}, json=fields(text="edited"),
                       headers=as_user("alice"), timeout=10)
    assert r.status_code == 200, r.text
    # request.resource is the whole document after the masked update: changing author is seen.
    r = requests.patch(f"{base}/rooms/r/messages/m1", params={"updateMask.fieldPaths": "author"}, json=fields(author="bob"),
                       headers=as_user("alice"), timeout=10)
    assert r.status_code == 403
    r = requests.delete(f"{base}/rooms/r/messages/m1", headers=as_user("bob"), timeout=10)
    assert r.status_code == 403
    r = requests.delete(f"{base}/rooms/r/messages/m1", headers=as_user("alice"), timeout=10)
    assert r.status_code == 200


def test_list_rules_are_judged_against_the_query_not_the_results(server, chat):
    base = docs(server, chat)
    for room, members in (("a", ["alice"]), ("b", ["bob"])):
        requests.patch(f"{base}/rooms/{room}", json=fields(name=room, members=members), headers=OWNER, timeout=10)

    def run(where):
        query = {"from": [{"collectionId": "rooms"}]}
        if where:
            query["where"] = where
        return requests.post(f"{base}:runQuery", json={"structuredQuery": query}, headers=as_user("alice"), timeout=10)

    member = {"fieldFilter": {"field": {"fieldPath": "members"}, "op": "ARRAY_CONTAINS", "value": {"stringValue": "alice"}}}
    # A filter the rule cannot see through is refused even though alice is in every result.
    r = run(member)
    assert r.status_code == 403
    r = run(None)
    assert r.status_code == 403
    assert trace(server, r)["evaluations"][0]["method"] == "list"
    # A listing of the collection is a list too.
    assert requests.get(f"{base}/rooms", headers=as_user("alice"), timeout=10).status_code == 403


def test_marketplace_order_and_stock_are_allowed_only_together(server):
    project = "shop-" + uuid.uuid4().hex[:8]
    assert load_firestore(server, project, (RULESETS / "marketplace.rules").read_text()).status_code == 200
    base = docs(server, project)
    name = f"projects/{project}/databases/{DB}/documents"
    r = requests.patch(f"{base}/products/lamp", json=fields(stock=5), headers=as_user("ann", role="admin"), timeout=10)
    assert r.status_code == 200, r.text
    r = requests.patch(f"{base}/products/lamp", json=fields(stock=9), headers=as_user("bo"), timeout=10)
    assert r.status_code == 403
    order = {"update": {"name": f"{name}/orders/bo-lamp", **fields(buyer="bo", product="lamp")}}
    stock = {"update": {"name": f"{name}/products/lamp", **fields(stock=4)}, "updateMask": {"fieldPaths": ["stock"]}}
    # The order alone fails (getAfter sees no stock change); the stock alone fails (no order after).
    for writes in ([order], [stock]):
        r = requests.post(f"{base}:commit", json={"writes": writes}, headers=as_user("bo"), timeout=10)
        assert r.status_code == 403, r.text
    assert requests.get(f"{base}/products/lamp", headers=OWNER, timeout=10).json()["fields"]["stock"] == {"integerValue": "5"}
    r = requests.post(f"{base}:commit", json={"writes": [order, stock]}, headers=as_user("bo"), timeout=10)
    assert r.status_code == 200, r.text
    decision = trace(server, r)
    assert [e["method"] for e in decision["evaluations"]] == ["create", "update"]
    assert requests.get(f"{base}/orders/bo-lamp", headers=as_user("bo"), timeout=10).status_code == 200
    assert requests.get(f"{base}/orders/bo-lamp", headers=as_user("cy"), timeout=10).status_code == 403
    # batchWrite is an admin API (the Admin SDKs' BulkWriter): refused to users whatever the
    # rules say, written by the admin whatever they say.
    writes = {"writes": [{"update": {"name": f"{name}/products/desk", **fields(stock=1)}},
                         {"update": {"name": f"{name}/orders/x", **fields(buyer="cy")}}]}
    for caller in (as_user("ann", role="admin"), {}):
        r = requests.post(f"{base}:batchWrite", json=writes, headers=caller, timeout=10)
        assert r.status_code == 403 and r.json()["error"] == {
            "code": 403, "message": "Batch writes require admin authentication.", "status": "PERMISSION_DENIED"}, r.text
    assert requests.get(f"{base}/products/desk", headers=OWNER, timeout=10).status_code == 404
    r = requests.post(f"{base}:batchWrite", json=writes, headers=OWNER, timeout=10)
    assert r.status_code == 200 and r.json()["status"] == [{}, {}], r.text


def test_a_denied_listen_is_answered_before_anything_is_streamed(server, chat):
    base = docs(server, chat)
    requests.patch(f"{base}/rooms/q", json=fields(name="q", members=["alice"]), headers=OWNER, timeout=10)
    r = requests.get(f"{base}/rooms/q:listen", headers=as_user("bob"), timeout=10, stream=True)
    assert r.status_code == 403 and r.json()["error"]["status"] == "PERMISSION_DENIED"
    with SSEStream(f"{base}/rooms/q:listen", headers=as_user("alice")) as stream:
        _, snapshot = stream.read_until(lambda e: e.event == "snapshot", timeout=10)
        assert snapshot.json()["document"]["name"].endswith("/rooms/q")


# ---------------------------------------------------------------------------------------------
# Documents over gRPC


def test_grpc_calls_and_listen_targets_are_denied_with_the_emulators_message(server, chat):
    base = docs(server, chat)
    requests.patch(f"{base}/rooms/g", json=fields(name="g", members=["alice"]), headers=OWNER, timeout=10)
    name = f"projects/{chat}/databases/{DB}/documents/rooms/g"
    channel = grpc.insecure_channel(server.split("://", 1)[1])
    get = channel.unary_unary("/google.firestore.v1.Firestore/GetDocument", request_serializer=fs.GetDocumentRequest.serialize,
                              response_deserializer=doc_types.Document.deserialize)
    routing = ("google-cloud-resource-prefix", f"projects/{chat}/databases/{DB}")
    with pytest.raises(grpc.RpcError) as denied:
        get(fs.GetDocumentRequest(name=name), metadata=[("authorization", f"Bearer {jwt('bob')}"), routing], timeout=10)
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert denied.value.details() == "\nfalse for 'get' @ L13"
    doc = get(fs.GetDocumentRequest(name=name), metadata=[("authorization", f"Bearer {jwt('alice')}"), routing], timeout=10)
    assert doc.name == name
    listen = channel.stream_stream("/google.firestore.v1.Firestore/Listen", request_serializer=fs.ListenRequest.serialize,
                                   response_deserializer=fs.ListenResponse.deserialize)
    request = fs.ListenRequest(database=f"projects/{chat}/databases/{DB}",
                               add_target={"target_id": 3, "documents": {"documents": [name]}})
    responses = listen(iter([request]), metadata=[("authorization", f"Bearer {jwt('bob')}"), routing], timeout=5)
    first = next(responses)
    assert first.target_change.target_change_type == fs.TargetChange.TargetChangeType.REMOVE
    assert list(first.target_change.target_ids) == [3] and first.target_change.cause.code == 7
    responses.cancel()
    channel.close()


# ---------------------------------------------------------------------------------------------
# The tree: REST, streams and the WebSocket


@pytest.fixture
def presence(server):
    ns = "presence-" + uuid.uuid4().hex[:8]
    r = requests.put(f"{server}/.settings/rules.json", params={"ns": ns}, data=(RULESETS / "presence.rules.json").read_text(),
                     headers=OWNER, timeout=10)
    assert r.status_code == 200, r.text
    return ns


def test_tree_rest_denials_are_401_permission_denied_and_validate_runs_on_written_nodes(server, presence):
    url = f"{server}/status/alice.json"
    now = int(time.time() * 1000)
    good = {"state": "online", "lastChanged": now - 1000}
    r = requests.put(url, params={"ns": presence, "auth": jwt("alice")}, json=good, timeout=10)
    assert r.status_code == 200, r.text
    r = requests.put(url, params={"ns": presence, "auth": jwt("bob")}, json=good, timeout=10)
    assert r.status_code == 401 and r.json() == {"error": "Permission denied"}
    assert r.text == '{\n  "error" : "Permission denied"\n}'
    for bad in ({"state": "away", "lastChanged": now}, {"state": "online"}, {**good, "extra": 1}):
        r = requests.put(url, params={"ns": presence}, headers=as_user("alice"), json=bad, timeout=10)
        assert r.status_code == 401, bad
    decision = trace(server, r)
    assert decision["service"] == "database" and decision["namespace"] == presence
    assert any(rule["kind"] == ".validate" and rule["result"] == "false" for rule in decision["evaluations"][0]["rules"])
    assert requests.get(url, params={"ns": presence}, timeout=10).status_code == 401
    assert requests.get(url, params={"ns": presence, "auth": jwt("carol")}, timeout=10).json() == good
    # A stream denied at open gets the 401 before any event.
    r = requests.get(url, params={"ns": presence}, headers={"Accept": "text/event-stream"}, timeout=10, stream=True)
    assert r.status_code == 401


def test_tree_query_rules_see_the_query(server, presence):
    for uid, score in (("a", 10), ("b", 30)):
        r = requests.put(f"{server}/scores/{uid}.json", params={"ns": presence}, headers=as_user(uid), json={"score": score}, timeout=10)
        assert r.status_code == 200, r.text
    r = requests.put(f"{server}/scores/b.json", params={"ns": presence}, headers=as_user("b"), json={"score": 5}, timeout=10)
    assert r.status_code == 401  # scores only go up
    r = requests.get(f"{server}/scores.json", params={"ns": presence, "orderBy": '"score"', "limitToLast": 10}, timeout=10)
    assert r.status_code == 200 and r.json() == {"a": {"score": 10}, "b": {"score": 30}}
    assert requests.get(f"{server}/scores.json", params={"ns": presence}, timeout=10).status_code == 401
    r = requests.get(f"{server}/scores.json", params={"ns": presence, "orderBy": '"score"', "limitToLast": 50}, timeout=10)
    assert r.status_code == 401


def test_websocket_writes_and_listens_are_answered_permission_denied(server, presence):
    sock = RealtimeSocket(server, presence)
    try:
        reply = sock.request("p", {"p": "/status/alice", "d": {"state": "online", "lastChanged": 1}})
        assert reply == {"s": "permission_denied", "d": "Permission denied"}
        reply = sock.request("q", {"p": "/status", "h": ""})
        assert reply["s"] == "permission_denied"
        assert sock.request("auth", {"cred": jwt("alice")})["s"] == "ok"
        reply = sock.request("p", {"p": "/status/alice", "d": {"state": "online", "lastChanged": 1}})
        assert reply == {"s": "ok", "d": ""}
        assert sock.request("q", {"p": "/status/alice", "h": ""})["s"] == "ok"
        # An onDisconnect operation is judged when it is registered.
        reply = sock.request("o", {"p": "/status/bob", "d": {"state": "offline", "lastChanged": 1}})
        assert reply["s"] == "permission_denied"
    finally:
        sock.close()


# ---------------------------------------------------------------------------------------------
# Edge clients: judged when they sync


def test_an_offline_write_rejected_by_the_rules_when_it_syncs_is_rolled_back_and_later_writes_go(server, chat):
    cid = "c-" + uuid.uuid4().hex[:8]
    url = f"{server}/clients/{cid}"
    assert requests.put(url, json={"project": chat}, timeout=10).status_code == 200
    assert requests.put(f"{url}/auth", json={"uid": "alice"}, timeout=10).status_code == 200
    requests.patch(f"{docs(server, chat)}/rooms/e", json=fields(name="e", members=["alice"]), headers=OWNER, timeout=10)
    data = f"{url}/v1/projects/{chat}/databases/{DB}/documents"
    assert requests.put(f"{url}/network", json={"online": False}, timeout=10).status_code == 200
    r = requests.patch(f"{data}/rooms/e/messages/forged", json=fields(author="bob", text="x"), timeout=10)
    forged = r.headers["Firegate-Write-Id"]
    r = requests.patch(f"{data}/rooms/e/messages/mine", json=fields(author="alice", text="y"), timeout=10)
    mine = r.headers["Firegate-Write-Id"]
    assert requests.get(f"{data}/rooms/e/messages/forged", timeout=10).status_code == 200  # the local view has it
    assert requests.put(f"{url}/network", json={"online": True}, timeout=10).status_code == 200
    state = requests.get(f"{url}/pendingWrites/{forged}", timeout=10).json()
    deadline = time.time() + 10
    while state["state"] == "pending" and time.time() < deadline:
        time.sleep(0.05)
        state = requests.get(f"{url}/pendingWrites/{forged}", timeout=10).json()
    assert state["state"] == "rejected" and state["error"]["status"] == "PERMISSION_DENIED"
    assert state["error"]["message"].startswith("\nfalse for 'create'")
    deadline = time.time() + 10
    while requests.get(f"{url}/pendingWrites/{mine}", timeout=10).json()["state"] == "pending" and time.time() < deadline:
        time.sleep(0.05)
    assert requests.get(f"{url}/pendingWrites/{mine}", timeout=10).json()["state"] == "acknowledged"
    assert requests.get(f"{docs(server, chat)}/rooms/e/messages/mine", headers=OWNER, timeout=10).status_code == 200
    assert requests.get(f"{docs(server, chat)}/rooms/e/messages/forged", headers=OWNER, timeout=10).status_code == 404
    assert requests.get(f"{data}/rooms/e/messages/forged", timeout=10).status_code == 404
    # The decision names the client that sent the write.
    decisions = requests.get(f"{server}/emulator/v1/rules/decisions", params={"client": cid, "outcome": "deny"}, timeout=10).json()
    assert decisions["decisions"] and decisions["decisions"][0]["surface"] == "edge"


def test_claims_and_the_owner_token_of_an_edge_client(server):
    project = "claims-" + uuid.uuid4().hex[:8]
    assert load_firestore(server, project, (RULESETS / "marketplace.rules").read_text()).status_code == 200
    cid = "c-" + uuid.uuid4().hex[:8]
    url = f"{server}/clients/{cid}"
    requests.put(url, json={"project": project}, timeout=10)
    data = f"{url}/v1/projects/{project}/databases/{DB}/documents"

    def write(doc):
        return requests.patch(f"{data}/products/{doc}", params={"waitFor": "ack"}, json=fields(stock=1), timeout=30)

    assert requests.put(f"{url}/auth", json={"uid": "ann"}, timeout=10).status_code == 200
    assert write("p1").status_code == 403
    r = requests.put(f"{url}/auth", json={"uid": "ann", "claims": {"role": "admin"}}, timeout=10)
    assert r.status_code == 200 and r.json()["claims"] == {"role": "admin"}
    assert write("p2").status_code == 200
    assert requests.put(f"{url}/auth", json={"token": "owner"}, timeout=10).status_code == 200
    r = write("p3")
    assert r.status_code == 200


# ---------------------------------------------------------------------------------------------
# Decisions: the stream, the list and the metrics


def test_decisions_are_streamed_listed_and_counted(server, chat):
    before = requests.get(f"{server}/metrics", timeout=10).text
    with SSEStream(f"{server}/emulator/v1/rules/decisions", params={"project": chat}) as stream:
        time.sleep(0.2)
        r = requests.get(f"{docs(server, chat)}/rooms/nope", headers=as_user("zed"), timeout=10)
        assert r.status_code == 403
        _, event = stream.read_until(lambda e: e.event == "decision", timeout=10)
        decision = event.json()
        assert decision["id"] == r.headers["Firegate-Rules-Decision"] and decision["outcome"] == "error"  # get() of a missing room: a null value error
    after = requests.get(f"{server}/metrics", timeout=10).text

    def count(text, outcome):
        for line in text.splitlines():
            if line.startswith(f'firegate_rules_decisions_total{{outcome="{outcome}"}}'):
                return int(float(line.split()[-1]))
        return 0
    assert count(after, "deny") + count(after, "error") > count(before, "deny") + count(before, "error")
    listed = requests.get(f"{server}/emulator/v1/rules/decisions", params={"project": chat}, timeout=10).json()["decisions"]
    assert listed and all(d["project"] == chat for d in listed)
    assert requests.get(f"{server}/emulator/v1/rules/decisions/999999999", timeout=10).status_code == 404


# ---------------------------------------------------------------------------------------------
# Startup files, watched


def test_rules_files_named_at_start_are_loaded_and_reloaded_when_they_change(tmp_path):
    rules = tmp_path / "firestore.rules"
    rules.write_text("rules_version = '2';\nservice cloud.firestore {\n  match /databases/{d}/documents/{doc=**} {\n    allow read: if true;\n  }\n}\n")
    db_rules = tmp_path / "database.rules.json"
    db_rules.write_text('{"rules": {".read": true, ".write": false}}')
    (tmp_path / "firebase.json").write_text(json.dumps({"firestore": {"rules": "firestore.rules"}, "database": {"rules": "database.rules.json"}}))
    proc, base = start_server("--firebase-json", tmp_path / "firebase.json")
    try:
        url = f"{base}/v1/projects/any/databases/{DB}/documents/a/b"
        assert requests.get(url, timeout=10).status_code == 404  # read allowed, nothing there
        assert requests.patch(url, json=fields(n=1), timeout=10).status_code == 403
        assert requests.put(f"{base}/x.json", json=1, timeout=10).status_code == 401
        rules.write_text(rules.read_text().replace("allow read: if true;", "allow read, write: if true;"))
        deadline = time.time() + 10
        while requests.patch(url, json=fields(n=1), timeout=10).status_code != 200:
            assert time.time() < deadline, "the changed rules file was not reloaded"
            time.sleep(0.1)
        # A broken edit is refused and the rules in force stay.
        rules.write_text("service cloud.firestore { match")
        time.sleep(1.5)
        assert requests.patch(url, json=fields(n=2), timeout=10).status_code == 200
    finally:
        stop_server(proc)
    # A broken file at start stops the start with a clear error.
    with pytest.raises(RuntimeError, match="firestore.rules"):
        start_server("--firestore-rules", rules)


# ---------------------------------------------------------------------------------------------
# Streams and listens that lose access when the rules change


def test_a_reload_that_takes_access_away_ends_every_kind_of_stream(server):
    project = "reload-" + uuid.uuid4().hex[:8]
    ns = "reload-" + uuid.uuid4().hex[:8]
    open_docs = "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{d}/documents/{doc=**} {\n    allow read: if request.auth != null;\n  }\n}\n"
    closed_docs = open_docs.replace("request.auth != null", "false")
    assert load_firestore(server, project, open_docs).status_code == 200
    assert requests.put(f"{server}/.settings/rules.json", params={"ns": ns}, data='{"rules": {".read": "auth != null", ".write": true}}',
                        headers=OWNER, timeout=10).status_code == 200
    base = docs(server, project)
    requests.patch(f"{base}/rooms/x", json=fields(n=1), headers=OWNER, timeout=10)
    requests.put(f"{server}/status/a.json", params={"ns": ns}, json=1, headers=OWNER, timeout=10)

    tree_stream = SSEStream(f"{server}/status.json", params={"ns": ns, "auth": jwt("carol")}, headers={"Accept": "text/event-stream"})
    tree_stream.read_until(lambda e: e.event == "put", timeout=10)
    sock = RealtimeSocket(server, ns)
    assert sock.request("auth", {"cred": jwt("carol")})["s"] == "ok"
    assert sock.request("q", {"p": "/status", "h": ""})["s"] == "ok"
    doc_stream = SSEStream(f"{base}/rooms/x:listen", headers=as_user("alice"))
    doc_stream.read_until(lambda e: e.event == "snapshot", timeout=10)
    channel = grpc.insecure_channel(server.split("://", 1)[1])
    listen = channel.stream_stream("/google.firestore.v1.Firestore/Listen", request_serializer=fs.ListenRequest.serialize,
                                   response_deserializer=fs.ListenResponse.deserialize)
    name = f"projects/{project}/databases/{DB}/documents/rooms/x"
    request = fs.ListenRequest(database=f"projects/{project}/databases/{DB}", add_target={"target_id": 5, "documents": {"documents": [name]}})
    # The request side stays open (as a real client's does while it listens): a half-close ends a Listen.
    pending = queue.Queue()
    pending.put(request)
    responses = listen(iter(pending.get, None), metadata=[("authorization", f"Bearer {jwt('alice')}"),
                                                          ("google-cloud-resource-prefix", f"projects/{project}/databases/{DB}")], timeout=20)
    while next(responses).target_change.target_change_type != fs.TargetChange.TargetChangeType.CURRENT:
        pass
    cid = "c-" + uuid.uuid4().hex[:8]
    url = f"{server}/clients/{cid}"
    requests.put(url, json={"project": project}, timeout=10)
    requests.put(f"{url}/auth", json={"uid": "alice"}, timeout=10)
    query = json.dumps({"from": [{"collectionId": "rooms"}]})
    edge_stream = SSEStream(f"{url}/v1/projects/{project}/databases/{DB}/documents:listen", params={"query": query})
    edge_stream.read_until(lambda e: e.event == "snapshot" and not e.json()["metadata"]["fromCache"], timeout=10)
    try:
        assert load_firestore(server, project, closed_docs).status_code == 200
        assert requests.put(f"{server}/.settings/rules.json", params={"ns": ns}, data='{"rules": {".read": false}}',
                            headers=OWNER, timeout=10).status_code == 200
        _, cancel = tree_stream.read_until(lambda e: e.event == "cancel", timeout=10)
        assert cancel.data == '"Permission denied"' or cancel.data == "Permission denied"
        action, body = sock.wait_push(lambda a, b: a == "c")
        assert body["p"] in ("/status", "status")
        _, error = doc_stream.read_until(lambda e: e.event == "error", timeout=10)
        assert error.json()["error"]["status"] == "PERMISSION_DENIED"
        removed = next(responses)
        while removed.target_change.target_change_type == fs.TargetChange.TargetChangeType.NO_CHANGE:
            removed = next(responses)  # the snapshot that followed CURRENT
        assert removed.target_change.target_change_type == fs.TargetChange.TargetChangeType.REMOVE
        assert list(removed.target_change.target_ids) == [5] and removed.target_change.cause.code == 7
        _, edge_error = edge_stream.read_until(lambda e: e.event == "error", timeout=10)
        assert edge_error.json()["error"]["status"] == "PERMISSION_DENIED"
    finally:
        for closable in (tree_stream, doc_stream, edge_stream, sock):
            closable.close()
        pending.put(None)
        responses.cancel()
        channel.close()


# ---------------------------------------------------------------------------------------------
# Coverage and the dry run


def test_coverage_counts_what_each_expression_evaluated_to(server, chat):
    base = docs(server, chat)
    requests.patch(f"{base}/rooms/cov", json=fields(name="c", members=["alice"]), headers=OWNER, timeout=10)
    assert requests.get(f"{base}/rooms/cov", headers=as_user("alice"), timeout=10).status_code == 200
    assert requests.get(f"{base}/rooms/cov", headers=as_user("bob"), timeout=10).status_code == 403
    r = requests.get(f"{server}/emulator/v1/projects/{chat}:ruleCoverage", timeout=10)
    assert r.status_code == 200
    report = r.json()
    assert report["rules"]["files"][0]["content"] == (RULESETS / "chat.rules").read_text()

    def all_reports(items):
        for item in items:
            yield item
            yield from all_reports(item["children"])
    # The allow get on line 13: evaluated twice, once true and once false.
    [allow_get] = [x for x in report["report"] if x["sourcePosition"]["line"] == 13]
    assert sorted((v["value"].get("boolValue"), v["count"]) for v in allow_get["values"]) == [(False, 1), (True, 1)]
    assert any(v["value"] == {"stringValue": "bob"} for x in all_reports(report["report"]) for v in x["values"])
    page = requests.get(f"{server}/emulator/v1/projects/{chat}:ruleCoverage.html", timeout=10)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html") and "isMember(room)" in page.text


def test_tree_coverage_counts_each_rule_by_its_location_as_written(server, presence):
    requests.put(f"{server}/status/zed.json", params={"ns": presence}, headers=as_user("zed"), json={"state": "online", "lastChanged": 1}, timeout=10)
    requests.put(f"{server}/status/zed.json", params={"ns": presence}, headers=as_user("amy"), json={"state": "online", "lastChanged": 1}, timeout=10)
    report = requests.get(f"{server}/.inspect/coverage.json", params={"ns": presence}, timeout=10).json()
    rows = {(r["kind"], r["location"]): r["results"] for r in report["report"]}
    assert rows[(".write", "/status/$uid")] == {"false": 1, "true": 1}
    assert rows[(".validate", "/status/$uid/state")] == {"true": 1}
    assert requests.get(f"{server}/.inspect/coverage", params={"ns": presence}, timeout=10).headers["Content-Type"].startswith("text/html")


def test_the_dry_run_judges_test_cases_with_mocked_reads(server, chat):
    suite = {"testCases": [
        {"expectation": "ALLOW", "expressionReportLevel": "VISITED",
         "request": {"method": "get", "path": f"/databases/{DB}/documents/rooms/r", "auth": {"uid": "alice", "token": {}}},
         "functionMocks": [{"function": "get", "args": [{"exactValue": f"/databases/{DB}/documents/rooms/r"}],
                            "result": {"value": {"data": {"members": ["alice"]}}}}]},
        {"expectation": "ALLOW",
         "request": {"method": "get", "path": f"/databases/{DB}/documents/rooms/r", "auth": {"uid": "bob", "token": {}}},
         "functionMocks": [{"function": "get", "args": [{"anyValue": {}}], "result": {"value": {"data": {"members": ["alice"]}}}}]},
        {"expectation": "DENY",
         "request": {"method": "create", "path": f"/databases/{DB}/documents/rooms/r/messages/m", "auth": {"uid": "alice", "token": {}},
                     "resource": {"data": {"author": "bob", "text": "x"}}},
         "functionMocks": [{"function": "get", "args": [{"anyValue": {}}], "result": {"value": {"data": {"members": ["alice"]}}}}]},
    ]}
    r = requests.post(f"{server}/emulator/v1/projects/{chat}:test", json={"testSuite": suite}, timeout=10)
    assert r.status_code == 200, r.text
    results = r.json()["testResults"]
    assert [x["state"] for x in results] == ["SUCCESS", "FAILURE", "SUCCESS"]
    assert results[0]["functionCalls"][0]["function"] == "get" and results[0]["visitedExpressions"]
    # A source given with the request is used instead; its issues come back.
    r = requests.post(f"{server}/emulator/v1/projects/{chat}:test",
                      json={"source": {"files": [{"content": "service cloud.firestore { match"}]}, "testSuite": suite}, timeout=10)
    assert r.status_code == 200 and r.json()["issues"] and r.json()["testResults"] == []
    r = requests.post(f"{server}/emulator/v1/projects/{chat}:test", json={"testSuite": {"testCases": [{"expectation": "MAYBE"}]}}, timeout=10)
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT"


def test_a_tree_write_the_rules_reject_when_it_syncs_is_reverted_for_the_clients_listeners(server, presence):
    cid = "t-" + uuid.uuid4().hex[:8]
    url = f"{server}/clients/{cid}"
    assert requests.put(url, json={"namespace": presence}, timeout=10).status_code == 200
    assert requests.put(f"{url}/auth", json={"uid": "alice"}, timeout=10).status_code == 200
    good = {"state": "online", "lastChanged": 1}
    requests.put(f"{server}/status/alice.json", params={"ns": presence}, json=good, headers=OWNER, timeout=10)
    with SSEStream(f"{url}/status/alice.json") as stream:
        def sync():
            token = uuid.uuid4().hex
            requests.post(f"{url}/gates:sync", json={"token": token}, timeout=10)
            events, _ = stream.read_until(lambda e: e.event == "sync" and e.json()["token"] == token, timeout=10)
            return [(e.event, e.json().get("key"), e.json().get("value")) for e in events if not e.is_comment]
        sync()
        requests.put(f"{url}/gates", json={"holdWrites": True}, timeout=10)
        r = requests.put(f"{url}/status/alice/state.json", json="away", timeout=10)  # the rules allow only online|offline
        write_id = r.headers["Firegate-Write-Id"]
        assert ("child_changed", "state", "away") in sync()
        released = requests.post(f"{url}/gates:releaseWrite", json={"count": 1}, timeout=10).json()["released"]
        assert [(w["id"], w["state"]) for w in released] == [(write_id, "rejected")]
        assert released[0]["error"]["status"] == "PERMISSION_DENIED"
        reverted = sync()
        assert ("child_changed", "state", "online") in reverted and ("value", "alice", good) in reverted
    assert requests.get(f"{server}/status/alice.json", params={"ns": presence}, headers=OWNER, timeout=10).json() == good


def test_an_edge_listen_the_rules_refuse_ends_its_listeners_with_the_error(server, chat):
    cid = "c-" + uuid.uuid4().hex[:8]
    url = f"{server}/clients/{cid}"
    requests.put(url, json={"project": chat}, timeout=10)
    requests.put(f"{url}/auth", json={"uid": "bob"}, timeout=10)
    query = json.dumps({"from": [{"collectionId": "rooms"}]})  # list needs a members filter the rule can see
    with SSEStream(f"{url}/v1/projects/{chat}/databases/{DB}/documents:listen", params={"query": query}) as stream:
        _, error = stream.read_until(lambda e: e.event == "error", timeout=10)
        assert error.json()["error"]["status"] == "PERMISSION_DENIED"
        assert error.json()["error"]["message"].startswith("\n")


def test_transactions_are_judged_as_their_reads_and_their_commit(server, chat):
    base = docs(server, chat)
    name = f"projects/{chat}/databases/{DB}/documents"
    requests.patch(f"{base}/rooms/t", json=fields(name="t", members=["alice"]), headers=OWNER, timeout=10)
    for user, status in (("alice", 200), ("bob", 403)):
        tx = requests.post(f"{base}:beginTransaction", json={}, headers=as_user(user), timeout=10).json()["transaction"]
        r = requests.post(f"{base}:batchGet", json={"documents": [f"{name}/rooms/t"], "transaction": tx}, headers=as_user(user), timeout=10)
        assert r.status_code == status, r.text
    tx = requests.post(f"{base}:beginTransaction", json={}, headers=as_user("alice"), timeout=10).json()["transaction"]
    forged = {"update": {"name": f"{name}/rooms/t/messages/m", **fields(author="bob", text="x")}}
    r = requests.post(f"{base}:commit", json={"writes": [forged], "transaction": tx}, headers=as_user("alice"), timeout=10)
    assert r.status_code == 403 and r.json()["error"]["status"] == "PERMISSION_DENIED"
    assert requests.get(f"{base}/rooms/t/messages/m", headers=OWNER, timeout=10).status_code == 404
    tx = requests.post(f"{base}:beginTransaction", json={}, headers=as_user("alice"), timeout=10).json()["transaction"]
    mine = {"update": {"name": f"{name}/rooms/t/messages/m", **fields(author="alice", text="x")}}
    r = requests.post(f"{base}:commit", json={"writes": [mine], "transaction": tx}, headers=as_user("alice"), timeout=10)
    assert r.status_code == 200, r.text
