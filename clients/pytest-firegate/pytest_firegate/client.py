"""The verbs a test uses on Firegate, over its HTTP surface (docs/test-helpers.md): reset, the
connection switch by match, edge clients with their network switch, and plain REST calls."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
import uuid
from typing import Iterator, Optional

import requests


class Firegate:
    """A running server: `url` is its base, `project` the project tests use."""

    def __init__(self, url: str, project: str = "demo-project", admin_token: Optional[str] = None):
        self.url = url.rstrip("/")
        self.project = project
        self.session = requests.Session()
        if admin_token:
            self.session.headers["Authorization"] = f"Bearer {admin_token}"

    # --- plain REST --------------------------------------------------------------------------

    @property
    def documents_url(self) -> str:
        return f"{self.url}/v1/projects/{self.project}/databases/(default)/documents"

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", 30)
        return self.session.request(method, self.url + path, **kwargs)

    def get(self, document: str) -> requests.Response:
        """GET a document (`cities/SF`) from the server itself."""
        return self.session.get(f"{self.documents_url}/{document}", timeout=30)

    def set(self, document: str, fields: dict) -> requests.Response:
        """Writes a document's fields (plain values: str, int, float, bool, None, list, dict)."""
        return self.session.patch(f"{self.documents_url}/{document}", json={"fields": encode_fields(fields)}, timeout=30)

    # --- control -----------------------------------------------------------------------------

    def reset(self) -> None:
        """Everything back to empty: documents, tree, rules, clients, switches, the timeline."""
        self.request("POST", "/emulator/v1/reset").raise_for_status()
        # The server's own clock: a trace starts here even when the server was set to another time.
        self.test_started_ms = self.request("GET", "/emulator/v1/clock").json()["epochMs"]

    def timeline(self, since=None) -> dict:
        """Every client's and connection's steps (GET /emulator/v1/timeline), since the last
        reset unless `since` (epoch ms or RFC 3339) says otherwise."""
        since = since if since is not None else getattr(self, "test_started_ms", None)
        answer = self.request("GET", "/emulator/v1/timeline", params={} if since is None else {"since": since})
        answer.raise_for_status()
        return answer.json()

    def save_timeline(self, path, since=None) -> str:
        """Saves the timeline as a trace file the dashboard opens (Timeline → Open trace)."""
        with open(path, "w", encoding="utf-8") as out:
            json.dump(self.timeline(since), out)
        return str(path)

    @contextlib.contextmanager
    def offline(self, **match) -> Iterator[None]:
        """Takes the real clients' connections that match (`project=`, `appId=`, `uid=`,
        `namespace=`, `id=`) offline for the block: their streams end, their calls are refused."""
        self.switch(match, online=False)
        try:
            yield
        finally:
            self.switch(match, online=True)

    def switch(self, match: dict, online: bool, latency_ms: int = 0) -> None:
        body = {"match": match, "online": online}
        if latency_ms:
            body["latencyMs"] = latency_ms
        self.request("PUT", "/emulator/v1/connections/network", json=body).raise_for_status()

    def client(self, client_id: Optional[str] = None, **settings) -> "EdgeClient":
        """A new edge client (an emulated SDK with its own cache and queue); `settings` as
        `PUT /clients/{id}` takes them (persistence, cacheSizeBytes, …)."""
        client_id = client_id or f"c-{uuid.uuid4().hex[:10]}"
        answer = self.request("PUT", f"/clients/{client_id}", json={"project": self.project, **settings})
        answer.raise_for_status()
        return EdgeClient(self, client_id)


class EdgeClient:
    """One edge client: documents read and written through its cache, its network switch."""

    def __init__(self, server: Firegate, client_id: str):
        self.server = server
        self.id = client_id

    @property
    def documents_url(self) -> str:
        return f"{self.server.url}/clients/{self.id}/v1/projects/{self.server.project}/databases/(default)/documents"

    def get(self, document: str, source: Optional[str] = None) -> requests.Response:
        params = {"source": source} if source else None
        return self.server.session.get(f"{self.documents_url}/{document}", params=params, timeout=30)

    def set(self, document: str, fields: dict) -> requests.Response:
        return self.server.session.patch(f"{self.documents_url}/{document}", json={"fields": encode_fields(fields)}, timeout=30)

    @contextlib.contextmanager
    def offline(self) -> Iterator[None]:
        """The client's network off for the block (`disableNetwork`), back on after."""
        self.server.request("POST", f"/clients/{self.id}:disableNetwork").raise_for_status()
        try:
            yield
        finally:
            self.server.request("POST", f"/clients/{self.id}:enableNetwork").raise_for_status()

    def wait_for_pending_writes(self, timeout_ms: int = 10_000) -> None:
        self.server.request("POST", f"/clients/{self.id}:waitForPendingWrites", params={"timeoutMs": timeout_ms}).raise_for_status()

    def pending_writes(self) -> list:
        return self.server.request("GET", f"/clients/{self.id}/pendingWrites").json().get("writes", [])

    def delete(self) -> None:
        self.server.request("DELETE", f"/clients/{self.id}")


def encode_value(value) -> dict:
    """A plain Python value as a Firestore REST value."""
    if value is None:
        return {"nullValue": None}
    if isinstance(value, bool):
        return {"booleanValue": value}
    if isinstance(value, int):
        return {"integerValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [encode_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"mapValue": {"fields": encode_fields(value)}}
    raise TypeError(f"no Firestore value for {type(value).__name__}")


def encode_fields(fields: dict) -> dict:
    return {name: encode_value(value) for name, value in fields.items()}


class FiregateProcess:
    """A server started from the binary (`bin`, else FIREGATE_BIN, else `firegate` on PATH), in
    memory on a free loopback port; `stop()` ends it."""

    def __init__(self, binary: Optional[str] = None, project: str = "demo-project", extra_args: tuple = ()):
        binary = binary or os.environ.get("FIREGATE_BIN") or shutil.which("firegate")
        if not binary:
            raise RuntimeError("No Firegate: set FIREGATE_URL to a running server, or FIREGATE_BIN / --firegate-bin to its binary")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.process = subprocess.Popen([binary, "serve", "--in-memory", "--host", "127.0.0.1", "--port", str(port),
                                         "--project", project, "--log-level", "warning", *extra_args],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"firegate exited: {self.process.stderr.read().decode()}")
            try:
                if requests.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except requests.ConnectionError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("firegate did not answer /healthz within 30 s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
