"""Who is the admin, on every surface (issue 41; docs/security-rules.md, "Who is the admin").

Every surface × every caller {no token, `owner`, the admin token, a user's JWT} × a server with
and without `--admin-token`. Without an admin token the emulators' convention holds: `owner` is
the admin. With one, the token alone is: `owner` is an ordinary unauthenticated caller whom the
rules judge, and every control route answers 401 without the token.

The rules deny everything, so a call that succeeds was made by the admin. A surface added later
belongs in SURFACES: the matrix then checks it for all eight cells.
"""
import json
import uuid

import grpc
import pytest
import requests
from google.cloud.firestore_v1.types import document as doc_types
from google.cloud.firestore_v1.types import firestore as fs

from conftest import start_server, stop_server
from rtdb_socket import RealtimeSocket
from sse import SSEStream
from test_rules import jwt

DB = "(default)"
T = 15
DENY_DOCS = "rules_version = '2';\nservice cloud.firestore {\n  match /databases/{db}/documents {\n" \
            "    match /{document=**} { allow read, write: if false; }\n  }\n}\n"
DENY_TREE = '{"rules": {".read": false, ".write": false}}'
CALLERS = ("none", "owner", "token", "user")


class Server:
    def __init__(self, secured):
        self.secured = secured
        self.token = "T-" + uuid.uuid4().hex
        self.proc, self.base = start_server(*(["--admin-token", self.token] if secured else []))
        self.project = "adm-" + uuid.uuid4().hex[:8]
        self.ns = "adm-" + uuid.uuid4().hex[:8]
        self.admin = {"Authorization": f"Bearer {self.token if secured else 'owner'}"}
        r = requests.put(f"{self.base}/emulator/v1/projects/{self.project}:securityRules", headers=self.admin,
                         json={"rules": {"files": [{"content": DENY_DOCS}]}}, timeout=T)
        assert r.status_code == 200, r.text
        r = requests.put(f"{self.base}/.settings/rules.json", params={"ns": self.ns}, data=DENY_TREE, headers=self.admin, timeout=T)
        assert r.status_code == 200, r.text
        self.docs = f"{self.base}/v1/projects/{self.project}/databases/{DB}/documents"
        r = requests.patch(f"{self.docs}/secret/x", json={"fields": {"v": {"integerValue": "1"}}}, headers=self.admin, timeout=T)
        assert r.status_code == 200, r.text
        r = requests.put(f"{self.base}/secret.json", params={"ns": self.ns}, json={"v": 1}, headers=self.admin, timeout=T)
        assert r.status_code == 200, r.text

    def credential(self, caller):
        """The bearer token a caller presents (None: no header)."""
        return {"none": None, "owner": "owner", "token": self.token, "user": jwt("alice")}[caller]

    def headers(self, caller):
        token = self.credential(caller)
        return {"Authorization": f"Bearer {token}"} if token else {}

    def is_admin(self, caller):
        return caller == ("token" if self.secured else "owner")

    def expected_data(self, caller):
        """What a data call under deny-all rules comes to: allowed for the admin; on a server
        without an admin token a token that names no one is refused (401); else denied."""
        if self.is_admin(caller):
            return "allowed"
        if not self.secured and caller == "token":
            return "unauthenticated"
        return "denied"

    def stop(self):
        stop_server(self.proc)


@pytest.fixture(scope="module", params=[False, True], ids=["no-admin-token", "admin-token"])
def server(request):
    s = Server(request.param)
    yield s
    s.stop()


def outcome(status, allowed=200, denied=(403,), unauthenticated=(401,)):
    if status == allowed:
        return "allowed"
    if status in unauthenticated:
        return "unauthenticated"
    if status in denied:
        return "denied"
    return f"status {status}"


# --------------------------------------------------------------------------------------------
# The surfaces: each answers "allowed", "denied" or "unauthenticated" for one caller.

def rest_get(s, caller):
    return outcome(requests.get(f"{s.docs}/secret/x", headers=s.headers(caller), timeout=T).status_code)


def rest_patch(s, caller):
    r = requests.patch(f"{s.docs}/secret/y", json={"fields": {"by": {"stringValue": caller}}}, headers=s.headers(caller), timeout=T)
    return outcome(r.status_code)


def rest_commit(s, caller):
    name = f"projects/{s.project}/databases/{DB}/documents/secret/z"
    r = requests.post(f"{s.docs}:commit", json={"writes": [{"update": {"name": name, "fields": {}}}]}, headers=s.headers(caller), timeout=T)
    return outcome(r.status_code)


def rest_run_query(s, caller):
    r = requests.post(f"{s.docs}:runQuery", json={"structuredQuery": {"from": [{"collectionId": "secret"}]}},
                      headers=s.headers(caller), timeout=T)
    return outcome(r.status_code)


