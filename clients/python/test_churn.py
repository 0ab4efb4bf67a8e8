"""Clients that come, do one thing and go leave nothing behind (issue 40): bench/churn.py's run
with 1 000 clients per protocol — gRPC unary, gRPC Listen, RTDB socket, SSE, HTTP/1.1, edge
clients — on a server of its own; its open descriptors and its connections registry must be
back where they were after each protocol. (Resident memory is bench/run's figure.)
"""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import churn  # noqa: E402
import fgbench  # noqa: E402

from conftest import _binary  # noqa: E402


@pytest.fixture(scope="module")
def server():
    fgbench.raise_nofile(65536)
    s = fgbench.Server(os.environ.get("FIREGATE_BIN") or _binary(), churn.PROJECT, durable=False, label="test-churn").start()
    yield s
    s.stop()


@pytest.mark.parametrize("protocol", churn.PROTOCOLS)
def test_a_thousand_clients_leave_no_descriptor_and_no_registry_entry(server, protocol):
    result = churn.run(server, 1000, [protocol], say=lambda _: None)[protocol]
    assert (result["fds"], result["entries"]) == (0, 0), result
    assert server.alive()
