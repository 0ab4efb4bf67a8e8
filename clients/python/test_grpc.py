"""Firestore over gRPC (docs/wire/grpc.md), on the same port as the HTTP API.

Two kinds of client: google-cloud-firestore pointed at Firegate with FIRESTORE_EMULATOR_HOST,
as a team's existing suite would, and raw grpcio calls built from the client's own message
classes, to check the Listen and Write stream protocols message by message
(docs/wire/grpc.md, Listen).
"""
import json
import queue
import socket
import struct
import subprocess
import threading
import time

import grpc
import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud import firestore
from google.cloud.firestore_v1.types import common
from google.cloud.firestore_v1.types import document as doc_types
from google.cloud.firestore_v1.types import firestore as fs
from google.cloud.firestore_v1.types import query as query_types
from google.cloud.firestore_v1.types import write as write_types

from conftest import start_server, stop_server
from sse import SSEStream

SERVICE = "/google.firestore.v1.Firestore/"


def host_of(base_url):
    return base_url.split("://", 1)[1]


@pytest.fixture
def client(base_url, project, monkeypatch):
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", host_of(base_url))
    c = firestore.Client(project=project)
    yield c
    c.close()


@pytest.fixture
def channel(base_url):
    ch = grpc.insecure_channel(host_of(base_url))
    yield ch
    ch.close()


def unary(channel, method, request_type, response_type, request):
    call = channel.unary_unary(SERVICE + method, request_serializer=request_type.serialize,
                               response_deserializer=response_type.deserialize)
    return call(request, metadata=[("authorization", "Bearer owner")], timeout=10)


def db_name(project):
    return f"projects/{project}/databases/(default)"


# ---------------------------------------------------------------------------------------------
# The official client, unchanged


def test_client_writes_reads_queries_and_aggregates(client):
    rooms = client.collection("rooms")
    rooms.document("a").set({"name": "alpha", "size": 3, "tags": ["x", "y"], "at": firestore.SERVER_TIMESTAMP})
    rooms.document("b").set({"name": "beta", "size": 5})
    rooms.document("c").create({"name": "gamma", "size": 8})
    with pytest.raises(gexc.Conflict):
        rooms.document("c").create({"name": "again"})
    rooms.document("b").update({"size": firestore.Increment(1), "extra": True})
    snap = rooms.document("b").get()
    assert snap.exists and snap.to_dict() == {"name": "beta", "size": 6, "extra": True}
    assert rooms.document("a").get().get("at") is not None
    assert not rooms.document("missing").get().exists
    with pytest.raises(gexc.NotFound):
        rooms.document("missing").update({"x": 1})

    big = rooms.where(filter=firestore.FieldFilter("size", ">=", 5)).order_by("size", direction=firestore.Query.DESCENDING)
    assert [d.id for d in big.stream()] == ["c", "b"]
    assert [d.id for d in rooms.order_by("size").limit_to_last(2).get()] == ["b", "c"]
    assert [d.id for d in rooms.order_by("size").start_after({"size": 3}).stream()] == ["b", "c"]
    assert rooms.count().get()[0][0].value == 3
    assert rooms.sum("size").get()[0][0].value == 17
    assert rooms.avg("size").get()[0][0].value == pytest.approx(17 / 3)

    client.collection("rooms/a/messages").add({"text": "hi"})
    client.collection("rooms/b/messages").add({"text": "yo"})
    assert sorted(d.get("text") for d in client.collection_group("messages").stream()) == ["hi", "yo"]
    assert sorted(c.id for c in client.collections()) == ["rooms"]
    assert sorted(c.id for c in rooms.document("a").collections()) == ["messages"]

    rooms.document("c").delete()
    assert [d.id for d in rooms.list_documents()] == ["a", "b"]


