"""Shared fixtures: a Firegate server for the whole test session.

Set FIREGATE_URL to test a server that is already running; otherwise the binary named by
FIREGATE_BIN (default: the release build, else the debug build) is started in memory on a
free loopback port and stopped at the end.

Set FIREGATE_TEST_STORE to a PostgreSQL URL (a database the tests may create others from) to
run every server on PostgreSQL instead (`--store`): each server gets a database of its own,
the same one again when it restarts on the same data directory.
"""
import hashlib
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
    args += _storage_args(data_dir)
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


def postgres_store() -> str | None:
    """The PostgreSQL URL the suite runs on (FIREGATE_TEST_STORE), or None for SQLite."""
    return os.environ.get("FIREGATE_TEST_STORE") or None


def postgres_database_url(data_dir) -> str:
    """The database of the server on `data_dir` (FIREGATE_TEST_STORE mode), created if new."""
    name = "fgt_" + hashlib.sha1(str(data_dir).encode()).hexdigest()[:20]
    store = postgres_store()
    exists = subprocess.run(["psql", store, "-Atqc", f"SELECT 1 FROM pg_database WHERE datname = '{name}'"],
                            capture_output=True, text=True, check=True).stdout.strip()
    if not exists:
        subprocess.run(["psql", store, "-qc", f'CREATE DATABASE "{name}"'], capture_output=True, check=True)
    head, _, query = store.partition("?")
    return head[:head.index("/", head.index("//") + 2) + 1] + name + ("?" + query if query else "")


def _storage_args(data_dir):
    if not postgres_store():
        return ["--data-dir", str(data_dir)] if data_dir else ["--in-memory"]
    import tempfile
    # One database per server; a restart on the same data directory finds its data again, as
    # the same replica (so it takes its leases back at once).
    data_dir = data_dir or tempfile.mkdtemp(prefix="fg-edge-")
    replica = "r-" + hashlib.sha1(str(data_dir).encode()).hexdigest()[:8]
    return ["--store", postgres_database_url(data_dir), "--data-dir", str(data_dir), "--replica-id", replica]


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


@pytest.fixture(scope="session")
def firestore_emulator():
    """The official Cloud Firestore emulator (oracle.py), one for the session: the oracle the
    test_oracle* modules compare Firegate with. Missing, it fails under CI and skips elsewhere."""
    import oracle
    binary = oracle.emulator_binary()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("the official Firestore emulator (google-cloud-cli-firestore-emulator) is not installed")
        pytest.skip("the official Firestore emulator is not installed")
    emulator = oracle.OfficialEmulator(binary)
    yield emulator
    emulator.stop()
