"""Connections end when their clients end them (issue 40): a peer's FIN or reset releases the
socket, its streams and its registry entry; a client's half-close ends a Listen with OK.

Each test runs a server of its own so that its open descriptors and registry can be counted.
"""
import os
import socket
import struct
import time

import grpc
import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import pytest
import requests
from google.cloud.firestore_v1.types import document as doc_types
from google.cloud.firestore_v1.types import firestore as fs

from conftest import start_server, stop_server

DB = "projects/p/databases/(default)"
T = 10


@pytest.fixture
def server():
    proc, base = start_server()
    yield proc, base
    stop_server(proc)


def _client_sockets(pid, port):
    """Inodes of the process's TCP sockets on its own port `port`: the listener and the
    connections clients opened to it, whatever their state (CLOSE-WAIT included)."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = open(f"/proc/{pid}/net/{table}").read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def open_descriptors(proc, base):
    """The server's open files plus the sockets clients opened to it. Other sockets are left
    out: the PostgreSQL store's pool opens its connections on demand, not for these clients."""
    clients = _client_sockets(proc.pid, int(base.rsplit(":", 1)[1]))
    count = 0
    for fd in os.listdir(f"/proc/{proc.pid}/fd"):
        try:
            target = os.readlink(f"/proc/{proc.pid}/fd/{fd}")
        except FileNotFoundError:
            continue
        if not target.startswith("socket:[") or target[8:-1] in clients:
            count += 1
    return count


def registry(base):
    return requests.get(f"{base}/emulator/v1/connections", timeout=T).json()["connections"]


def settle(predicate, timeout=T):
    """Waits (bounded) for `predicate()` to hold and returns its last value."""
    deadline = time.time() + timeout
    value = predicate()
    while not value and time.time() < deadline:
        time.sleep(0.05)
        value = predicate()
    return value


def test_grpc_clients_that_close_their_channel_release_socket_and_registry_entry(server):
    proc, base = server
    target = base.split("://", 1)[1]
    # One connection first, so lazily made server state is not counted as churn.
    warm = grpc.insecure_channel(target)
    get = warm.unary_unary("/google.firestore.v1.Firestore/GetDocument", request_serializer=fs.GetDocumentRequest.serialize,
                           response_deserializer=doc_types.Document.deserialize)
    with pytest.raises(grpc.RpcError):
        get(fs.GetDocumentRequest(name=f"{DB}/documents/c/d"), timeout=T)
    warm.close()
    assert settle(lambda: not [c for c in registry(base) if c["protocol"] == "firestore-grpc"])
    before = open_descriptors(proc, base)
    for _ in range(200):
        channel = grpc.insecure_channel(target)
        call = channel.unary_unary("/google.firestore.v1.Firestore/GetDocument", request_serializer=fs.GetDocumentRequest.serialize,
                                   response_deserializer=doc_types.Document.deserialize)
        with pytest.raises(grpc.RpcError) as missing:
            call(fs.GetDocumentRequest(name=f"{DB}/documents/c/d"), metadata=[("google-cloud-resource-prefix", DB)], timeout=T)
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        channel.close()
    assert settle(lambda: open_descriptors(proc, base) <= before), (open_descriptors(proc, base), before)
    assert settle(lambda: not [c for c in registry(base) if c["protocol"] == "firestore-grpc"]), registry(base)[:3]


def test_a_connection_closed_before_it_said_anything_is_released(server):
    proc, base = server
    before = open_descriptors(proc, base)
    sockets = [socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])), timeout=T) for _ in range(20)]
    for s in sockets[:10]:
        s.sendall(b"PRI * HTTP/2.0\r\n")  # part of the HTTP/2 preface: nothing decided yet
    for s in sockets:
        s.shutdown(socket.SHUT_WR)  # the FIN only; the client still reads
    assert settle(lambda: open_descriptors(proc, base) <= before), (open_descriptors(proc, base), before)
    for s in sockets:
        s.close()


