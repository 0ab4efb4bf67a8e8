"""gRPC calls the server answers on its event loop (GetDocument, Commit, Listen: docs/wire/grpc.md, docs/benchmarks.md)
behave exactly as the same calls served as tasks, which is what a call without routing metadata
gets: the same responses in the same order, flow control both ways, slow readers bounded, and
every call counted by method."""
import socket
import struct
import time

import grpc
import h2.config
import h2.connection
import h2.events
import h2.settings
import pytest
import requests
from google.cloud.firestore_v1.types import document as doc_types
from google.cloud.firestore_v1.types import firestore as fs

from test_grpc import SERVICE, ListenStream, channel, db_name, host_of, kind, query_target, rest_set, unary_with  # noqa: F401 (channel: a fixture)


def listen_script(channel, base_url, project, routed):
    """The Listen protocol end to end on one stream; returns what the client saw, by kind."""
    seen = []
    rest_set(base_url, project, "rooms/a", {"n": {"integerValue": "1"}})
    stream = ListenStream(channel, fs.ListenRequest(database=db_name(project), add_target=query_target(project, 7)), routed=routed)
    try:
        seen += [kind(r) for r in stream.until_global_snapshot()]
        rest_set(base_url, project, "rooms/b", {"n": {"integerValue": "2"}})
        seen += [kind(r) for r in stream.until_global_snapshot()]
        requests.delete(f"{base_url}/v1/{db_name(project)}/documents/rooms/a")
        seen += [kind(r) for r in stream.until_global_snapshot()]
        docs = fs.Target.DocumentsTarget(documents=[f"{db_name(project)}/documents/rooms/b"])
        stream.requests.put(fs.ListenRequest(database=db_name(project), add_target=fs.Target(target_id=0, documents=docs, once=True)))
        seen += [kind(r) for r in stream.until_global_snapshot()]
        seen.append(kind(stream.next()))
        stream.requests.put(fs.ListenRequest(database=db_name(project), remove_target=7))
        seen.append(kind(stream.next()))
        stream.requests.put(fs.ListenRequest(database="projects/other/databases/(default)", remove_target=7))
        with pytest.raises(grpc.RpcError) as caught:
            stream.next()
        seen.append(caught.value.code().name)
    finally:
        stream.close()
    return seen


def test_an_event_loop_listen_answers_as_a_task_listen(channel, base_url, project):
    routed = listen_script(channel, base_url, project, True)
    task = listen_script(channel, base_url, project + "-task", False)
    assert routed == task
    assert routed[:5] == [("ADD", [7]), ("document_change",), ("CURRENT", [7]), ("NO_CHANGE", []), ("document_change",)]
    assert routed[-3:] == [("REMOVE", [1]), ("REMOVE", [7]), "INVALID_ARGUMENT"]


def test_listen_requests_past_the_first_window_are_all_read(channel, project):
    """More request bytes than one HTTP/2 window: the server must give the window back as it reads."""
    stream = ListenStream(channel, fs.ListenRequest(database=db_name(project), add_target=query_target(project, 1)))
    try:
        stream.until_global_snapshot()
        name = f"{db_name(project)}/documents/rooms/{'x' * 200}"
        for target in range(2, 402):  # ~110 KB of requests
            docs = fs.Target.DocumentsTarget(documents=[name])
            stream.requests.put(fs.ListenRequest(database=db_name(project), add_target=fs.Target(target_id=target, documents=docs)))
            stream.requests.put(fs.ListenRequest(database=db_name(project), remove_target=target))
        removed = set()
        deadline = time.time() + 30
        while 401 not in removed and time.time() < deadline:
            response = stream.next(timeout=30)
            if kind(response)[0] == "REMOVE":
                removed.update(response.target_change.target_ids)
        assert removed == set(range(2, 402))
    finally:
        stream.close()


def grpc_frames(data):
    """Splits gRPC length-prefixed messages; returns (messages, rest)."""
    messages = []
    while len(data) >= 5 and len(data) >= 5 + struct.unpack(">I", data[1:5])[0]:
        size = struct.unpack(">I", data[1:5])[0]
        messages.append(fs.ListenResponse.deserialize(data[5:5 + size]))
        data = data[5 + size:]
    return messages, data


