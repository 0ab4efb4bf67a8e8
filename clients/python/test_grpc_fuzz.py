"""Bad input over gRPC (issue 24): seeded random calls to every method of
google.firestore.v1.Firestore and to unknown ones, with random bytes as messages, well-formed
messages full of hostile values (names, deep values, huge numbers, bad queries), and raw
HTTP/2 garbage after the preface (bad frame flags and lengths are in test_grpc.py).

Every call must end with a gRPC status within its deadline — never UNKNOWN (which is what a
client reports when the server reset the stream or answered with a bare HTTP error) and never
a hang — and the server must still answer HTTP/1.1 and gRPC at the end. Seeded by
FIREGATE_FUZZ_SEED (default 4242); FIREGATE_FUZZ_REQUESTS calls (default 400).
"""
import os
import random
import socket
import struct
import time

import grpc
import h2.config
import h2.connection
import h2.events
import h2.exceptions
import requests
from google.cloud.firestore_v1.types import document as doc_types
from google.cloud.firestore_v1.types import firestore as fs
from google.cloud.firestore_v1.types import query as query_types
from google.cloud.firestore_v1.types import write as write_types

SERVICE = "/google.firestore.v1.Firestore/"
METHODS = ["GetDocument", "ListDocuments", "CreateDocument", "UpdateDocument", "DeleteDocument", "BatchGetDocuments",
           "BeginTransaction", "Commit", "Rollback", "RunQuery", "RunAggregationQuery", "PartitionQuery", "Listen", "Write",
           "ListCollectionIds", "BatchWrite", "ExecutePipeline", "Nope", ""]
STREAMING_OUT = {"BatchGetDocuments", "RunQuery", "RunAggregationQuery", "Listen", "Write", "ExecutePipeline"}


def hostile_name(rng, project):
    base = f"projects/{project}/databases/(default)/documents"
    return rng.choice([
        "", "projects", f"projects/{project}", f"projects/{project}/databases/(default)", base, base + "/c",
        base + "/c/d", base + "//d", base + "/c/__x__", base + "/c/" + "x" * 2000, base + "/c/\u00e9\u2603",
        base + "/" + "/".join(["a"] * 300), f"projects/{project}/databases/other/documents/c/d", "\x00\xff",
    ])


def hostile_value(rng, depth=0):
    kind = rng.randrange(9 if depth < 40 else 7)
    if kind == 0: return doc_types.Value(integer_value=rng.choice([0, -2**63, 2**63 - 1]))
    if kind == 1: return doc_types.Value(double_value=rng.choice([float("nan"), float("inf"), -0.0, 1e308]))
    if kind == 2: return doc_types.Value(string_value=rng.choice(["", "x" * 100000, "\u0000", "__name__"]))
    if kind == 3: return doc_types.Value(timestamp_value={"seconds": rng.choice([-2**40, 2**40, 0]), "nanos": 0})
    if kind == 4: return doc_types.Value(reference_value=rng.choice(["", "projects/x", "a/b"]))
    if kind == 5: return doc_types.Value(geo_point_value={"latitude": rng.choice([0, 91, -1000]), "longitude": 0})
    if kind == 6: return doc_types.Value(bytes_value=bytes(rng.randrange(256) for _ in range(rng.randrange(64))))
    if kind == 7: return doc_types.Value(array_value={"values": [hostile_value(rng, depth + 1) for _ in range(rng.randrange(1, 3))]})
    return doc_types.Value(map_value={"fields": {rng.choice(["a", "", "__x__", "a.b", "`"]): hostile_value(rng, depth + 1)}})


def hostile_query(rng):
    q = query_types.StructuredQuery(from_=[query_types.StructuredQuery.CollectionSelector(
        collection_id=rng.choice(["c", "", "a/b"]), all_descendants=rng.random() < 0.3)] * rng.choice([0, 1, 1, 2]))
    if rng.random() < 0.5:
        q.where = query_types.StructuredQuery.Filter(field_filter=query_types.StructuredQuery.FieldFilter(
            field=query_types.StructuredQuery.FieldReference(field_path=rng.choice(["a", "", "__name__", "a..b"])),
            op=rng.randrange(0, 12), value=hostile_value(rng)))
    if rng.random() < 0.3:
        q.limit = rng.choice([0, -1, 2**31 - 1])
    if rng.random() < 0.3:
        q.offset = rng.choice([-5, 2**31 - 1])
    return q


