"""Firestore bundles over plain HTTP: the emulator's builder
(`POST /emulator/v1/projects/{p}/databases/{d}:bundle`, as the Admin SDK's `firestore.bundle()`),
an edge client's `:loadBundle` (the SDK's loadBundle, with its LoadBundleTaskProgress as JSON or
as an SSE stream) and its named queries (`GET /clients/{id}/namedQueries/{name}`, the SDK's
namedQuery). Some bundles are built by the server, others by hand here, element by element, so
byte counts, versions and read times are exact. Deterministic: clients are offline or gated
whenever the server could otherwise change what they cache, and otherwise wait for a state
(the sync marker, a snapshot with the expected metadata), never for a time."""
import json
import re
import subprocess
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests

from conftest import start_server, stop_server
from sse import SSEStream
from test_edge import Client, backend_set, docs_path, meta, names, typed

DB = "(default)"
TIMEOUT = 10
PROGRESS_KEYS = {"taskState", "documentsLoaded", "totalDocuments", "bytesLoaded", "totalBytes"}


# ---------------------------------------------------------------------------------------------
# Timestamps: the server answers RFC 3339 strings; a bundle may also carry {seconds, nanos}.
# ---------------------------------------------------------------------------------------------

def ts(value):
    """An RFC 3339 string (or a proto {seconds, nanos} object) -> an aware datetime (µs)."""
    if isinstance(value, dict):
        return datetime.fromtimestamp(int(value.get("seconds", 0)), timezone.utc) + \
            timedelta(microseconds=int(value.get("nanos", 0)) // 1000)
    m = re.match(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$", value)
    assert m, f"not an RFC 3339 UTC timestamp: {value!r}"
    base = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return base + timedelta(microseconds=int((m.group(2) or "0").ljust(9, "0")[:6]))


def rfc3339(dt):
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def shifted(value, **delta):
    return rfc3339(ts(value) + timedelta(**delta))


# ---------------------------------------------------------------------------------------------
# The bundle format: each element is the decimal byte length of its JSON, then the JSON.
# ---------------------------------------------------------------------------------------------

def element(obj):
    data = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return str(len(data)).encode("ascii") + data


def bundle(bundle_id, create_time, elements, total_documents=None):
    """Metadata first, then `elements` (dicts or raw bytes); totals counted as the SDKs count them.
    Returns (bytes, total_bytes, sizes of the elements after the metadata)."""
    parts = [e if isinstance(e, bytes) else element(e) for e in elements]
    if total_documents is None:
        total_documents = sum(1 for e in elements if isinstance(e, dict) and "documentMetadata" in e)
    body = b"".join(parts)
    meta_element = element({"metadata": {"id": bundle_id, "createTime": create_time, "version": 1,
                                         "totalDocuments": total_documents, "totalBytes": len(body)}})
    return meta_element + body, len(body), [len(p) for p in parts]


def parse_bundle(data):
    """bytes -> [(element dict, its size in bytes, length prefix included)]; asserts the framing."""
    out, i = [], 0
    while i < len(data):
        m = re.match(rb"\d+", data[i:i + 20])
        assert m, f"no length prefix at byte {i}: {data[i:i + 40]!r}"
        n = int(m.group())
        start = i + len(m.group())
        assert start + n <= len(data), f"element at byte {i} runs past the end"
        out.append((json.loads(data[start:start + n].decode("utf-8")), len(m.group()) + n))
        i = start + n
    return out


def doc_name(project, path, database=DB):
    return f"projects/{project}/databases/{database}/documents/{path}"


def bundled_doc(name, read_time, fields=None, update_time=None, create_time=None, queries=None):
    """The elements of one bundled document: its metadata, then (if it exists) the document."""
    md = {"name": name, "readTime": read_time, "exists": fields is not None}
    if queries:
        md["queries"] = list(queries)
    out = [{"documentMetadata": md}]
    if fields is not None:
        out.append({"document": {"name": name, "createTime": create_time or update_time, "updateTime": update_time,
                                 "fields": {k: typed(v) for k, v in fields.items()}}})
    return out


def named_query(project, name, read_time, structured_query, limit_type="FIRST", parent=""):
    root = f"projects/{project}/databases/{DB}/documents"
    return {"namedQuery": {"name": name, "readTime": read_time, "bundledQuery": {
        "parent": f"{root}/{parent}" if parent else root, "structuredQuery": structured_query, "limitType": limit_type}}}


def by_n(collection):
    return {"from": [{"collectionId": collection}], "orderBy": [{"field": {"fieldPath": "n"}, "direction": "ASCENDING"}]}


def success(documents, total_bytes):
    return {"taskState": "Success", "documentsLoaded": documents, "totalDocuments": documents,
            "bytesLoaded": total_bytes, "totalBytes": total_bytes}


# ---------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------

def build(base, project, body):
    return requests.post(f"{base}/emulator/v1/projects/{project}/databases/{DB}:bundle", json=body, timeout=30)


def build_ok(base, project, body):
    r = build(base, project, body)
    assert r.status_code == 200, r.text
    return r.content


def load(client, data):
    return requests.post(f"{client.url}:loadBundle", data=data, timeout=30)


class BodySession(requests.Session):
    """Sends `body` as the raw request body (SSEStream itself only sends JSON bodies)."""

    def __init__(self, body):
        super().__init__()
        self.body = body

    def request(self, method, url, **kw):
        kw.pop("json", None)
        return super().request(method, url, data=self.body, **kw)


def load_ok(client, data):
    r = load(client, data)
    assert r.status_code == 200, r.text
    progress = r.json()
    assert set(progress) == PROGRESS_KEYS, progress
    return progress


def named(client, name):
    return requests.get(f"{client.url}/namedQueries/{name}", timeout=TIMEOUT)


def cached(client, path):
    """A read from the client's cache only: (status, fields or error status)."""
    r = client.get(path, source="cache")
    if r.status_code == 200:
        assert r.headers["Firegate-From-Cache"] == "true"
        return 200, r.json().get("fields", {})
    return r.status_code, r.json()["error"]["status"]


def n_of(client, path):
    status, fields = cached(client, path)
    assert status == 200, (path, status, fields)
    return int(fields["n"]["integerValue"])


def assert_google_error(r, code, status):
    assert r.status_code == code, f"expected {code}, got {r.status_code}: {r.text[:300]}"
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) <= {"code", "message", "status", "details"}, body
    assert body["error"]["code"] == code and body["error"]["status"] == status, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], body


