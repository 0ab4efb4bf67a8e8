"""A WebChannel (wire version 8) client written from the protocol (docs/webchannel.md), as the
Firestore web SDK speaks it: a handshake POST carrying the stream's headers and first
messages, forward POSTs with numbered maps, a back channel read as streaming (CI=0) or long
polling (CI=1) GETs, and a terminate. Used by the test suite against Firegate and, to compare,
against the official Firestore emulator.
"""
import json
import random
import threading
import time
import urllib.parse

import requests

CHANNEL = "/google.firestore.v1.Firestore/{}/channel"


def parse_chunks(text):
    """Splits a WebChannel body into its chunks' texts: `<length>\\n<text>` repeated, the
    length in UTF-16 code units. Returns (chunks, rest) where rest is an incomplete tail."""
    chunks = []
    while text:
        newline = text.find("\n")
        if newline < 0:
            break
        length = int(text[:newline])
        body, units = "", 0
        i = newline + 1
        while units < length and i < len(text):
            units += 2 if ord(text[i]) > 0xFFFF else 1
            i += 1
        if units < length:
            break
        chunks.append(text[newline + 1:i])
        text = text[i:]
    return chunks, text


def encode_headers(headers):
    return "".join(f"{name}:{value}\r\n" for name, value in headers.items())


class Channel:
    """One session: `open` sends the handshake, `send` forward POSTs, `poll`/`stream` read the
    back channel, `terminate` ends it. Arrays received are kept in `arrays` as (id, payload)."""

    def __init__(self, base, stream, database, headers=None, origin=None, session=None):
        self.base = base
        self.url = base + CHANNEL.format(stream)
        self.database = database
        self.headers = headers if headers is not None else {"X-Goog-Api-Client": "gl-js/ fire/12.9.0", "Content-Type": "text/plain"}
        # A connection per request, as a browser may use: a back channel closed midway is not reused.
        self.http = session or requests
        self.origin = origin
        self.sid = None
        self.rid = random.randint(0, 99999)
        self.next_map = 0
        self.last_array = 0
        self.arrays = []
        self.lock = threading.Lock()

    def _http_headers(self, post=True):
        headers = {}
        if post:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if self.origin:
            headers["Origin"] = self.origin
        return headers

    def _query(self, **extra):
        query = {"VER": "8", "database": self.database}
        query.update({k: v for k, v in extra.items() if v is not None})
        query["zx"] = "".join(random.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(12))
        return query

    @staticmethod
    def body(messages, offset, headers=None):
        fields = []
        if headers is not None:
            fields.append(("headers", encode_headers(headers)))
        fields += [("count", str(len(messages))), ("ofs", str(offset))]
        for k, message in enumerate(messages):
            fields.append((f"req{k}___data__", message if isinstance(message, str) else json.dumps(message)))
        return urllib.parse.urlencode(fields, quote_via=urllib.parse.quote)

    def open(self, *messages, timeout=10):
        """The handshake; returns the response. On success `sid` is set from the `c` array."""
        body = self.body(list(messages), 0, self.headers)
        self.next_map = len(messages)
        response = self.http.post(self.url, params=self._query(RID=str(self.rid), CVER="22", **{"X-HTTP-Session-Id": "gsessionid"}, t="1"),
                                  data=body, headers=self._http_headers(), timeout=timeout)
        if response.status_code == 200:
            chunks, rest = parse_chunks(response.text)
            assert rest == "" and len(chunks) == 1, response.text
            arrays = json.loads(chunks[0])
            assert arrays[0][0] == 0 and arrays[0][1][0] == "c", arrays
            self.sid = arrays[0][1][1]
            self.handshake = arrays[0][1]
        return response

    def send(self, *messages, offset=None, timeout=10):
        """A forward POST; returns (response, answer array or None)."""
        self.rid += 1
        start = self.next_map if offset is None else offset
        if offset is None:
            self.next_map += len(messages)
        response = self.http.post(self.url, params=self._query(SID=self.sid, RID=str(self.rid), AID=str(self.last_array), t="1"),
                                  data=self.body(list(messages), start), headers=self._http_headers(), timeout=timeout)
        answer = None
        if response.status_code == 200:
            chunks, rest = parse_chunks(response.text)
            assert rest == "" and len(chunks) == 1, response.text
            answer = json.loads(chunks[0])
        return response, answer

    def _take(self, chunk_text):
        new = []
        for array_id, payload in json.loads(chunk_text):
            with self.lock:
                if array_id <= self.last_array:
                    continue
                self.last_array = array_id
                self.arrays.append((array_id, payload))
            new.append((array_id, payload))
        return new

    def poll(self, timeout_ms=None, timeout=40):
        """One long-poll GET (CI=1); returns (response, new arrays)."""
        response = self.http.get(self.url, params=self._query(gsessionid=None, RID="rpc", SID=self.sid, AID=str(self.last_array), CI="1",
                                                              TO=str(timeout_ms) if timeout_ms else None, TYPE="xmlhttp", t="1"),
                                 headers=self._http_headers(post=False), timeout=timeout)
        new = []
        if response.status_code == 200:
            chunks, rest = parse_chunks(response.text)
            assert rest == "", response.text
            for chunk in chunks:
                new += self._take(chunk)
        return response, new

    def stream(self, until, timeout=20):
        """Streaming GETs (CI=0) until `until(arrays)` holds; reopens a GET that ends. Returns
        the first response and the timestamps of the first bytes of each GET."""
        deadline = time.time() + timeout
        firsts = []
        first_response = None
        while time.time() < deadline:
            response = self.http.get(self.url, params=self._query(RID="rpc", SID=self.sid, AID=str(self.last_array), CI="0", TYPE="xmlhttp", t="1"),
                                     headers=self._http_headers(post=False), stream=True, timeout=(5, 5))
            first_response = first_response or response
            if response.status_code != 200:
                return response, firsts
            buffered = ""
            got_first = False
            try:
                for piece in response.iter_content(chunk_size=None, decode_unicode=True):
                    if not got_first:
                        firsts.append(time.time())
                        got_first = True
                    buffered += piece
                    chunks, buffered = parse_chunks(buffered)
                    for chunk in chunks:
                        self._take(chunk)
                    if until(self.arrays) or time.time() > deadline:
                        response.close()
                        return first_response, firsts
            except requests.exceptions.ConnectionError:
                pass  # a read timeout: open the next GET
            finally:
                response.close()
            if until(self.arrays):
                return first_response, firsts
        return first_response, firsts

    def messages(self):
        """The Firestore messages received (noops and stop left out), in order."""
        return [payload[0] for _, payload in self.arrays if isinstance(payload, list) and payload and isinstance(payload[0], dict)]

    def terminate(self):
        self.rid += 1
        return self.http.post(self.url, params=self._query(SID=self.sid, RID=str(self.rid), TYPE="terminate"), data="",
                              headers=self._http_headers(), timeout=10)