def test_client_transactions_batches_bulk_writer_and_recursive_delete(client):
    counter = client.collection("counters").document("c")
    counter.set({"n": 0})

    @firestore.transactional
    def bump(tx):
        tx.update(counter, {"n": counter.get(transaction=tx).get("n") + 1})

    for _ in range(3):
        bump(client.transaction())
    assert counter.get().get("n") == 3

    batch = client.batch()
    for i in range(4):
        batch.set(client.collection("items").document(f"i{i}"), {"i": i})
    batch.commit()
    bulk = client.bulk_writer()
    for i in range(4, 10):
        bulk.set(client.collection("items").document(f"i{i}"), {"i": i})
    bulk.close()
    client.collection("items/i1/sub").document("s").set({"deep": True})
    assert len(list(client.collection("items").stream())) == 10

    client.recursive_delete(client.collection("items"))
    assert list(client.collection("items").stream()) == []
    assert list(client.collection_group("sub").stream()) == []


def test_on_snapshot_reports_adds_changes_and_removals(client):
    rooms = client.collection("rooms")
    rooms.document("a").set({"open": True})
    seen = queue.Queue()

    def callback(docs, changes, read_time):
        seen.put(sorted((c.type.name, c.document.id) for c in changes))

    watch = rooms.where(filter=firestore.FieldFilter("open", "==", True)).on_snapshot(callback)
    try:
        assert seen.get(timeout=10) == [("ADDED", "a")]
        rooms.document("b").set({"open": True})
        assert seen.get(timeout=10) == [("ADDED", "b")]
        rooms.document("a").update({"open": False})
        assert seen.get(timeout=10) == [("REMOVED", "a")]
        rooms.document("b").update({"note": 1})
        assert seen.get(timeout=10) == [("MODIFIED", "b")]
    finally:
        watch.unsubscribe()

    doc_events = queue.Queue()
    watch = rooms.document("b").on_snapshot(
        lambda docs, changes, t: doc_events.put(([d.to_dict() for d in docs], [c.type.name for c in changes])))
    try:
        assert doc_events.get(timeout=10) == ([{"open": True, "note": 1}], ["ADDED"])
        rooms.document("b").delete()
        assert doc_events.get(timeout=10) == ([], ["REMOVED"])
    finally:
        watch.unsubscribe()


def test_errors_carry_the_rest_message_as_grpc_status(channel, project, base_url):
    name = f"{db_name(project)}/documents/rooms/nope"
    with pytest.raises(grpc.RpcError) as caught:
        unary(channel, "GetDocument", fs.GetDocumentRequest, doc_types.Document, fs.GetDocumentRequest(name=name))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    rest = requests.get(f"{base_url}/v1/{name}").json()["error"]["message"]
    assert caught.value.details() == rest

    with pytest.raises(grpc.RpcError) as caught:
        unary(channel, "GetDocument", fs.GetDocumentRequest, doc_types.Document, fs.GetDocumentRequest(name="projects/x"))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    for method in ("ExecutePipeline", "NoSuchMethod"):
        with pytest.raises(grpc.RpcError) as caught:
            unary(channel, method, fs.GetDocumentRequest, doc_types.Document, fs.GetDocumentRequest(name=name))
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as caught:
        channel.unary_unary("/other.Service/Call")(b"", timeout=10)
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_named_databases_are_isolated_and_need_no_setup(channel, project):
    for database, value in (("(default)", 1), ("enterprise-db-native", 2)):
        request = fs.CommitRequest(database=f"projects/{project}/databases/{database}", writes=[write_types.Write(
            update=doc_types.Document(name=f"projects/{project}/databases/{database}/documents/c/d",
                                      fields={"v": doc_types.Value(integer_value=value)}))])
        unary(channel, "Commit", fs.CommitRequest, fs.CommitResponse, request)
    for database, value in (("(default)", 1), ("enterprise-db-native", 2)):
        got = unary(channel, "GetDocument", fs.GetDocumentRequest, doc_types.Document,
                    fs.GetDocumentRequest(name=f"projects/{project}/databases/{database}/documents/c/d"))
        assert got.fields["v"].integer_value == value


# ---------------------------------------------------------------------------------------------
# The Listen stream, message by message


