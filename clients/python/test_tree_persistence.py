"""The tree survives a restart on the same data directory, and every acknowledged write is
there afterwards, including after kill -9."""
import json
import os
import signal

import pytest
import requests

from conftest import start_server, stop_server


@pytest.fixture
def data_dir(tmp_path):
    if os.environ.get("FIREGATE_URL"):
        pytest.skip("needs its own server")
    return tmp_path / "data"


def test_tree_survives_restart(data_dir, namespace):
    proc, base = start_server(data_dir=data_dir)
    try:
        requests.put(f"{base}/a.json?ns={namespace}", data=json.dumps({"b": {"c": 1, ".priority": 3}, "d": [1, 2]}))
        requests.patch(f"{base}/a.json?ns={namespace}", data=json.dumps({"b/e": "x", "d/0": None}))
        requests.put(f"{base}/leaf.json?ns={namespace}", data="\"v\"")
        requests.put(f"{base}/leaf/child.json?ns={namespace}", data="1")  # a leaf becomes an object
        requests.delete(f"{base}/gone.json?ns={namespace}")
        pushed = requests.post(f"{base}/list.json?ns={namespace}", data="7").json()["name"]
        before = requests.get(f"{base}/.json?ns={namespace}&format=export").json()
    finally:
        stop_server(proc)
    proc, base = start_server(data_dir=data_dir)
    try:
        after = requests.get(f"{base}/.json?ns={namespace}&format=export").json()
        assert after == before
        assert after["list"][pushed] == 7
        assert after["a"]["b"] == {"c": 1, "e": "x", ".priority": 3}
        assert after["leaf"] == {"child": 1}
        # clearing the namespace is durable too
        requests.delete(f"{base}/.json?ns={namespace}")
    finally:
        stop_server(proc)
    proc, base = start_server(data_dir=data_dir)
    try:
        assert requests.get(f"{base}/.json?ns={namespace}").json() is None
    finally:
        stop_server(proc)


def test_acknowledged_writes_survive_kill_9(data_dir, namespace):
    proc, base = start_server(data_dir=data_dir)
    try:
        for i in range(50):
            assert requests.put(f"{base}/n/{i}.json?ns={namespace}", data=str(i)).status_code == 200
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    proc, base = start_server(data_dir=data_dir)
    try:
        assert requests.get(f"{base}/n.json?ns={namespace}").json() == list(range(50))
    finally:
        stop_server(proc)
