"""A small Server-Sent Events reader for the Firegate Python tests.

`SSEStream` opens a streaming GET with `requests`, parses the byte stream on a background thread
(fields `event:`, `id:`, `data:`, `retry:` and `:` comments, CR/LF/CRLF line ends, multi-line
data) and hands complete events to a queue, so a test can wait for the next event with a timeout
instead of blocking forever on a socket:

    with SSEStream(url, params={"includeMetadataChanges": "true"}) as s:
        ev = s.next(timeout=5)          # SSEEvent, or raises SSETimeout / SSEClosed
        events, marker = s.read_until(lambda e: e.event == "sync", timeout=5)

`SSEStream.ok` tells whether the server answered 200 with an event stream; otherwise
`status_code`, `body` (the raw text) and `error_json()` describe the answer and no events come.
"""
from __future__ import annotations

import json
import queue
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import requests

__all__ = ["SSEEvent", "SSEStream", "SSEClosed", "SSETimeout", "parse_sse_lines"]


@dataclass
class SSEEvent:
    """One dispatched event. `event` defaults to "message"; comments have event == ":comment"."""

    event: str = "message"
    data: str = ""
    id: Optional[str] = None
    retry: Optional[int] = None
    received_at: float = field(default_factory=time.monotonic)

    def json(self):
        return json.loads(self.data) if self.data else None

    @property
    def is_comment(self) -> bool:
        return self.event == ":comment"

    def __repr__(self) -> str:  # compact, readable in assertion messages
        d = self.data if len(self.data) < 300 else self.data[:300] + "…"
        return f"SSEEvent({self.event!r}, id={self.id!r}, data={d!r})"


class SSEClosed(Exception):
    """The stream ended (server closed it, or close() was called) before a wanted event."""

    def __init__(self, msg: str, events=None):
        super().__init__(msg)
        self.events = events or []


class SSETimeout(Exception):
    """No (wanted) event arrived in time."""

    def __init__(self, msg: str, events=None):
        super().__init__(msg)
        self.events = events or []


class _Parser:
    """Incremental SSE parser (WHATWG rules) fed with bytes."""

    def __init__(self, emit: Callable[[SSEEvent], None], keep_comments: bool):
        self._emit = emit
        self._keep_comments = keep_comments
        self._buf = b""
        self._pending_cr = False
        self._reset()
        self.last_event_id: Optional[str] = None

    def _reset(self):
        self._event = ""
        self._data: list[str] = []
        self._has_data = False
        self._retry = None
        self._id_seen = False

    def feed(self, chunk: bytes):
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF split across chunks
        self._pending_cr = False
        self._buf += chunk
        while True:
            idx_n = self._buf.find(b"\n")
            idx_r = self._buf.find(b"\r")
            if idx_n < 0 and idx_r < 0:
                return
            if idx_r >= 0 and (idx_n < 0 or idx_r < idx_n):
                line = self._buf[:idx_r]
                if idx_r + 1 < len(self._buf):
                    rest = self._buf[idx_r + 1:]
                    if rest.startswith(b"\n"):
                        rest = rest[1:]
                    self._buf = rest
                else:
                    self._buf = b""
                    self._pending_cr = True
            else:
                line = self._buf[:idx_n]
                self._buf = self._buf[idx_n + 1:]
            self._line(line.decode("utf-8", errors="replace"))

    def _line(self, line: str):
        if line == "":
            self._dispatch()
            return
        if line.startswith(":"):
            if self._keep_comments:
                self._emit(SSEEvent(event=":comment", data=line[1:].lstrip(" ")))
            return
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
                self._id_seen = True
        elif name == "retry":
            if value.isdigit():
                self._retry = int(value)
        # other field names are ignored, as the spec says

    def _dispatch(self):
        if not self._has_data and not self._event:
            self._reset()
            return
        ev = SSEEvent(event=self._event or "message", data="\n".join(self._data),
                      id=self.last_event_id, retry=self._retry)
        self._reset()
        self._emit(ev)


def parse_sse_lines(text: str, keep_comments: bool = False) -> list[SSEEvent]:
    """Parses a complete SSE body (for unit tests and for non-streamed answers)."""
    out: list[SSEEvent] = []
    p = _Parser(out.append, keep_comments)
    p.feed(text.encode())
    return out


_END = object()


