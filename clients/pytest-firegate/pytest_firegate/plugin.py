"""The pytest plugin (registered by `pip install`): fixtures `firegate_server` (one server for
the session), `firegate` (that server, reset before each test) and `firegate_client` (a fresh
edge client per test). Options: --firegate-url / FIREGATE_URL (a server that runs already, as
under `firegate exec`), --firegate-bin / FIREGATE_BIN, --firegate-project / GCLOUD_PROJECT."""
from __future__ import annotations

import os

import pytest

from .client import EdgeClient, Firegate, FiregateProcess


def pytest_addoption(parser):
    group = parser.getgroup("firegate")
    group.addoption("--firegate-url", default=None, help="a running Firegate to test against (env FIREGATE_URL)")
    group.addoption("--firegate-bin", default=None, help="the firegate binary to start (env FIREGATE_BIN, else firegate on PATH)")
    group.addoption("--firegate-project", default=None, help="the project the fixtures use (env GCLOUD_PROJECT, else demo-project)")


@pytest.fixture(scope="session")
def firegate_server(request):
    """One Firegate for the session: FIREGATE_URL's, or one started from the binary."""
    option = request.config.getoption
    project = option("--firegate-project") or os.environ.get("GCLOUD_PROJECT") or "demo-project"
    url = option("--firegate-url") or os.environ.get("FIREGATE_URL")
    token = os.environ.get("FIREGATE_ADMIN_TOKEN")
    if url:
        yield Firegate(url, project, admin_token=token)
        return
    process = FiregateProcess(option("--firegate-bin"), project)
    try:
        yield Firegate(process.url, project)
    finally:
        process.stop()


@pytest.fixture
def firegate(firegate_server) -> Firegate:
    """The session's server, empty: reset before the test runs."""
    firegate_server.reset()
    return firegate_server


@pytest.fixture
def firegate_client(firegate) -> EdgeClient:
    """A new edge client on the reset server, deleted after the test."""
    client = firegate.client()
    yield client
    client.delete()