def listen_query(client, structured_query, parent="", **params):
    url = f"{client.data}/{parent}:listen" if parent else f"{client.data}:listen"
    return SSEStream(url, params={"query": json.dumps(structured_query), **params})


def wait_for(stream, predicate, what):
    """Reads snapshots until one satisfies `predicate`; returns it."""
    while True:
        ev = stream.next(timeout=TIMEOUT)
        assert ev.event in ("snapshot", "sync"), f"unexpected {ev!r} while waiting for {what}"
        if ev.event == "snapshot" and predicate(ev.json()):
            return ev.json()


def field_n(snapshot):
    return [int(d["fields"]["n"]["integerValue"]) for d in snapshot["documents"]]


# ---------------------------------------------------------------------------------------------
# Built by the server, loaded into a client
# ---------------------------------------------------------------------------------------------

BIG_CITIES = {"from": [{"collectionId": "cities"}],
              "where": {"fieldFilter": {"field": {"fieldPath": "population"}, "op": "GREATER_THAN",
                                        "value": {"integerValue": "1000000"}}},
              "orderBy": [{"field": {"fieldPath": "population"}, "direction": "ASCENDING"}]}


def write_cities(base, project):
    docs = f"{base}{docs_path(project)}"
    times = {}
    for path, name, population in (("cities/SF", "San Francisco", 870000), ("cities/LA", "Los Angeles", 3900000),
                                   ("cities/NY", "New York", 8400000), ("states/CA", "California", 39000000)):
        r = requests.patch(f"{docs}/{path}", json={"fields": {"name": typed(name), "population": typed(population)}},
                           timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        times[path] = r.json()["updateTime"]
    return times


def test_a_built_bundle_seeds_an_offline_client(base_url, project):
    times = write_cities(base_url, project)
    bundle_id = "cities-" + uuid.uuid4().hex[:6]
    data = build_ok(base_url, project, {"bundleId": bundle_id, "documents": ["states/CA", "states/NOPE"],
                                        "namedQueries": [{"name": "big", "structuredQuery": BIG_CITIES}]})

    # The bundle, as the Admin SDK's builder writes it.
    elements = parse_bundle(data)
    (first, first_size), rest = elements[0], elements[1:]
    md = first["metadata"]
    assert md["id"] == bundle_id and md["version"] == 1
    assert int(md["totalBytes"]) == len(data) - first_size == sum(size for _, size in rest)
    read_time = ts(md["createTime"])
    assert read_time >= max(ts(t) for t in times.values()), "read after the writes"
    [nq] = [e["namedQuery"] for e, _ in rest if "namedQuery" in e]
    assert nq["name"] == "big" and ts(nq["readTime"]) == read_time
    assert nq["bundledQuery"]["parent"] == f"projects/{project}/databases/{DB}/documents"
    assert nq["bundledQuery"]["limitType"] == "FIRST"
    assert nq["bundledQuery"]["structuredQuery"]["from"] == [{"collectionId": "cities"}]
    metadata = {}
    for i, (e, _) in enumerate(rest):
        if "documentMetadata" not in e:
            continue
        dm = e["documentMetadata"]
        assert dm["name"] not in metadata, f"{dm['name']} bundled twice"
        metadata[dm["name"]] = dm
        assert ts(dm["readTime"]) == read_time, "one read time for the whole bundle"
        following = rest[i + 1][0] if i + 1 < len(rest) else {}
        if dm["exists"]:
            assert following.get("document", {}).get("name") == dm["name"], "a document follows its metadata"
            server = requests.get(f"{base_url}/v1/{dm['name']}", timeout=TIMEOUT).json()
            assert following["document"]["fields"] == server["fields"]
            assert ts(following["document"]["updateTime"]) == ts(server["updateTime"])
            assert ts(following["document"]["createTime"]) == ts(server["createTime"])
        else:
            assert following.get("document", {}).get("name") != dm["name"], "a missing document has no document element"
    name = lambda path: doc_name(project, path)  # noqa: E731
    assert set(metadata) == {name("states/CA"), name("states/NOPE"), name("cities/LA"), name("cities/NY")}
    assert int(md["totalDocuments"]) == 4
    assert metadata[name("states/NOPE")]["exists"] is False
    assert metadata[name("cities/LA")].get("queries") == ["big"] and metadata[name("cities/NY")].get("queries") == ["big"]
    assert not metadata[name("states/CA")].get("queries")

    # Loaded into a client that never reaches the server.
    d = Client(base_url, project)
    d.post("disableNetwork")
    assert load_ok(d, data) == success(4, len(data) - first_size)
    assert cached(d, "states/CA") == (200, {"name": typed("California"), "population": typed(39000000)})
    assert cached(d, "cities/LA")[1]["name"] == typed("Los Angeles")
    assert cached(d, "states/NOPE") == (404, "NOT_FOUND"), "the bundle says it does not exist"
    assert cached(d, "cities/SF") == (503, "UNAVAILABLE"), "not in the bundle: not in the cache"

    r = named(d, "big")
    assert r.status_code == 200, r.text
    got = r.json()
    assert set(got) == {"name", "readTime", "bundledQuery"} and got["name"] == "big"
    assert ts(got["readTime"]) == read_time
    assert set(got["bundledQuery"]) == {"parent", "structuredQuery", "limitType"}
    assert got["bundledQuery"]["parent"] == f"projects/{project}/databases/{DB}/documents"
    assert got["bundledQuery"]["limitType"] == "FIRST"

    with listen_query(d, got["bundledQuery"]["structuredQuery"]) as s:
        [events] = d.sync(s)
        assert len(events) == 1 and meta(events[0]) == (True, False)
        assert names(events[0]) == ["LA", "NY"]
        assert [c["type"] for c in events[0]["changes"]] == ["added", "added"]


def test_the_builder_answers_the_bytes_as_octet_stream(base_url, project):
    backend_set(base_url, project, "c/a", n=1)
    r = build(base_url, project, {"bundleId": "b", "documents": ["c/a"]})
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/octet-stream", r.headers
    assert [next(iter(e)) for e, _ in parse_bundle(r.content)] == ["metadata", "documentMetadata", "document"]


def test_a_named_query_listener_starts_from_the_bundle_then_follows_the_server(base_url, project):
    write_cities(base_url, project)
    data = build_ok(base_url, project, {"bundleId": "b-" + uuid.uuid4().hex[:6],
                                        "namedQueries": [{"name": "big", "structuredQuery": BIG_CITIES}]})
    backend_set(base_url, project, "cities/CHI", name="Chicago", population=2700000)  # after the bundle was read
    d = Client(base_url, project)
    d.gates(holdWatch=True)
    assert load_ok(d, data)["taskState"] == "Success"
    query = named(d, "big").json()["bundledQuery"]["structuredQuery"]
    with listen_query(d, query, includeMetadataChanges="true") as s:
        [events] = d.sync(s)
        assert len(events) == 1, "the server's answer is held: only the cached result"
        assert meta(events[0]) == (True, False) and names(events[0]) == ["LA", "NY"]
        requests.post(d.url + "/gates:releaseWatch", timeout=TIMEOUT)
        [events] = d.sync(s)
        assert events and meta(events[-1]) == (False, False)
        assert names(events[-1]) == ["CHI", "LA", "NY"], "the server brings the stale bundle up to date"


def test_a_limit_to_last_named_query_under_a_parent_document(base_url, project):
    for user, offset in (("u1", 0), ("u2", 10)):
        for n in range(1, 5):
            backend_set(base_url, project, f"users/{user}/posts/p{n}", n=n + offset)
    query = dict(by_n("posts"), limit=2)
    data = build_ok(base_url, project, {"bundleId": "posts-" + uuid.uuid4().hex[:6], "namedQueries": [
        {"name": "latest", "parent": "users/u1", "structuredQuery": query, "limitType": "LAST"}]})
    bundled = {e["documentMetadata"]["name"].rsplit("/documents/", 1)[1]: e["documentMetadata"]
               for e, _ in parse_bundle(data) if "documentMetadata" in e}
    assert set(bundled) == {"users/u1/posts/p3", "users/u1/posts/p4"}, "the last two of u1's posts, nothing of u2"
    assert all(dm.get("queries") == ["latest"] for dm in bundled.values())

    d = Client(base_url, project)
    d.post("disableNetwork")
    assert load_ok(d, data)["documentsLoaded"] == 2
    got = named(d, "latest").json()["bundledQuery"]
    assert got["parent"] == f"projects/{project}/databases/{DB}/documents/users/u1"
    assert got["limitType"] == "LAST"
    assert got["structuredQuery"]["limit"] in (2, {"value": 2})
    with listen_query(d, got["structuredQuery"], parent="users/u1", limitToLast="true") as s:
        [events] = d.sync(s)
        assert len(events) == 1 and meta(events[0]) == (True, False)
        assert field_n(events[0]) == [3, 4], "the last two, in the query's order"


# ---------------------------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------------------------

def three_documents(project, bundle_id="b"):
    """A named query, a document, a missing document and a document: exact sizes for each."""
    rt = "2024-03-01T00:00:00Z"
    elements = [named_query(project, "all", rt, by_n("c"))]
    elements += bundled_doc(doc_name(project, "c/x"), rt, {"n": 1, "city": "São Paulo"},  # multi-byte UTF-8
                            update_time="2024-02-01T00:00:00Z", queries=["all"])
    elements += bundled_doc(doc_name(project, "c/gone"), rt)
    elements += bundled_doc(doc_name(project, "c/y"), rt, {"n": 2, "city": "Zürich"},
                            update_time="2024-02-02T00:00:00Z", queries=["all"])
    return bundle(bundle_id, rt, elements)


def test_load_answers_the_final_progress_with_exact_byte_counts(base_url, project):
    data, total, sizes = three_documents(project)
    assert len(sizes) == 6 and total == sum(sizes)
    assert len(data.decode("utf-8")) < len(data), "lengths count UTF-8 bytes, not characters"
    d = Client(base_url, project)
    d.post("disableNetwork")
    assert load_ok(d, data) == success(3, total)
    assert cached(d, "c/x")[1]["city"] == typed("São Paulo")
    assert cached(d, "c/gone") == (404, "NOT_FOUND")


def test_the_progress_stream(base_url, project):
    data, total, sizes = three_documents(project)
    nq, md_x, doc_x, md_gone, md_y, doc_y = sizes
    d = Client(base_url, project)
    d.post("disableNetwork")
    with SSEStream(f"{d.url}:loadBundle", method="POST", session=BodySession(data)) as s:
        assert s.ok, (s.status_code, s.body)
        events = s.read_to_end(timeout=TIMEOUT)  # SSETimeout if the stream does not end after Success
    assert [e.event for e in events] == ["progress"] * 5, events

    def running(docs, loaded):
        return {"taskState": "Running", "documentsLoaded": docs, "totalDocuments": 3,
                "bytesLoaded": loaded, "totalBytes": total}
    assert [e.json() for e in events] == [
        running(0, 0),
        running(1, nq + md_x + doc_x),               # x counts once its document is read
        running(2, nq + md_x + doc_x + md_gone),     # a missing document counts at its metadata
        running(3, total),
        success(3, total),
    ]
    assert n_of(d, "c/y") == 2


def test_a_bundle_as_the_node_admin_sdk_writes_it(base_url, project):
    """The Node Admin SDK writes timestamps as {seconds, nanos} and safe integers as numbers."""
    def proto_ts(seconds, nanos=0):
        return {"seconds": str(seconds), "nanos": nanos}
    read = proto_ts(1714521600, 500000000)                          # 2024-05-01T00:00:00.5Z
    name = doc_name(project, "c/x")
    elements = [
        {"namedQuery": {"name": "all", "readTime": read, "bundledQuery": {
            "parent": f"projects/{project}/databases/{DB}/documents", "structuredQuery": by_n("c"), "limitType": "FIRST"}}},
        {"documentMetadata": {"name": name, "readTime": read, "exists": True, "queries": ["all"]}},
        {"document": {"name": name, "fields": {"n": {"integerValue": 7}}, "createTime": proto_ts(1711929600),
                      "updateTime": proto_ts(1711929600, 123456000)}},
    ]
    data, total, _ = bundle("admin-" + uuid.uuid4().hex[:6], read, elements)
    d = Client(base_url, project)
    d.post("disableNetwork")
    assert load_ok(d, data) == success(1, total)
    r = d.get("c/x", source="cache")
    assert r.status_code == 200 and r.json()["fields"] == {"n": typed(7)}
    assert ts(r.json()["updateTime"]) == ts("2024-04-01T00:00:00.123456Z")
    got = named(d, "all").json()
    assert ts(got["readTime"]) == ts("2024-05-01T00:00:00.5Z")
    assert isinstance(got["readTime"], str), "answered as RFC 3339, as every Firegate timestamp"


# ---------------------------------------------------------------------------------------------
# What loading changes
# ---------------------------------------------------------------------------------------------

def one_doc_bundle(project, bundle_id, create_time, n, update_time, path="c/x", query_name=None):
    elements = []
    if query_name:
        elements.append(named_query(project, query_name, create_time, by_n("c")))
    elements += bundled_doc(doc_name(project, path), create_time, {"n": n}, update_time=update_time,
                            queries=[query_name] if query_name else None)
    return bundle(bundle_id, create_time, elements)


def test_a_bundle_already_loaded_at_the_same_or_a_newer_time_is_skipped(base_url, project):
    d = Client(base_url, project)
    d.post("disableNetwork")
    bid = "b-" + uuid.uuid4().hex[:6]
    first, total, _ = one_doc_bundle(project, bid, "2024-01-01T00:00:00Z", 1, "2023-12-01T00:00:00Z")
    assert load_ok(d, first) == success(1, total)
    assert n_of(d, "c/x") == 1

    # Same id and createTime, other contents (a newer version, a named query): skipped.
    same, same_total, _ = one_doc_bundle(project, bid, "2024-01-01T00:00:00Z", 2, "2023-12-15T00:00:00Z", query_name="q")
    assert load_ok(d, same) == success(1, same_total)
    assert n_of(d, "c/x") == 1, "a skipped bundle changes nothing"
    assert named(d, "q").status_code == 404
    # An older createTime: skipped too.
    older, total, _ = one_doc_bundle(project, bid, "2023-06-01T00:00:00Z", 3, "2023-12-20T00:00:00Z", query_name="q")
    assert load_ok(d, older) == success(1, total)
    assert n_of(d, "c/x") == 1 and named(d, "q").status_code == 404

    # The SDK decides on the metadata alone: a skipped bundle's later elements are never read,
    # so damage there does not matter (loadBundleImpl closes the reader after hasNewerBundle).
    damaged = same[:-10]
    assert load_ok(d, damaged) == success(1, same_total)
    assert n_of(d, "c/x") == 1

    # Another id is another bundle, whatever its time.
    other, total, _ = one_doc_bundle(project, bid + "-other", "2020-01-01T00:00:00Z", 7, "2019-12-01T00:00:00Z",
                                     path="c/other")
    assert load_ok(d, other) == success(1, total)
    assert n_of(d, "c/other") == 7

    # As a stream, a skipped bundle's task completes at once: only Success.
    with SSEStream(f"{d.url}:loadBundle", method="POST", session=BodySession(same)) as s:
        assert s.ok, (s.status_code, s.body)
        assert [e.json() for e in s.read_to_end(timeout=TIMEOUT)] == [success(1, same_total)]
    assert n_of(d, "c/x") == 1

    # A newer createTime of the same id is applied.
    newer, total, _ = one_doc_bundle(project, bid, "2024-01-02T00:00:00Z", 2, "2023-12-15T00:00:00Z", query_name="q")
    assert load_ok(d, newer) == success(1, total)
    assert n_of(d, "c/x") == 2
    r = named(d, "q")
    assert r.status_code == 200 and ts(r.json()["readTime"]) == ts("2024-01-02T00:00:00Z")

    # A named query of a later bundle replaces the one of that name.
    query = dict(by_n("c"), limit=1)
    data, total, _ = bundle(bid + "-next", "2024-02-01T00:00:00Z",
                            [named_query(project, "q", "2024-02-01T00:00:00Z", query, limit_type="LAST")])
    assert load_ok(d, data) == success(0, total)
    r = named(d, "q")
    assert r.json()["bundledQuery"]["limitType"] == "LAST" and ts(r.json()["readTime"]) == ts("2024-02-01T00:00:00Z")


def cache_from_server(base, project, *paths):
    """A client that read `paths` from the server (so its cache holds the server's versions),
    then went offline. Returns (client, {path: cached document})."""
    for path in paths:
        backend_set(base, project, path, n=1)
    d = Client(base, project)
    docs = {}
    for path in paths:
        r = d.get(path)
        assert r.status_code == 200 and r.headers["Firegate-From-Cache"] == "false", r.text
        docs[path] = r.json()
    d.post("disableNetwork")
    return d, docs


def test_a_newer_bundled_version_wins_and_an_older_one_is_ignored(base_url, project):
    d, docs = cache_from_server(base_url, project, "c/a", "c/b")
    rt = shifted(max(docs["c/a"]["updateTime"], docs["c/b"]["updateTime"], key=ts), seconds=1)
    elements = bundled_doc(docs["c/a"]["name"], rt, {"n": 2}, create_time=docs["c/a"]["createTime"],
                           update_time=shifted(docs["c/a"]["updateTime"], milliseconds=1))
    elements += bundled_doc(docs["c/b"]["name"], rt, {"n": 2}, create_time=shifted(docs["c/b"]["createTime"], seconds=-2),
                            update_time=shifted(docs["c/b"]["updateTime"], seconds=-1))
    data, total, _ = bundle("b-" + uuid.uuid4().hex[:6], rt, elements)
    assert load_ok(d, data) == success(2, total), "an ignored document still counts as loaded"
    assert n_of(d, "c/a") == 2, "newer than the cached version: the bundle's"
    assert n_of(d, "c/b") == 1, "older than the cached version: ignored"
    r = d.get("c/a", source="cache")
    assert ts(r.json()["updateTime"]) == ts(docs["c/a"]["updateTime"]) + timedelta(milliseconds=1)


def test_a_missing_document_deletes_an_older_cached_version_only(base_url, project):
    d, docs = cache_from_server(base_url, project, "c/a", "c/b")
    rt_a = shifted(docs["c/a"]["updateTime"], milliseconds=1)
    rt_b = shifted(docs["c/b"]["updateTime"], seconds=-1)
    # Two bundles: one document's missing-version must be read after, the other's before, the cached version.
    data, total, _ = bundle("a-" + uuid.uuid4().hex[:6], rt_a, bundled_doc(docs["c/a"]["name"], rt_a))
    assert load_ok(d, data) == success(1, total)
    data, total, _ = bundle("b-" + uuid.uuid4().hex[:6], rt_b, bundled_doc(docs["c/b"]["name"], rt_b))
    assert load_ok(d, data) == success(1, total)
    assert cached(d, "c/a") == (404, "NOT_FOUND"), "known not to exist since after the cached version"
    assert n_of(d, "c/b") == 1, "a deletion read before the cached version is outdated"


def test_an_open_listener_sees_the_bundle_and_a_document_the_server_never_confirmed(base_url, project):
    backend_set(base_url, project, "c/a", n=1)
    d = Client(base_url, project)
    with d.listen("c", includeMetadataChanges="true") as s:
        [events] = d.sync(s)
        assert [meta(e) for e in events] == [(False, False)] and names(events[0]) == ["a"]
        d.gates(holdWatch=True)  # from here the client hears nothing from the server until released
        backend_set(base_url, project, "c/a", n=2)
        backend_set(base_url, project, "c/b", n=1)
        data = build_ok(base_url, project, {"bundleId": "b-" + uuid.uuid4().hex[:6], "documents": ["c/a", "c/b"]})
        r = requests.delete(f"{base_url}{docs_path(project)}/c/b", timeout=TIMEOUT)  # the server will not confirm b
        assert r.status_code == 200, r.text
        assert load_ok(d, data)["documentsLoaded"] == 2
        [events] = d.sync(s)
        assert events, "loading a bundle raises a snapshot"
        first = events[0]
        assert names(first) == ["a", "b"] and field_n(first) == [2, 1]
        assert {(c["type"], c["document"]["name"].rsplit("/", 1)[1]) for c in first["changes"]} == \
            {("modified", "a"), ("added", "b")}
        assert meta(first) == (True, False), "b is in limbo: the synced query is from cache until the server answers"
        # Let the server answer: b does not exist, a is what the bundle said.
        d.gates(holdWatch=False)
        last = wait_for(s, lambda snap: meta(snap) == (False, False), "the limbo document resolved")
        assert names(last) == ["a"] and field_n(last) == [2]


def test_a_bundled_document_the_server_never_had_stays_in_limbo_until_the_server_answers(base_url, project):
    """The SDK's spec test "Newer docs from bundles might lead to limbo doc", then its resolution."""
    d = Client(base_url, project)
    with d.listen("c", includeMetadataChanges="true") as s:
        [events] = d.sync(s)
        assert [meta(e) for e in events] == [(False, False)] and names(events[0]) == []
        data, _, _ = bundle("b-" + uuid.uuid4().hex[:6], "2024-01-01T00:00:00Z",
                            bundled_doc(doc_name(project, "c/ghost"), "2024-01-01T00:00:00Z", {"n": 1},
                                        update_time="2023-12-01T00:00:00Z"))
        assert load_ok(d, data)["documentsLoaded"] == 1
        first = wait_for(s, lambda snap: True, "the snapshot of the load")
        assert names(first) == ["ghost"] and meta(first) == (True, False)
        # The limbo lookup finds nothing on the server: the document goes, the query is in sync again.
        last = wait_for(s, lambda snap: meta(snap) == (False, False), "the limbo document resolved")
        assert names(last) == []


# ---------------------------------------------------------------------------------------------
# Refused bundles
# ---------------------------------------------------------------------------------------------

GOOD_TIME = "2024-05-01T00:00:00Z"


def good_parts(project, database=DB, project_of_doc=None):
    name = doc_name(project_of_doc or project, "c/x", database)
    return [named_query(project, "nq", GOOD_TIME, by_n("c"))] + \
        bundled_doc(name, GOOD_TIME, {"n": 1}, update_time="2024-04-01T00:00:00Z", queries=["nq"])


def malformed(case, project, bid):
    meta_only = lambda parts: bundle(bid, GOOD_TIME, parts)[0]  # noqa: E731
    good = meta_only(good_parts(project))
    nq, md, doc = (element(p) for p in good_parts(project))
    head = good[:len(good) - len(nq) - len(md) - len(doc)]  # the metadata element
    doc_json = json.dumps(good_parts(project)[2], separators=(",", ":"), ensure_ascii=False).encode()
    return {
        "empty body": b"",
        "no length prefix": head + nq + md + b"NaN" + doc_json,
        "length prefix past the end": head + nq + md + str(len(doc_json) + 40).encode() + doc_json,
        "length prefix too short": head + nq + md + str(len(doc_json) - 5).encode() + doc_json,
        "not JSON": head + nq + md + str(len(doc_json)).encode() + b"{" + b"x" * (len(doc_json) - 1),
        "truncated": good[:-10],
        "metadata not first": nq + head + md + doc,
        "another project's document": meta_only(good_parts(project, project_of_doc="other-project")),
        "another database's document": meta_only(good_parts(project, database="other-db")),
        "a document without its metadata": meta_only([good_parts(project)[0], good_parts(project)[2]]),
    }[case]


MALFORMED = ["empty body", "no length prefix", "length prefix past the end", "length prefix too short", "not JSON",
             "truncated", "metadata not first", "another project's document", "another database's document",
             "a document without its metadata"]


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_bundle_is_400_and_changes_nothing(base_url, project, case):
    d = Client(base_url, project)
    d.post("disableNetwork")
    bid = "b-" + uuid.uuid4().hex[:6]
    r = load(d, malformed(case, project, bid))
    assert_google_error(r, 400, "INVALID_ARGUMENT")
    assert cached(d, "c/x") == (503, "UNAVAILABLE"), "no document applied"
    assert named(d, "nq").status_code == 404, "no named query saved"
    # Nor was the bundle recorded as loaded: the good bundle of the same id and time applies.
    data, total, _ = bundle(bid, GOOD_TIME, good_parts(project))
    assert load_ok(d, data) == success(1, total)
    assert n_of(d, "c/x") == 1 and named(d, "nq").status_code == 200


def test_an_unknown_named_query_is_404(base_url, project):
    d = Client(base_url, project)
    assert_google_error(named(d, "never-loaded"), 404, "NOT_FOUND")
    d.post("disableNetwork")
    data, _, _ = bundle("b-" + uuid.uuid4().hex[:6], GOOD_TIME, good_parts(project))
    load_ok(d, data)
    assert named(d, "nq").status_code == 200
    assert_google_error(named(d, "NQ"), 404, "NOT_FOUND")


@pytest.mark.parametrize("body", [
    {"documents": ["c/x"]},                                                        # no bundleId
    {"bundleId": "", "documents": ["c/x"]},
    {"bundleId": "b", "documents": ["c"]},                                         # a collection, not a document
    {"bundleId": "b", "documents": "c/x"},
    {"bundleId": "b", "namedQueries": [{"structuredQuery": {"from": [{"collectionId": "c"}]}}]},   # no name
    {"bundleId": "b", "namedQueries": [{"name": "q"}]},                            # no query
    {"bundleId": "b", "namedQueries": [{"name": "q", "structuredQuery": {"from": "c"}}]},
    {"bundleId": "b", "namedQueries": [{"name": "q", "structuredQuery": {"from": [{"collectionId": "c"}]},
                                        "limitType": "MIDDLE"}]},
    {"bundleId": "b", "namedQueries": [{"name": "q", "parent": "c", "structuredQuery": {"from": [{"collectionId": "c"}]}}]},
], ids=["no bundleId", "empty bundleId", "collection path", "documents not a list", "query without name",
        "no structuredQuery", "bad structuredQuery", "bad limitType", "parent not a document"])
def test_a_bad_build_request_is_400(base_url, project, body):
    assert_google_error(build(base_url, project, body), 400, "INVALID_ARGUMENT")


def test_a_build_request_that_is_not_json_is_400(base_url, project):
    r = requests.post(f"{base_url}/emulator/v1/projects/{project}/databases/{DB}:bundle", data="{not json",
                      timeout=TIMEOUT)
    assert_google_error(r, 400, "INVALID_ARGUMENT")


# ---------------------------------------------------------------------------------------------
# Restarts
# ---------------------------------------------------------------------------------------------

def test_a_persistent_client_keeps_named_queries_and_bundle_metadata_across_restart(base_url, project):
    bid = "b-" + uuid.uuid4().hex[:6]
    data, total, _ = one_doc_bundle(project, bid, "2024-01-01T00:00:00Z", 1, "2023-12-01T00:00:00Z", query_name="q")
    changed, changed_total, _ = one_doc_bundle(project, bid, "2024-01-01T00:00:00Z", 5, "2023-12-31T00:00:00Z",
                                               query_name="q")

    p = Client(base_url, project, persistence="persistent")
    p.post("disableNetwork")
    assert load_ok(p, data) == success(1, total)
    before = named(p, "q").json()
    assert p.post("restart").json() == {"lostWrites": 0}
    r = named(p, "q")
    assert r.status_code == 200 and r.json() == before
    assert n_of(p, "c/x") == 1
    assert load_ok(p, changed)["taskState"] == "Success"
    assert n_of(p, "c/x") == 1, "the bundle's metadata survived: the same bundle is skipped"

    m = Client(base_url, project, persistence="memory")
    m.post("disableNetwork")
    assert load_ok(m, data) == success(1, total)
    m.post("restart")
    assert named(m, "q").status_code == 404, "a memory cache forgets its named queries"
    assert load_ok(m, changed) == success(1, changed_total)
    assert n_of(m, "c/x") == 5, "and which bundles it loaded"


def test_named_queries_survive_a_server_restart(tmp_path):
    project = "p-" + uuid.uuid4().hex[:8]
    bid = "b-" + uuid.uuid4().hex[:6]
    data, _, _ = one_doc_bundle(project, bid, "2024-01-01T00:00:00Z", 1, "2023-12-01T00:00:00Z", query_name="q")
    proc, base = start_server(data_dir=tmp_path)
    try:
        p = Client(base, project, persistence="persistent", cid="bundled")
        p.post("disableNetwork")
        load_ok(p, data)
        before = named(p, "q").json()
    finally:
        stop_server(proc)
    proc, base = start_server(data_dir=tmp_path)
    try:
        p = Client(base, project, persistence="persistent", cid="bundled")
        p.post("disableNetwork")
        r = named(p, "q")
        assert r.status_code == 200 and r.json() == before
        changed, _, _ = one_doc_bundle(project, bid, "2024-01-01T00:00:00Z", 5, "2023-12-31T00:00:00Z", query_name="q")
        assert load_ok(p, changed)["taskState"] == "Success"
        assert n_of(p, "c/x") == 1, "skipped: the bundle's metadata was persisted"
    finally:
        stop_server(proc)


# ---------------------------------------------------------------------------------------------
# The documentation's example, run as written
# ---------------------------------------------------------------------------------------------

EDGE_DOC = Path(__file__).resolve().parents[2] / "docs" / "edge-clients.md"


def doc_blocks():
    text = EDGE_DOC.read_text(encoding="utf-8")
    section = text.split("## Bundles: seed a client's cache\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def test_the_documented_bundle_example_runs_as_written(base_url, tmp_path):
    run = uuid.uuid4().hex[:8]

    def adapt(script):
        script = script.replace("H=http://127.0.0.1:8080", f"H={base_url}")
        script = script.replace("demo-project", f"docs-{run}")
        return re.sub(r"/clients/([A-Z])\b", rf"/clients/\1-{run}", script)

    blocks = doc_blocks()
    assert len(blocks) >= 2, "the section has the walk-through block and the listener block"
    walk = subprocess.run(["bash", "-euo", "pipefail", "-c", adapt(blocks[0])], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert walk.returncode == 0, walk.stderr
    out = walk.stdout
    assert '{"metadata":{' in out and '"cities-v1"' in out, out
    progress = [json.loads(p) for p in re.findall(r'\{[^{}]*"taskState"[^{}]*\}', out)]
    assert progress and all(p["taskState"] == "Success" and p["documentsLoaded"] == p["totalDocuments"] == 4
                            for p in progress), out
    assert "Firegate-From-Cache: true" in out and "Los Angeles" in out
    assert '"status":"NOT_FOUND"' in out and '"name":"big-cities"' in out
    # The listener "in a second terminal", for three seconds, with the walk-through's variables.
    definitions = "\n".join(line for line in adapt(blocks[0]).splitlines() if re.match(r"^[A-Z]+=", line))
    listener = adapt(blocks[1]).replace("curl -N ", "curl -sN --max-time 3 ")
    heard = subprocess.run(["bash", "-uo", "pipefail", "-c", definitions + "\n" + listener],
                           cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert '"fromCache":true' in heard.stdout and "New York" in heard.stdout, heard.stdout + heard.stderr
    # The progress stream and the errors, with the bundle the walk-through wrote.
    assert len(blocks) == 4, "walk-through, listener, progress, errors"
    rest = subprocess.run(["bash", "-euo", "pipefail", "-c", definitions + "\n" + adapt(blocks[2]) + adapt(blocks[3])],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert rest.returncode == 0, rest.stderr
    assert rest.stdout.count("event: progress") == 6, rest.stdout  # Running 0, four documents, Success
    assert '"taskState":"Success"' in rest.stdout
    assert '"status":"INVALID_ARGUMENT"' in rest.stdout and '"status":"NOT_FOUND"' in rest.stdout, rest.stdout