def documents_listen_sse(s, caller):
    with SSEStream(f"{s.docs}/secret/x:listen", headers=s.headers(caller)) as stream:
        if not stream.ok:
            return outcome(stream.status_code)
        first = stream.next(timeout=T)
        if first.event == "snapshot":
            return "allowed"
        assert first.event == "error", first
        return outcome(first.json()["error"]["code"])


def grpc_status(s, caller, method, request, request_type, response_type):
    channel = grpc.insecure_channel(s.base.split("://", 1)[1])
    try:
        call = channel.unary_unary(f"/google.firestore.v1.Firestore/{method}", request_serializer=request_type.serialize,
                                   response_deserializer=response_type.deserialize)
        token = s.credential(caller)
        metadata = [("authorization", f"Bearer {token}")] if token else []
        try:
            call(request, metadata=metadata, timeout=T)
            return "allowed"
        except grpc.RpcError as error:
            return {grpc.StatusCode.PERMISSION_DENIED: "denied", grpc.StatusCode.UNAUTHENTICATED: "unauthenticated"}.get(
                error.code(), f"status {error.code()}")
    finally:
        channel.close()


def grpc_get_document(s, caller):
    name = f"projects/{s.project}/databases/{DB}/documents/secret/x"
    return grpc_status(s, caller, "GetDocument", fs.GetDocumentRequest(name=name), fs.GetDocumentRequest, doc_types.Document)


def grpc_commit(s, caller):
    database = f"projects/{s.project}/databases/{DB}"
    request = fs.CommitRequest(database=database, writes=[{"update": {"name": f"{database}/documents/secret/g", "fields": {}}}])
    return grpc_status(s, caller, "Commit", request, fs.CommitRequest, fs.CommitResponse)


def tree_params(s, caller, in_query):
    token = s.credential(caller)
    params = {"ns": s.ns}
    if in_query and token:
        params["auth"] = token
    return params, ({} if in_query else s.headers(caller))


def tree_get(s, caller, in_query=False):
    params, headers = tree_params(s, caller, in_query)
    r = requests.get(f"{s.base}/secret.json", params=params, headers=headers, timeout=T)
    # The tree's denials are 401 "Permission denied"; a token naming no one is 401 too, with
    # another message.
    if r.status_code == 401:
        return "denied" if r.json() == {"error": "Permission denied"} else "unauthenticated"
    return outcome(r.status_code)


def tree_get_auth_param(s, caller):
    return tree_get(s, caller, in_query=True)


def tree_put(s, caller):
    params, headers = tree_params(s, caller, False)
    r = requests.put(f"{s.base}/secret/w.json", params=params, headers=headers, json=caller, timeout=T)
    if r.status_code == 401:
        return "denied" if r.json() == {"error": "Permission denied"} else "unauthenticated"
    return outcome(r.status_code)


def tree_sse(s, caller):
    params, headers = tree_params(s, caller, False)
    with requests.get(f"{s.base}/secret.json", params=params, headers={**headers, "Accept": "text/event-stream"},
                      stream=True, timeout=T) as r:
        if r.status_code != 200:
            assert r.status_code == 401, r.status_code
            return "denied" if r.json() == {"error": "Permission denied"} else "unauthenticated"
        for line in r.iter_lines(chunk_size=1):
            if line.startswith(b"event:"):
                return "allowed" if line == b"event: put" else line.decode()
    return "ended"


def tree_rules_settings(method):
    def call(s, caller):
        r = requests.request(method, f"{s.base}/.settings/rules.json", params={"ns": s.ns},
                             data=DENY_TREE if method == "PUT" else None, headers=s.headers(caller), timeout=T)
        # A control route: anyone but the admin is refused, whatever the token's shape.
        return "allowed" if r.status_code == 200 else ("control-refused" if r.status_code == 401 else f"status {r.status_code}")
    return call


def socket_credential_message(s, caller, sock):
    token = s.credential(caller)
    if caller == "user":
        return sock.request("auth", {"cred": token})
    if token:
        # The Admin SDKs' way: gauth with the admin credential.
        return sock.request("gauth", {"cred": token})
    return None


def websocket_message(s, caller):
    sock = RealtimeSocket(s.base, s.ns)
    try:
        reply = socket_credential_message(s, caller, sock)
        if reply is not None and reply["s"] == "invalid_token":
            return "unauthenticated"
        assert reply is None or reply["s"] == "ok", reply
        answer = sock.request("p", {"p": "/secret/s", "d": caller})
        return "allowed" if answer["s"] == "ok" else ("denied" if answer["s"] == "permission_denied" else str(answer))
    finally:
        sock.close()