class ListenStream:
    """A raw Listen call: requests go in through a queue, responses come out through another.
    Its metadata names the database, as every real client's does (`routed=False` leaves that out:
    the server then serves the call as a task rather than on the event loop)."""

    def __init__(self, channel, first, metadata=(("authorization", "Bearer owner"),), routed=True):
        if routed and not any(key == "google-cloud-resource-prefix" for key, _ in metadata):
            metadata = tuple(metadata) + (("google-cloud-resource-prefix", first.database),)
        self.requests = queue.Queue()
        self.requests.put(first)
        self.responses = queue.Queue()
        call = channel.stream_stream(SERVICE + "Listen", request_serializer=fs.ListenRequest.serialize,
                                     response_deserializer=fs.ListenResponse.deserialize)
        self.call = call(iter(self.requests.get, None), metadata=list(metadata))
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        try:
            for response in self.call:
                self.responses.put(response)
        except grpc.RpcError as error:
            self.responses.put(error)

    def next(self, timeout=10):
        item = self.responses.get(timeout=timeout)
        if isinstance(item, grpc.RpcError):
            raise item
        return item

    def until_global_snapshot(self, timeout=10):
        """Responses up to and including the next NO_CHANGE with no target ids."""
        got = []
        while True:
            response = self.next(timeout)
            got.append(response)
            tc = response.target_change
            if "target_change" in response and tc.target_change_type == fs.TargetChange.TargetChangeType.NO_CHANGE and not tc.target_ids:
                return got

    def close(self):
        self.requests.put(None)
        self.call.cancel()


def kind(response):
    if "target_change" in response:
        tc = response.target_change
        return (fs.TargetChange.TargetChangeType(tc.target_change_type).name, list(tc.target_ids))
    for field in ("document_change", "document_delete", "document_remove", "filter"):
        if field in response:
            return (field,)
    return ("?",)


def query_target(project, target_id, collection="rooms", **extra):
    structured = query_types.StructuredQuery(from_=[query_types.StructuredQuery.CollectionSelector(collection_id=collection)],
                                             order_by=[query_types.StructuredQuery.Order(field=query_types.StructuredQuery.FieldReference(field_path="n"))])
    return fs.Target(target_id=target_id, query=fs.Target.QueryTarget(parent=f"{db_name(project)}/documents", structured_query=structured), **extra)


def rest_set(base_url, project, path, fields):
    r = requests.patch(f"{base_url}/v1/{db_name(project)}/documents/{path}", json={"fields": fields})
    assert r.status_code == 200, r.text
    return r.json()


def test_listen_sends_add_documents_current_then_a_global_snapshot_per_commit(channel, project, base_url):
    rest_set(base_url, project, "rooms/a", {"n": {"integerValue": "1"}})
    rest_set(base_url, project, "rooms/b", {"n": {"integerValue": "2"}})
    stream = ListenStream(channel, fs.ListenRequest(database=db_name(project), add_target=query_target(project, 0x5079)))
    try:
        first = stream.until_global_snapshot()
        assert [kind(r) for r in first] == [("ADD", [0x5079]), ("document_change",), ("document_change",), ("CURRENT", [0x5079]),
                                            ("NO_CHANGE", [])]
        assert [r.document_change.document.name.rsplit("/", 1)[1] for r in first[1:3]] == ["a", "b"]
        assert list(first[1].document_change.target_ids) == [0x5079]
        assert first[3].target_change.resume_token and first[4].target_change.read_time

        rest_set(base_url, project, "rooms/c", {"n": {"integerValue": "3"}})
        change = stream.until_global_snapshot()
        assert [kind(r) for r in change] == [("document_change",), ("NO_CHANGE", [])]
        requests.delete(f"{base_url}/v1/{db_name(project)}/documents/rooms/a")
        deleted = stream.until_global_snapshot()
        assert [kind(r) for r in deleted] == [("document_delete",), ("NO_CHANGE", [])]
        assert list(deleted[0].document_delete.removed_target_ids) == [0x5079]

        stream.requests.put(fs.ListenRequest(database=db_name(project), remove_target=0x5079))
        assert kind(stream.next()) == ("REMOVE", [0x5079])
    finally:
        stream.close()


