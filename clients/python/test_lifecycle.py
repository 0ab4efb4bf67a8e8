"""Server lifecycle: SIGTERM ends open event streams with UNAVAILABLE and the process exits;
stored documents load in the background and an unreadable store stops the server."""
import json
import signal
import sqlite3
import subprocess

import requests

from conftest import _binary as binary, _free_port as free_port, _storage_args, postgres_database_url, postgres_store, start_server, stop_server
from sse import SSEStream

QUERY = json.dumps({"from": [{"collectionId": "c"}]})


def test_sigterm_ends_streams_and_exits():
    proc, base = start_server()
    try:
        docs = "/v1/projects/demo-project/databases/(default)/documents"  # the server's default project
        backend = SSEStream(f"{base}{docs}:listen", params={"query": QUERY})
        edge = SSEStream(f"{base}/clients/A{docs}:listen", params={"query": QUERY})
        for stream in (backend, edge):
            assert stream.next(timeout=10).event == "snapshot"
        proc.send_signal(signal.SIGTERM)
        for stream in (backend, edge):
            event = stream.next(timeout=10)
            assert event.event == "error"
            assert event.json()["error"]["status"] == "UNAVAILABLE"
            stream.close()
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_stored_documents_are_served_after_a_restart_and_an_unreadable_store_stops_the_server(tmp_path):
    docs = "/v1/projects/demo-project/databases/(default)/documents"
    proc, base = start_server(data_dir=tmp_path)
    try:
        for i in range(200):
            r = requests.patch(f"{base}{docs}/c/d{i}", json={"fields": {"n": {"integerValue": str(i)}}})
            assert r.status_code == 200, r.text
    finally:
        stop_server(proc)

    # The first reads after a start wait for the background load instead of seeing nothing.
    proc, base = start_server(data_dir=tmp_path)
    try:
        r = requests.get(f"{base}{docs}/c/d199")
        assert r.status_code == 200, r.text
        assert r.json()["fields"]["n"] == {"integerValue": "199"}
        listed = requests.get(f"{base}{docs}/c", params={"pageSize": 300}).json()
        assert len(listed["documents"]) == 200
    finally:
        stop_server(proc)

    if postgres_store():
        subprocess.run(["psql", postgres_database_url(tmp_path), "-qc",
                        "UPDATE fg_documents SET fields = convert_to('{not json', 'UTF8') WHERE path = 'c/d7'"], check=True)
        args = [binary(), "serve", "--host", "127.0.0.1", "--port", str(free_port()), *_storage_args(tmp_path)]
    else:
        with sqlite3.connect(tmp_path / "firegate.sqlite") as db:
            db.execute("UPDATE documents SET fields = ? WHERE path = 'c/d7'", (b"{not json",))
        args = [binary(), "serve", "--host", "127.0.0.1", "--port", str(free_port()), "--data-dir", str(tmp_path)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert proc.wait(timeout=20) != 0, "a server whose documents cannot be loaded must stop"
        assert "The stored documents could not be loaded" in proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
