"""A small Server-Sent Events reader for tree streams, used by the tree tests.

Speaks HTTP/1.1 over a plain socket (as curl -N does) so that closing is immediate, decodes
the chunked body, and queues every event as (event, data) with `data` JSON-decoded on a
background thread, so a test can wait for the next event with a timeout.
"""
import json
import queue
import socket
import threading
from urllib.parse import urlencode, urlsplit


class TreeStream:
    def __init__(self, url, params=None, headers=None, rcvbuf=None):
        parts = urlsplit(url)
        target = parts.path + ("?" + urlencode(params) if params else "")
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(10)
        self.sock.connect((parts.hostname, parts.port))
        self.sock.settimeout(None)
        lines = [f"GET {target} HTTP/1.1", f"Host: {parts.netloc}", "Accept: text/event-stream", "Cache-Control: no-cache"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.reader = self.sock.makefile("rb")
        status = self.reader.readline().decode()
        self.status_code = int(status.split()[1])
        self.headers = {}
        while True:
            line = self.reader.readline().decode().rstrip("\r\n")
            if not line:
                break
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self.events = queue.Queue()
        self.closed = threading.Event()
        self.body = b""
        self._running = threading.Event()
        self._running.set()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _chunks(self):
        if self.headers.get("transfer-encoding", "").lower() != "chunked":
            length = int(self.headers.get("content-length", "0"))
            yield self.reader.read(length)
            return
        while True:
            self._running.wait()
            size_line = self.reader.readline()
            if not size_line:
                return
            size = int(size_line.strip() or b"0", 16)
            if size == 0:
                return
            chunk = self.reader.read(size)
            self.reader.readline()
            yield chunk

    def _read(self):
        buffer = b""
        try:
            for chunk in self._chunks():
                self.body += chunk
                buffer += chunk
                while b"\n\n" in buffer:
                    block, buffer = buffer.split(b"\n\n", 1)
                    event, data = "message", []
                    for line in block.decode().split("\n"):
                        if line.startswith("event:"):
                            event = line[6:].strip()
                        elif line.startswith("data:"):
                            data.append(line[5:].lstrip(" "))
                    payload = "\n".join(data)
                    self.events.put((event, json.loads(payload) if payload else None))
        except (OSError, ValueError):
            pass  # closed under us
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

    def pause(self):
        """Stops reading the socket (after at most one more chunk), like a stalled client."""
        self._running.clear()

    def resume(self):
        self._running.set()

    def close(self):
        self._running.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
