"""The test helpers save a failed test's timeline (docs/test-helpers.md): pytest-firegate's
`firegate` fixture and firegate-test.mjs's `saveTimelineIfFailed`, each run on a small suite of
one passing and one failing test against a server of its own."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, start_server, stop_server

PYTEST_SUITE = '''
def test_passes(firegate_client):
    firegate_client.set("cities/LA", {"name": "LA"})

def test_fails_after_an_offline_write(firegate, firegate_client):
    with firegate_client.offline():
        firegate_client.set("cities/SF", {"name": "SF"})
    firegate_client.wait_for_pending_writes()
    assert False, "on purpose"
'''

NODE_SUITE = '''
import { afterEach, before, beforeEach, test } from "node:test";
import { startFiregate } from "%s";
let firegate;
before(async () => { firegate = await startFiregate(); });
beforeEach(() => firegate.reset());
afterEach((t) => firegate.saveTimelineIfFailed(t));
test("passes", async () => { await firegate.client("quiet"); });
test("fails after going offline", async () => {
  const client = await firegate.client("phone");
  await client.offline(async () => { await client.set("cities/SF", { name: "SF" }); });
  await client.waitForPendingWrites();
  throw new Error("on purpose");
});
'''


@pytest.fixture
def server():
    proc, base = start_server()
    yield base
    stop_server(proc)


def kinds_of(trace, lane):
    return [e["kind"] for e in trace["events"] if e["lane"] == lane]


def test_pytest_firegate_saves_the_timeline_of_a_failed_test(server, tmp_path):
    (tmp_path / "test_suite.py").write_text(PYTEST_SUITE)
    env = {**os.environ, "FIREGATE_URL": server, "PYTHONPATH": str(REPO / "clients" / "pytest-firegate")}
    env.pop("FIREGATE_TRACES", None)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:firegate", "-p", "pytest_firegate.plugin",
                          "test_suite.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed, 1 passed" in run.stdout, run.stdout
    traces = sorted((tmp_path / "firegate-traces").iterdir())
    assert [p.name for p in traces] == ["test_suite.py_test_fails_after_an_offline_write.json"], traces
    assert f"saved to {traces[0]}" in run.stdout, run.stdout
    trace = json.loads(traces[0].read_text())
    assert trace["firegate"] == "timeline"
    (lane,) = [lane["id"] for lane in trace["lanes"] if lane["kind"] == "client"]
    kinds = kinds_of(trace, lane)
    assert kinds[:2] == ["lifecycle", "network"] and "writeQueued" in kinds and "writeAcknowledged" in kinds, kinds
    assert kinds.index("writeQueued") < kinds.index("writeAcknowledged")
    assert kinds[-1] == "lifecycle", "the fixture deleted the client before the trace was saved"


@pytest.mark.skipif(shutil.which("node") is None and not os.environ.get("CI"), reason="no Node.js")
def test_the_node_helper_saves_the_timeline_of_a_failed_test(server, tmp_path):
    suite = tmp_path / "suite.test.mjs"
    suite.write_text(NODE_SUITE % (REPO / "clients" / "node" / "firegate-test.mjs").as_uri())
    env = {**os.environ, "FIREGATE_URL": server, "FIREGATE_TRACES": str(tmp_path / "traces")}
    run = subprocess.run(["node", "--test", str(suite)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "# fail 1" in run.stdout and "# pass 1" in run.stdout, run.stdout + run.stderr
    traces = sorted((tmp_path / "traces").iterdir())
    assert [p.name for p in traces] == ["fails_after_going_offline.json"], traces
    trace = json.loads(traces[0].read_text())
    kinds = kinds_of(trace, "client:phone")
    assert kinds[:2] == ["lifecycle", "network"] and kinds.index("writeQueued") < kinds.index("writeAcknowledged"), kinds
    assert "client:quiet" not in {lane["id"] for lane in trace["lanes"]}, "only the failed test's steps"