def hostile_message(rng, method, project):
    db = f"projects/{project}/databases/(default)"
    name = hostile_name(rng, project)
    if method in ("GetDocument", "DeleteDocument"):
        return fs.GetDocumentRequest.serialize(fs.GetDocumentRequest(name=name))
    if method in ("Commit", "BatchWrite"):
        writes = [write_types.Write(update=doc_types.Document(name=name, fields={"f": hostile_value(rng)}))
                  for _ in range(rng.choice([0, 1, 3, 501]))]
        return fs.CommitRequest.serialize(fs.CommitRequest(database=rng.choice([db, "", "x"]), writes=writes,
                                                           transaction=rng.choice([b"", b"nope", b"\x00" * 16])))
    if method in ("RunQuery", "PartitionQuery"):
        return fs.RunQueryRequest.serialize(fs.RunQueryRequest(parent=name, structured_query=hostile_query(rng)))
    if method == "Listen":
        target = fs.Target(target_id=rng.choice([0, -1, 2**31 - 1]), query=fs.Target.QueryTarget(parent=name, structured_query=hostile_query(rng)),
                           resume_token=rng.choice([b"", b"x.y", b"\xff"]))
        return fs.ListenRequest.serialize(fs.ListenRequest(database=rng.choice([db, "", "zzz"]), add_target=target))
    if method == "BatchGetDocuments":
        return fs.BatchGetDocumentsRequest.serialize(fs.BatchGetDocumentsRequest(database=db, documents=[name] * rng.randrange(3)))
    return bytes(rng.randrange(256) for _ in range(rng.randrange(200)))


def call(channel, method, payload, streaming_out, timeout=15, metadata=(("authorization", "Bearer owner"),)):
    if streaming_out:
        stub = channel.stream_stream(SERVICE + method, request_serializer=None, response_deserializer=None)
        responses = stub(iter([payload]), timeout=timeout, metadata=list(metadata))
        for _ in responses:
            pass
        return grpc.StatusCode.OK
    stub = channel.unary_unary(SERVICE + method, request_serializer=None, response_deserializer=None)
    stub(payload, timeout=timeout, metadata=list(metadata))
    return grpc.StatusCode.OK


def routing(rng, project):
    """Metadata as real clients send it, half the time (calls naming their database are served on
    the event loop, the others as tasks), sometimes naming a hostile one."""
    metadata = [("authorization", "Bearer owner")]
    if rng.random() < 0.5:
        prefix = f"projects/{project}/databases/(default)" if rng.random() < 0.8 else hostile_name(rng, project)[:200]
        metadata.append(("google-cloud-resource-prefix", "".join(c if 32 <= ord(c) < 127 else "?" for c in prefix)))
    return metadata


def test_fuzz_every_grpc_method(base_url, project):
    seed = int(os.environ.get("FIREGATE_FUZZ_SEED", "4242"))
    count = int(os.environ.get("FIREGATE_FUZZ_REQUESTS", "400"))
    rng = random.Random(seed)
    host = base_url.split("://", 1)[1]
    channel = grpc.insecure_channel(host)
    seen = {}
    try:
        for i in range(count):
            method = rng.choice(METHODS)
            kind = rng.random()
            payload = hostile_message(rng, method, project) if kind < 0.7 else bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
            # Listen and Write streams stay open by design: bound them with a short deadline.
            timeout = 2 if method in ("Listen", "Write") else 15
            try:
                code = call(channel, method, payload, method in STREAMING_OUT, timeout=timeout, metadata=routing(rng, project))
            except grpc.RpcError as error:
                code = error.code()
                detail = error.details()
                assert code != grpc.StatusCode.UNKNOWN, f"seed {seed} call {i}: {method} {payload[:80]!r} → UNKNOWN {detail}"
                if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                    assert method in ("Listen", "Write"), f"seed {seed} call {i}: {method} hung: {payload[:80]!r}"
            seen[code] = seen.get(code, 0) + 1
        print("statuses:", {k.name: v for k, v in seen.items()})
        assert grpc.StatusCode.INVALID_ARGUMENT in seen and grpc.StatusCode.UNIMPLEMENTED in seen

        # Raw HTTP/2 garbage after the preface.
        h, p = host.split(":")
        for _ in range(20):
            with socket.create_connection((h, int(p)), timeout=5) as s:
                s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))))
                s.settimeout(2)
                try:
                    while s.recv(65536):
                        pass
                except (socket.timeout, ConnectionResetError):
                    pass
    finally:
        channel.close()
    assert requests.get(f"{base_url}/healthz", timeout=5).status_code == 200
    fresh = grpc.insecure_channel(host)
    try:
        fresh.unary_unary(SERVICE + "GetDocument", request_serializer=fs.GetDocumentRequest.serialize,
                          response_deserializer=doc_types.Document.deserialize)(
            fs.GetDocumentRequest(name=f"projects/{project}/databases/(default)/documents/c/d"), timeout=10)
    except grpc.RpcError as error:
        assert error.code() == grpc.StatusCode.NOT_FOUND
    finally:
        fresh.close()


