"""Firegate beside the official Cloud Firestore emulator (issue 42; oracle.py): the same requests
to both, the answers normalized and compared; a difference fails unless divergences.json
explains it (a production behaviour the emulator does not have, with its source), and prints a
minimal reproduction.

- documents: every value type written and read back, transforms, field masks, preconditions,
  batch commits and their errors;
- queries, generated (ORACLE_SEED, ORACLE_CASES): random data sets × random structured queries
  — every filter operator, `and`/`or`, orderBy over mixed types, cursors, offset, limit,
  collection groups — and count/sum/avg over them.

The longer run is the same test with more cases: `ORACLE_CASES=20000 python3 -m pytest
clients/python/test_oracle.py` (clients/python/README.md).
"""
import base64
import json
import os
import random
import uuid

import pytest
import requests

import oracle
from oracle import OWNER, Answer

SEED = int(os.environ.get("ORACLE_SEED", "4242"))
CASES = int(os.environ.get("ORACLE_CASES", "2000"))
T = 30


class Pair:
    """One project on both servers."""

    def __init__(self, firegate, emulator):
        self.project = "oracle-" + uuid.uuid4().hex[:8]
        self.bases = {"firegate": firegate, "emulator": emulator.base}

    def root(self, side):
        return f"{self.bases[side]}/v1/projects/{self.project}/databases/(default)/documents"

    def name(self, path):
        return f"projects/{self.project}/databases/(default)/documents/{path}"

    def send(self, method, resource, body=None, params=None):
        """(firegate's answer, the emulator's) to the same request; resource is relative to the
        documents root ('' for it, ':runQuery', 'c/d', …)."""
        answers = []
        for side in ("firegate", "emulator"):
            url = self.root(side) + ("/" + resource if resource and not resource.startswith(":") else resource)
            answers.append(Answer(requests.request(method, url, json=body, params=params, headers=OWNER, timeout=T)))
        return answers

    def both(self, area, method, resource, body=None, params=None, setup=None, compare=None):
        ours, theirs = self.send(method, resource, body, params)
        request = {"method": method, "resource": resource, "body": body, "params": params}
        same = (compare or _same)(ours, theirs)
        if not same and oracle.explained(area, request, ours, theirs) is None:
            pytest.fail(oracle.repro(area, request, ours, theirs, setup))
        return ours, theirs


def _same(ours, theirs):
    return oracle.numbers_close(_numbers(ours.shape()), _numbers(theirs.shape()))


def _numbers(shape):
    """Typed numbers as numbers (a double's JSON may be 1 or 1.0, "NaN" or NaN)."""
    def walk(v):
        if isinstance(v, dict):
            if set(v) == {"doubleValue"}:
                d = v["doubleValue"]
                return {"doubleValue": float(d) if not isinstance(d, float) else d}
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v
    return tuple(walk(x) for x in shape)


@pytest.fixture
def pair(base_url, firestore_emulator):
    return Pair(base_url, firestore_emulator)


# --------------------------------------------------------------------------------------------
# Documents

VALUES = {
    "null": {"nullValue": None},
    "true": {"booleanValue": True},
    "int": {"integerValue": "-9223372036854775808"},
    "intmax": {"integerValue": "9223372036854775807"},
    "double": {"doubleValue": 1.5},
    "negzero": {"doubleValue": -0.0},
    "nan": {"doubleValue": "NaN"},
    "inf": {"doubleValue": "-Infinity"},
    "tiny": {"doubleValue": 5e-324},
    "string": {"stringValue": "héllo \u0000 wörld 😀"},
    "empty": {"stringValue": ""},
    "bytes": {"bytesValue": base64.b64encode(bytes(range(256))).decode()},
    "time": {"timestampValue": "2024-02-29T23:59:59.123456Z"},
    "epoch": {"timestampValue": "1970-01-01T00:00:00Z"},
    "geo": {"geoPointValue": {"latitude": -90, "longitude": 179.999999}},
    "array": {"arrayValue": {"values": [{"integerValue": "1"}, {"stringValue": "x"}, {"nullValue": None},
                                        {"arrayValue": {}}]}},
    "emptyArray": {"arrayValue": {}},
    "map": {"mapValue": {"fields": {"a": {"mapValue": {"fields": {"b": {"booleanValue": False}}}}, "`weird.key`": {"integerValue": "2"}}}},
    "emptyMap": {"mapValue": {}},
}


