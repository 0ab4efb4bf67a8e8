"""Shared fixtures: a Firegate server for the whole test session.

Set FIREGATE_URL to test a server that is already running; otherwise the binary named by
FIREGATE_BIN (default: the release build, else the debug build) is started in memory on a
free loopback port and stopped at the end.
"""
import os
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _binary() -> str:
    if os.environ.get("FIREGATE_BIN"):
        return os.environ["FIREGATE_BIN"]
    for candidate in (REPO / ".build/release/firegate", REPO / ".build/debug/firegate"):
        if candidate.exists():
            return str(candidate)
    raise RuntimeError("No firegate binary: build it or set FIREGATE_BIN / FIREGATE_URL")


def start_server(*extra_args, data_dir=None):
    """Starts a server process and waits for /healthz; returns (process, base_url).

    With `--tls-cert CERT` among the arguments the server speaks HTTPS: the URL is
    https://127.0.0.1:PORT and /healthz is checked against CERT (a self-signed certificate)."""
    port = _free_port()
    args = [_binary(), "serve", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    args += ["--data-dir", str(data_dir)] if data_dir else ["--in-memory"]
    args += [str(a) for a in extra_args]
    scheme, verify = "http", True
    if "--tls-cert" in args:
        scheme, verify = "https", args[args.index("--tls-cert") + 1]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"{scheme}://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"firegate exited early: {proc.stderr.read().decode()}")
        try:
            if requests.get(base + "/healthz", timeout=1, verify=verify).status_code == 200:
                return proc, base
        except requests.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("firegate did not become healthy in 30 s")


def stop_server(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def base_url():
    """Base URL of the server under test (http://127.0.0.1:PORT)."""
    if os.environ.get("FIREGATE_URL"):
        yield os.environ["FIREGATE_URL"].rstrip("/")
        return
    proc, base = start_server()
    yield base
    stop_server(proc)


@pytest.fixture
def project():
    """A fresh project id per test, so tests never see each other's documents."""
    return "p-" + uuid.uuid4().hex[:12]


@pytest.fixture
def namespace():
    """A fresh tree namespace per test."""
    return "ns-" + uuid.uuid4().hex[:12]