def test_fuzz_event_loop_calls_frame_by_frame(base_url, project):
    """The calls the event loop answers from their frames (GetDocument, Commit, Listen), with
    their bodies cut at random, padded, ended by trailers, reset half-way, or carrying garbage:
    every stream that is not reset ends with a grpc-status, and the server goes on serving."""
    seed = int(os.environ.get("FIREGATE_FUZZ_SEED", "4242"))
    rng = random.Random(seed + 1)
    host = base_url.split("://", 1)[1]
    h, p = host.split(":")
    database = f"projects/{project}/databases/(default)"
    bodies = {
        "GetDocument": fs.GetDocumentRequest.serialize(fs.GetDocumentRequest(name=f"{database}/documents/c/d")),
        "Commit": fs.CommitRequest.serialize(fs.CommitRequest(database=database, writes=[write_types.Write(
            update=doc_types.Document(name=f"{database}/documents/c/d", fields={"n": doc_types.Value(integer_value=1)}))])),
        "Listen": fs.ListenRequest.serialize(fs.ListenRequest(database=database, add_target=fs.Target(
            target_id=1, documents=fs.Target.DocumentsTarget(documents=[f"{database}/documents/c/d"])))),
    }
    for round_ in range(20):
        sock = socket.create_connection((h, int(p)), timeout=10)
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        expected = {}
        for _ in range(rng.randrange(1, 12)):
            stream = conn.get_next_available_stream_id()
            method = rng.choice(list(bodies))
            message = bodies[method]
            shape = rng.random()
            if shape < 0.2:
                message = bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
            framed = struct.pack(">BI", 0 if rng.random() < 0.9 else rng.choice([1, 7]), len(message)) + message
            if shape > 0.9:
                framed = framed[:rng.randrange(len(framed))]  # ends inside the message
            conn.send_headers(stream, [(":method", "POST"), (":scheme", "http"), (":path", SERVICE + method), (":authority", host),
                                       ("content-type", "application/grpc"), ("te", "trailers"),
                                       ("google-cloud-resource-prefix", database)])
            cut = 0
            while cut < len(framed):
                size = rng.randrange(1, len(framed) - cut + 1)
                conn.send_data(stream, framed[cut:cut + size], pad_length=rng.choice([None, None, 3]))
                cut += size
            ending = rng.random()
            if ending < 0.15:
                conn.reset_stream(stream)
            elif ending < 0.3:
                conn.send_headers(stream, [("x-trailer", "1")], end_stream=True)
                expected[stream] = method
            else:
                conn.end_stream(stream)
                expected[stream] = method
        sock.sendall(conn.data_to_send())
        statuses = {}
        deadline = time.time() + 10
        # Listen calls stay open while the client's side is (here it has half-closed: they end OK,
        # or are reset once they answered).
        while time.time() < deadline and set(expected) - set(statuses):
            try:
                data = sock.recv(1 << 16)
            except socket.timeout:
                break
            assert data, f"round {round_}: the server closed the connection"
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if expected.get(event.stream_id) == "Listen" and event.stream_id not in statuses:
                        statuses[event.stream_id] = "listening"
                        try:
                            conn.reset_stream(event.stream_id)
                        except h2.exceptions.StreamClosedError:
                            pass  # it ended already (its trailers are in this read)
                elif isinstance(event, h2.events.TrailersReceived):
                    statuses[event.stream_id] = dict(event.headers).get("grpc-status")
                elif isinstance(event, h2.events.ResponseReceived) and dict(event.headers).get("grpc-status"):
                    statuses[event.stream_id] = dict(event.headers)["grpc-status"]
                elif isinstance(event, h2.events.StreamReset) and event.stream_id not in statuses:
                    statuses[event.stream_id] = f"reset {event.error_code}"
            sock.sendall(conn.data_to_send())
        sock.close()
        missing = set(expected) - set(statuses)
        assert not missing, f"seed {seed} round {round_}: no status for {[expected[s] for s in missing]}"
        for stream, status in statuses.items():
            assert status == "listening" or (status is not None and status.isdigit() and status != "2"), (stream, expected.get(stream), status)
    assert requests.get(f"{base_url}/healthz", timeout=5).status_code == 200