def test_every_value_type_round_trips_the_same(pair):
    for key, value in VALUES.items():
        body = {"fields": {"v": value}}
        pair.both("documents", "PATCH", f"values/{key}", body)
        pair.both("documents", "GET", f"values/{key}")
    ref = {"fields": {"v": {"referenceValue": pair.name("values/int")}}}
    for side in ("firegate", "emulator"):
        # A reference names its own project's document: the same text on both servers.
        assert requests.patch(f"{pair.root(side)}/values/ref", json=ref, headers=OWNER, timeout=T).status_code == 200
    pair.both("documents", "GET", "values/ref")
    pair.both("documents", "GET", "values/map", params={"mask.fieldPaths": ["v.a.b", "missing"]})
    # Over gRPC: the same documents as messages, and the same statuses.
    for key in list(VALUES) + ["ref", "missing"]:
        ours, theirs = (_grpc_get(base, pair.name(f"values/{key}")) for base in (pair.bases["firegate"], pair.bases["emulator"]))
        assert oracle.numbers_close(_numbers(ours), _numbers(theirs)), (key, ours, theirs)


def _grpc_get(base, name):
    """GetDocument over gRPC: ("ok", the document without its times) or ("error", status code)."""
    import grpc
    from google.cloud.firestore_v1.types import document as doc_types
    from google.cloud.firestore_v1.types import firestore as fs
    channel = grpc.insecure_channel(base.split("://", 1)[1])
    try:
        call = channel.unary_unary("/google.firestore.v1.Firestore/GetDocument", request_serializer=fs.GetDocumentRequest.serialize,
                                   response_deserializer=doc_types.Document.deserialize)
        try:
            document = call(fs.GetDocumentRequest(name=name), metadata=[("authorization", "Bearer owner")], timeout=T)
        except grpc.RpcError as error:
            return ("error", error.code().name)
        return ("ok", oracle.normalize(json.loads(doc_types.Document.to_json(document))))
    finally:
        channel.close()


TRANSFORMS = [
    {"fieldPath": "n", "increment": {"integerValue": "9223372036854775807"}},
    {"fieldPath": "d", "increment": {"doubleValue": 0.5}},
    {"fieldPath": "i", "increment": {"doubleValue": 1.5}},
    {"fieldPath": "hi", "maximum": {"integerValue": "7"}},
    {"fieldPath": "lo", "minimum": {"doubleValue": -1}},
    {"fieldPath": "arr", "appendMissingElements": {"values": [{"integerValue": "1"}, {"integerValue": "3"}]}},
    {"fieldPath": "gone", "removeAllFromArray": {"values": [{"integerValue": "2"}]}},
    {"fieldPath": "missing.deep", "increment": {"integerValue": "1"}},
]


def test_transforms_masks_and_preconditions_answer_the_same(pair):
    start = {"fields": {"n": {"integerValue": "5"}, "d": {"integerValue": "1"}, "i": {"integerValue": "2"},
                        "hi": {"integerValue": "3"}, "lo": {"stringValue": "s"}, "arr": {"arrayValue": {"values": [{"integerValue": "1"}]}},
                        "gone": {"arrayValue": {"values": [{"integerValue": "2"}, {"integerValue": "2"}, {"integerValue": "4"}]}}}}
    pair.both("documents", "PATCH", "t/a", start)
    write = {"update": {"name": pair.name("t/a"), "fields": {"x": {"integerValue": "1"}}}, "updateMask": {"fieldPaths": ["x"]},
             "updateTransforms": TRANSFORMS}
    pair.both("documents", "POST", ":commit", {"writes": [write]})
    pair.both("documents", "GET", "t/a")
    for transform in ({"fieldPath": "n", "increment": {"stringValue": "x"}}, {"fieldPath": "n"},
                      {"fieldPath": "n", "setToServerValue": "REQUEST_TIME", "increment": {"integerValue": "1"}}):
        pair.both("documents", "POST", ":commit", {"writes": [{"transform": {"document": pair.name("t/a"), "fieldTransforms": [transform]}}]})
    for precondition in ({"exists": True}, {"exists": False}, {"updateTime": "2001-01-01T00:00:00Z"}):
        for path in ("t/a", "t/none"):
            pair.both("documents", "POST", ":commit", {"writes": [{"update": {"name": pair.name(path), "fields": {}},
                                                                   "currentDocument": precondition}]})
    pair.both("documents", "PATCH", "t/a", {"fields": {"m": {"mapValue": {"fields": {"k": {"integerValue": "1"}}}}}},
              params={"updateMask.fieldPaths": ["m.k", "n", "nothere"]})
    pair.both("documents", "GET", "t/a", params={"mask.fieldPaths": ["m", "n"]})
    for bad in ({"fields": {"__bad__": {"integerValue": "1"}}}, {"fields": {"": {"integerValue": "1"}}},
                {"fields": {"v": {"integerValue": "x"}}}, {"fields": {"v": {"doubleValue": "nope"}}},
                {"fields": {"v": {"timestampValue": "2024-13-01T00:00:00Z"}}}, {"fields": {"v": {"geoPointValue": {"latitude": 91}}}}):
        pair.both("documents", "PATCH", "t/bad", bad)
    pair.both("documents", "GET", "t/none")
    pair.both("documents", "DELETE", "t/a", params={"currentDocument.exists": "false"})


