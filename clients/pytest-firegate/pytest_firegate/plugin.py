"""The pytest plugin (registered by `pip install`): fixtures `firegate_server` (one server for
the session), `firegate` (that server, reset before each test) and `firegate_client` (a fresh
edge client per test). Options: --firegate-url / FIREGATE_URL (a server that runs already, as
under `firegate exec`), --firegate-bin / FIREGATE_BIN, --firegate-project / GCLOUD_PROJECT,
--firegate-traces / FIREGATE_TRACES (where a failed test's timeline is saved; firegate-traces/)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from .client import EdgeClient, Firegate, FiregateProcess


def pytest_addoption(parser):
    group = parser.getgroup("firegate")
    group.addoption("--firegate-url", default=None, help="a running Firegate to test against (env FIREGATE_URL)")
    group.addoption("--firegate-bin", default=None, help="the firegate binary to start (env FIREGATE_BIN, else firegate on PATH)")
    group.addoption("--firegate-project", default=None, help="the project the fixtures use (env GCLOUD_PROJECT, else demo-project)")
    group.addoption("--firegate-traces", default=None,
                    help="where a failed test's timeline is saved (env FIREGATE_TRACES, else firegate-traces/ under the rootdir)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the test, so the `firegate` fixture knows it failed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, "firegate_report_" + report.when, report)


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
def firegate(firegate_server, request) -> Firegate:
    """The session's server, empty: reset before the test runs. When the test fails, its
    timeline (every client's and connection's steps) is saved as a trace file and the report
    says where: open it in the dashboard's Timeline tab."""
    firegate_server.reset()
    yield firegate_server
    report = getattr(request.node, "firegate_report_call", None)
    if report is None or not report.failed:
        return
    option = request.config.getoption("--firegate-traces") or os.environ.get("FIREGATE_TRACES")
    directory = Path(option) if option else Path(request.config.rootpath) / "firegate-traces"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (re.sub(r"[^A-Za-z0-9._-]+", "_", request.node.nodeid)[:150] + ".json")
    try:
        firegate_server.save_timeline(path)
    except Exception as error:  # the server may be what failed: say so, keep the test's own failure
        report.sections.append(("firegate timeline", f"could not be saved: {error}"))
        return
    report.sections.append(("firegate timeline", f"saved to {path} (open it in the dashboard's Timeline tab)"))


@pytest.fixture
def firegate_client(firegate) -> EdgeClient:
    """A new edge client on the reset server, deleted after the test."""
    client = firegate.client()
    yield client
    client.delete()
