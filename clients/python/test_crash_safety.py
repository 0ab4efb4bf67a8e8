"""Crash safety: a mixed write load, `kill -9` at a random moment, a restart on the same data
directory, and checks that nothing acknowledged was lost and nothing was half-applied.

Each iteration runs, on a fresh project and tree namespace of one long-lived data directory:

* document batch writers — `:commit` batches that set four shared documents, create one fresh
  document and increment a counter, every write carrying the batch's marker, so a half-applied
  batch shows (shared documents with different markers, a fresh document without its increment);
* a transaction writer — `:beginTransaction`, a read inside it, `:commit` of a counter and a log
  document;
* tree writers — PUT, multi-path PATCH, DELETE and POST (push) under one location each, modelled
  in Python so the whole location can be compared after the restart;
* persistent edge clients — going offline and online at random (`:disableNetwork`,
  `:enableNetwork`), writing through `/clients/{id}/v1/…` (`:commit` batches with an
  `increment`, single PATCHes; `?waitFor=ack` sometimes while online), recording every write the
  client accepted (200, `Firegate-Write-State: pending|acknowledged`, `Firegate-Write-Id`);
* a backend document listener on one shared document, recording the last state it saw.

Then the server is killed (SIGKILL) and started again on the same directory, and:

* every write answered 200 is there with its value; the one request per worker that was in flight
  at the kill is either fully there or fully absent; no failed write is there;
* each persistent client's `GET /clients/{id}/pendingWrites` (its first call after the restart)
  is exactly a suffix of the writes it accepted (those before it acknowledged — before the kill,
  or by the restored client that has just come back online), in order and with the same content,
  plus at most the write that was in flight; `?waitFor=ack` writes are never in it; after
  `:enableNetwork` and `:waitForPendingWrites` every accepted write is on the backend exactly once
  (its `increment` counted once);
* listeners: a document listen opened after the restart starts with the acknowledged state, one
  resumed with a `Last-Event-ID` of the killed server gets a `reset` snapshot of that state that
  never goes behind what the old listener saw (on PostgreSQL, where tokens are log positions that
  survive a restart, the reset only when the restarted server's memory does not reach back to it,
  and no first event when nothing changed since), and an edge query listener converges on the
  backend's documents;
* the verified state of every earlier iteration is still intact.

`test_a_queue_being_flushed_survives_kill_9_exactly_once` is the focused reproduction of the
edge part: 150 queued commits with an increment each, the client back online, kill -9 while the
queue is being sent, and the counter must be exactly 150 after the restart.

Every check of every iteration runs even after one failed; the failures are reported together.

Iterations: `FIREGATE_CRASH_ITERATIONS` (default 5, CI-sized: about 15 s with a debug build;
**the full run is 20 or more**, e.g. `FIREGATE_CRASH_ITERATIONS=20`, about 75 s for 25). The random seed is fixed
(`FIREGATE_CRASH_SEED`, default 20261123) and printed; thread interleavings still vary from run
to run. Every wait is bounded. Needs a server of its own (skipped with `FIREGATE_URL`).
"""
import json
import os
import random
import threading
import time
import uuid

import pytest
import requests

from conftest import postgres_store, start_server, stop_server
from docs_support import enc, fields, t_increment, w_transform, w_update
from sse import SSEClosed, SSEStream, SSETimeout

ITERATIONS = int(os.environ.get("FIREGATE_CRASH_ITERATIONS", "5"))
SEED = int(os.environ.get("FIREGATE_CRASH_SEED", "20261123"))
DB = "(default)"
TIMEOUT = (5, 30)           # (connect, read) for every request of the load
NETWORK_ERRORS = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)


def _docs_root(project):
    return f"projects/{project}/databases/{DB}/documents"


def _field_values(doc):
    """Typed fields of a Document JSON -> plain Python (the few types this load writes)."""
    out = {}
    for k, v in (doc.get("fields") or {}).items():
        if "integerValue" in v:
            out[k] = int(v["integerValue"])
        elif "stringValue" in v:
            out[k] = v["stringValue"]
        else:
            out[k] = v
    return out