def test_a_listen_opened_after_the_database_is_cleared_gets_its_snapshot_without_waiting_for_a_commit(channel, project, base_url):
    # rules-unit-testing's clearFirestore() then a get(): the SDK waits for the global snapshot,
    # which a reset (that takes a sequence number and commits nothing) once held back.
    rest_set(base_url, project, "rooms/a", {"n": {"integerValue": "1"}})
    assert requests.delete(f"{base_url}/emulator/v1/projects/{project}/databases/(default)/documents", timeout=10).status_code == 200
    docs = fs.Target.DocumentsTarget(documents=[f"{db_name(project)}/documents/rooms/a"])
    stream = ListenStream(channel, fs.ListenRequest(database=db_name(project), add_target=fs.Target(target_id=2, documents=docs)))
    try:
        first = stream.until_global_snapshot(timeout=5)
        assert [kind(r) for r in first] == [("ADD", [2]), ("CURRENT", [2]), ("NO_CHANGE", [])]
    finally:
        stream.close()


def test_listen_targets_by_documents_assigned_ids_bad_targets_and_once(channel, project, base_url):
    rest_set(base_url, project, "rooms/a", {"n": {"integerValue": "1"}})
    docs = fs.Target.DocumentsTarget(documents=[f"{db_name(project)}/documents/rooms/a", f"{db_name(project)}/documents/rooms/z"])
    stream = ListenStream(channel, fs.ListenRequest(database=db_name(project), add_target=fs.Target(target_id=0, documents=docs)))
    try:
        first = stream.until_global_snapshot()
        assert [kind(r) for r in first] == [("ADD", [1]), ("document_change",), ("CURRENT", [1]), ("NO_CHANGE", [])]

        bad = query_target(project, 9)
        bad.query.structured_query.from_ = []  # selects no collection
        stream.requests.put(fs.ListenRequest(database=db_name(project), add_target=bad))
        removed = stream.next()
        assert kind(removed) == ("REMOVE", [9]) and removed.target_change.cause.code == 3 and removed.target_change.cause.message

        stream.requests.put(fs.ListenRequest(database=db_name(project), add_target=query_target(project, 5, once=True)))
        once = stream.until_global_snapshot()
        assert kind(once[0]) == ("ADD", [5]) and kind(once[-2]) == ("CURRENT", [5])
        assert kind(stream.next()) == ("REMOVE", [5])

        rest_set(base_url, project, "rooms/z", {"n": {"integerValue": "9"}})
        assert [kind(r) for r in stream.until_global_snapshot()] == [("document_change",), ("NO_CHANGE", [])]
    finally:
        stream.close()


def test_resume_tokens_are_one_space_with_the_sse_listen(channel, project, base_url):
    rest_set(base_url, project, "rooms/a", {"n": {"integerValue": "1"}})
    url = f"{base_url}/v1/{db_name(project)}/documents/rooms/a:listen"
    with SSEStream(url) as sse:
        token = sse.next(timeout=10).id
    rest_set(base_url, project, "rooms/a", {"n": {"integerValue": "2"}})
    rest_set(base_url, project, "rooms/b", {"n": {"integerValue": "3"}})

    resumed = ListenStream(channel, fs.ListenRequest(database=db_name(project),
                                                     add_target=query_target(project, 1, resume_token=token.encode())))
    try:
        got = resumed.until_global_snapshot()
        kinds = [kind(r) for r in got]
        assert kinds[0] == ("ADD", [1]) and kinds[-2:] == [("CURRENT", [1]), ("NO_CHANGE", [])]
        changed = sorted(r.document_change.document.name.rsplit("/", 1)[1] for r in got if "document_change" in r)
        assert changed == ["a", "b"]
        assert ("filter",) in kinds
        grpc_token = got[-1].target_change.resume_token
    finally:
        resumed.close()

    # …and the gRPC token resumes the SSE stream: nothing changed since, so no snapshot is due.
    rest_set(base_url, project, "rooms/a", {"n": {"integerValue": "7"}})
    with SSEStream(url, headers={"Last-Event-ID": grpc_token.decode()}) as sse:
        event = sse.next(timeout=10)
        assert json.loads(event.data)["document"]["fields"]["n"] == {"integerValue": "7"}


