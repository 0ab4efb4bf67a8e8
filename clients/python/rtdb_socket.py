"""A Realtime Database protocol client of our own (the `websockets` package), written from
the protocol as docs/tree.md describes it: the framing (16 384-character pieces behind a count),
requests with exactly one reply, server pushes, and the SDK's value hash.

It keeps every frame it received (`frames`) so a test can check the framing itself, and every
push (`pushes`) in order, so a test can check what arrived before a reply.
"""
import base64
import hashlib
import json
import struct
import time

from websockets.sync.client import connect

PIECE = 16384
TIMEOUT = 10


def ws_url(base_url, namespace, **params):
    scheme = "wss" if base_url.startswith("https") else "ws"
    query = "&".join([f"v=5", f"ns={namespace}"] + [f"{k}={v}" for k, v in params.items()])
    return f"{scheme}://{base_url.split('://', 1)[1]}/.ws?{query}"


class SocketClosed(Exception):
    pass


class RealtimeSocket:
    """One connection. `hello` is the server's first message (its `d`)."""

    def __init__(self, base_url, namespace, headers=None, ssl=None, **params):
        self.ws = connect(ws_url(base_url, namespace, **params), additional_headers=headers or {},
                          max_size=None, ssl=ssl, open_timeout=TIMEOUT)
        self.frames = []       # every text message received, raw
        self.pushes = []       # server pushes in order: (action, body)
        self.replies = {}      # request number -> reply body
        self.controls = []     # control messages after the hello: (type, data)
        self.log = []          # ("push", action, body) / ("reply", r, body) in arrival order
        self.next_r = 1
        first = self._read_message(TIMEOUT)
        assert first["t"] == "c" and first["d"]["t"] == "h", first
        self.hello = first["d"]["d"]

    # -- framing ---------------------------------------------------------------------------
    def send_json(self, message):
        text = json.dumps(message, separators=(",", ":"))
        units = text.encode("utf-16-le")
        if len(units) // 2 <= PIECE:
            self.ws.send(text)
            return
        pieces = [units[i:i + 2 * PIECE].decode("utf-16-le") for i in range(0, len(units), 2 * PIECE)]
        self.ws.send(str(len(pieces)))
        for piece in pieces:
            self.ws.send(piece)

    def _recv(self, timeout):
        try:
            message = self.ws.recv(timeout=timeout)
        except TimeoutError:
            raise
        except Exception as e:
            raise SocketClosed(str(e)) from e
        self.frames.append(message)
        return message

    def _read_message(self, timeout):
        text = self._recv(timeout)
        if len(text) <= 6:
            count = int(text)  # a bare number is a count, never anything else
            assert count > 1, f"the server sent a bare number {text!r} that counts no pieces"
            text = "".join(self._recv(timeout) for _ in range(count))
        return json.loads(text)

    def pump(self, timeout=TIMEOUT):
        """Reads one message and files it."""
        message = self._read_message(timeout)
        if message["t"] == "c":
            self.controls.append((message["d"]["t"], message["d"].get("d")))
            self.log.append(("control", message["d"]["t"], message["d"].get("d")))
        elif "r" in message["d"]:
            r = message["d"]["r"]
            assert r not in self.replies, f"request {r} answered twice"
            self.replies[r] = message["d"]["b"]
            self.log.append(("reply", r, message["d"]["b"]))
        else:
            self.pushes.append((message["d"]["a"], message["d"]["b"]))
            self.log.append(("push", message["d"]["a"], message["d"]["b"]))
        return message

    # -- requests --------------------------------------------------------------------------
    def send_request(self, action, body):
        r = self.next_r
        self.next_r += 1
        self.send_json({"t": "d", "d": {"r": r, "a": action, "b": body}})
        return r

    def wait_reply(self, r, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while r not in self.replies:
            self.pump(max(0.01, deadline - time.monotonic()))
        return self.replies[r]

    def request(self, action, body, timeout=TIMEOUT):
        return self.wait_reply(self.send_request(action, body), timeout)

    def listen(self, path, query=None, tag=None, h=""):
        body = {"p": path, "h": h}
        if query is not None:
            body["q"] = query
            body["t"] = tag
        return self.request("q", body)

    def put(self, path, value, h=None):
        body = {"p": path, "d": value}
        if h is not None:
            body["h"] = h
        return self.request("p", body)

    def wait_push(self, predicate, timeout=TIMEOUT):
        """The first push (from now on or already read) matching predicate(action, body)."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for action, body in self.pushes[seen:]:
                if predicate(action, body):
                    return action, body
            seen = len(self.pushes)
            self.pump(max(0.01, deadline - time.monotonic()))

    def ping(self):
        self.send_json({"t": "c", "d": {"t": "p", "d": {}}})
        before = len(self.controls)
        while len(self.controls) == before:
            self.pump()
        return self.controls[-1]

    def wait_closed(self, timeout=TIMEOUT):
        """Reads until the server closes; returns (code, reason)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.pump(max(0.01, deadline - time.monotonic()))
            except SocketClosed:
                return self.ws.close_code, self.ws.close_reason
            except TimeoutError:
                raise AssertionError("the server did not close the socket")

    def close(self):
        self.ws.close()


# -- the SDK's value hash (core/snap/*.ts, util.ts sha1) ---------------------------------------
def _double_hex(x):
    return struct.pack(">d", float(x)).hex()


def _priority_text(p):
    return ("number:" + _double_hex(p)) if isinstance(p, (int, float)) and not isinstance(p, bool) else "string:" + p


def _key_order(k):
    try:
        n = int(k)
        if str(n) == k and -(2 ** 31) <= n < 2 ** 31:
            return (0, n, "")
    except ValueError:
        pass
    return (1, 0, k)


def _priority_order(p):
    if p is None:
        return (0, 0, "")
    if isinstance(p, (int, float)):
        return (1, p, "")
    return (2, 0, p)


def sdk_hash(value):
    """What the SDK sends as `h`: value in export form ({".value", ".priority"} allowed)."""
    if value is None:
        return ""
    priority = None
    if isinstance(value, dict):
        priority = value.get(".priority")
        if ".value" in value:
            value = value[".value"]
        else:
            value = {k: v for k, v in value.items() if k != ".priority"}
    text = "" if priority is None else "priority:" + _priority_text(priority) + ":"
    if isinstance(value, dict):
        children = [(k, v) for k, v in value.items() if v is not None]
        if not children:
            return ""

        def child_priority(v):
            return v.get(".priority") if isinstance(v, dict) else None
        children.sort(key=lambda kv: (_priority_order(child_priority(kv[1])), _key_order(kv[0])))
        for k, v in children:
            h = sdk_hash(v)
            if h:
                text += ":" + k + ":" + h
        if not text:
            return ""
    elif isinstance(value, bool):
        text += "boolean:" + ("true" if value else "false")
    elif isinstance(value, (int, float)):
        text += "number:" + _double_hex(value)
    else:
        text += "string:" + value
    return base64.b64encode(hashlib.sha1(text.encode("utf-8")).digest()).decode()


# -- a local view of pushes ---------------------------------------------------------------------
def apply_push(tree, action, body):
    """Applies a `d`/`m` push to `tree` (a dict standing for the root) and returns the new tree."""
    path = [k for k in body["p"].split("/") if k]
    if action == "d":
        return _set(tree, path, body["d"])
    if action == "m":
        for rel, value in body["d"].items():
            tree = _set(tree, path + [k for k in rel.split("/") if k], value)
    return tree


def _set(node, path, value):
    if not path:
        return _prune(value)
    node = dict(node) if isinstance(node, dict) else {}
    child = _set(node.get(path[0]), path[1:], value)
    if child is None:
        node.pop(path[0], None)
    else:
        node[path[0]] = child
    return node or None


def _prune(value):
    if isinstance(value, dict):
        out = {k: _prune(v) for k, v in value.items() if k != ".priority"}
        if ".value" in value:
            return value[".value"]
        out = {k: v for k, v in out.items() if v is not None}
        return out or None
    return value


def value_at(tree, path):
    for k in [k for k in path.split("/") if k]:
        if not isinstance(tree, dict):
            return None
        tree = tree.get(k)
    return tree
