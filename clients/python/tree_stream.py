"""A small Server-Sent Events reader for tree streams, used by the tree tests.

Reads a `text/event-stream` response on a background thread and queues every event as
(event, data) with `data` JSON-decoded, so a test can wait for the next event with a timeout.
"""
import json
import queue
import threading

import requests


class TreeStream:
    def __init__(self, url, params=None, headers=None):
        h = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        h.update(headers or {})
        self.response = requests.get(url, params=params, headers=h, stream=True, timeout=(5, 120))
        self.events = queue.Queue()
        self.closed = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        event, data = None, []
        try:
            for raw in self.response.iter_lines(chunk_size=1, decode_unicode=True):
                if raw is None:
                    continue
                if raw == "":
                    if event is not None or data:
                        payload = "\n".join(data)
                        self.events.put((event or "message", json.loads(payload) if payload else None))
                    event, data = None, []
                elif raw.startswith(":"):
                    continue
                elif raw.startswith("event:"):
                    event = raw[6:].strip()
                elif raw.startswith("data:"):
                    data.append(raw[5:].lstrip(" "))
        except Exception:  # the connection closed under us
            pass
        finally:
            self.closed.set()

    def next(self, timeout=5.0, skip_keepalive=True):
        """The next (event, data); raises queue.Empty after `timeout` seconds."""
        while True:
            event, data = self.events.get(timeout=timeout)
            if skip_keepalive and event == "keep-alive":
                continue
            return event, data

    def expect_none(self, wait=0.3):
        """Asserts that no data event arrives within `wait` seconds."""
        try:
            event = self.next(timeout=wait)
        except queue.Empty:
            return
        raise AssertionError(f"unexpected event {event}")

    def close(self):
        self.response.close()