def test_write_stream_handshake_then_commits_in_order(channel, project):
    requests_q = queue.Queue()
    requests_q.put(fs.WriteRequest(database=db_name(project)))
    call = channel.stream_stream(SERVICE + "Write", request_serializer=fs.WriteRequest.serialize,
                                 response_deserializer=fs.WriteResponse.deserialize)
    responses = call(iter(requests_q.get, None), timeout=20)
    handshake = next(responses)
    assert handshake.stream_id and handshake.stream_token and not handshake.write_results
    for i in range(2):
        requests_q.put(fs.WriteRequest(stream_token=handshake.stream_token, writes=[write_types.Write(update=doc_types.Document(
            name=f"{db_name(project)}/documents/w/{i}", fields={"i": doc_types.Value(integer_value=i)}))]))
        answer = next(responses)
        assert answer.commit_time and len(answer.write_results) == 1 and answer.stream_token != handshake.stream_token
    requests_q.put(fs.WriteRequest(writes=[write_types.Write(
        update=doc_types.Document(name=f"{db_name(project)}/documents/w/0"),
        current_document=common.Precondition(exists=False))]))
    with pytest.raises(grpc.RpcError) as caught:
        next(responses)
    assert caught.value.code() == grpc.StatusCode.ALREADY_EXISTS
    requests_q.put(None)


# ---------------------------------------------------------------------------------------------
# One port, and bad input


def test_rest_and_a_running_listen_share_the_port(client, base_url, project):
    seen = queue.Queue()
    ref = client.collection("mixed").document("d")
    watch = ref.on_snapshot(lambda docs, changes, t: seen.put([d.exists for d in docs]))
    try:
        assert seen.get(timeout=10) == []
        rest_set(base_url, project, "mixed/d", {"v": {"stringValue": "from REST"}})
        assert seen.get(timeout=10) == [True]
        r = requests.get(f"{base_url}/v1/{db_name(project)}/documents/mixed/d")
        assert r.json()["fields"]["v"] == {"stringValue": "from REST"}
        h2 = subprocess.run(["curl", "-s", "--http2-prior-knowledge", f"{base_url}/v1/{db_name(project)}/documents/mixed/d"],
                            capture_output=True, timeout=10)
        assert json.loads(h2.stdout)["fields"]["v"] == {"stringValue": "from REST"}
    finally:
        watch.unsubscribe()


PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def raw_h2(base_url, payload, wait=1.0):
    """Sends bytes on a fresh connection and returns what came back before it closed or `wait` passed."""
    host, port = host_of(base_url).split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(payload)
        s.settimeout(wait)
        got = b""
        try:
            while chunk := s.recv(65536):
                got += chunk
        except socket.timeout:
            pass
    return got


def test_garbage_after_the_preface_and_silent_clients_leave_the_server_serving(base_url, channel, project):
    answer = raw_h2(base_url, PREFACE + b"\x00\x00\x04\x99garbage-frames" * 20)
    assert b"GOAWAY" in answer or answer[3:4] in (b"\x04", b"\x07")  # SETTINGS then GOAWAY, or closed
    raw_h2(base_url, PREFACE, wait=0.5)  # never sends SETTINGS
    raw_h2(base_url, b"PRI * HTTP/1.1\r\n\r\n", wait=0.5)  # almost a preface: HTTP/1.1 answers
    assert requests.get(f"{base_url}/healthz").status_code == 200
    with pytest.raises(grpc.RpcError) as caught:
        unary(channel, "GetDocument", fs.GetDocumentRequest, doc_types.Document,
              fs.GetDocumentRequest(name=f"{db_name(project)}/documents/a/b"))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


