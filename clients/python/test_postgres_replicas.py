"""Replicas on one PostgreSQL store (docs/replicas.md): each database and namespace is written by one
owner under a lease; a write that reaches another replica is forwarded to the owner (REST as it
came, gRPC as its REST twin); a paused owner loses its lease, another replica takes the scope over
within the lease and 2 s, and the old owner, resumed, is fenced off: it writes nothing itself.

Runs when the suite runs on PostgreSQL (FIREGATE_TEST_STORE)."""
import json
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
SECRET = "test-cluster-secret"


def _replica(url, name, data_dir):
    port = _free_port()
    proc = subprocess.Popen([_binary(), "serve", "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
                             "--store", url, "--data-dir", str(data_dir), "--replica-id", name, "--lease-seconds", str(LEASE),
                             "--cluster-secret", SECRET],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode()
        try:
            if requests.get(base + "/healthz", timeout=1).status_code == 200:
                return proc, base
        except (requests.ConnectionError, requests.Timeout):  # not listening yet, or a busy start
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


def _epoch(url, scope):
    return subprocess.run(["psql", url, "-Atc", f"SELECT owner || ' ' || owner_epoch FROM fg_heads WHERE scope = '{scope}'"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_one_owner_a_paused_owner_is_fenced_off_and_another_takes_over(pair):
    url, (a, a_base), (b, b_base) = pair
    project = "p-" + uuid.uuid4().hex[:8]
    assert _write(a_base, project, 1).status_code == 200
    assert requests.put(f"{a_base}/x.json", params={"ns": project}, json=1, timeout=10).status_code == 200
    # B's writes go to A, the owner, and come back as A answered them.
    forwarded = _write(b_base, project, 2)
    assert forwarded.status_code == 200, forwarded.text
    assert forwarded.headers["Firegate-Forwarded-To"] == "a" and forwarded.headers["Firegate-Replica"] == "b"
    assert forwarded.json()["fields"]["n"] == {"integerValue": "2"}
    tree_forwarded = requests.put(f"{b_base}/x.json", params={"ns": project}, json=2, timeout=10)
    assert tree_forwarded.status_code == 200 and tree_forwarded.json() == 2, tree_forwarded.text
    assert tree_forwarded.headers["Firegate-Forwarded-To"] == "a"
    assert _stored(url, project) == '{"n":{"integerValue":"2"}}'
    assert _epoch(url, f"d:{project}/(default)") == "a 1"
    assert requests.get(f"{a_base}/x.json", params={"ns": project}, timeout=10).json() == 2

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

    # The old owner wakes up with the epoch it had. It writes nothing itself: a write it still
    # tries is fenced off (UNAVAILABLE), one it no longer owns goes to B.
    a.send_signal(signal.SIGCONT)
    owner_now = _epoch(url, f"d:{project}/(default)")
    assert owner_now.startswith("b "), owner_now
    stale = _write(a_base, project, 99)
    if stale.status_code == 503:
        assert stale.json()["error"]["status"] == "UNAVAILABLE"
        assert _stored(url, project) == '{"n":{"integerValue":"3"}}'
    else:
        assert stale.status_code == 200 and stale.headers["Firegate-Forwarded-To"] == "b", stale.text
        assert _stored(url, project) == '{"n":{"integerValue":"99"}}'
    assert _epoch(url, f"d:{project}/(default)") == owner_now
    tree_stale = requests.put(f"{a_base}/x.json", params={"ns": project}, json=99, timeout=10)
    assert tree_stale.status_code == 503 or tree_stale.headers["Firegate-Forwarded-To"] == "b", tree_stale.text
    assert _epoch(url, f"t:{project}").startswith("b ")
    # Once A has seen it lost the scope, its writes go to B.
    deadline = time.monotonic() + 5
    while (r := _write(a_base, project, 4)).status_code != 200:
        assert r.status_code == 503 and time.monotonic() < deadline, r.text
        time.sleep(0.1)
    assert r.headers["Firegate-Forwarded-To"] == "b"
    assert _stored(url, project) == '{"n":{"integerValue":"4"}}'
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


@pytest.fixture
def trio(tmp_path):
    """Replicas a, b and c on one fresh database: (url, [(process, URL)] * 3)."""
    url = postgres_database_url(tmp_path / "shared")
    replicas = [_replica(url, name, tmp_path / name) for name in ("a", "b", "c")]
    yield url, replicas
    for proc, _ in replicas:
        if proc.poll() is None:
            stop_server(proc)


def test_a_request_claiming_to_come_from_a_replica_needs_the_cluster_secret(pair):
    _, (_, a_base), (_, b_base) = pair
    project = "p-" + uuid.uuid4().hex[:8]
    assert _write(a_base, project, 1).status_code == 200
    url = f"{b_base}/v1/projects/{project}/databases/(default)/documents/c/d"
    body = {"fields": {"n": {"integerValue": "5"}}}
    forged = requests.patch(url, json=body, headers={"Firegate-Forwarded-By": "a"}, timeout=10)
    assert forged.status_code == 403 and forged.json()["error"]["status"] == "PERMISSION_DENIED", forged.text
    assert "cluster secret" in forged.json()["error"]["message"]
    wrong = requests.put(f"{b_base}/x.json", params={"ns": project}, json=1,
                         headers={"Firegate-Forwarded-By": "a", "Firegate-Cluster-Secret": "nope"}, timeout=10)
    assert wrong.status_code == 403 and "cluster secret" in wrong.json()["error"], wrong.text
    # With the secret, B runs it itself (a forwarded request is never forwarded again), and
    # B is not the owner: refused UNAVAILABLE, nothing written.
    marked = requests.patch(url, json=body, headers={"Firegate-Forwarded-By": "a", "Firegate-Cluster-Secret": SECRET}, timeout=10)
    assert marked.status_code == 503 and "owned by replica a" in marked.json()["error"]["message"], marked.text
    assert requests.get(url, timeout=10).json()["fields"]["n"] == {"integerValue": "1"}


def _increment_in_transaction(base, project, rounds, results):
    """`rounds` REST transactions on `base`, each reading counter/c and writing it + 1, retried on
    ABORTED with the aborted one as retryTransaction (as the SDKs retry: the retry keeps its age,
    docs/transactions.md); appends the number committed to `results`."""
    docs = f"{base}/v1/projects/{project}/databases/(default)/documents"
    session = requests.Session()
    committed = 0
    for _ in range(rounds):
        previous = None
        while True:
            options = {"options": {"readWrite": {"retryTransaction": previous}}} if previous else {}
            tx = session.post(f"{docs}:beginTransaction", json=options, timeout=10)
            assert tx.status_code == 200, tx.text
            transaction = previous = tx.json()["transaction"]
            got = session.get(f"{docs}/counter/c", params={"transaction": transaction}, timeout=10)
            if got.status_code == 409:  # aborted by an older transaction's commit
                assert got.json()["error"]["status"] == "ABORTED", got.text
                continue
            assert got.status_code == 200, got.text
            n = int(got.json()["fields"]["n"]["integerValue"])
            done = session.post(f"{docs}:commit", json={"transaction": transaction, "writes": [{"update": {
                "name": f"projects/{project}/databases/(default)/documents/counter/c", "fields": {"n": {"integerValue": str(n + 1)}}}}]},
                timeout=10)
            if done.status_code == 200:
                committed += 1
                break
            assert done.status_code == 409 and done.json()["error"]["status"] == "ABORTED", done.text
    results.append(committed)


def _increment_by_etag(base, ns, rounds, results):
    """`rounds` compare-and-set increments of /counter on `base` (ETag, if-match), retried on 412."""
    session = requests.Session()
    for _ in range(rounds):
        while True:
            got = session.get(f"{base}/counter.json", params={"ns": ns}, headers={"X-Firebase-ETag": "true"}, timeout=10)
            assert got.status_code == 200, got.text
            put = session.put(f"{base}/counter.json", params={"ns": ns}, json=got.json() + 1,
                              headers={"if-match": got.headers["ETag"]}, timeout=10)
            if put.status_code == 200:
                break
            assert put.status_code == 412, put.text
    results.append(rounds)


def test_transactions_and_compare_and_set_from_all_replicas_at_once_lose_no_update(trio):
    import threading
    _, replicas = trio
    project = "p-" + uuid.uuid4().hex[:8]
    a_base = replicas[0][1]
    docs = f"{a_base}/v1/projects/{project}/databases/(default)/documents"
    assert requests.patch(f"{docs}/counter/c", json={"fields": {"n": {"integerValue": "0"}}}, timeout=10).status_code == 200
    assert requests.put(f"{a_base}/counter.json", params={"ns": project}, json=0, timeout=10).status_code == 200
    rounds = 15
    results, threads = [], []
    for _, base in replicas:
        for _ in range(2):
            threads.append(threading.Thread(target=_increment_in_transaction, args=(base, project, rounds, results)))
            threads.append(threading.Thread(target=_increment_by_etag, args=(base, project, rounds, results)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(results) == len(threads), "a worker failed (see its assertion above)"
    expected = rounds * 6
    for _, base in replicas:
        deadline = time.monotonic() + 5
        while True:
            n = requests.get(f"{base}/v1/projects/{project}/databases/(default)/documents/counter/c", timeout=10).json()["fields"]["n"]
            tree = requests.get(f"{base}/counter.json", params={"ns": project}, timeout=10).json()
            if n == {"integerValue": str(expected)} and tree == expected:
                break
            assert time.monotonic() < deadline, f"{base}: document {n}, tree {tree}, expected {expected} each"
            time.sleep(0.05)


def test_a_real_client_on_a_follower_writes_and_runs_transactions_through_the_owner(pair, monkeypatch):
    from google.cloud import firestore
    _, (_, a_base), (_, b_base) = pair
    project = "p-" + uuid.uuid4().hex[:8]
    assert _write(a_base, project, 1).status_code == 200  # A owns the database
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", b_base.removeprefix("http://"))
    client = firestore.Client(project=project)
    ref = client.collection("c").document("d")
    ref.set({"n": 10, "who": "b"})
    ref.update({"n": firestore.Increment(5)})

    @firestore.transactional
    def bump(tx):
        snapshot = ref.get(transaction=tx)
        tx.update(ref, {"n": snapshot.get("n") + 1})

    for _ in range(3):
        bump(client.transaction())
    batch = client.batch()
    batch.set(client.collection("c").document("e"), {"ok": True})
    batch.commit()
    assert client.collection("c").document("e").get().to_dict() == {"ok": True}
    client.collection("c").document("e").delete()
    got = requests.get(f"{a_base}/v1/projects/{project}/databases/(default)/documents/c/d", timeout=10).json()
    assert got["fields"] == {"n": {"integerValue": "18"}, "who": {"stringValue": "b"}}
    assert requests.get(f"{a_base}/v1/projects/{project}/databases/(default)/documents/c/e", timeout=10).status_code == 404
    status = requests.get(f"{a_base}/emulator/v1/replicas", timeout=10).json()
    owners = [r["id"] for r in status["replicas"] for o in r["owns"] if o.get("project") == project]
    assert owners == ["a"], owners
    client.close()


def test_kill_9_of_the_owner_under_write_load_loses_no_acknowledged_write(trio):
    import threading
    url, replicas = trio
    (a, a_base), (_, b_base), (_, c_base) = replicas
    project = "p-" + uuid.uuid4().hex[:8]
    docs = f"/v1/projects/{project}/databases/(default)/documents"
    assert _write(a_base, project, 0).status_code == 200  # A owns the database
    acknowledged = {b_base: [], c_base: [], a_base: []}
    stop = threading.Event()

    def writer(base):
        session = requests.Session()
        n = 0
        while not stop.is_set():
            doc = f"{base.rsplit(':', 1)[1]}-{n}"
            try:
                r = session.patch(f"{base}{docs}/load/{doc}", json={"fields": {"n": {"integerValue": str(n)}}}, timeout=LEASE + 3)
            except requests.ConnectionError:
                time.sleep(0.05)  # A, once killed
                continue
            if r.status_code == 200:
                acknowledged[base].append(doc)
                n += 1
            else:
                assert r.status_code == 503 and r.json()["error"]["status"] == "UNAVAILABLE", r.text
                time.sleep(0.05)

    threads = [threading.Thread(target=writer, args=(base,)) for base in acknowledged]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    before = sum(len(v) for v in acknowledged.values())
    a.kill()
    a.wait()
    killed = time.monotonic()
    # Writes succeed again once A's lease has run out.
    while len(acknowledged[b_base]) + len(acknowledged[c_base]) <= before + 5:
        assert time.monotonic() - killed < LEASE + 4, "no write succeeded after the owner died"
        time.sleep(0.05)
    time.sleep(1)
    stop.set()
    for thread in threads:
        thread.join(30)
    assert before > 10, f"only {before} writes before the kill"
    everything = [doc for docs_of in acknowledged.values() for doc in docs_of]
    stored = set(subprocess.run(["psql", url, "-Atc", f"SELECT path FROM fg_documents WHERE scope = 'd:{project}/(default)'"],
                                capture_output=True, text=True, check=True).stdout.split())
    missing = [doc for doc in everything if f"load/{doc}" not in stored]
    assert not missing, f"{len(missing)} acknowledged writes are not in the store: {missing[:5]}"
    # B serves them all too, once it has followed the last commits (made on C, say).
    deadline = time.monotonic() + 5
    while True:
        listed = requests.get(f"{b_base}{docs}/load", params={"pageSize": 10000}, timeout=10).json().get("documents", [])
        served = {d["name"].rsplit("/", 1)[1] for d in listed}
        if set(everything) <= served:
            break
        assert time.monotonic() < deadline, f"B does not serve {len(set(everything) - served)} acknowledged writes"
    print(f"  {len(everything)} acknowledged writes ({before} before the kill), all present")


def _listen_events(base, docs, query=None, last_event_id=None, count=1, timeout=10):
    url = f"{base}{docs}:listen" if query is not None else f"{base}{docs}/c/d:listen"
    params = {"query": json.dumps(query)} if query is not None else None
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    stream = SSEStream(url, params=params, headers=headers)
    events = []
    deadline = time.monotonic() + timeout
    while len(events) < count:
        event = stream.next(timeout=max(0.1, deadline - time.monotonic()))
        if event.event == "snapshot":
            events.append(event)
    stream.close()
    return events


def test_a_resume_token_from_one_replica_resumes_on_another(pair):
    url, (_, a_base), (_, b_base) = pair
    project = "p-" + uuid.uuid4().hex[:8]
    docs = f"/v1/projects/{project}/databases/(default)/documents"
    query = {"from": [{"collectionId": "c"}], "orderBy": [{"field": {"fieldPath": "n"}}]}
    for name, n in (("a", 1), ("b", 2), ("d", 3)):
        assert requests.patch(f"{a_base}{docs}/c/{name}", json={"fields": {"n": {"integerValue": str(n)}}}, timeout=10).status_code == 200
    assert requests.get(f"{b_base}{docs}/c/d", timeout=10).status_code == 200  # B follows the database
    first = _listen_events(a_base, docs, query)[0]
    generation, seq = first.id.split(".")
    assert seq == "3", f"on a shared store the token counts the log's commits: {first.id}"
    # Away: one document changes, one is added, one is deleted, all on A.
    assert requests.patch(f"{a_base}{docs}/c/d", json={"fields": {"n": {"integerValue": "0"}}}, timeout=10).status_code == 200
    assert requests.patch(f"{a_base}{docs}/c/e", json={"fields": {"n": {"integerValue": "9"}}}, timeout=10).status_code == 200
    assert requests.delete(f"{a_base}{docs}/c/b", timeout=10).status_code == 200
    deadline = time.monotonic() + 5
    while requests.get(f"{b_base}{docs}/c/b", timeout=10).status_code != 404:
        assert time.monotonic() < deadline, "B never followed A's commits"
        time.sleep(0.02)
    # Resumed on B: only the changes since, under the same token space.
    resumed = _listen_events(b_base, docs, query, last_event_id=first.id)[0]
    body = resumed.json()
    assert "reset" not in body, body
    changes = sorted((c["type"], c["document"]["name"].rsplit("/", 1)[1]) for c in body["changes"])
    assert changes == [("added", "e"), ("modified", "d"), ("removed", "b")], body["changes"]
    assert [d["name"].rsplit("/", 1)[1] for d in body["documents"]] == ["d", "a", "e"]
    assert resumed.id == f"{generation}.6", resumed.id
    # A document listen resumed the other way, B's token on A.
    on_b = _listen_events(b_base, docs)[0]
    assert on_b.id == f"{generation}.6"
    assert requests.patch(f"{a_base}{docs}/c/d", json={"fields": {"n": {"integerValue": "7"}}}, timeout=10).status_code == 200
    back = _listen_events(a_base, docs, last_event_id=on_b.id)[0].json()
    assert "reset" not in back and back["document"]["fields"]["n"] == {"integerValue": "7"}, back
    # A token from before a clear of the database starts over with a reset, on either replica.
    assert requests.delete(f"{a_base}/emulator/v1/projects/{project}/databases/(default)/documents", timeout=10).status_code == 200
    assert requests.patch(f"{a_base}{docs}/c/z", json={"fields": {"n": {"integerValue": "1"}}}, timeout=10).status_code == 200
    deadline = time.monotonic() + 5
    while requests.get(f"{b_base}{docs}/c/z", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "B never saw the write after the clear"
        time.sleep(0.05)
    for base in (a_base, b_base):
        after = _listen_events(base, docs, query, last_event_id=resumed.id)[0]
        assert after.json().get("reset") is True, after.json()
        assert not after.id.startswith(generation + "."), f"a clear starts a new generation: {after.id}"
    assert _listen_events(a_base, docs, query)[0].id == _listen_events(b_base, docs, query)[0].id


def test_an_edge_client_runs_on_one_replica_and_moves_with_its_queue_when_that_one_dies(pair):
    url, (a, a_base), (_, b_base) = pair
    project = "p-" + uuid.uuid4().hex[:8]
    docs = f"/v1/projects/{project}/databases/(default)/documents"
    assert _write(a_base, project, 0).status_code == 200  # A owns the database
    client = "edge-" + uuid.uuid4().hex[:8]
    created = requests.put(f"{a_base}/clients/{client}", json={"project": project, "persistence": "persistent"}, timeout=10)
    assert created.status_code == 200 and "Firegate-Forwarded-To" not in created.headers, created.text
    # Through B, every call reaches the client where it runs: on A.
    on_b = f"{b_base}/clients/{client}"
    offline = requests.post(f"{on_b}:disableNetwork", timeout=10)
    assert offline.status_code == 200 and offline.headers["Firegate-Forwarded-To"] == "a", offline.text
    assert requests.patch(f"{on_b}{docs}/c/x", json={"fields": {"n": {"integerValue": "1"}}}, timeout=10).status_code == 200
    commit = {"writes": [{"transform": {"document": f"projects/{project}/databases/(default)/documents/c/counter",
                                        "fieldTransforms": [{"fieldPath": "k", "increment": {"integerValue": "1"}}]}}]}
    assert requests.post(f"{on_b}{docs}:commit", json=commit, timeout=10).status_code == 200
    pending = requests.get(f"{on_b}/pendingWrites", timeout=10)
    assert pending.headers["Firegate-Forwarded-To"] == "a" and len(pending.json()["writes"]) == 2, pending.text
    # An event stream through B streams from A.
    query = json.dumps({"from": [{"collectionId": "c"}]})
    stream = SSEStream(f"{on_b}{docs}:listen", params={"query": query})
    first = stream.next(timeout=10)
    assert first.event == "snapshot" and first.json()["metadata"]["hasPendingWrites"] is True, first.data
    # A dies. Once its heartbeat is older than a lease, B takes the client over and restores it
    # from the store, its queue intact.
    a.kill()
    a.wait()
    killed = time.monotonic()
    while True:
        r = requests.get(f"{on_b}/pendingWrites", timeout=10)
        if r.status_code == 200:
            break
        assert r.status_code == 503 and time.monotonic() - killed < LEASE + 3, r.text
        time.sleep(0.1)
    moved = time.monotonic() - killed
    assert "Firegate-Forwarded-To" not in r.headers, "B runs the client now"
    # Its device's network switch moved with it: still offline, nothing sent.
    assert len(r.json()["writes"]) == 2, r.text
    assert requests.get(on_b, timeout=10).json()["network"]["online"] is False
    stream.close()
    # Online on B: every queued write lands once (the increment counted once).
    assert requests.post(f"{on_b}:enableNetwork", timeout=10).status_code == 200
    done = requests.post(f"{on_b}:waitForPendingWrites", params={"timeoutMs": 15000}, timeout=30)
    assert done.status_code == 200, done.text
    got = requests.get(f"{b_base}{docs}/c/counter", timeout=10).json()
    assert got["fields"]["k"] == {"integerValue": "1"}, got
    assert requests.get(f"{b_base}{docs}/c/x", timeout=10).json()["fields"]["n"] == {"integerValue": "1"}
    owners = subprocess.run(["psql", url, "-Atc", f"SELECT replica || ' ' || epoch FROM fg_client_owner WHERE client_id = '{client}'"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert owners == "b 2", owners
    status = {r["id"]: r for r in requests.get(f"{b_base}/emulator/v1/replicas", timeout=10).json()["replicas"]}
    assert {"id": client, "epoch": 2} in status["b"]["clients"] and status["a"]["clients"] == [], status
    print(f"  B ran the client {moved:.2f} s after A was killed (lease {LEASE} s)")


def _persistent_client_on_b_of_a_database_a_owns(a_base, b_base):
    """A fresh project whose database A owns, and a persistent edge client of it running on B:
    (project, documents path, client id, the client's URL on B)."""
    project = "p-" + uuid.uuid4().hex[:8]
    docs = f"/v1/projects/{project}/databases/(default)/documents"
    assert _write(a_base, project, 0).status_code == 200
    client = "edge-" + uuid.uuid4().hex[:8]
    on_b = f"{b_base}/clients/{client}"
    assert requests.put(on_b, json={"project": project, "persistence": "persistent"}, timeout=10).status_code == 200
    return project, docs, client, on_b


def test_an_edge_client_on_a_follower_sends_its_writes_to_the_owner(pair):
    _, (_, a_base), (_, b_base) = pair
    project, docs, client, on_b = _persistent_client_on_b_of_a_database_a_owns(a_base, b_base)
    query = json.dumps({"from": [{"collectionId": "c"}], "orderBy": [{"field": {"fieldPath": "__name__"}}]})
    stream = SSEStream(f"{on_b}{docs}:listen", params={"query": query, "includeMetadataChanges": "true"})
    assert stream.next(timeout=10).event == "snapshot"
    commit = {"writes": [{"transform": {"document": f"projects/{project}/databases/(default)/documents/c/counter",
                                        "fieldTransforms": [{"fieldPath": "k", "increment": {"integerValue": "1"}}]}}]}
    for _ in range(3):
        r = requests.post(f"{on_b}{docs}:commit", json=commit, params={"waitFor": "ack"}, timeout=20)
        assert r.status_code == 200 and "Firegate-Forwarded-To" not in r.headers, r.text
    assert requests.get(f"{on_b}/pendingWrites", timeout=10).json()["writes"] == []
    # Committed by A, the owner, three times, once each.
    got = requests.get(f"{a_base}{docs}/c/counter", timeout=10).json()
    assert got["fields"]["k"] == {"integerValue": "3"}, got
    owners = requests.get(f"{a_base}/emulator/v1/replicas", timeout=10).json()
    assert [r["id"] for r in owners["replicas"] for o in r["owns"] if o.get("project") == project] == ["a"]
    # The client's listener ends on the acknowledged, reflected state: no pending writes, k = 3.
    deadline = time.monotonic() + 10
    while True:
        event = stream.next(timeout=max(0.1, deadline - time.monotonic()))
        body = event.json() if event.event == "snapshot" else {}
        docs_now = {d["name"].rsplit("/", 1)[1]: d for d in body.get("documents", [])}
        if body and not body["metadata"]["hasPendingWrites"] and docs_now.get("counter", {}).get("fields", {}).get("k") == {"integerValue": "3"}:
            break
    stream.close()


def test_a_dead_replicas_ondisconnect_operations_run_once_on_another(pair):
    """A WebSocket client on A registers presence; A is killed, so the connection never closes
    there: B runs the operations it had registered (and not the cancelled one), once."""
    from rtdb_socket import RealtimeSocket
    url, (a, a_base), (_, b_base) = pair
    ns = "ns-" + uuid.uuid4().hex[:8]
    sock = RealtimeSocket(a_base, ns)
    assert sock.put("/presence/me", "online")["s"] == "ok"
    assert sock.request("o", {"p": "/presence/me", "d": {"state": "offline", "at": {".sv": "timestamp"}}})["s"] == "ok"
    assert sock.request("om", {"p": "/counts", "d": {"gone": 1}})["s"] == "ok"
    assert sock.request("o", {"p": "/cancelled/x", "d": True})["s"] == "ok"
    assert sock.request("oc", {"p": "/cancelled"})["s"] == "ok"
    deadline = time.monotonic() + 5
    while _count(url, "fg_ondisconnect") != 1:
        assert time.monotonic() < deadline, "the registered operations never reached the store"
        time.sleep(0.05)
    assert requests.get(f"{b_base}/presence/me.json", params={"ns": ns}, timeout=10).json() == "online"
    a.kill()
    a.wait()
    killed = time.monotonic()
    while True:
        got = requests.get(f"{b_base}/presence/me.json", params={"ns": ns}, timeout=10).json()
        if isinstance(got, dict):
            break
        assert got == "online" and time.monotonic() - killed < LEASE * 2 + 3, got
        time.sleep(0.1)
    ran = time.monotonic() - killed
    assert got["state"] == "offline" and got["at"] > 1_700_000_000_000, got
    # The rest run in order after it; the claimed row goes once the last one ran.
    deadline = time.monotonic() + 5
    while requests.get(f"{b_base}/counts.json", params={"ns": ns}, timeout=10).json() != {"gone": 1} or _count(url, "fg_ondisconnect"):
        assert time.monotonic() < deadline, "the other operations never ran, or their row stayed"
        time.sleep(0.05)
    assert requests.get(f"{b_base}/cancelled.json", params={"ns": ns}, timeout=10).json() is None
    print(f"  B ran A's onDisconnect operations {ran:.2f} s after A was killed (lease {LEASE} s)")


def _count(url, table):
    return int(subprocess.run(["psql", url, "-Atc", f"SELECT count(*) FROM {table}"], capture_output=True, text=True, check=True).stdout)


def test_an_edge_clients_ondisconnect_runs_when_its_replica_dies(pair):
    url, (a, a_base), (_, b_base) = pair
    ns = "ns-" + uuid.uuid4().hex[:8]
    on_a = f"{a_base}/clients/app-{uuid.uuid4().hex[:8]}"
    assert requests.put(on_a, json={"namespace": ns}, timeout=10).status_code == 200
    assert requests.put(f"{on_a}/presence/me.json", json="online", timeout=10).status_code == 200
    deadline = time.monotonic() + 5
    while requests.get(f"{b_base}/presence/me.json", params={"ns": ns}, timeout=10).json() != "online":
        assert time.monotonic() < deadline, "the client's write never reached the server"
        time.sleep(0.05)
    registered = requests.post(f"{on_a}/onDisconnect", json={"path": "presence/me", "op": "set", "value": "offline"}, timeout=10)
    assert registered.json()["state"] == "registered", registered.text
    while _count(url, "fg_ondisconnect") != 1:
        assert time.monotonic() < deadline + 5, "the registered operation never reached the store"
        time.sleep(0.05)
    a.kill()
    a.wait()
    killed = time.monotonic()
    while requests.get(f"{b_base}/presence/me.json", params={"ns": ns}, timeout=10).json() != "offline" or _count(url, "fg_ondisconnect"):
        assert time.monotonic() - killed < LEASE * 2 + 3, "B never ran the dead replica's client's onDisconnect, or kept its row"
        time.sleep(0.1)


def test_a_socket_on_a_follower_writes_through_the_owner(pair):
    """A WebSocket connected to a follower (as nginx's hashing may place the SDK): its set,
    update, push with a server value and hash-checked transaction put run at the owner, in order;
    the follower's listeners, the socket's own listen included, see each one, and a stale hash
    gets `datastale` as it would at the owner."""
    from rtdb_socket import RealtimeSocket, sdk_hash
    _, (_, a_base), (_, b_base) = pair
    ns = "ns-" + uuid.uuid4().hex[:8]
    assert requests.put(f"{a_base}/room.json", params={"ns": ns}, json={"n": 1}, timeout=10).status_code == 200  # A owns it
    stream = SSEStream(f"{b_base}/room.json", params={"ns": ns}, headers={"Accept": "text/event-stream"})
    assert stream.next(timeout=10).json() == {"path": "/", "data": {"n": 1}}
    sock = RealtimeSocket(b_base, ns)
    assert sock.listen("/room")["s"] == "ok"
    assert sock.put("/room/n", 2)["s"] == "ok"
    assert sock.request("m", {"p": "/room", "d": {"a": "x", "b/c": True}})["s"] == "ok"
    assert sock.put("/room/at", {".sv": "timestamp"})["s"] == "ok"
    current = requests.get(f"{b_base}/room/n.json", params={"ns": ns}, timeout=10).json()
    assert current == 2, "the follower had applied the owner's write before the socket heard ok"
    assert sock.put("/room/n", 3, h=sdk_hash(2))["s"] == "ok"
    stale = sock.put("/room/n", 4, h=sdk_hash(2))
    assert stale["s"] == "datastale", stale
    sock.close()
    room = requests.get(f"{a_base}/room.json", params={"ns": ns}, timeout=10).json()
    assert room["n"] == 3 and room["a"] == "x" and room["b"] == {"c": True} and room["at"] > 1_700_000_000_000, room
    seen = [stream.next(timeout=10).json() for _ in range(4)]
    assert seen[0] == {"path": "/n", "data": 2}, seen
    assert seen[1] == {"path": "/", "data": {"a": "x", "b/c": True}} or seen[1]["path"] == "/", seen
    assert seen[2]["path"] == "/at" and seen[3] == {"path": "/n", "data": 3}, seen
    stream.close()
    owners = requests.get(f"{a_base}/emulator/v1/replicas", timeout=10).json()
    assert [r["id"] for r in owners["replicas"] for o in r["owns"] if o.get("namespace") == ns] == ["a"], owners


def test_a_forwarded_socket_write_is_judged_by_the_owner_as_the_sockets_own(pair):
    """Rules judge a forwarded write as the caller's: the owner denies an unauthenticated socket
    on the follower and allows the same write once the socket authenticates."""
    from rtdb_socket import RealtimeSocket
    _, (_, a_base), (_, b_base) = pair
    ns = "ns-" + uuid.uuid4().hex[:8]
    rules = {"rules": {".read": True, "notes": {"$uid": {".write": "auth != null && auth.uid === $uid"}}}}
    for base in (a_base, b_base):
        r = requests.put(f"{base}/.settings/rules.json", params={"ns": ns}, json=rules, headers={"Authorization": "Bearer owner"}, timeout=10)
        assert r.status_code == 200, r.text
    assert requests.put(f"{a_base}/notes/seed.json", params={"ns": ns}, json=1, headers={"Authorization": "Bearer owner"},
                        timeout=10).status_code == 200  # A owns it
    sock = RealtimeSocket(b_base, ns)
    denied = sock.put("/notes/ada", "hello")
    assert denied["s"] == "permission_denied", denied
    assert sock.request("auth", {"cred": _jwt("ada")})["s"] == "ok"
    assert sock.put("/notes/ada", "hello")["s"] == "ok"
    sock.close()
    assert requests.get(f"{a_base}/notes/ada.json", params={"ns": ns}, timeout=10).json() == "hello"


def _jwt(uid):
    import base64

    def part(value):
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part({'user_id': uid, 'sub': uid})}."


def test_an_edge_client_on_a_follower_writes_the_tree_through_the_owner(pair):
    """An edge client running on B writes to a namespace A owns: set, update and a transaction
    land at A once each, and the client's queue empties."""
    _, (_, a_base), (_, b_base) = pair
    ns = "ns-" + uuid.uuid4().hex[:8]
    assert requests.put(f"{a_base}/counter.json", params={"ns": ns}, json=0, timeout=10).status_code == 200  # A owns it
    on_b = f"{b_base}/clients/app-{uuid.uuid4().hex[:8]}"
    assert requests.put(on_b, json={"namespace": ns}, timeout=10).status_code == 200
    assert requests.put(f"{on_b}/profile.json", json={"name": "Ada"}, timeout=10).status_code == 200
    assert requests.patch(f"{on_b}/profile.json", json={"city": "London"}, timeout=10).status_code == 200
    for _ in range(3):
        r = requests.post(f"{on_b}/transaction", params={"waitFor": "ack"}, json={"path": "counter", "increment": 1}, timeout=20)
        assert r.status_code == 200 and r.json()["committed"] is True, r.text
    deadline = time.monotonic() + 10
    while requests.get(f"{a_base}/profile.json", params={"ns": ns}, timeout=10).json() != {"name": "Ada", "city": "London"}:
        assert time.monotonic() < deadline, "the client's writes never reached the owner"
        time.sleep(0.05)
    assert requests.get(f"{a_base}/counter.json", params={"ns": ns}, timeout=10).json() == 3
    owners = requests.get(f"{a_base}/emulator/v1/replicas", timeout=10).json()
    assert [r["id"] for r in owners["replicas"] for o in r["owns"] if o.get("namespace") == ns] == ["a"], owners


def test_tabs_of_one_persistence_opened_on_two_replicas_run_on_one(pair):
    """nginx hashes by client id, so two tabs of one web persistence may reach two replicas: the
    second is sent where the first's persistence runs, and they share its cache and its primary
    lease there (one primary, both counted)."""
    from test_edge_tabs import Tab
    _, (_, a_base), (_, b_base) = pair
    project = "p-" + uuid.uuid4().hex[:8]
    shared = "db-" + uuid.uuid4().hex[:8]
    first = Tab(a_base, project, shared)
    second = Tab(b_base, project, shared)
    assert first.opened.status_code == 200 and second.opened.status_code == 200, (first.opened.text, second.opened.text)
    assert first.opened.headers["Firegate-Replica"] == "a" and second.opened.headers.get("Firegate-Forwarded-To") == "a", second.opened.headers
    states = [first.tab(), second.tab()]
    assert [s["activeTabs"] for s in states] == [2, 2], states
    assert sorted(s["primary"] for s in states) == [False, True], states
    status = {r["id"]: r for r in requests.get(f"{a_base}/emulator/v1/replicas", timeout=10).json()["replicas"]}
    running = {c["id"] for c in status["a"]["clients"]}
    assert {first.id, second.id, f"sharedWith/{shared}"} <= running and status["b"]["clients"] == [], status
    # A write through the second tab (on B's URL) is in the shared cache the first reads.
    assert second.set("notes/n1", text="hi").status_code == 200
    got = requests.get(f"{first.data}/notes/n1", timeout=10)
    assert got.status_code == 200 and got.json()["fields"]["text"] == {"stringValue": "hi"}, got.text


def _psql(url, sql):
    return subprocess.run(["psql", url, "-Atc", sql], capture_output=True, text=True, check=True).stdout.strip()


def _as_replica(receipt):
    return {"Firegate-Forwarded-By": "b", "Firegate-Cluster-Secret": SECRET, "Firegate-Queued-Write": receipt}


def test_an_edge_clients_batch_sent_to_the_owner_again_is_answered_and_applied_once(pair):
    """The owner commits an edge client's queued batch with its answer, once: sent again (its
    answer lost, or its replica dead and the queue restored elsewhere) it is answered from what
    was stored; sent by a replica that no longer runs the client, it is not made."""
    url, (_, a_base), (_, b_base) = pair
    project, docs, client, on_b = _persistent_client_on_b_of_a_database_a_owns(a_base, b_base)
    assert requests.post(f"{on_b}:disableNetwork", timeout=10).status_code == 200
    increment = {"writes": [{"transform": {"document": f"projects/{project}/databases/(default)/documents/c/counter",
                                           "fieldTransforms": [{"fieldPath": "k", "increment": {"integerValue": "1"}}]}}]}
    assert requests.post(f"{on_b}{docs}:commit", json=increment, timeout=10).status_code == 200
    deadline = time.monotonic() + 5
    while not (row := _psql(url, f"SELECT batch_id || ' ' || local_write_us FROM fg_edge_mutations WHERE client_id = '{client}'")):
        assert time.monotonic() < deadline, "the queued batch never reached the store"
        time.sleep(0.05)
    batch, stamp = row.split()
    epoch = _psql(url, f"SELECT epoch FROM fg_client_owner WHERE client_id = '{client}'")
    assert epoch == "1"
    # B's send of it, as B makes it, reaches A twice (the first answer lost on the way back).
    commit_on_a = f"{a_base}{docs}:commit"
    receipt = f"batch {batch} {stamp} {epoch} {client}"
    first = requests.post(commit_on_a, json=increment, headers=_as_replica(receipt), timeout=10)
    again = requests.post(commit_on_a, json=increment, headers=_as_replica(receipt), timeout=10)
    assert first.status_code == 200 and again.status_code == 200, (first.text, again.text)
    assert again.json() == first.json(), "answered from the receipt"
    counter = f"{a_base}{docs}/c/counter"
    assert requests.get(counter, timeout=10).json()["fields"]["k"] == {"integerValue": "1"}
    assert _psql(url, f"SELECT count(*) FROM fg_edge_mutations WHERE client_id = '{client}'") == "0", "the commit took it off the queue"
    # A replica that no longer runs the client (an older epoch): refused, nothing written.
    stale = requests.post(commit_on_a, json=increment, headers=_as_replica(f"batch 99 1 0 {client}"), timeout=10)
    assert stale.status_code == 503 and stale.json()["error"]["status"] == "UNAVAILABLE", stale.text
    assert requests.get(counter, timeout=10).json()["fields"]["k"] == {"integerValue": "1"}
    # The header is taken from replicas only, and must be readable.
    outside = requests.post(commit_on_a, json=increment, headers={"Firegate-Queued-Write": receipt}, timeout=10)
    assert outside.status_code == 403 and outside.json()["error"]["status"] == "PERMISSION_DENIED", outside.text
    garbled = requests.post(commit_on_a, json=increment, headers=_as_replica("batch one"), timeout=10)
    assert garbled.status_code == 400 and garbled.json()["error"]["status"] == "INVALID_ARGUMENT", garbled.text
    # The client itself, online, sends the batch it still holds: acknowledged with the stored
    # answer, the increment counted once.
    assert requests.post(f"{on_b}:enableNetwork", timeout=10).status_code == 200
    done = requests.post(f"{on_b}:waitForPendingWrites", params={"timeoutMs": 15000}, timeout=30)
    assert done.status_code == 200, done.text
    assert requests.get(f"{on_b}/pendingWrites", timeout=10).json()["writes"] == []
    assert requests.get(counter, timeout=10).json()["fields"]["k"] == {"integerValue": "1"}
    assert requests.get(f"{on_b}{docs}/c/counter", timeout=10).json()["fields"]["k"] == {"integerValue": "1"}


def test_an_edge_clients_tree_write_sent_to_the_owner_again_is_answered_and_applied_once(pair):
    url, (_, a_base), (_, b_base) = pair
    ns = "ns-" + uuid.uuid4().hex[:8]
    assert requests.put(f"{a_base}/stats.json", params={"ns": ns}, json={"n": 0}, timeout=10).status_code == 200  # A owns it
    client = "app-" + uuid.uuid4().hex[:8]
    on_b = f"{b_base}/clients/{client}"
    assert requests.put(on_b, json={"namespace": ns, "persistence": "persistent"}, timeout=10).status_code == 200
    assert requests.post(f"{on_b}:disableNetwork", timeout=10).status_code == 200
    increment = {"n": {".sv": {"increment": 1}}}
    assert requests.patch(f"{on_b}/stats.json", json=increment, timeout=10).status_code == 200
    deadline = time.monotonic() + 5
    while not (row := _psql(url, f"SELECT write_id || ' ' || convert_from(body, 'UTF8') FROM fg_edge_tree_writes WHERE client_id = '{client}'")):
        assert time.monotonic() < deadline, "the queued write never reached the store"
        time.sleep(0.05)
    write_id, body = row.split(" ", 1)
    stamp = json.loads(body)["stamp"]
    wire = {"namespace": ns, "path": ["stats"], "operation": "update",
            "entries": [{"path": ["n"], "value": {".sv": {"increment": 1}}}], "surface": "edge", "client": client}
    receipt = f"tree {write_id} {stamp} 1 {client}"
    first = requests.post(f"{a_base}/emulator/v1/replicas:treeWrite", json=wire, headers=_as_replica(receipt), timeout=10)
    again = requests.post(f"{a_base}/emulator/v1/replicas:treeWrite", json=wire, headers=_as_replica(receipt), timeout=10)
    assert first.status_code == 200 and again.json() == first.json(), (first.text, again.text)
    assert requests.get(f"{a_base}/stats/n.json", params={"ns": ns}, timeout=10).json() == 1
    assert _psql(url, f"SELECT count(*) FROM fg_edge_tree_writes WHERE client_id = '{client}'") == "0"
    assert requests.post(f"{on_b}:enableNetwork", timeout=10).status_code == 200
    deadline = time.monotonic() + 10
    while requests.get(f"{on_b}/pendingWrites", timeout=10).json()["treeWrites"]:
        assert time.monotonic() < deadline, "the client never heard its write acknowledged"
        time.sleep(0.05)
    assert requests.get(f"{a_base}/stats/n.json", params={"ns": ns}, timeout=10).json() == 1
    assert requests.get(f"{on_b}/stats/n.json", timeout=10).json() == 1


def test_a_replica_that_loads_the_database_later_resumes_a_token_from_before(pair, tmp_path):
    """A replica that starts after the token was given, and the owner restarted, take the commit
    log's window as their history: the token resumes there with only the changes since."""
    url, (a, a_base), _ = pair
    project = "p-" + uuid.uuid4().hex[:8]
    docs = f"/v1/projects/{project}/databases/(default)/documents"
    query = {"from": [{"collectionId": "c"}], "orderBy": [{"field": {"fieldPath": "n"}}]}
    for name, n in (("a", 1), ("b", 2), ("d", 3)):
        assert requests.patch(f"{a_base}{docs}/c/{name}", json={"fields": {"n": {"integerValue": str(n)}}}, timeout=10).status_code == 200
    token = _listen_events(a_base, docs, query)[0].id
    doc_token = _listen_events(a_base, docs)[0].id
    assert requests.patch(f"{a_base}{docs}/c/d", json={"fields": {"n": {"integerValue": "0"}}}, timeout=10).status_code == 200
    assert requests.patch(f"{a_base}{docs}/c/e", json={"fields": {"n": {"integerValue": "9"}}}, timeout=10).status_code == 200
    assert requests.delete(f"{a_base}{docs}/c/b", timeout=10).status_code == 200
    late = _replica(url, "c", tmp_path / "c")
    try:
        stop_server(a)
        restarted = _replica(url, "a", tmp_path / "a-again")
        try:
            for base in (late[1], restarted[1]):
                body = _listen_events(base, docs, query, last_event_id=token)[0].json()
                assert "reset" not in body, body
                changes = sorted((c["type"], c["document"]["name"].rsplit("/", 1)[1]) for c in body["changes"])
                assert changes == [("added", "e"), ("modified", "d"), ("removed", "b")], body["changes"]
                assert [d["name"].rsplit("/", 1)[1] for d in body["documents"]] == ["d", "a", "e"]
                document = _listen_events(base, docs, last_event_id=doc_token)[0].json()
                assert "reset" not in document and document["document"]["fields"]["n"] == {"integerValue": "0"}, document
        finally:
            stop_server(restarted[0])
    finally:
        stop_server(late[0])


def test_registers_used_from_three_replicas_through_a_kill_and_a_pause_stay_linearizable(trio, tmp_path):
    """A Jepsen-style run: workers on every replica read (in read-only transactions), write and
    compare-and-set (transactions) four registers while the owner is killed (-9) and restarted,
    then the next owner is paused past its lease. Every register's history must be linearizable:
    some order of the operations, each within its call and return, explains every answer, and
    operations whose outcome is unknown (a timeout, a 503) took effect once or not at all."""
    import random
    import threading
    from linearizability import check

    url, replicas = trio
    procs = {name: proc for name, (proc, _) in zip("abc", replicas)}
    live = {name: base for name, (_, base) in zip("abc", replicas)}
    project = "p-" + uuid.uuid4().hex[:8]
    docs = f"/v1/projects/{project}/databases/(default)/documents"
    keys = [f"r{i}" for i in range(4)]
    for key in keys:  # A owns the database
        assert requests.patch(f"{live['a']}{docs}/reg/{key}", json={"fields": {"v": {"integerValue": "0"}}}, timeout=10).status_code == 200
    history = {key: [] for key in keys}
    recorded = threading.Lock()
    faults = {}
    stop = threading.Event()
    timeout = LEASE + 3

    def name(key):
        return f"projects/{project}/databases/(default)/documents/reg/{key}"

    def value_of(items):
        found = [item["found"] for item in items if "found" in item]
        return int(found[0]["fields"]["v"]["integerValue"]) if found else None

    def worker(replica, w):
        session = requests.Session()
        rng = random.Random(w)
        seen = {key: 0 for key in keys}
        n = 0
        while not stop.is_set():
            base, key = live[replica], rng.choice(keys)
            f = rng.choices(["read", "write", "cas"], [4, 3, 3])[0]
            n += 1
            new = w * 1_000_000 + n
            op = {"f": f, "call": time.monotonic(), "ok": True, "value": None, "result": None}
            try:
                if f == "read":
                    r = session.post(f"{base}{docs}:batchGet", json={"documents": [name(key)], "newTransaction": {"readOnly": {}}}, timeout=timeout)
                    if r.status_code != 200:
                        raise LookupError  # a read that failed observed nothing
                    op["result"] = seen[key] = value_of(r.json())
                elif f == "write":
                    op["value"] = new
                    r = session.patch(f"{base}{docs}/reg/{key}", json={"fields": {"v": {"integerValue": str(new)}}}, timeout=timeout)
                    if r.status_code >= 500:
                        op["ok"] = None
                    elif r.status_code != 200:
                        raise LookupError
                    else:
                        seen[key] = new
                else:
                    op["value"] = (seen[key], new)
                    begun = session.post(f"{base}{docs}:beginTransaction", json={}, timeout=timeout)
                    if begun.status_code != 200:
                        raise LookupError
                    tx = begun.json()["transaction"]
                    r = session.post(f"{base}{docs}:batchGet", json={"documents": [name(key)], "transaction": tx}, timeout=timeout)
                    if r.status_code != 200:
                        raise LookupError
                    current = seen[key] = value_of(r.json())
                    if current != op["value"][0]:
                        session.post(f"{base}{docs}:rollback", json={"transaction": tx}, timeout=timeout)
                        op["result"] = False
                    else:
                        r = session.post(f"{base}{docs}:commit", json={"writes": [{"update": {"name": name(key), "fields": {"v": {"integerValue": str(new)}}}}],
                                                                        "transaction": tx}, timeout=timeout)
                        if r.status_code >= 500:
                            op["ok"] = None
                        elif r.status_code != 200:
                            raise LookupError  # aborted (contention) or a transaction the new owner never began: not made
                        else:
                            op["result"], seen[key] = True, new
            except LookupError:
                time.sleep(0.05)
                continue
            except requests.RequestException:
                if f == "read":
                    time.sleep(0.2)
                    continue
                op["ok"] = None  # sent, perhaps made: unknown
                time.sleep(0.2)
            op["ret"] = time.monotonic()
            with recorded:
                history[key].append(op)

    threads = [threading.Thread(target=worker, args=(replica, i * 2 + j + 1)) for i, replica in enumerate("abc") for j in range(2)]
    for thread in threads:
        thread.start()
    restarted = None
    paused = None
    try:
        time.sleep(2.5)
        procs["a"].kill()
        procs["a"].wait()
        faults["kill"] = time.monotonic()
        time.sleep(0.5)
        restarted = _replica(url, "a", tmp_path / "a-again")
        procs["a"], live["a"] = restarted
        time.sleep(LEASE + 2.5)  # the database has a new owner by now
        owner = _epoch(url, f"d:{project}/(default)").split()[0]
        paused = procs[owner]
        paused.send_signal(signal.SIGSTOP)
        faults["pause"] = time.monotonic()
        time.sleep(LEASE + 1)
        paused.send_signal(signal.SIGCONT)
        time.sleep(2.5)
    finally:
        if paused:
            paused.send_signal(signal.SIGCONT)
        stop.set()
        for thread in threads:
            thread.join(30)
        if restarted:
            stop_server(restarted[0])
    ops = [op for key in keys for op in history[key]]
    certain = [op for op in ops if op["ok"]]
    swapped = [op for op in certain if op["f"] == "cas" and op["result"]]
    assert len(certain) > 150 and len(swapped) > 5, f"too little happened: {len(certain)} operations, {len(swapped)} swaps"
    for fault, at in faults.items():
        assert any(op["call"] > at + LEASE + 1 for op in certain if op["f"] != "read"), f"no write succeeded after the {fault}"
    for key in keys:
        verdict = check(history[key], 0)
        if verdict is not None:
            # The history, to replay the check on (linearizability.check) and read the answers.
            kept = tmp_path / f"history-{key}.json"
            kept.write_text(json.dumps({"initial": 0, "faults": faults, "history": history[key]}))
        assert verdict is None, f"register {key}: {verdict} (history: {kept})"
    unknown = sum(1 for op in ops if op["ok"] is None)
    print(f"  {len(certain)} operations ({len(swapped)} swaps, {unknown} unknown) over {len(keys)} registers: linearizable")


def test_each_replicas_metrics_say_what_it_owns_follows_and_runs(pair):
    _, (_, a_base), (_, b_base) = pair
    project = "p-" + uuid.uuid4().hex[:8]
    assert _write(a_base, project, 1).status_code == 200  # A owns the database
    assert requests.get(f"{b_base}/v1/projects/{project}/databases/(default)/documents/c/d", timeout=10).status_code == 200  # B follows it
    client = "edge-" + uuid.uuid4().hex[:8]
    assert requests.put(f"{b_base}/clients/{client}", json={"project": project}, timeout=10).status_code == 200

    def samples(base):
        text = requests.get(f"{base}/metrics", timeout=10).text
        return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                if line.startswith("firegate_replica_")}

    on_a, on_b = samples(a_base), samples(b_base)
    owner = 'firegate_replica_scopes{kind="database",role="owner"}'
    follower = 'firegate_replica_scopes{kind="database",role="follower"}'
    assert on_a[owner] >= 1 and on_b[owner] == 0, (on_a, on_b)
    assert on_b[follower] >= 1, on_b
    assert on_b["firegate_replica_edge_clients"] == 1 and on_a["firegate_replica_edge_clients"] == 0, (on_a, on_b)