def test_batch_commits_and_their_errors_answer_the_same(pair):
    writes = [{"update": {"name": pair.name(f"b/{i}"), "fields": {"i": {"integerValue": str(i)}}}} for i in range(5)]
    pair.both("documents", "POST", ":commit", {"writes": writes})
    pair.both("documents", "POST", ":batchGet", {"documents": [pair.name(f"b/{i}") for i in (0, 3, 9)]})
    pair.both("documents", "POST", ":commit", {"writes": [{"delete": pair.name("b/0")},
                                                          {"update": {"name": pair.name("b/0"), "fields": {}}, "currentDocument": {"exists": True}}]})
    pair.both("documents", "POST", ":commit", {"writes": [{"update": {"name": pair.name("b/1"), "fields": {}}},
                                                          {"update": {"name": pair.name("b/x/y"), "fields": {}}}]})
    pair.both("documents", "POST", ":commit", {"writes": [{"delete": pair.name(f"b/{i}")} for i in range(501)]})
    pair.both("documents", "POST", ":commit", {"writes": [{}]})


def _transaction_script(pair, side):
    """The conflict script on one server: [(step, request, answer, seconds)]. Reads in a
    transaction go through :batchGet (the emulator never answers a GET with ?transaction=: its
    REST layer fails on the bytes parameter)."""
    import time
    root = pair.root(side)
    steps = []

    def send(step, method, resource, body=None):
        url = root + ("/" + resource if not resource.startswith(":") else resource)
        started = time.monotonic()
        answer = Answer(requests.request(method, url, json=body, headers=OWNER, timeout=T))
        steps.append((step, {"step": step, "method": method, "resource": resource}, answer, time.monotonic() - started))
        return answer

    def begin(step, options=None):
        return send(step, "POST", ":beginTransaction", {"options": options} if options else {}).body["transaction"]

    def read(step, tx, *paths):
        return send(step, "POST", ":batchGet", {"documents": [pair.name(p) for p in paths], "transaction": tx})

    def set_n(path, n):
        return {"update": {"name": pair.name(path), "fields": {"n": {"integerValue": str(n)}}}}

    send("seed", "POST", ":commit", {"writes": [set_n("tx/a", 1), set_n("tx/b", 1)]})
    # A read locks the document: a write from outside waits for it, then gives up (ABORTED)...
    t = begin("begin")
    read("read-locks", t, "tx/a", "tx/missing")
    send("outside-write-waits", "POST", ":commit", {"writes": [set_n("tx/a", 50)]})
    send("outside-create-waits", "POST", ":commit", {"writes": [set_n("tx/missing", 50)]})
    send("outside-batch-write", "POST", ":batchWrite", {"writes": [set_n("tx/a", 60), set_n("tx/b", 60)]})
    send("unrelated-write", "POST", ":commit", {"writes": [set_n("tx/b", 2)]})
    # ...and the transaction's own commit goes through.
    send("holder-commits", "POST", ":commit", {"transaction": t, "writes": [set_n("tx/a", 3)]})
    send("after-holder", "GET", "tx/a")
    send("commit-again", "POST", ":commit", {"transaction": t, "writes": []})
    # A write waits only while the lock is held: once the holder ends, the next write passes.
    t = begin("begin-2")
    read("read-2", t, "tx/a")
    send("rollback", "POST", ":rollback", {"transaction": t})
    send("write-after-rollback", "POST", ":commit", {"writes": [set_n("tx/a", 4)]})
    send("rollback-unknown", "POST", ":rollback", {"transaction": base64.b64encode(b"never-issued-id!").decode()})
    # Two transactions read the same document; the older one commits first.
    older, younger = begin("begin-older"), begin("begin-younger")
    read("older-reads", older, "tx/a")
    read("younger-reads", younger, "tx/a")
    send("older-commits", "POST", ":commit", {"transaction": older, "writes": [set_n("tx/a", 5)]})
    send("younger-commits", "POST", ":commit", {"transaction": younger, "writes": [set_n("tx/a", 6)]})
    send("after-both", "GET", "tx/a")
    # A read-only transaction locks nothing; it cannot write.
    ro = begin("begin-read-only", {"readOnly": {}})
    read("read-only-reads", ro, "tx/b")
    send("write-beside-read-only", "POST", ":commit", {"writes": [set_n("tx/b", 7)]})
    send("read-only-writes", "POST", ":commit", {"transaction": ro, "writes": [set_n("tx/b", 8)]})
    send("final", "POST", ":batchGet", {"documents": [pair.name(p) for p in ("tx/a", "tx/b", "tx/missing")]})
    return steps