def test_compressed_and_oversize_messages_get_a_status(channel, project):
    def framed(flag, length, body=b""):
        return struct.pack(">BI", flag, length) + body

    raw = channel.unary_unary(SERVICE + "GetDocument", request_serializer=None, response_deserializer=None)
    body = fs.GetDocumentRequest.serialize(fs.GetDocumentRequest(name=f"{db_name(project)}/documents/a/b"))
    stream = channel.stream_stream(SERVICE + "GetDocument")
    with pytest.raises(grpc.RpcError) as caught:
        raw(b"\x00" * (33 * 1024 * 1024), timeout=20)
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    with pytest.raises(grpc.RpcError) as caught:
        list(stream(iter([]), timeout=10))
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    compressed = grpc.insecure_channel(channel._channel.target().decode(), compression=grpc.Compression.Gzip)
    try:
        with pytest.raises(grpc.RpcError) as caught:
            compressed.unary_unary(SERVICE + "GetDocument")(body, timeout=10)
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED
    finally:
        compressed.close()
    assert framed(0, 0)  # the frame layout the server reads


@pytest.mark.parametrize("routed", [True, False], ids=["event-loop", "task"])
def test_listen_and_write_streams_end_unavailable_when_the_server_stops(project, routed):
    proc, base = start_server()
    ch = grpc.insecure_channel(host_of(base))
    try:
        stream = ListenStream(ch, fs.ListenRequest(database=db_name(project), add_target=query_target(project, 1)), routed=routed)
        stream.until_global_snapshot()
        writes = queue.Queue()
        writes.put(fs.WriteRequest(database=db_name(project)))
        write_call = ch.stream_stream(SERVICE + "Write", request_serializer=fs.WriteRequest.serialize,
                                      response_deserializer=fs.WriteResponse.deserialize)(iter(writes.get, None), timeout=30)
        assert next(write_call).stream_token
        proc.terminate()
        with pytest.raises(grpc.RpcError) as caught:
            while True:
                stream.next(timeout=15)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(grpc.RpcError) as caught:
            next(write_call)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        assert proc.wait(timeout=15) is not None  # open streams do not hold the server up
    finally:
        ch.close()
        if proc.poll() is None:
            stop_server(proc)


# ---------------------------------------------------------------------------------------------
# Connections: a real client taken offline by the test (docs/documents.md)


def connections(base_url, project=None):
    listed = requests.get(f"{base_url}/emulator/v1/connections").json()["connections"]
    return [c for c in listed if project is None or c["project"] == project]


def set_network(base_url, match, online, latency_ms=0):
    r = requests.put(f"{base_url}/emulator/v1/connections/network", json={"match": match, "online": online, "latencyMs": latency_ms})
    assert r.status_code == 200, r.text
    return r.json()