def test_a_listen_that_does_not_read_is_bounded_then_resynchronised(base_url, project):
    """A client that opens no window: the server stops reading the feed once a bounded amount
    waits for the network, so the feed overflows and the stream starts over (RESET) instead of
    queueing every commit in memory."""
    host, port = host_of(base_url).split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    sock.sendall(conn.data_to_send())
    path = f"{db_name(project)}/documents/rooms/big"
    rest_set(base_url, project, "rooms/big", {"n": {"integerValue": "0"}})
    request = fs.ListenRequest.serialize(fs.ListenRequest(database=db_name(project), add_target=fs.Target(
        target_id=3, documents=fs.Target.DocumentsTarget(documents=[path]))))
    conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":path", SERVICE + "Listen"), (":authority", host_of(base_url)),
                          ("content-type", "application/grpc"), ("te", "trailers"), ("google-cloud-resource-prefix", db_name(project))])
    conn.send_data(1, struct.pack(">BI", 0, len(request)) + request)
    sock.sendall(conn.data_to_send())

    commits = 1500  # more than the feed keeps for a subscriber (1 024) past what the server writes ahead
    with requests.Session() as session:
        for n in range(1, commits + 1):
            r = session.patch(f"{base_url}/v1/{path}", json={"fields": {"n": {"integerValue": str(n)}, "pad": {"stringValue": "p" * 1000}}})
            assert r.status_code == 200
    time.sleep(0.5)

    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 1 << 24})
    conn.increment_flow_control_window(1 << 30)
    sock.sendall(conn.data_to_send())
    responses, pending = [], b""
    deadline = time.time() + 30
    while time.time() < deadline and not (responses and kind(responses[-1]) == ("NO_CHANGE", []) and
                                          responses[-2].target_change.target_change_type == fs.TargetChange.TargetChangeType.CURRENT):
        data = sock.recv(1 << 20)
        assert data, "the server closed the connection"
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                got, pending = grpc_frames(pending + event.data)
                responses += got
            assert not isinstance(event, (h2.events.StreamReset, h2.events.StreamEnded)), event
        sock.sendall(conn.data_to_send())
    sock.close()
    kinds = [kind(r) for r in responses]
    assert ("RESET", [3]) in kinds, kinds[:10]
    before_reset = kinds[:kinds.index(("RESET", [3]))]
    assert before_reset.count(("document_change",)) < 600, len(before_reset)  # not every commit was queued
    last = [r for r in responses if kind(r) == ("document_change",)][-1]
    assert last.document_change.document.fields["n"].integer_value == commits  # and the stream caught up


def test_calls_are_counted_by_method_in_metrics_and_on_their_connection(base_url, project, channel):
    meta_db = db_name(project)
    rest_set(base_url, project, "rooms/m", {"n": {"integerValue": "1"}})
    for _ in range(3):
        unary_with(channel, project, "GetDocument", fs.GetDocumentRequest, doc_types.Document,
                   fs.GetDocumentRequest(name=f"{meta_db}/documents/rooms/m"))
    with pytest.raises(grpc.RpcError):
        unary_with(channel, project, "GetDocument", fs.GetDocumentRequest, doc_types.Document,
                   fs.GetDocumentRequest(name=f"{meta_db}/documents/rooms/missing"))
    unary_with(channel, project, "BeginTransaction", fs.BeginTransactionRequest, fs.BeginTransactionResponse,
               fs.BeginTransactionRequest(database=meta_db))
    entries = [c for c in requests.get(f"{base_url}/emulator/v1/connections").json()["connections"]
               if c["project"] == project and c["protocol"] == "firestore-grpc"]
    assert entries and entries[0]["calls"]["GetDocument"] == 4 and entries[0]["calls"]["BeginTransaction"] == 1
    metrics = requests.get(f"{base_url}/metrics").text
    def count(method, code):
        lines = [l for l in metrics.splitlines() if l.startswith("firegate_grpc_calls_total") and f'method="{method}"' in l and f'code="{code}"' in l]
        return float(lines[0].split()[-1]) if lines else 0
    assert count("GetDocument", "OK") >= 3 and count("GetDocument", "NOT_FOUND") >= 1 and count("BeginTransaction", "OK") >= 1
