"""User changes on an edge client (`PUT /clients/{id}/auth` with another uid): the documents'
mutation queue is per user, as in the SDK — the previous user's pending writes stop being visible
and sent, and come back when that user signs in again; nothing is lost or sent as another user."""
import requests

from conftest import start_server, stop_server
from test_edge import Client


def names(client):
    return [w["writes"][0]["update"]["name"].rsplit("/", 1)[-1] for w in requests.get(f"{client.url}/pendingWrites").json()["writes"]]


def test_each_user_has_their_own_mutation_queue(base_url, project):
    c = Client(base_url, project, persistence="persistent")
    c.gates(holdWrites=True)
    assert c.set("notes/anon", by="anon").status_code == 200
    assert requests.put(f"{c.url}/auth", json={"uid": "user1"}).status_code == 200
    assert names(c) == []
    r = c.get("notes/anon", source="cache")
    assert r.status_code == 404 or r.json().get("fields") is None, "the other user's write is not visible"
    c.set("notes/user1", by="user1")
    assert names(c) == ["user1"]
    requests.put(f"{c.url}/auth", json={})  # signed out: back to the anonymous user's queue
    assert names(c) == ["anon"]
    released = requests.post(f"{c.url}/gates:releaseWrite", json={"count": 5}).json()["released"]
    assert [w["state"] for w in released] == ["acknowledged"]
    docs = f"{base_url}/v1/projects/{project}/databases/(default)/documents/notes"
    assert requests.get(f"{docs}/anon").status_code == 200
    assert requests.get(f"{docs}/user1").status_code == 404, "user1's write was not sent as anonymous"
    requests.put(f"{c.url}/auth", json={"uid": "user1"})
    assert names(c) == ["user1"]
    requests.post(f"{c.url}/gates:releaseWrite", json={"count": 1})
    assert requests.get(f"{docs}/user1").status_code == 200


def test_other_users_queues_survive_a_server_restart(tmp_path):
    proc, base = start_server(data_dir=tmp_path)
    try:
        c = Client(base, "p-users", persistence="persistent")
        c.post("disableNetwork")
        c.set("notes/anon", by="anon")
        requests.put(f"{c.url}/auth", json={"uid": "user1"})
        c.set("notes/user1", by="user1")
    finally:
        stop_server(proc)
    proc, base = start_server(data_dir=tmp_path)
    try:
        # The restored client keeps its switch (offline); back online, user1's write goes out and
        # the anonymous one waits.
        c = Client(base, "p-users", persistence="persistent", cid=c.id)
        assert requests.get(f"{c.url}/auth").json()["uid"] == "user1"
        assert requests.get(c.url).json()["network"]["online"] is False
        c.post("enableNetwork")
        docs = f"{base}/v1/projects/p-users/databases/(default)/documents/notes"
        requests.post(f"{c.url}:waitForPendingWrites", params={"timeoutMs": 10000})
        assert requests.get(f"{docs}/user1").status_code == 200
        assert requests.get(f"{docs}/anon").status_code == 404
        requests.put(f"{c.url}/auth", json={})
        assert requests.post(f"{c.url}:waitForPendingWrites", params={"timeoutMs": 10000}).status_code == 200
        assert requests.get(f"{docs}/anon").status_code == 200
    finally:
        stop_server(proc)


def test_an_archive_keeps_every_users_queue(tmp_path):
    proc, base = start_server(data_dir=tmp_path)
    try:
        c = Client(base, "p-arch", persistence="persistent")
        c.post("disableNetwork")
        c.set("notes/anon", by="anon")
        requests.put(f"{c.url}/auth", json={"uid": "user1"})
        c.set("notes/user1", by="user1")
        archive = requests.post(f"{base}/emulator/v1/export", json={"clients": True}).json()
        assert [m.get("uid") for m in archive["clients"][0]["mutations"]] == [None, "user1"]
        assert requests.post(f"{base}/emulator/v1/import", json=archive).status_code == 200
        assert names(c) == ["user1"]
        requests.put(f"{c.url}/auth", json={})
        assert names(c) == ["anon"]
    finally:
        stop_server(proc)
