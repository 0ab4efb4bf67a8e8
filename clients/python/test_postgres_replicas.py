"""Two replicas on one PostgreSQL store (DESIGN §1.8), as far as they go today: each database is
written by one owner under a lease; another replica's write is refused UNAVAILABLE while the
owner lives; a paused owner loses its lease, another replica takes the database over within the
lease and 2 s, and the old owner, resumed, is fenced off: it writes nothing.

Runs when the suite runs on PostgreSQL (FIREGATE_TEST_STORE)."""
import os
import signal
import subprocess
import time
import uuid

import pytest
import requests

from conftest import _binary, _free_port, postgres_database_url, postgres_store, stop_server
from sse import SSEStream

pytestmark = pytest.mark.skipif(not postgres_store(), reason="needs FIREGATE_TEST_STORE (the suite on PostgreSQL)")

LEASE = 2


def _replica(url, name, data_dir):
    port = _free_port()
    proc = subprocess.Popen([_binary(), "serve", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
                             "--store", url, "--data-dir", str(data_dir), "--replica-id", name, "--lease-seconds", str(LEASE)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        try:
            if requests.get(base + "/healthz", timeout=1).status_code == 200:
                return proc, base
        except requests.ConnectionError:
            time.sleep(0.05)
    raise AssertionError("replica did not start")


@pytest.fixture
def pair(tmp_path):
    """Replicas a and b on one fresh database: (url, (a process, a URL), (b process, b URL))."""
    url = postgres_database_url(tmp_path / "shared")
    a = _replica(url, "a", tmp_path / "a")
    b = _replica(url, "b", tmp_path / "b")
    yield url, a, b
    for proc, _ in (a, b):
        proc.send_signal(signal.SIGCONT)
        stop_server(proc)


def _write(base, project, n):
    return requests.patch(f"{base}/v1/projects/{project}/databases/(default)/documents/c/d",
                          json={"fields": {"n": {"integerValue": str(n)}}}, timeout=10)


def _stored(url, project):
    return subprocess.run(["psql", url, "-Atc", f"SELECT convert_from(fields, 'UTF8') FROM fg_documents WHERE scope = 'd:{project}/(default)'"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_one_owner_a_paused_owner_is_fenced_off_and_another_takes_over(pair):
    url, (a, a_base), (b, b_base) = pair
    project = "p-" + uuid.uuid4().hex[:8]
    assert _write(a_base, project, 1).status_code == 200
    assert requests.put(f"{a_base}/x.json", params={"ns": project}, json=1, timeout=10).status_code == 200
    tree_refused = requests.put(f"{b_base}/x.json", params={"ns": project}, json=2, timeout=10)
    assert tree_refused.status_code == 503 and "owned by replica a" in tree_refused.json()["error"], tree_refused.text
    refused = _write(b_base, project, 2)
    assert refused.status_code == 503, refused.text
    assert refused.json()["error"]["status"] == "UNAVAILABLE"
    assert "owned by replica a" in refused.json()["error"]["message"]
    assert _stored(url, project) == '{"n":{"integerValue":"1"}}'

    a.send_signal(signal.SIGSTOP)
    stopped = time.monotonic()
    while True:
        r = _write(b_base, project, 3)
        if r.status_code == 200:
            break
        assert r.status_code == 503, r.text
        assert time.monotonic() - stopped < LEASE + 2, f"B could not take over within the lease + 2 s: {r.text}"
        time.sleep(0.1)
    took_over = time.monotonic() - stopped
    while (r := requests.put(f"{b_base}/x.json", params={"ns": project}, json=3, timeout=10)).status_code != 200:
        assert r.status_code == 503 and time.monotonic() - stopped < LEASE + 2, r.text
        time.sleep(0.1)
    assert requests.get(f"{b_base}/x.json", params={"ns": project}, timeout=10).json() == 3
    assert _stored(url, project) == '{"n":{"integerValue":"3"}}'
    got = requests.get(f"{b_base}/v1/projects/{project}/databases/(default)/documents/c/d", timeout=10).json()
    assert got["fields"]["n"] == {"integerValue": "3"}

    # The old owner wakes up and writes with the epoch it had: refused, nothing stored.
    a.send_signal(signal.SIGCONT)
    stale = _write(a_base, project, 99)
    assert stale.status_code == 503, stale.text
    assert stale.json()["error"]["status"] == "UNAVAILABLE"
    assert _stored(url, project) == '{"n":{"integerValue":"3"}}'
    tree_stale = requests.put(f"{a_base}/x.json", params={"ns": project}, json=99, timeout=10)
    assert tree_stale.status_code == 503, tree_stale.text
    assert requests.get(f"{b_base}/x.json", params={"ns": project}, timeout=10).json() == 3
    # The status route says who owns what now (from either replica).
    status = requests.get(f"{a_base}/emulator/v1/replicas", timeout=10).json()
    assert status["store"] == "postgresql" and status["self"] == "a"
    by_id = {r["id"]: r for r in status["replicas"]}
    assert set(by_id) >= {"a", "b"} and by_id["b"]["alive"] is True
    owned = [o for o in by_id["b"]["owns"] if o.get("project") == project]
    assert owned and owned[0]["database"] == "(default)" and owned[0]["epoch"] >= 2 and owned[0]["expired"] is False
    assert not [o for o in by_id["a"]["owns"] if o.get("project") == project]
    assert any(o.get("namespace") == project for o in by_id["b"]["owns"])
    print(f"  B took the database over {took_over:.2f} s after A was paused (lease {LEASE} s)")


def test_a_follower_serves_the_owners_commits_to_reads_and_listeners_in_order(pair):
    _, (_, a_base), (_, b_base) = pair
    project = "p-" + uuid.uuid4().hex[:8]
    docs = f"/v1/projects/{project}/databases/(default)/documents"
    assert _write(a_base, project, 1).status_code == 200
    # B reads the database A owns: loaded from the store on first use, then followed.
    first = requests.get(f"{b_base}{docs}/c/d", timeout=10)
    assert first.status_code == 200 and first.json()["fields"]["n"] == {"integerValue": "1"}, first.text
    stream = SSEStream(f"{b_base}{docs}/c/d:listen")
    assert stream.next(timeout=10).json()["document"]["fields"]["n"] == {"integerValue": "1"}
    for n in range(2, 22):
        assert _write(a_base, project, n).status_code == 200
    seen = []
    deadline = time.monotonic() + 10
    while (not seen or seen[-1] != 21) and time.monotonic() < deadline:
        event = stream.next(timeout=max(0.1, deadline - time.monotonic()))
        if event.event == "snapshot" and event.json().get("document"):
            seen.append(int(event.json()["document"]["fields"]["n"]["integerValue"]))
    stream.close()
    assert seen and seen[-1] == 21, seen
    assert seen == sorted(seen), f"B's listener saw A's commits out of order: {seen}"
    got = requests.get(f"{b_base}{docs}/c/d", timeout=10).json()
    assert got["fields"]["n"] == {"integerValue": "21"}
    deleted = requests.delete(f"{a_base}{docs}/c/d", timeout=10)
    assert deleted.status_code == 200
    deadline = time.monotonic() + 5
    while requests.get(f"{b_base}{docs}/c/d", timeout=10).status_code != 404:
        assert time.monotonic() < deadline, "B never saw A's delete"
        time.sleep(0.05)


def test_a_follower_streams_the_owners_tree_writes_in_order(pair):
    _, (_, a_base), (_, b_base) = pair
    ns = "ns-" + uuid.uuid4().hex[:8]
    assert requests.put(f"{a_base}/scores.json", params={"ns": ns}, json={"n": 0}, timeout=10).status_code == 200
    assert requests.get(f"{b_base}/scores.json", params={"ns": ns}, timeout=10).json() == {"n": 0}
    stream = SSEStream(f"{b_base}/scores.json", params={"ns": ns}, headers={"Accept": "text/event-stream"})
    first = stream.next(timeout=10)
    assert first.event == "put" and first.json() == {"path": "/", "data": {"n": 0}}
    for n in range(1, 11):
        assert requests.patch(f"{a_base}/scores.json", params={"ns": ns}, json={"n": n, f"k{n}": True}, timeout=10).status_code == 200
    seen = []
    deadline = time.monotonic() + 10
    while (not seen or seen[-1] != 10) and time.monotonic() < deadline:
        event = stream.next(timeout=max(0.1, deadline - time.monotonic()))
        if event.event == "patch":
            seen.append(event.json()["data"]["n"])
    stream.close()
    assert seen == list(range(1, 11)), seen
    final = requests.get(f"{b_base}/scores.json", params={"ns": ns}, timeout=10).json()
    assert final == {"n": 10, **{f"k{n}": True for n in range(1, 11)}}
    # Priorities travel too.
    assert requests.put(f"{a_base}/scores/.priority.json", params={"ns": ns}, json=7, timeout=10).status_code == 200
    deadline = time.monotonic() + 5
    while requests.get(f"{b_base}/scores.json", params={"ns": ns, "format": "export"}, timeout=10).json().get(".priority") != 7:
        assert time.monotonic() < deadline, "B never saw A's priority"
        time.sleep(0.05)


def _nginx(tmp_path, replicas):
    """deploy/nginx.conf as shipped, with its three servers replaced by `replicas` (base URLs)
    and run on loopback under `tmp_path`; returns (process, base URL)."""
    import re
    import shutil
    from pathlib import Path
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        pytest.fail("nginx is not installed (apt-get install nginx-light): the replica suite needs it")
    conf = (Path(__file__).resolve().parents[2] / "deploy" / "nginx.conf").read_text()
    servers = re.findall(r"^\s*server firegate-\d:8080 .*$", conf, re.M)
    assert len(servers) == len(replicas) == 3, servers
    for line, base in zip(servers, replicas):
        conf = conf.replace(line, line.replace(re.search(r"firegate-\d:8080", line).group(0), base.removeprefix("http://")))
    port = _free_port()
    run = tmp_path / "nginx"
    (run / "tmp").mkdir(parents=True)
    conf = conf.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    conf = conf.replace("worker_processes 1;", f"worker_processes 1;\ndaemon off;\npid {run}/nginx.pid;\nerror_log {run}/error.log warn;")
    conf = conf.replace("    access_log off;", "    access_log off;\n" + "".join(
        f"    {kind}_temp_path {run}/tmp/{kind};\n" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")))
    (run / "nginx.conf").write_text(conf)
    proc = subprocess.Popen([nginx, "-p", str(run), "-c", str(run / "nginx.conf")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 10
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        try:
            requests.get(base + "/healthz", timeout=1)
            return proc, base
        except requests.ConnectionError:
            time.sleep(0.05)
    raise AssertionError("nginx did not start")


def test_behind_the_shipped_nginx_config_each_project_has_one_owner_and_everything_works(tmp_path):
    url = postgres_database_url(tmp_path / "shared")
    procs = []
    try:
        replicas = []
        for name in ("r1", "r2", "r3"):
            proc, base = _replica(url, name, tmp_path / name)
            procs.append(proc)
            replicas.append(base)
        nginx, front = _nginx(tmp_path, replicas)
        procs.append(nginx)
        projects = ["p-" + uuid.uuid4().hex[:8] for _ in range(12)]
        for project in projects:
            for n in range(3):
                r = _write(front, project, n)
                assert r.status_code == 200, r.text
            got = requests.get(f"{front}/v1/projects/{project}/databases/(default)/documents/c/d", timeout=10).json()
            assert got["fields"]["n"] == {"integerValue": "2"}
        # A listen through nginx, then a write through nginx: the event arrives.
        project = projects[0]
        stream = SSEStream(f"{front}/v1/projects/{project}/databases/(default)/documents/c/d:listen")
        assert stream.next(timeout=10).json()["document"]["fields"]["n"] == {"integerValue": "2"}
        assert _write(front, project, 7).status_code == 200
        deadline = time.monotonic() + 10
        while True:
            event = stream.next(timeout=max(0.1, deadline - time.monotonic()))
            if event.event == "snapshot" and event.json().get("document", {}).get("fields", {}).get("n") == {"integerValue": "7"}:
                break
        stream.close()
        # Each project has exactly one owner, and the ring spread them over the replicas.
        status = requests.get(f"{front}/emulator/v1/replicas", timeout=10).json()
        owners = {}
        for replica in status["replicas"]:
            for owned in replica["owns"]:
                if owned.get("project") in projects:
                    assert owned["project"] not in owners, f"{owned['project']} owned twice"
                    owners[owned["project"]] = replica["id"]
        assert set(owners) == set(projects)
        assert len(set(owners.values())) >= 2, f"the ring put all 12 projects on one replica: {owners}"
    finally:
        for proc in procs:
            stop_server(proc)


def test_every_answer_names_its_replica(pair):
    """`Firegate-Replica` on the fast path's answers and streams, the full path's, and gRPC's."""
    import grpc
    _, (_, a_base), (_, b_base) = pair
    project = "p-" + uuid.uuid4().hex[:8]
    docs = f"/v1/projects/{project}/databases/(default)/documents"
    assert _write(a_base, project, 1).headers["Firegate-Replica"] == "a"
    assert requests.get(f"{a_base}{docs}/c/d", timeout=10).headers["Firegate-Replica"] == "a"
    assert requests.get(f"{b_base}{docs}/c/d", timeout=10).headers["Firegate-Replica"] == "b"
    assert requests.get(f"{b_base}/emulator/v1/replicas", timeout=10).headers["Firegate-Replica"] == "b"
    assert requests.get(f"{b_base}/x.json", params={"ns": project}, timeout=10).headers["Firegate-Replica"] == "b"
    with requests.get(f"{b_base}{docs}/c/d:listen", stream=True, timeout=10) as stream:
        assert stream.headers["Firegate-Replica"] == "b"
    name = f"projects/{project}/databases/(default)/documents/c/d".encode()
    with grpc.insecure_channel(b_base.removeprefix("http://")) as channel:
        get = channel.unary_unary("/google.firestore.v1.Firestore/GetDocument")
        _, call = get.with_call(b"\x0a" + bytes([len(name)]) + name, timeout=10)
        assert ("firegate-replica", "b") in call.initial_metadata()