def _with_a(answer, step):
    """tx/a's n, and the rest of the answer normalized without it."""
    entries = [answer.body] if step == "after-both" else answer.body
    a, rest = None, []
    for entry in entries:
        doc = entry.get("found", entry) if isinstance(entry, dict) else entry
        if isinstance(doc, dict) and doc.get("name", "").endswith("/tx/a"):
            a = doc["fields"]["n"]["integerValue"]
        else:
            rest.append(oracle.normalize(entry))
    return a, rest


def test_transactions_and_their_conflicts_answer_the_same(pair):
    """Locks, waits, aborts and finished transactions, step by step on both servers."""
    ours, theirs = _transaction_script(pair, "firegate"), _transaction_script(pair, "emulator")
    assert [s[0] for s in ours] == [s[0] for s in theirs]
    for (step, request, mine, _), (_, _, other, _) in zip(ours, theirs):
        if step == "outside-batch-write":
            # Each write's status compared by code; its words below, as a lock wait's error's.
            codes = [[st.get("code", 0) for st in a.body["status"]] for a in (mine, other)]
            assert codes[0] == codes[1], (mine, other)
            continue
        if step in ("after-both", "final"):
            # The winner's write: the older's on Firegate, the younger's on the emulator
            # (divergences.json "older-transaction-wins"); everything else the same.
            mine, other = (_with_a(answer, step) for answer in (mine, other))
            assert mine == ("5", other[1]) and other[0] == "6", (mine, other)
            continue
        if not _same(mine, other) and oracle.explained("transactions", request, mine, other) is None:
            pytest.fail(oracle.repro("transactions", request, mine, other, [s[1] for s in ours]))
        # Errors of the same status may still be worded differently: only as an entry says.
        if mine.error and other.error and mine.error.get("message") != other.error.get("message"):
            if oracle.explained("transactions-message", request, mine, other) is None:
                pytest.fail(oracle.repro("transactions-message", request, mine, other))
    took = {step: seconds for step, _, _, seconds in ours}
    # A blocked write waits for the lock (Firegate: 2 s), one that is not blocked does not.
    assert 1.5 < took["outside-write-waits"] < 5 and 1.5 < took["outside-create-waits"] < 5, took
    assert took["unrelated-write"] < 1 and took["write-after-rollback"] < 1 and took["older-commits"] < 1, took
    answers = {step: answer for step, _, answer, _ in ours}
    assert answers["outside-write-waits"].error["message"] == "Too much contention on these documents. Please try again."
    assert [r.get("code", 0) for r in answers["outside-batch-write"].body["status"]] == [10, 0]
    final = {e["found"]["name"].rsplit("/", 1)[1]: e["found"]["fields"]["n"]["integerValue"] for e in answers["final"].body if "found" in e}
    assert final == {"a": "5", "b": "7"}, final


# --------------------------------------------------------------------------------------------
# Queries, generated