class RawListen:
    """One Listen call over a raw HTTP/2 connection, to put exactly the frames a client sends."""

    def __init__(self, base, routed):
        self.sock = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])), timeout=T)
        self.sock.settimeout(0.2)
        self.local_port = self.sock.getsockname()[1]
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.conn.initiate_connection()
        self.stream = self.conn.get_next_available_stream_id()
        headers = [(":method", "POST"), (":scheme", "http"), (":path", "/google.firestore.v1.Firestore/Listen"),
                   (":authority", "firegate"), ("content-type", "application/grpc"), ("te", "trailers")]
        if routed:
            headers.append(("google-cloud-resource-prefix", DB))
        self.conn.send_headers(self.stream, headers)
        request = fs.ListenRequest(database=DB, add_target={"target_id": 1, "documents": {"documents": [f"{DB}/documents/c/d"]}})
        body = fs.ListenRequest.serialize(request)
        self.conn.send_data(self.stream, b"\x00" + struct.pack(">I", len(body)) + body)
        self.flush()
        self.events = []

    def flush(self):
        out = self.conn.data_to_send()
        if out:
            self.sock.sendall(out)

    def pump(self, until, timeout=T):
        deadline = time.time() + timeout
        while time.time() < deadline and not until():
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            if not data:
                self.events.append("eof")
                break
            for event in self.conn.receive_data(data):
                if isinstance(event, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    self.events.append("data")
                elif isinstance(event, h2.events.TrailersReceived):
                    self.events.append(("trailers", dict((k.decode(), v.decode()) for k, v in event.headers)))
                elif isinstance(event, h2.events.StreamReset):
                    self.events.append(("reset", event.error_code))
                elif isinstance(event, h2.events.ConnectionTerminated):
                    self.events.append(("goaway", event.error_code))
            self.flush()
        return until()

    def drain(self):
        """Reads what has arrived, without waiting."""
        self.sock.setblocking(False)
        try:
            while True:
                try:
                    data = self.sock.recv(65536)
                except (BlockingIOError, socket.timeout):
                    return
                if not data:
                    self.events.append("eof")
                    return
                try:
                    events = self.conn.receive_data(data)
                except h2.exceptions.ProtocolError as error:  # frames after the server's GOAWAY
                    self.events.append(("closed", str(error)))
                    return
                for event in events:
                    if isinstance(event, h2.events.DataReceived):
                        self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    elif isinstance(event, h2.events.ConnectionTerminated):
                        self.events.append(("goaway", event.error_code))
                self.flush()
        finally:
            self.sock.settimeout(0.2)

    def trailers(self):
        found = [e[1] for e in self.events if isinstance(e, tuple) and e[0] == "trailers"]
        return found[0] if found else None

    def entry(self, base):
        mine = [c for c in registry(base) if c["protocol"] == "firestore-grpc" and str(c.get("peer", "")).endswith(f":{self.local_port}")]
        return mine[0] if mine else None

    def close(self):
        self.sock.close()


@pytest.mark.parametrize("routed", [True, False], ids=["event-loop path", "full path"])
def test_a_half_closed_listen_ends_ok_and_leaves_the_registry(server, routed):
    """grpc-js's `call.end()` (the Node SDKs' unsubscribe): an empty DATA frame with END_STREAM."""
    _, base = server
    listen = RawListen(base, routed)
    try:
        assert listen.pump(lambda: "data" in listen.events), listen.events  # the target's first answers
        assert settle(lambda: (listen.entry(base) or {}).get("listens") == 1), listen.entry(base)
        listen.conn.end_stream(listen.stream)
        listen.flush()
        assert listen.pump(lambda: listen.trailers() is not None), listen.events
        assert listen.trailers()["grpc-status"] == "0", listen.trailers()
        assert settle(lambda: (listen.entry(base) or {}).get("listens") == 0), listen.entry(base)
    finally:
        listen.close()


@pytest.mark.parametrize("routed", [True, False], ids=["event-loop path", "full path"])
def test_a_reset_listen_leaves_the_registry_and_a_closed_socket_its_entry(server, routed):
    _, base = server
    listen = RawListen(base, routed)
    try:
        assert listen.pump(lambda: "data" in listen.events), listen.events
        listen.conn.reset_stream(listen.stream, h2.errors.ErrorCodes.CANCEL)
        listen.flush()
        assert settle(lambda: (listen.entry(base) or {}).get("listens") == 0), listen.entry(base)
    finally:
        port = listen.local_port
        listen.close()
    assert settle(lambda: not [c for c in registry(base) if str(c.get("peer", "")).endswith(f":{port}")])


def set_network(base, match, online):
    r = requests.put(f"{base}/emulator/v1/connections/network", json={"match": match, "online": online}, timeout=T)
    assert r.status_code == 200, r.text
    return r.json()


def test_each_caller_on_one_connection_is_its_own_entry_and_a_switch_takes_only_it_offline(server):
    """grpc-js puts two Firestore instances of one process on one connection: two devices."""
    _, base = server
    channel = grpc.insecure_channel(base.split("://", 1)[1])
    get = channel.unary_unary("/google.firestore.v1.Firestore/GetDocument", request_serializer=fs.GetDocumentRequest.serialize,
                              response_deserializer=doc_types.Document.deserialize)
    request = fs.GetDocumentRequest(name=f"{DB}/documents/c/d")

    def call(app):
        try:
            get(request, metadata=[("x-firebase-gmpid", app), ("google-cloud-resource-prefix", DB)], timeout=T)
        except grpc.RpcError as error:
            return error.code()

    try:
        assert call("1:device:a") == grpc.StatusCode.NOT_FOUND
        assert call("1:device:b") == grpc.StatusCode.NOT_FOUND
        entries = [c for c in registry(base) if c["protocol"] == "firestore-grpc"]
        assert sorted(c["appId"] for c in entries) == ["1:device:a", "1:device:b"]
        assert len({c["peer"] for c in entries}) == 1  # one connection
        answer = set_network(base, {"appId": "1:device:a"}, online=False)
        assert [c["id"] for c in entries if c["appId"] == "1:device:a"] == answer["dropped"]
        assert call("1:device:a") == grpc.StatusCode.UNAVAILABLE
        assert call("1:device:b") == grpc.StatusCode.NOT_FOUND  # the other device, same connection, online
        set_network(base, {"appId": "1:device:a"}, online=True)
        assert call("1:device:a") == grpc.StatusCode.NOT_FOUND
    finally:
        channel.close()


def test_a_raw_client_is_known_by_the_database_its_messages_name(server):
    """No resource-prefix or routing header: the registry takes the project from the request."""
    _, base = server
    channel = grpc.insecure_channel(base.split("://", 1)[1])
    get = channel.unary_unary("/google.firestore.v1.Firestore/GetDocument", request_serializer=fs.GetDocumentRequest.serialize,
                              response_deserializer=doc_types.Document.deserialize)
    listen = RawListen(base, routed=False)
    try:
        with pytest.raises(grpc.RpcError) as missing:
            get(fs.GetDocumentRequest(name="projects/raw/databases/(default)/documents/c/d"), timeout=T)
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        assert settle(lambda: [c for c in registry(base) if c["project"] == "raw"]), registry(base)
        assert listen.pump(lambda: "data" in listen.events), listen.events
        assert settle(lambda: (listen.entry(base) or {}).get("project") == "p" and listen.entry(base)["listens"] == 1), listen.entry(base)
        set_network(base, {"project": "raw"}, online=False)
        with pytest.raises(grpc.RpcError) as refused:
            get(fs.GetDocumentRequest(name="projects/raw/databases/(default)/documents/c/d"), timeout=T)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        set_network(base, {"project": "p"}, online=False)
        assert listen.pump(lambda: listen.trailers() is not None), listen.events
        assert listen.trailers()["grpc-status"] == "14", listen.trailers()
    finally:
        set_network(base, {"project": "raw"}, online=True)
        set_network(base, {"project": "p"}, online=True)
        listen.close()
        channel.close()


def test_keepalive_pings_are_answered_and_the_idle_connection_kept(server):
    """grpc clients ping an idle connection (keepalive); the server answers and keeps it, never
    counting the pings as abuse (a GOAWAY would make the client reconnect)."""
    _, base = server
    options = [("grpc.keepalive_time_ms", 200), ("grpc.keepalive_timeout_ms", 2000), ("grpc.keepalive_permit_without_calls", 1),
               ("grpc.http2.max_pings_without_data", 0), ("grpc.http2.min_time_between_pings_ms", 100)]
    channel = grpc.insecure_channel(base.split("://", 1)[1], options=options)
    get = channel.unary_unary("/google.firestore.v1.Firestore/GetDocument", request_serializer=fs.GetDocumentRequest.serialize,
                              response_deserializer=doc_types.Document.deserialize)
    try:
        with pytest.raises(grpc.RpcError):
            get(fs.GetDocumentRequest(name=f"{DB}/documents/c/d"), metadata=[("google-cloud-resource-prefix", DB)], timeout=T)
        peers = {c["peer"] for c in registry(base) if c["protocol"] == "firestore-grpc"}
        assert len(peers) == 1
        time.sleep(3)  # about fifteen pings, no call
        with pytest.raises(grpc.RpcError) as missing:
            get(fs.GetDocumentRequest(name=f"{DB}/documents/c/d"), metadata=[("google-cloud-resource-prefix", DB)], timeout=T)
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        assert {c["peer"] for c in registry(base) if c["protocol"] == "firestore-grpc"} == peers  # the same connection
    finally:
        channel.close()


def test_a_connection_whose_client_cancels_listeners_all_day_stays_open(server):
    """An SDK's one connection carries every Firestore instance of a test process, and a test suite
    opens and cancels listeners without end: 1 000 Listen streams reset on one connection (five
    times swift-nio-http2's default guard) leave it open, and its next call is answered."""
    _, base = server
    listen = RawListen(base, routed=True)
    try:
        assert listen.pump(lambda: "data" in listen.events), listen.events
        request = fs.ListenRequest(database=DB, add_target={"target_id": 1, "documents": {"documents": [f"{DB}/documents/c/d"]}})
        body = fs.ListenRequest.serialize(request)
        headers = [(":method", "POST"), (":scheme", "http"), (":path", "/google.firestore.v1.Firestore/Listen"),
                   (":authority", "firegate"), ("content-type", "application/grpc"), ("te", "trailers"),
                   ("google-cloud-resource-prefix", DB)]
        for _ in range(1000):
            assert not [e for e in listen.events if isinstance(e, tuple) and e[0] in ("goaway", "closed")], listen.events
            deadline = time.time() + T
            while listen.conn.outbound_flow_control_window < 200 and time.time() < deadline:
                listen.drain()  # the server's window updates, as a client waits for them
                time.sleep(0.001)
            stream = listen.conn.get_next_available_stream_id()
            listen.conn.send_headers(stream, headers)
            listen.conn.send_data(stream, b"\x00" + struct.pack(">I", len(body)) + body)
            listen.conn.reset_stream(stream, h2.errors.ErrorCodes.CANCEL)
            listen.flush()
            listen.drain()  # what came (window updates, answers racing the resets), as a client reads it
        closed = []
        last = listen.conn.get_next_available_stream_id()
        listen.conn.send_headers(last, headers)
        listen.conn.send_data(last, b"\x00" + struct.pack(">I", len(body)) + body)
        listen.flush()
        listen.events.clear()

        def answered():
            closed.extend(e for e in listen.events if e == "eof")
            return "data" in listen.events or closed
        assert listen.pump(answered), listen.events
        assert not closed and "data" in listen.events, listen.events
        assert not any(isinstance(e, tuple) and e[0] in ("goaway", "reset") and e[1] == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM
                       for e in listen.events), listen.events
    finally:
        listen.close()
