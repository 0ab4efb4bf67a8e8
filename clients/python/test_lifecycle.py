"""Server lifecycle: SIGTERM ends open event streams with UNAVAILABLE and the process exits."""
import json
import signal

from conftest import start_server
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