def _pool(rng, pair):
    return [
        {"nullValue": None}, {"booleanValue": False}, {"booleanValue": True},
        {"integerValue": "-1"}, {"integerValue": "0"}, {"integerValue": "1"}, {"integerValue": "2"}, {"integerValue": "10"},
        {"doubleValue": -1.5}, {"doubleValue": 1.0}, {"doubleValue": 2.5}, {"doubleValue": "NaN"}, {"doubleValue": "Infinity"},
        {"stringValue": ""}, {"stringValue": "a"}, {"stringValue": "b"}, {"stringValue": "aa"},
        {"timestampValue": "2020-01-01T00:00:00Z"}, {"timestampValue": "2021-06-01T12:00:00.5Z"},
        {"bytesValue": "AA=="}, {"bytesValue": "AQI="},
        {"referenceValue": pair.name("q/d1")}, {"referenceValue": pair.name("q/d7")},
        {"geoPointValue": {"latitude": 1, "longitude": 2}},
        {"arrayValue": {}}, {"arrayValue": {"values": [{"integerValue": "1"}]}},
        {"arrayValue": {"values": [{"integerValue": "1"}, {"stringValue": "a"}]}}, {"arrayValue": {"values": [{"nullValue": None}]}},
        {"mapValue": {}}, {"mapValue": {"fields": {"x": {"integerValue": "1"}}}},
    ]


def _dataset(rng, pair, pool):
    docs = {}
    for i in range(40):
        path = f"q/d{i}" if i < 30 else f"other/o{i % 3}/q/d{i}"
        fields = {}
        for name, chance in (("f", 0.8), ("g", 0.7)):
            if rng.random() < chance:
                fields[name] = rng.choice(pool)
        if rng.random() < 0.5:
            fields["tags"] = {"arrayValue": {"values": rng.sample(pool[3:8] + pool[13:17], rng.randrange(0, 4))}}
        if rng.random() < 0.6:
            fields["n"] = rng.choice(pool[3:13])
        docs[path] = fields
    return docs


def _leaf(rng, pair, pool):
    kind = rng.random()
    if kind < 0.12:
        return {"unaryFilter": {"field": {"fieldPath": rng.choice(["f", "g", "n"])},
                                "op": rng.choice(["IS_NULL", "IS_NAN", "IS_NOT_NULL", "IS_NOT_NAN"])}}
    if kind < 0.2:
        op = rng.choice(["EQUAL", "LESS_THAN", "GREATER_THAN_OR_EQUAL", "IN", "NOT_EQUAL"])
        ref = lambda: {"referenceValue": pair.name(f"q/d{rng.randrange(40)}")}  # noqa: E731
        value = {"arrayValue": {"values": [ref() for _ in range(rng.randrange(1, 3))]}} if op == "IN" else ref()
        return {"fieldFilter": {"field": {"fieldPath": "__name__"}, "op": op, "value": value}}
    op = rng.choice(["EQUAL", "NOT_EQUAL", "LESS_THAN", "LESS_THAN_OR_EQUAL", "GREATER_THAN", "GREATER_THAN_OR_EQUAL",
                     "IN", "NOT_IN", "ARRAY_CONTAINS", "ARRAY_CONTAINS_ANY"])
    field = "tags" if op.startswith("ARRAY") and rng.random() < 0.7 else rng.choice(["f", "g", "n"])
    if op in ("IN", "NOT_IN", "ARRAY_CONTAINS_ANY"):
        value = {"arrayValue": {"values": rng.sample(pool, rng.randrange(1, 4))}}
    else:
        value = rng.choice(pool)
    return {"fieldFilter": {"field": {"fieldPath": field}, "op": op, "value": value}}


def _filter(rng, pair, pool, depth=0):
    if depth < 2 and rng.random() < 0.35:
        return {"compositeFilter": {"op": rng.choice(["AND", "OR"]),
                                    "filters": [_filter(rng, pair, pool, depth + 1) for _ in range(rng.randrange(1, 4))]}}
    return _leaf(rng, pair, pool)


