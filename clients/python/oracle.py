"""The official Cloud Firestore emulator as the oracle (issue 42): start it, send the same request
to it and to Firegate, normalize both answers and compare them, with the known divergences as
data (divergences.json).

The emulator is the Debian package google-cloud-cli-firestore-emulator (Java 17); it runs
offline, in memory. FIRESTORE_EMULATOR_BIN names its launcher when it is not where the package
puts it. Each process gets a port of its own on 127.0.0.1.
"""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent
DIVERGENCES = HERE / "divergences.json"
OWNER = {"Authorization": "Bearer owner"}
_KNOWN_PATHS = [
    "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator",
    "/usr/share/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator",
]


def emulator_binary() -> str | None:
    """The official emulator's launcher, or None when it is not installed."""
    named = os.environ.get("FIRESTORE_EMULATOR_BIN")
    if named:
        return named if os.access(named, os.X_OK) else None
    for path in _KNOWN_PATHS:
        if os.access(path, os.X_OK):
            return path
    gcloud = shutil.which("gcloud")
    if gcloud:
        root = Path(os.path.realpath(gcloud)).parent.parent
        candidate = root / "platform/cloud-firestore-emulator/cloud_firestore_emulator"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OfficialEmulator:
    """One emulator process; `base` is its REST root (http://127.0.0.1:PORT)."""

    def __init__(self, binary: str, *extra_args: str):
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([binary, "start", "--host=127.0.0.1", f"--port={self.port}", *extra_args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the official emulator exited ({self.proc.returncode})")
            try:
                if requests.get(self.base, timeout=1).status_code == 200:
                    return
            except requests.ConnectionError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("the official emulator did not answer within 60 s")

    def reset(self, project: str):
        requests.delete(f"{self.base}/emulator/v1/projects/{project}/databases/(default)/documents", timeout=30)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


# --------------------------------------------------------------------------------------------
# Answers, normalized

_TIME_KEYS = {"updateTime", "createTime", "readTime", "commitTime"}


def normalize(value, project_of=None):
    """Times become "<time>", transaction ids "<tx>"; everything else stays (order included)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in _TIME_KEYS and isinstance(item, str):
                out[key] = "<time>"
            elif key == "transaction" and isinstance(item, str):
                out[key] = "<tx>"
            else:
                out[key] = normalize(item)
        return out
    if isinstance(value, list):
        return [normalize(item) for item in value]
    return value


def numbers_close(a, b) -> bool:
    """Equal, or doubles equal to 1e-9 relative (sums and averages may add in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(numbers_close(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(numbers_close(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


class Answer:
    """What one server answered: the status and the body (JSON when it is)."""

    def __init__(self, response: requests.Response):
        self.status = response.status_code
        try:
            self.body = response.json()
        except ValueError:
            self.body = response.text

    @property
    def error(self):
        return self.body.get("error") if isinstance(self.body, dict) else None

    def shape(self):
        """An error's (code, status); a success's normalized body."""
        if self.status >= 400:
            error = self.error or {}
            return ("error", self.status, error.get("status"))
        return ("ok", self.status, normalize(self.body))

    def __repr__(self):
        return f"{self.status} {json.dumps(self.body)[:600]}"


# --------------------------------------------------------------------------------------------
# Divergences as data

def load_divergences():
    return json.loads(DIVERGENCES.read_text())["divergences"]


def explained(area: str, request: dict, ours: Answer, theirs: Answer):
    """The divergence entry that explains this difference, or None. An entry explains it when its
    area pattern matches the area, its request pattern is found in the request, and each side's answer is the
    one the entry says."""
    text = json.dumps(request, sort_keys=True)
    for entry in load_divergences():
        if not re.fullmatch(entry["area"], area) or not re.search(entry["request"], text):
            continue
        if _side(entry["firegate"], ours) and _side(entry["emulator"], theirs):
            return entry
    return None


def _side(expected, answer: Answer) -> bool:
    """Whether `answer` is what `expected` says (a list: any of its entries)."""
    if isinstance(expected, list):
        return any(_side(one, answer) for one in expected)
    if "status" in expected and expected["status"] != answer.status:
        return False
    if "error" in expected and (answer.error or {}).get("status") != expected["error"]:
        return False
    if "message" in expected and not re.search(expected["message"], (answer.error or {}).get("message", "")):
        return False
    return True


def repro(area: str, request: dict, ours: Answer, theirs: Answer, setup=None) -> str:
    """A minimal reproduction to print with a failure: the requests and both answers."""
    lines = [f"[{area}] differs"]
    if setup:
        lines.append("setup: " + json.dumps(setup)[:4000])
    lines += ["request: " + json.dumps(request), f"firegate: {ours!r}", f"emulator: {theirs!r}"]
    return "\n".join(lines)