def websocket_header(s, caller):
    sock = RealtimeSocket(s.base, s.ns, headers=s.headers(caller))
    try:
        answer = sock.request("p", {"p": "/secret/h", "d": caller})
        if answer["s"] == "ok":
            return "allowed"
        assert answer["s"] == "permission_denied", answer
        # A header naming no one is read as nobody on the socket.
        return "unauthenticated" if not s.secured and caller == "token" else "denied"
    finally:
        sock.close()


def edge_client(s, caller):
    cid = "adm-" + uuid.uuid4().hex[:8]
    url = f"{s.base}/clients/{cid}"
    assert requests.put(url, json={"project": s.project}, headers=s.admin, timeout=T).status_code == 200
    try:
        token = s.credential(caller)
        if caller == "user":
            auth = {"uid": "alice", "token": token}
        elif token:
            auth = {"token": token}
        else:
            auth = None
        if auth is not None:
            r = requests.put(f"{url}/auth", json=auth, timeout=T)
            assert r.status_code == 200, r.text
        r = requests.patch(f"{url}/v1/projects/{s.project}/databases/{DB}/documents/secret/e", params={"waitFor": "ack"},
                           json={"fields": {"by": {"stringValue": caller}}}, timeout=T)
        # An edge client is a device: a token that names no one makes it nobody, judged.
        result = outcome(r.status_code)
        return "unauthenticated" if result == "denied" and not s.secured and caller == "token" else result
    finally:
        requests.delete(url, headers=s.admin, timeout=T)


def control(method, path, body=None):
    def call(s, caller):
        target = path.format(project=s.project, cid="adm-" + uuid.uuid4().hex[:8])
        r = requests.request(method, s.base + target, json=body, headers=s.headers(caller), timeout=T)
        if r.status_code == 401:
            return "control-refused"
        assert r.status_code == 200, (method, target, r.status_code, r.text)
        return "allowed"
    call.__name__ = f"control {method} {path}"
    return call


SURFACES = {
    "rest GET document (fast path)": rest_get,
    "rest PATCH document (fast path)": rest_patch,
    "rest :commit": rest_commit,
    "rest :runQuery": rest_run_query,
    "documents :listen (SSE)": documents_listen_sse,
    "grpc GetDocument": grpc_get_document,
    "grpc Commit": grpc_commit,
    "tree GET (Authorization)": tree_get,
    "tree GET (?auth=)": tree_get_auth_param,
    "tree PUT": tree_put,
    "tree SSE stream": tree_sse,
    "websocket auth/gauth": websocket_message,
    "websocket upgrade header": websocket_header,
    "edge client token": edge_client,
}
CONTROLS = {
    "/.settings/rules.json PUT": tree_rules_settings("PUT"),
    "/.settings/rules.json GET": tree_rules_settings("GET"),
    "firestore rules PUT": control("PUT", "/emulator/v1/projects/{project}:securityRules",
                                   {"rules": {"files": [{"content": DENY_DOCS}]}}),
    "databases GET": control("GET", "/emulator/v1/databases"),
    "connections GET": control("GET", "/emulator/v1/connections"),
    "clients GET": control("GET", "/clients"),
    "client PUT": control("PUT", "/clients/{cid}", {"project": "p"}),
    "clock GET": control("GET", "/emulator/v1/clock"),
}


@pytest.mark.parametrize("surface", SURFACES)
def test_data_surfaces_judge_the_admin_credential(server, surface):
    got = {caller: SURFACES[surface](server, caller) for caller in CALLERS}
    want = {caller: server.expected_data(caller) for caller in CALLERS}
    assert got == want, surface


@pytest.mark.parametrize("surface", CONTROLS)
def test_control_routes_need_the_admin_token_when_one_is_set(server, surface):
    got = {caller: CONTROLS[surface](server, caller) for caller in CALLERS}
    if server.secured:
        want = {caller: "allowed" if caller == "token" else "control-refused" for caller in CALLERS}
    elif surface == "/.settings/rules.json PUT":
        # The tree's rules are the admin's to change on any server (as the RTDB emulator); any
        # caller may read them back on a server without an admin token.
        want = {caller: "allowed" if caller == "owner" else "control-refused" for caller in CALLERS}
    else:
        want = {caller: "allowed" for caller in CALLERS}
    assert got == want, surface


def test_the_dashboard_page_needs_no_token_and_its_data_calls_need_it(server):
    assert requests.get(server.base + "/", timeout=T).status_code == 200
    r = requests.get(server.base + "/emulator/v1/databases", timeout=T)
    assert r.status_code == (401 if server.secured else 200)
    if server.secured:
        # EventSource cannot set headers: the dashboard's streams present the token in the query.
        ok = requests.get(server.base + "/emulator/v1/databases", params={"admin_token": server.token}, timeout=T)
        assert ok.status_code == 200
        refused = requests.get(server.base + "/emulator/v1/databases", params={"admin_token": "owner"}, timeout=T)
        assert refused.status_code == 401