def _query(rng, pair, pool):
    query = {"from": [{"collectionId": "q", "allDescendants": True}] if rng.random() < 0.25 else [{"collectionId": "q"}]}
    if rng.random() < 0.8:
        query["where"] = _filter(rng, pair, pool)
    if rng.random() < 0.6:
        fields = rng.sample(["f", "g", "n", "__name__"], rng.randrange(1, 3))
        query["orderBy"] = [{"field": {"fieldPath": f}, "direction": rng.choice(["ASCENDING", "DESCENDING"])} for f in fields]
        if rng.random() < 0.3:
            cursor = {"values": [rng.choice(pool) if o["field"]["fieldPath"] != "__name__"
                                 else {"referenceValue": pair.name(f"q/d{rng.randrange(30)}")} for o in query["orderBy"]][:rng.randrange(1, 3)],
                      "before": rng.random() < 0.5}
            query[rng.choice(["startAt", "endAt"])] = cursor
    if rng.random() < 0.4:
        query["limit"] = rng.randrange(1, 6)
    if rng.random() < 0.1:
        query["offset"] = rng.randrange(1, 4)
    return query


def _results_same(ours, theirs):
    """runQuery: the same documents in the same order (skippedResults and empty-answer rows aside)."""
    if ours.status != 200 or theirs.status != 200:
        return ours.shape()[:3] == theirs.shape()[:3] if ours.status >= 400 and theirs.status >= 400 else False
    def docs(answer):
        return [normalize_doc(row["document"]) for row in answer.body if "document" in row]
    return oracle.numbers_close(_numbers(("ok", docs(ours))), _numbers(("ok", docs(theirs))))


def normalize_doc(document):
    return oracle.normalize(document)


def _aggregates_same(ours, theirs):
    if ours.status != 200 or theirs.status != 200:
        return ours.status >= 400 and theirs.status >= 400 and ours.shape() == theirs.shape()
    def values(answer):
        return [row["result"]["aggregateFields"] for row in answer.body if "result" in row]
    return oracle.numbers_close(_numbers(("ok", values(ours))), _numbers(("ok", values(theirs))))