def _collection(base, project, collection):
    """{relative path: plain fields} of every document of a top-level collection."""
    r = requests.post(f"{base}/v1/{_docs_root(project)}:runQuery",
                      json={"structuredQuery": {"from": [{"collectionId": collection}]}}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    prefix = _docs_root(project) + "/"
    return {e["document"]["name"][len(prefix):]: _field_values(e["document"]) for e in r.json() if "document" in e}


def _get_doc(base, project, path):
    r = requests.get(f"{base}/v1/{_docs_root(project)}/{path}", timeout=TIMEOUT)
    assert r.status_code in (200, 404), r.text
    return r.json() if r.status_code == 200 else None


# ------------------------------------------------------------------------------------------
# Workers: each runs on its own thread and records what the server acknowledged
# ------------------------------------------------------------------------------------------

class Worker(threading.Thread):
    """Loops `step()` until stopped or until the server goes away. `inflight` is the one write
    whose outcome is unknown (sent, no answer); `problems` are answers that should not happen
    (5xx, unexpected 4xx) — each is a server bug."""

    def __init__(self, name, base, project, namespace, seed, stop):
        super().__init__(name=name, daemon=True)
        self.base, self.project, self.namespace = base, project, namespace
        self.rng = random.Random(seed)
        self.stop_event = stop
        self.http = requests.Session()
        self.inflight = None
        self.problems = []
        self.ended_by = None
        self.steps = 0

    def run(self):
        try:
            self.setup()
            while not self.stop_event.is_set():
                self.step()
                self.steps += 1
        except NETWORK_ERRORS as e:
            self.ended_by = f"network: {type(e).__name__}"
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.problems.append(f"{self.name}: worker crashed: {e!r}")
        finally:
            self.http.close()

    def setup(self):
        pass

    def problem(self, what, r):
        self.problems.append(f"{self.name}: {what} -> {r.status_code} {r.text[:300]}")

    @property
    def root(self):
        return _docs_root(self.project)

    @property
    def docs(self):
        return f"{self.base}/v1/{self.root}"


class BatchWriter(Worker):
    """`:commit` of 6 writes: shared/{w}-{0..3} and fresh/{w}-{n} with marker n, counters/{w} += 1."""

    SHARED = 4

    def __init__(self, *a, wid):
        super().__init__(*a)
        self.wid = wid
        self.acked, self.failed = [], []
        self.markers = {}
        self.n = 0

    def writes(self, n):
        marker = {"n": n, "marker": f"{self.wid}:{n}:{uuid.uuid4().hex[:6]}"}
        self.markers[n] = marker["marker"]
        ws = [w_update(f"{self.root}/shared/{self.wid}-{j}", {**marker, "j": j}) for j in range(self.SHARED)]
        ws.append(w_update(f"{self.root}/fresh/{self.wid}-{n}", marker))
        ws.append(w_transform(f"{self.root}/counters/{self.wid}", [t_increment("count", 1)]))
        self.rng.shuffle(ws)
        return ws

    def step(self):
        n = self.n = self.n + 1
        body = {"writes": self.writes(n)}
        self.inflight = n
        r = self.http.post(f"{self.docs}:commit", json=body, timeout=TIMEOUT)
        self.inflight = None
        if r.status_code == 200:
            self.acked.append(n)
        else:
            self.failed.append(n)
            self.problem(f"commit {n}", r)

    def verify(self, base):
        fresh = {int(p.split("-")[-1]): f for p, f in _collection(base, self.project, "fresh").items()
                 if p.startswith(f"fresh/{self.wid}-")}
        for n in self.acked:
            assert n in fresh, f"{self.wid}: acknowledged commit {n} lost (fresh/{self.wid}-{n} missing)"
            assert fresh[n] == {"n": n, "marker": self.markers[n]}, (n, fresh[n])
        u = self.inflight
        applied_u = u is not None and u in fresh
        stray = set(fresh) - set(self.acked) - ({u} if applied_u else set())
        assert not stray, f"{self.wid}: commits that failed or were never sent are there: {sorted(stray)}"
        counter = _get_doc(base, self.project, f"counters/{self.wid}")
        expected = len(self.acked) + (1 if applied_u else 0)
        got = _field_values(counter)["count"] if counter else 0
        assert got == expected, (f"{self.wid}: counter {got}, expected {expected} "
                                 f"({len(self.acked)} acknowledged, in-flight {u} applied={applied_u}): "
                                 "a batch was half-applied or applied twice")
        last = u if applied_u else (self.acked[-1] if self.acked else None)
        for j in range(self.SHARED):
            doc = _get_doc(base, self.project, f"shared/{self.wid}-{j}")
            if last is None:
                assert doc is None, doc
            else:
                assert doc is not None, f"{self.wid}: shared/{self.wid}-{j} missing after commit {last}"
                assert _field_values(doc) == {"n": last, "marker": self.markers[last], "j": j}, \
                    f"{self.wid}: half-applied batch: shared/{self.wid}-{j} is {_field_values(doc)}, expected batch {last}"
        return last


class TxWriter(Worker):
    """beginTransaction, GET tx/{w} in it, commit tx/{w} = v+1 and txlog/{w}-{n}."""

    def __init__(self, *a, wid):
        super().__init__(*a)
        self.wid = wid
        self.acked, self.aborted = [], []
        self.n = 0

    def step(self):
        r = self.http.post(f"{self.docs}:beginTransaction", json={}, timeout=TIMEOUT)
        if r.status_code != 200:
            return self.problem("beginTransaction", r)
        tx = r.json()["transaction"]
        r = self.http.get(f"{self.docs}/tx/{self.wid}", params={"transaction": tx}, timeout=TIMEOUT)
        if r.status_code not in (200, 404):
            return self.problem("get in transaction", r)
        v = _field_values(r.json())["v"] if r.status_code == 200 else 0
        n = self.n = self.n + 1
        body = {"transaction": tx, "writes": [
            w_update(f"{self.root}/tx/{self.wid}", {"v": v + 1, "n": n}),
            w_update(f"{self.root}/txlog/{self.wid}-{n}", {"v": v + 1}),
        ]}
        self.inflight = n
        r = self.http.post(f"{self.docs}:commit", json=body, timeout=TIMEOUT)
        self.inflight = None
        if r.status_code == 200:
            self.acked.append(n)
        elif r.status_code == 409:  # ABORTED: nothing applied (no other writer, so unexpected)
            self.aborted.append(n)
            self.problem(f"transaction commit {n} aborted", r)
        else:
            self.aborted.append(n)
            self.problem(f"transaction commit {n}", r)

    def verify(self, base):
        log = {int(p.split("-")[-1]): f for p, f in _collection(base, self.project, "txlog").items()
               if p.startswith(f"txlog/{self.wid}-")}
        for i, n in enumerate(self.acked):
            assert log.get(n) == {"v": i + 1}, f"{self.wid}: acknowledged transaction {n} lost or wrong: {log.get(n)}"
        u = self.inflight
        applied_u = u is not None and u in log
        stray = set(log) - set(self.acked) - ({u} if applied_u else set())
        assert not stray, f"{self.wid}: failed transactions are there: {sorted(stray)}"
        total = len(self.acked) + (1 if applied_u else 0)
        doc = _get_doc(base, self.project, f"tx/{self.wid}")
        if total == 0:
            assert doc is None, doc
        else:
            assert doc is not None and _field_values(doc)["v"] == total, \
                f"{self.wid}: tx/{self.wid} is {doc and _field_values(doc)}, expected v={total}: half-applied transaction"
            if applied_u:
                assert log[u] == {"v": total}


class TreeWriter(Worker):
    """PUT k{n}, PATCH {k{n}/n, pair/a, pair/b}, DELETE k{m}, POST log under /crash/{w}."""

    def __init__(self, *a, wid):
        super().__init__(*a)
        self.wid = wid
        self.model = {}
        self.n = 0
        self.inflight_op = None
        self.failed = []

    def url(self, path):
        return f"{self.base}/crash/{self.wid}{path}.json"

    @staticmethod
    def apply(model, op):
        kind = op[0]
        m = json.loads(json.dumps(model))
        if kind == "put":
            _, key, value = op
            m[key] = value
        elif kind == "patch":
            _, n = op
            k = m.get(f"k{n}")
            m[f"k{n}"] = {**(k if isinstance(k, dict) else {}), "n": n}
            m["pair"] = {"a": n, "b": n}
        elif kind == "delete":
            m.pop(op[1], None)
        elif kind == "push":
            _, name, value = op
            m.setdefault("log", {})[name] = value
        return m

    def step(self):
        n = self.n = self.n + 1
        roll = self.rng.random()
        params = {"ns": self.namespace}
        if roll < 0.45:
            value = {"n": n, "s": "x" * self.rng.randrange(0, 2000)}
            op = ("put", f"k{n}", value)
            self.inflight = op
            r = self.http.put(self.url(f"/k{n}"), params=params, data=json.dumps(value), timeout=TIMEOUT)
        elif roll < 0.75:
            op = ("patch", n)
            self.inflight = op
            r = self.http.patch(self.url(""), params=params, timeout=TIMEOUT,
                                data=json.dumps({f"k{n}/n": n, "pair/a": n, "pair/b": n}))
        elif roll < 0.88:
            keys = [k for k in self.model if k.startswith("k")]
            if not keys:
                return
            key = self.rng.choice(sorted(keys))
            op = ("delete", key)
            self.inflight = op
            r = self.http.delete(self.url(f"/{key}"), params=params, timeout=TIMEOUT)
        else:
            op = ("push", None, n)
            self.inflight = op
            r = self.http.post(self.url("/log"), params=params, data=str(n), timeout=TIMEOUT)
            if r.status_code == 200:
                op = ("push", r.json()["name"], n)
        self.inflight = None
        if r.status_code == 200:
            self.model = self.apply(self.model, op)
        else:
            self.failed.append(op)
            self.problem(f"tree {op[0]} {n}", r)

    def verify(self, base):
        r = requests.get(f"{base}/crash/{self.wid}.json", params={"ns": self.namespace}, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        actual = r.json() or {}
        op = self.inflight
        if op is not None and op[0] == "push":
            # The push id of an unanswered POST is unknown: at most one extra log entry, value n.
            known = set((self.model.get("log") or {}))
            extra = {k: v for k, v in (actual.get("log") or {}).items() if k not in known}
            assert not extra or (len(extra) == 1 and list(extra.values()) == [op[2]]), \
                f"{self.wid}: unexpected log entries {extra}"
            if extra:
                op = ("push", next(iter(extra)), op[2])
            else:
                op = None
        candidates = [self.model] + ([self.apply(self.model, op)] if op is not None else [])
        assert actual in candidates, (
            f"{self.wid}: tree after restart is neither the acknowledged state nor that plus the in-flight "
            f"{op}:\nactual   {json.dumps(actual, sort_keys=True)[:1500]}\n"
            f"expected {json.dumps(self.model, sort_keys=True)[:1500]}")
        return actual


class EdgeWriter(Worker):
    """A persistent edge client writing through /clients/{id}/v1/… while its network flips."""

    def __init__(self, *a, wid):
        super().__init__(*a)
        self.wid = wid
        self.cid = f"crash-{wid}-{uuid.uuid4().hex[:8]}"
        self.client = f"{self.base}/clients/{self.cid}"
        self.accepted = []      # [{"id", "writes", "n", "kind"}] in order
        self.known_acked = set()
        self.online = True
        self.n = 0
        self.queue_after_restart = None
        self.netlog = []        # (after accepted write count, online)

    @property
    def data(self):
        return f"{self.client}/v1/{self.root}"

    def setup(self):
        r = self.http.put(self.client, json={"project": self.project, "persistence": "persistent"}, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        if self.rng.random() < 0.6:
            self.set_online(False)

    def set_online(self, online):
        r = self.http.post(f"{self.client}:{'enableNetwork' if online else 'disableNetwork'}", timeout=TIMEOUT)
        if r.status_code != 200:
            return self.problem("network switch", r)
        self.online = online
        self.netlog.append((len(self.accepted), online))

    def step(self):
        if self.rng.random() < 0.12:
            self.set_online(not self.online)
            return
        n = self.n = self.n + 1
        doc = {"n": n, "c": self.cid}
        name = f"{self.root}/edge/{self.cid}-{n}"
        params = {}
        if self.online and self.rng.random() < 0.3:
            params["waitFor"] = "ack"
        if self.rng.random() < 0.7:
            kind = "commit"
            # count += 1 and sum += n: a write applied twice shows, and which one it was.
            writes = [w_update(name, doc), w_transform(f"{self.root}/edgectr/{self.cid}",
                                                       [t_increment("count", 1), t_increment("sum", n)])]
            self.inflight = {"n": n, "kind": kind, "writes": writes}
            r = self.http.post(f"{self.data}:commit", params=params, json={"writes": writes}, timeout=TIMEOUT)
        else:
            kind = "patch"
            writes = [{"update": {"name": name, "fields": fields(doc)}}]
            self.inflight = {"n": n, "kind": kind, "writes": writes}
            r = self.http.patch(f"{self.data}/edge/{self.cid}-{n}", params=params,
                                json={"fields": fields(doc)}, timeout=TIMEOUT)
        self.inflight = None
        state = r.headers.get("Firegate-Write-State")
        if r.status_code == 200 and state in ("pending", "acknowledged") and r.headers.get("Firegate-Write-Id"):
            wid = int(r.headers["Firegate-Write-Id"])
            self.accepted.append({"id": wid, "writes": writes, "n": n, "kind": kind})
            if state == "acknowledged":
                self.known_acked.add(wid)
            elif params:
                self.problems.append(f"{self.name}: waitFor=ack answered 200 with state {state}")
        else:
            self.problem(f"edge {kind} {n} (state {state})", r)

    # -- after the restart -------------------------------------------------------------------
    def check_queue(self, base):
        """The first call to the client after the restart: its queue is a suffix of what it
        accepted (plus at most the write in flight at the kill)."""
        r = requests.get(f"{base}/clients/{self.cid}/pendingWrites", timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        queue = r.json()["writes"]
        self.queue_after_restart = [int(w["id"]) for w in queue]
        assert all(w["state"] == "pending" for w in queue), queue
        ids = [int(w["id"]) for w in queue]
        assert ids == sorted(ids) and len(set(ids)) == len(ids), ids
        by_id = {a["id"]: a for a in self.accepted}
        acc_ids = [a["id"] for a in self.accepted]
        tail = [w for w in queue if int(w["id"]) in by_id]
        extra = [w for w in queue if int(w["id"]) not in by_id]
        acked_in_queue = self.known_acked & set(ids)
        assert not acked_in_queue, f"{self.cid}: writes acknowledged before the kill are queued again: {acked_in_queue}"
        k = len(acc_ids) - len(tail)
        assert [int(w["id"]) for w in tail] == acc_ids[k:], (
            f"{self.cid}: the queue after the restart is not the accepted writes minus the acknowledged ones: "
            f"queue ids {ids}, accepted ids {acc_ids}")
        for w in tail:
            assert w["writes"] == by_id[int(w["id"])]["writes"], (w, by_id[int(w["id"])])
        if extra:
            assert len(extra) == 1 and self.inflight is not None and extra[0] is queue[-1], \
                f"{self.cid}: writes it never accepted are queued: {extra}"
            assert extra[0]["writes"] == self.inflight["writes"], (extra, self.inflight)
            assert not acc_ids or int(extra[0]["id"]) > acc_ids[-1], (extra, acc_ids)
        # Every queued write shows in the client's local view (a write holds its document).
        for w in tail[-3:]:
            n = by_id[int(w["id"])]["n"]
            r = requests.get(f"{base}/clients/{self.cid}/v1/{self.root}/edge/{self.cid}-{n}",
                             params={"source": "cache"}, timeout=TIMEOUT)
            assert r.status_code == 200, f"{self.cid}: queued write {w['id']} is not in the local view: {r.text}"
            assert _field_values(r.json()) == {"n": n, "c": self.cid}
        return queue

    def check_known_acked_on_backend(self, base):
        edge = _collection(base, self.project, "edge")
        for a in self.accepted:
            if a["id"] in self.known_acked:
                assert edge.get(f"edge/{self.cid}-{a['n']}") == {"n": a["n"], "c": self.cid}, \
                    f"{self.cid}: write {a['id']} acknowledged (waitFor=ack) before the kill is not on the backend"

    def flush_and_check(self, base):
        client = f"{base}/clients/{self.cid}"
        r = requests.post(f"{client}:enableNetwork", timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        r = requests.post(f"{client}:waitForPendingWrites", params={"timeoutMs": 20000}, timeout=(5, 40))
        assert r.status_code == 200, f"{self.cid}: queued writes did not reach the backend: {r.status_code} {r.text}"
        r = requests.get(f"{client}/pendingWrites", timeout=TIMEOUT)
        assert r.json()["writes"] == [], r.text
        edge = {p: f for p, f in _collection(base, self.project, "edge").items() if p.startswith(f"edge/{self.cid}-")}
        present = {int(p.split("-")[-1]) for p in edge}
        accepted_n = {a["n"] for a in self.accepted}
        for a in self.accepted:
            assert edge.get(f"edge/{self.cid}-{a['n']}") == {"n": a["n"], "c": self.cid}, \
                f"{self.cid}: accepted write {a['id']} (n={a['n']}) never reached the backend"
        u = self.inflight
        applied_u = u is not None and u["n"] in present
        assert present - accepted_n <= ({u["n"]} if applied_u else set()), \
            f"{self.cid}: writes it never accepted reached the backend: {sorted(present - accepted_n)}"
        commits = sum(1 for a in self.accepted if a["kind"] == "commit") + (1 if applied_u and u["kind"] == "commit" else 0)
        ctr = _field_values(_get_doc(base, self.project, f"edgectr/{self.cid}") or {})
        got, total = ctr.get("count", 0), ctr.get("sum", 0)
        expected_sum = sum(a["n"] for a in self.accepted if a["kind"] == "commit") + \
            (u["n"] if applied_u and u["kind"] == "commit" else 0)
        if (got, total) != (commits, expected_sum):
            extra = total - expected_sum
            twice = [a for a in self.accepted if a["kind"] == "commit" and a["n"] == extra]
            if not twice and u is not None and u["kind"] == "commit" and u["n"] == extra and applied_u:
                twice = [{"id": "in flight at the kill", "n": u["n"]}]
            queue = self.queue_after_restart or []
            if twice and extra > 0:
                wid = twice[0]["id"]
                where = ("the head of" if queue[:1] == [wid] else "in" if wid in queue else
                         "already sent again before the first read of")
                detail = (f"the extra increment is write n={extra} (id {wid}), {where} the queue of the restored "
                          f"client ({queue[:5]}{'…' if len(queue) > 5 else ''}): the backend had committed it before "
                          "the kill, but the client's persisted queue still held it, so it was sent again")
            else:
                detail = f"sum off by {extra}"
            raise AssertionError(
                f"{self.cid}: {got} increments on edgectr/{self.cid} for {commits} accepted commits "
                f"(sum of n {total}, expected {expected_sum}): {detail}. Writes acknowledged by waitFor=ack: "
                f"{sorted(self.known_acked)}; in flight at the kill: {u and (u['n'], u['kind'])} (applied {applied_u}); "
                f"network switches (after k accepted writes, online): {self.netlog}")
        return present

    def check_listener(self, base, present):
        """An edge query listener opened after the restart converges on the backend's documents."""
        q = json.dumps({"from": [{"collectionId": "edge"}],
                        "where": {"fieldFilter": {"field": {"fieldPath": "c"}, "op": "EQUAL", "value": enc(self.cid)}}})
        url = f"{base}/clients/{self.cid}/v1/{self.root}:listen"
        with SSEStream(url, params={"query": q, "includeMetadataChanges": "true"}) as s:
            assert s.ok, s.body
            _, ev = s.read_until(lambda e: e.event == "snapshot" and e.json()["metadata"] ==
                                 {"fromCache": False, "hasPendingWrites": False}, timeout=15)
            names = {int(d["name"].rsplit("-", 1)[-1]) for d in ev.json()["documents"]}
            assert names == present, f"{self.cid}: edge listener shows {sorted(names)}, backend has {sorted(present)}"


class DocListener(threading.Thread):
    """A backend listen on one document during the load: remembers the last event it saw."""

    def __init__(self, base, project, path):
        super().__init__(name="listener", daemon=True)
        self.url = f"{base}/v1/{_docs_root(project)}/{path}:listen"
        self.last = None     # (id, plain fields or None)
        self.error = None
        self.stream = None

    def run(self):
        try:
            self.stream = SSEStream(self.url)
            if not self.stream.ok:
                self.error = f"listen answered {self.stream.status_code} {self.stream.body}"
                return
            while True:
                ev = self.stream.next(timeout=60)
                if ev.event == "snapshot":
                    body = ev.json()
                    self.last = (ev.id, _field_values(body["document"]) if body.get("exists") else None)
        except (SSEClosed, SSETimeout) + NETWORK_ERRORS:
            pass
        except Exception as e:  # noqa: BLE001
            self.error = repr(e)
        finally:
            if self.stream is not None:
                self.stream.close()


# ------------------------------------------------------------------------------------------
# The runner
# ------------------------------------------------------------------------------------------

def _snapshot(base, project, namespace):
    """Everything an iteration left, for re-checking after later kills."""
    docs = {}
    for coll in ("shared", "fresh", "counters", "tx", "txlog", "edge", "edgectr"):
        docs.update(_collection(base, project, coll))
    tree = requests.get(f"{base}/.json", params={"ns": namespace}, timeout=TIMEOUT).json()
    return docs, tree


class Iteration:
    def __init__(self, index, rng):
        self.index = index
        self.project = f"crash-{index}-{uuid.uuid4().hex[:8]}"
        self.namespace = f"crashns-{index}-{uuid.uuid4().hex[:8]}"
        self.rng = rng
        self.snapshot = None

    def start_load(self, base):
        self.stop = threading.Event()
        seed = lambda: self.rng.randrange(1 << 30)  # noqa: E731
        common = lambda name: (name, base, self.project, self.namespace, seed(), self.stop)  # noqa: E731
        self.batch = [BatchWriter(*common(f"batch{i}"), wid=f"b{i}") for i in range(2)]
        self.tx = [TxWriter(*common("tx0"), wid="t0")]
        self.tree = [TreeWriter(*common(f"tree{i}"), wid=f"r{i}") for i in range(2)]
        self.edge = [EdgeWriter(*common(f"edge{i}"), wid=f"e{i}") for i in range(2)]
        self.workers = self.batch + self.tx + self.tree + self.edge
        self.listener = DocListener(base, self.project, "shared/b0-0")
        self.listener.start()
        for w in self.workers:
            w.start()

    def stop_load(self):
        self.stop.set()
        for w in self.workers:
            w.join(timeout=40)
            assert not w.is_alive(), f"{w.name} did not stop: a request hung after the kill"
        if self.listener.stream is not None:
            self.listener.stream.close()
        self.listener.join(timeout=10)
        assert not self.listener.is_alive(), "the listener did not stop"

    def problems(self):
        out = [p for w in self.workers for p in w.problems]
        if self.listener.error:
            out.append(f"listener: {self.listener.error}")
        return out

    def verify(self, base):
        """Runs every check; returns the failures (each check runs even when an earlier one
        failed, so one run reports everything)."""
        failures = []

        def check(label, fn, *args):
            try:
                return fn(*args)
            except AssertionError as e:
                failures.append(f"{label}: {e}")
            except NETWORK_ERRORS + (SSEClosed, SSETimeout) as e:
                failures.append(f"{label}: {e!r}")
            return None

        # 1. Each persistent client's queue — first, before anything touches the clients.
        for e in self.edge:
            check(f"edge queue {e.cid}", e.check_queue, base)
        for e in self.edge:
            check(f"edge acknowledged {e.cid}", e.check_known_acked_on_backend, base)
        # 2. Documents and transactions, 3. the tree.
        last_b0 = None
        for b in self.batch:
            last = check(f"commit batches {b.wid}", b.verify, base)
            if b.wid == "b0":
                last_b0 = last
        for t in self.tx:
            check(f"transactions {t.wid}", t.verify, base)
        for t in self.tree:
            check(f"tree {t.wid}", t.verify, base)
        # 4. Listeners.
        for b in self.batch:
            check(f"new listen {b.wid}", self.check_new_listen, base, b)
        if self.listener.last is not None and not any(f.startswith("commit batches b0") for f in failures):
            check("resumed listen", self.check_resumed_listen, base, last_b0)
        # 5. Edge clients back online: every accepted write reaches the backend, once.
        settled = True
        for e in self.edge:
            present = check(f"edge flush {e.cid}", e.flush_and_check, base)
            if present is None:
                settled = False
                continue
            check(f"edge listener {e.cid}", e.check_listener, base, present)
        if settled:
            self.snapshot = check("snapshot", _snapshot, base, self.project, self.namespace)
        return failures

    def check_new_listen(self, base, b):
        """A document listen opened after the restart starts with the acknowledged state."""
        expected = _get_doc(base, self.project, f"shared/{b.wid}-0")
        with SSEStream(f"{base}/v1/{_docs_root(self.project)}/shared/{b.wid}-0:listen") as s:
            assert s.ok, s.body
            ev = s.next(timeout=10)
            assert ev.event == "snapshot", ev
            body = ev.json()
            assert body["exists"] == (expected is not None), body
            if expected is not None:
                assert body["document"] == expected, (body, expected)

    def check_resumed_listen(self, base, last_b0):
        """One resumed with an id of the killed server is reset to the acknowledged state, which
        is never behind what that server had shown. On PostgreSQL the id is a position in the
        log, valid after the restart: no first event comes when nothing changed since."""
        seen_id, seen_fields = self.listener.last
        with SSEStream(f"{base}/v1/{_docs_root(self.project)}/shared/b0-0:listen",
                       headers={"Last-Event-ID": seen_id}) as s:
            assert s.ok, s.body
            if postgres_store():
                try:
                    ev = s.next(timeout=2)
                except SSETimeout:
                    # Nothing changed since the id: what the old listener saw is the acknowledged state.
                    seen = seen_fields["n"] if seen_fields else 0
                    assert seen == (last_b0 or 0), (seen_fields, last_b0)
                    return
                body = ev.json()
                assert ev.event == "snapshot", ev
            else:
                ev = s.next(timeout=10)
                body = ev.json()
                assert ev.event == "snapshot" and body.get("reset") is True, \
                    f"resuming from {seen_id} of the killed server must reset: {ev}"
            now = _field_values(body["document"]) if body.get("exists") else None
            assert (now["n"] if now else 0) == (last_b0 or 0), (now, last_b0)
            assert (now["n"] if now else 0) >= (seen_fields["n"] if seen_fields else 0), (
                f"a listener saw batch {seen_fields} before the kill, but after the restart the document "
                f"is {now}: the server showed a commit it had not made durable")

    def recheck(self, base):
        if self.snapshot is None:
            return
        assert _snapshot(base, self.project, self.namespace) == self.snapshot, \
            f"iteration {self.index}'s verified data changed after a later kill"

    def summary(self):
        return (f"batches={sum(len(b.acked) for b in self.batch)} tx={sum(len(t.acked) for t in self.tx)} "
                f"tree={sum(t.steps for t in self.tree)} edge={sum(len(e.accepted) for e in self.edge)} "
                f"(acked {sum(len(e.known_acked) for e in self.edge)}) inflight="
                f"{sum(1 for w in self.workers if w.inflight is not None)}")


@pytest.fixture
def data_dir(tmp_path):
    if os.environ.get("FIREGATE_URL"):
        pytest.skip("needs a server of its own (kill -9 and restart)")
    return tmp_path / "data"


def test_acknowledged_writes_survive_random_kill_9(data_dir):
    rng = random.Random(SEED)
    print(f"\ncrash safety: seed={SEED} iterations={ITERATIONS} (FIREGATE_CRASH_SEED, FIREGATE_CRASH_ITERATIONS)")
    started = time.monotonic()
    done, failures = [], []
    proc, base = start_server(data_dir=data_dir)
    try:
        for i in range(ITERATIONS):
            it = Iteration(i, rng)
            it.start_load(base)
            # Most kills land in the middle of the load, some right at its start.
            delay = rng.uniform(0.02, 0.25) if rng.random() < 0.2 else rng.uniform(0.4, 2.5)
            time.sleep(delay)
            proc.kill()
            proc.wait(timeout=10)
            it.stop_load()
            print(f"  iteration {i}: killed after {delay:.2f}s: {it.summary()}")
            proc, base = start_server(data_dir=data_dir)
            ctx = f"iteration {i} (kill after {delay:.2f}s)"
            found = [f"{ctx}: load: {p}" for p in it.problems()]
            found += [f"{ctx}: {f}" for f in it.verify(base)]
            for earlier in done:
                try:
                    earlier.recheck(base)
                except AssertionError as e:
                    found.append(f"{ctx}: {e}")
            for f in found:
                print("  FAIL " + f[:400])
            failures += found
            done.append(it)
        proc.terminate()         # after all those kills, a clean shutdown still works
        status = proc.wait(timeout=15)
        if status != 0:
            failures.append(f"SIGTERM at the end: exit status {status}")
    finally:
        if proc.poll() is None:
            stop_server(proc)
    print(f"  {ITERATIONS} kills in {time.monotonic() - started:.1f}s, {len(failures)} failures")
    assert not failures, f"seed {SEED}: {len(failures)} failures:\n" + "\n\n".join(failures)


def test_a_queue_being_flushed_survives_kill_9_exactly_once(data_dir):
    """The focused reproduction: a persistent client queues 150 offline commits, each incrementing
    a counter; it goes online and the server is killed while the queue is being sent. After the
    restart every write must be applied exactly once: the counter is 150, no more."""
    rng = random.Random(SEED)
    proc, base = start_server(data_dir=data_dir)
    try:
        for attempt in range(5):
            project, cid = f"flush-{attempt}-{uuid.uuid4().hex[:6]}", f"flush-{attempt}"
            root = _docs_root(project)
            client = f"{base}/clients/{cid}"
            http = requests.Session()
            assert http.put(client, json={"project": project, "persistence": "persistent"}, timeout=TIMEOUT).status_code == 200
            assert http.post(f"{client}:disableNetwork", timeout=TIMEOUT).status_code == 200
            for n in range(1, 151):
                writes = [w_update(f"{root}/edge/{n}", {"n": n}),
                          w_transform(f"{root}/edgectr/c", [t_increment("count", 1), t_increment("sum", n)])]
                r = http.post(f"{client}/v1/{root}:commit", json={"writes": writes}, timeout=TIMEOUT)
                assert r.status_code == 200 and r.headers["Firegate-Write-State"] == "pending", r.text
            assert http.post(f"{client}:enableNetwork", timeout=TIMEOUT).status_code == 200
            time.sleep(rng.uniform(0.01, 0.12))
            proc.kill()
            proc.wait(timeout=10)
            http.close()
            proc, base = start_server(data_dir=data_dir)
            client = f"{base}/clients/{cid}"
            queued = [int(w["id"]) for w in requests.get(f"{client}/pendingWrites", timeout=TIMEOUT).json()["writes"]]
            committed_before = {int(p.split("/")[-1]) for p in _collection(base, project, "edge")}
            r = requests.post(f"{client}:waitForPendingWrites", params={"timeoutMs": 20000}, timeout=(5, 40))
            assert r.status_code == 200, r.text
            ctr = _field_values(_get_doc(base, project, "edgectr/c") or {})
            assert len(_collection(base, project, "edge")) == 150
            assert (ctr.get("count"), ctr.get("sum")) == (150, 150 * 151 // 2), (
                f"attempt {attempt}: after kill -9 during the flush, {ctr.get('count')} increments for 150 writes "
                f"(sum {ctr.get('sum')}, expected {150 * 151 // 2}: write n={ctr.get('sum', 0) - 150 * 151 // 2} was "
                f"applied twice). Read first after the restart (the restored client was already sending), its queue "
                f"started at id {queued[:3]} and the backend held {len(committed_before)} of the writes "
                f"(up to n={max(committed_before, default=0)})")
    finally:
        if proc.poll() is None:
            stop_server(proc)