class SSEStream:
    """A streaming GET whose events are read on a thread and queued.

    `next(timeout)` returns the next event (comments are skipped unless keep_comments=True),
    raises SSETimeout when nothing arrives in time and SSEClosed once the stream has ended and
    every event before the end was consumed.
    """

    def __init__(self, url: str, params=None, headers=None, session: Optional[requests.Session] = None,
                 connect_timeout: float = 10.0, keep_comments: bool = False, method: str = "GET",
                 json_body=None):
        self.url = url
        self.keep_comments = keep_comments
        self._q: "queue.Queue" = queue.Queue()
        self._closed_by_us = False
        self._ended = False
        self.end_reason: Optional[str] = None
        hdrs = {"Accept": "text/event-stream"}
        hdrs.update(headers or {})
        http = session or requests
        self.response = http.request(method, url, params=params, headers=hdrs, stream=True,
                                     timeout=(connect_timeout, None), json=json_body)
        self.status_code = self.response.status_code
        self.headers = self.response.headers
        ctype = self.response.headers.get("Content-Type", "")
        self.ok = self.status_code == 200 and ctype.startswith("text/event-stream")
        self.body: Optional[str] = None
        self._thread: Optional[threading.Thread] = None
        if self.ok:
            self._parser = _Parser(self._q.put, keep_comments)
            self._thread = threading.Thread(target=self._run, name=f"sse:{url[-60:]}", daemon=True)
            self._thread.start()
        else:
            try:
                self.body = self.response.text
            finally:
                self.response.close()
            self._ended = True
            self.end_reason = f"HTTP {self.status_code}"

    # -- reading -------------------------------------------------------------------------------
    def _run(self):
        raw = self.response.raw
        reason = "eof"
        try:
            while True:
                chunk = raw.read1(65536) if hasattr(raw, "read1") else raw.read(1)
                if not chunk:
                    break
                self._parser.feed(chunk)
        except Exception as e:  # connection reset, or closed by us
            reason = "closed" if self._closed_by_us else f"error: {e!r}"
        finally:
            self._q.put((_END, reason))

    def next(self, timeout: float = 10.0) -> SSEEvent:
        if self._ended and self._q.empty():
            raise SSEClosed(f"stream ended ({self.end_reason})")
        try:
            item = self._q.get(timeout=timeout)
        except queue.Empty:
            raise SSETimeout(f"no event within {timeout}s from {self.url}") from None
        if isinstance(item, tuple) and item and item[0] is _END:
            self._ended = True
            self.end_reason = item[1]
            raise SSEClosed(f"stream ended ({self.end_reason})")
        return item

    def read_until(self, predicate: Callable[[SSEEvent], bool], timeout: float = 10.0):
        """Reads events until one satisfies `predicate`; returns (events_before, match).

        On timeout raises SSETimeout, on the end of the stream SSEClosed; both carry the events
        read so far in `.events`."""
        deadline = time.monotonic() + timeout
        seen: list[SSEEvent] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SSETimeout(f"no matching event within {timeout}s", seen)
            try:
                ev = self.next(timeout=left)
            except SSETimeout:
                raise SSETimeout(f"no matching event within {timeout}s", seen) from None
            except SSEClosed as e:
                raise SSEClosed(str(e), seen) from None
            if predicate(ev):
                return seen, ev
            seen.append(ev)

    def read_to_end(self, timeout: float = 10.0) -> list[SSEEvent]:
        """Reads every event until the stream ends; SSETimeout if it does not end in time."""
        deadline = time.monotonic() + timeout
        seen: list[SSEEvent] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SSETimeout(f"stream did not end within {timeout}s", seen)
            try:
                seen.append(self.next(timeout=left))
            except SSEClosed:
                return seen
            except SSETimeout:
                raise SSETimeout(f"stream did not end within {timeout}s", seen) from None

    def drain(self) -> list[SSEEvent]:
        """Returns the events already queued, without waiting."""
        out = []
        while True:
            try:
                out.append(self.next(timeout=0.0001))
            except (SSETimeout, SSEClosed):
                return out

    @property
    def ended(self) -> bool:
        return self._ended

    def error_json(self):
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    # -- closing -------------------------------------------------------------------------------
    def close(self):
        """Closes the connection (the reader thread ends with it)."""
        if self._closed_by_us:
            return
        self._closed_by_us = True
        raw = getattr(self.response, "raw", None)
        sock = None
        try:
            conn = getattr(raw, "_connection", None)
            sock = getattr(conn, "sock", None)
            if sock is None:
                fp = getattr(raw, "_fp", None)
                sock = getattr(getattr(getattr(fp, "fp", None), "raw", None), "_sock", None)
        except Exception:
            sock = None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes the reader blocked in recv()
            except OSError:
                pass
        try:
            self.response.close()
        except Exception:
            pass
        if self._thread is not None:
            self._thread.join(timeout=2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