def wait_for(predicate, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_each_project_on_a_connection_is_an_entry_a_switch_takes_offline(base_url, project, channel):
    other = project + "-other"
    meta = [("authorization", "Bearer owner"), ("x-firebase-gmpid", "1:app:ios"),
            ("google-cloud-resource-prefix", db_name(project))]
    stream = ListenStream(channel, fs.ListenRequest(database=db_name(project), add_target=query_target(project, 1)), meta)
    try:
        stream.until_global_snapshot()
        entry = wait_for(lambda: [c for c in connections(base_url, project) if c["listens"] == 1])[0]
        assert entry["protocol"] == "firestore-grpc" and entry["database"] == "(default)" and entry["appId"] == "1:app:ios"
        assert entry["online"] is True and entry["openedAt"]
        assert requests.get(f"{base_url}/emulator/v1/connections/{entry['id']}").json()["id"] == entry["id"]
        metrics = requests.get(f"{base_url}/metrics").text
        gauge = [line for line in metrics.splitlines() if line.startswith('firegate_connections{protocol="firestore-grpc"}')]
        assert gauge and float(gauge[0].split()[-1]) >= 1, metrics[-500:]

        get_other = lambda: unary_with(channel, other, "GetDocument", fs.GetDocumentRequest, doc_types.Document,
                                       fs.GetDocumentRequest(name=f"{db_name(other)}/documents/a/b"))
        with pytest.raises(grpc.RpcError) as caught:
            get_other()
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND  # the other project is served

        answer = set_network(base_url, {"project": project}, online=False)
        assert entry["id"] in answer["dropped"]
        with pytest.raises(grpc.RpcError) as caught:
            stream.until_global_snapshot()
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
        started = time.time()
        with pytest.raises(grpc.RpcError) as caught:
            unary_with(channel, project, "GetDocument", fs.GetDocumentRequest, doc_types.Document,
                       fs.GetDocumentRequest(name=f"{db_name(project)}/documents/a/b"))
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE and time.time() - started >= 0.9
        with pytest.raises(grpc.RpcError) as caught:
            get_other()
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND  # …and still is, on the same connection
        assert requests.get(f"{base_url}/emulator/v1/connections/network").json()["switches"] == [
            {"match": {"project": project}, "online": False, "latencyMs": 0}]

        set_network(base_url, {"project": project}, online=True)
        with pytest.raises(grpc.RpcError) as caught:
            unary_with(channel, project, "GetDocument", fs.GetDocumentRequest, doc_types.Document,
                       fs.GetDocumentRequest(name=f"{db_name(project)}/documents/a/b"))
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        assert requests.get(f"{base_url}/emulator/v1/connections/network").json()["switches"] == []
    finally:
        stream.close()
        set_network(base_url, {"project": project}, online=True)


def test_a_dropped_client_reconnects_and_resumes_and_latency_slows_every_frame(base_url, project, client):
    seen = queue.Queue()
    ref = client.collection("rooms").document("r")
    watch = ref.on_snapshot(lambda docs, changes, t: seen.put([d.to_dict() for d in docs]))
    try:
        assert seen.get(timeout=10) == []
        entry = wait_for(lambda: connections(base_url, project))[0]
        events = SSEStream(f"{base_url}/emulator/v1/events")
        assert requests.post(f"{base_url}/emulator/v1/connections/{entry['id']}:drop").status_code == 200
        assert requests.post(f"{base_url}/emulator/v1/connections/nope:drop").status_code == 404
        _, closed = events.read_until(lambda e: json.loads(e.data).get("kind") == "connectionClosed", timeout=10)
        assert json.loads(closed.data)["connection"] == entry["id"] and json.loads(closed.data)["protocol"] == "firestore-grpc"
        events.close()
        rest_set(base_url, project, "rooms/r", {"v": {"integerValue": "1"}})
        assert seen.get(timeout=15) == [{"v": 1}]  # the client reconnected by itself and resumed

        set_network(base_url, {"project": project}, online=True, latency_ms=400)
        started = time.time()
        ref.get()
        assert time.time() - started >= 0.8  # request and response each waited
        set_network(base_url, {"project": project}, online=True, latency_ms=0)
        started = time.time()
        ref.get()
        assert time.time() - started < 0.8
    finally:
        watch.unsubscribe()
        set_network(base_url, {"project": project}, online=True)


def test_network_switch_bad_input_is_a_clear_400(base_url):
    for body in ({}, {"match": {}, "online": False}, {"match": {"colour": "red"}, "online": False},
                 {"match": {"project": "p"}}, {"match": {"project": "p"}, "online": False, "latencyMs": -1}):
        r = requests.put(f"{base_url}/emulator/v1/connections/network", json=body)
        assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT", (body, r.text)
    assert requests.get(f"{base_url}/emulator/v1/connections/none").status_code == 404


def unary_with(channel, project, method, request_type, response_type, request):
    call = channel.unary_unary(SERVICE + method, request_serializer=request_type.serialize,
                               response_deserializer=response_type.deserialize)
    return call(request, metadata=[("authorization", "Bearer owner"), ("google-cloud-resource-prefix", db_name(project))], timeout=10)