def test_generated_queries_and_aggregations_answer_the_same(pair):
    rng = random.Random(SEED)
    pool = _pool(rng, pair)
    sets = max(1, CASES // 500)
    cases = 0
    for round_ in range(sets):
        docs = _dataset(rng, pair, pool)
        writes = [{"update": {"name": pair.name(path), "fields": fields}} for path, fields in docs.items()]
        for side in ("firegate", "emulator"):
            r = requests.post(f"{pair.root(side)}:commit", json={"writes": writes}, headers=OWNER, timeout=T)
            assert r.status_code == 200, (side, r.text)
        setup = {"seed": SEED, "round": round_, "documents": docs}
        for _ in range(CASES // sets):
            query = _query(rng, pair, pool)
            if rng.random() < 0.8:
                pair.both("queries", "POST", ":runQuery", {"structuredQuery": query}, setup=setup, compare=_results_same)
            else:
                aggregations = [{"alias": "c", "count": {}}, {"alias": "s", "sum": {"field": {"fieldPath": "n"}}},
                                {"alias": "a", "avg": {"field": {"fieldPath": "n"}}}]
                body = {"structuredAggregationQuery": {"structuredQuery": query, "aggregations": rng.sample(aggregations, rng.randrange(1, 4))}}
                pair.both("aggregations", "POST", ":runAggregationQuery", body, setup=setup, compare=_aggregates_same)
            cases += 1
        for side in ("firegate", "emulator"):
            requests.post(f"{pair.root(side)}:commit", json={"writes": [{"delete": pair.name(p)} for p in docs]}, headers=OWNER, timeout=T)
    assert cases == (CASES // sets) * sets


# --------------------------------------------------------------------------------------------
# Listen: the message sequence for a script of writes, then a resume after changes and deletes

def _normalized(responses, docs):
    """Listen responses as (kind, …) tuples without tokens and times; `docs` follows the target."""
    from google.cloud.firestore_v1.types import firestore as fs
    out = []
    for response in responses:
        kind = fs.ListenResponse.pb(response).WhichOneof("response_type")
        if kind == "target_change":
            tc = response.target_change
            out.append(("target", fs.TargetChange.TargetChangeType(tc.target_change_type).name, sorted(tc.target_ids)))
            if tc.target_change_type == fs.TargetChange.TargetChangeType.RESET:
                docs.clear()
        elif kind == "document_change":
            dc = response.document_change
            leaf, n = dc.document.name.rsplit("/", 1)[1], dc.document.fields["n"].integer_value
            out.append(("change", leaf, n, sorted(dc.target_ids), sorted(dc.removed_target_ids)))
            if 1 in dc.target_ids:
                docs[leaf] = n
            elif 1 in dc.removed_target_ids:
                docs.pop(leaf, None)
        elif kind in ("document_delete", "document_remove"):
            leaf = getattr(response, kind).document.rsplit("/", 1)[1]
            out.append((kind.split("_")[1], leaf))
            docs.pop(leaf, None)
        elif kind == "filter":
            out.append(("filter", response.filter.target_id, response.filter.count))
    return out


def _listen_script(base, project):
    """The script on one server: (the live part's messages, its documents, the resume's
    messages, the documents after it)."""
    import grpc
    from google.cloud.firestore_v1.types import firestore as fs
    from test_grpc import ListenStream

    database = f"projects/{project}/databases/(default)"
    root = f"{base}/v1/{database}/documents"

    def write(path, n=None):
        r = (requests.delete(f"{root}/{path}", headers=OWNER, timeout=T) if n is None else
             requests.patch(f"{root}/{path}", json={"fields": {"n": {"integerValue": str(n)}}}, headers=OWNER, timeout=T))
        assert r.status_code == 200, r.text

    for leaf, n in (("a", 1), ("b", 2), ("c", 3)):
        write(f"l/{leaf}", n)
    query = {"parent": f"{database}/documents", "structured_query": {"from_": [{"collection_id": "l"}]}}
    channel = grpc.insecure_channel(base.split("://", 1)[1])
    try:
        docs, live, states = {}, [], []
        stream = ListenStream(channel, fs.ListenRequest(database=database, add_target={"target_id": 1, "query": query}))
        responses = stream.until_global_snapshot()
        for path, n in (("l/d", 4), ("l/a", 10), ("l/c", None)):
            live += _normalized(responses, docs)
            states.append(dict(docs))
            write(path, n)
            responses = stream.until_global_snapshot()
        live += _normalized(responses, docs)
        states.append(dict(docs))
        token = responses[-1].target_change.resume_token
        stream.close()
        live_docs = states
        # Away: a changed, b deleted, e added; then the listen resumes from the token.
        for path, n in (("l/a", 20), ("l/b", None), ("l/e", 5)):
            write(path, n)
        resumed = ListenStream(channel, fs.ListenRequest(database=database, add_target={"target_id": 1, "query": query, "resume_token": token}))
        resume = _normalized(resumed.until_global_snapshot(), docs)
        resumed.close()
        return live, live_docs, resume, docs
    finally:
        channel.close()


def test_a_listen_and_its_resume_answer_the_same(pair):
    project = pair.project
    ours = _listen_script(pair.bases["firegate"], project)
    theirs = _listen_script(pair.bases["emulator"], project)
    # The first answer is the same message for message.
    first = ours[0][:ours[0].index(("target", "NO_CHANGE", [])) + 1]
    assert theirs[0][:len(first)] == first, f"first answers differ:\nfiregate: {ours[0]}\nemulator: {theirs[0]}"
    # Each snapshot leaves the target with the same documents. divergences.json
    # "listen-query-changes": the emulator answers each change of a query target with RESET and
    # the whole result; Firegate, as production, with the changed documents only.
    states = [{"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3, "d": 4}, {"a": 10, "b": 2, "c": 3, "d": 4}, {"a": 10, "b": 2, "d": 4}]
    assert ours[1] == theirs[1] == states, (ours[0], theirs[0])
    assert ("target", "RESET", [1]) not in ours[0] and ("target", "RESET", [1]) in theirs[0]
    assert ours[0][len(first):] == [("change", "d", 4, [1], []), ("target", "NO_CHANGE", []), ("change", "a", 10, [1], []),
                                    ("target", "NO_CHANGE", []), ("delete", "c"), ("target", "NO_CHANGE", [])], ours[0]
    # After the resume both leave the client with the same documents. divergences.json
    # "listen-resume-reset": the emulator resets the target and sends the whole result, Firegate
    # (as production) sends what changed since the token.
    assert ours[3] == theirs[3] == {"a": 20, "d": 4, "e": 5}, (ours[2], theirs[2])
    assert ("target", "RESET", [1]) in theirs[2], theirs[2]
    assert ("target", "RESET", [1]) not in ours[2], ours[2]
    assert ("change", "d", 4, [1], []) not in ours[2], ours[2]  # unchanged since the token: not sent again
