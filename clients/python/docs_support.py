"""Helpers for the documents-backend (Firestore REST v1) conformance tests.

Not a test module itself: `test_documents_*.py` import it. Everything goes through plain HTTP with
`requests`, exactly as a REST client would talk to Firestore.
"""
import base64
import calendar
import re
from datetime import datetime, timedelta, timezone

import requests

# clients/python has one Python -> Firestore value converter, kept with the spec replay's other
# value code; these are its names here (re-exported for the test modules).
from specreplay.values import Geo, Raw, Ref, Ts  # noqa: F401
from specreplay.values import to_fields as fields  # noqa: F401
from specreplay.values import to_value as enc  # noqa: F401

# Proto3 JSON: Z-normalised, 0, 3, 6 or 9 fractional digits.
TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3}|\.\d{6}|\.\d{9})?Z$")
AUTO_ID_RE = re.compile(r"^[A-Za-z0-9]{20}$")
ERROR_KEYS = {"code", "message", "status", "details"}
RUN_QUERY_KEYS = {"document", "readTime", "skippedResults", "done", "transaction"}


# --------------------------------------------------------------------------------------------
# Timestamps
# --------------------------------------------------------------------------------------------

def parse_ts(s):
    """RFC 3339 string -> (epoch seconds, nanos)."""
    m = re.match(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$", s)
    assert m, f"not an RFC 3339 timestamp: {s!r}"
    y, mo, d, h, mi, se = (int(g) for g in m.groups()[:6])
    secs = calendar.timegm((y, mo, d, h, mi, se, 0, 0, 0))
    nanos = int((m.group(7) or "").ljust(9, "0"))
    off = m.group(8)
    if off != "Z":
        sign = 1 if off[0] == "+" else -1
        secs -= sign * (int(off[1:3]) * 3600 + int(off[4:6]) * 60)
    return secs, nanos


def fmt_ts(secs, nanos=0):
    """(epoch seconds, nanos) -> canonical proto3 JSON timestamp (0/3/6/9 digits)."""
    base = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=secs)
    out = base.strftime("%Y-%m-%dT%H:%M:%S")
    if nanos:
        if nanos % 1_000_000 == 0:
            out += ".%03d" % (nanos // 1_000_000)
        elif nanos % 1000 == 0:
            out += ".%06d" % (nanos // 1000)
        else:
            out += ".%09d" % nanos
    return out + "Z"


def assert_ts(s):
    assert isinstance(s, str) and TS_RE.match(s), f"bad timestamp {s!r}"
    return s


def ts_key(s):
    return parse_ts(s)


def ts_minus_micros(s, micros):
    secs, nanos = parse_ts(s)
    total = secs * 1_000_000_000 + nanos - micros * 1000
    return fmt_ts(total // 1_000_000_000, total % 1_000_000_000)


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------

# `enc` (Python value -> Firestore Value JSON), `fields` and the marker types Ref, Ts, Geo and Raw
# are imported above from specreplay/values.py.


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------

def error_of(r):
    try:
        body = r.json()
    except ValueError:
        raise AssertionError(f"error response is not JSON: {r.status_code} {r.text[:300]!r}")
    # Streaming methods may wrap the error in a one-element array (real Firestore does both).
    if isinstance(body, list):
        assert len(body) == 1, body
        body = body[0]
    assert isinstance(body, dict) and set(body) == {"error"}, body
    err = body["error"]
    assert set(err) <= ERROR_KEYS, err
    assert isinstance(err.get("message"), str) and err["message"], err
    return err


def assert_error(r, code, status):
    """Checks an error response: HTTP status and `{"error":{"code","message","status"}}`."""
    assert r.status_code == code, f"expected {code} {status}, got {r.status_code}: {r.text[:500]}"
    err = error_of(r)
    assert err["code"] == code, err
    assert err["status"] == status, err
    return err


def assert_client_error(r, allowed):
    """An error whose exact status is not pinned down: one of `allowed` [(code, status)]."""
    assert 400 <= r.status_code < 500, f"expected a 4xx, got {r.status_code}: {r.text[:500]}"
    err = error_of(r)
    assert (r.status_code, err["status"]) in allowed, (r.status_code, err)
    assert err["code"] == r.status_code
    return err


def ok(r):
    assert r.status_code == 200, f"{r.request.method} {r.request.url} -> {r.status_code}: {r.text[:800]}"
    return r.json()


# --------------------------------------------------------------------------------------------
# Writes and queries as data
# --------------------------------------------------------------------------------------------

def w_update(name, flds=None, mask=None, transforms=None, exists=None, update_time=None, raw_fields=None):
    w = {"update": {"name": name, "fields": raw_fields if raw_fields is not None else fields(flds or {})}}
    if mask is not None:
        w["updateMask"] = {"fieldPaths": list(mask)}
    if transforms:
        w["updateTransforms"] = list(transforms)
    pre = precondition(exists, update_time)
    if pre:
        w["currentDocument"] = pre
    return w


def w_delete(name, exists=None, update_time=None):
    w = {"delete": name}
    pre = precondition(exists, update_time)
    if pre:
        w["currentDocument"] = pre
    return w


def w_transform(name, transforms, exists=None):
    w = {"transform": {"document": name, "fieldTransforms": list(transforms)}}
    pre = precondition(exists, None)
    if pre:
        w["currentDocument"] = pre
    return w


def precondition(exists=None, update_time=None):
    if exists is not None:
        return {"exists": exists}
    if update_time is not None:
        return {"updateTime": update_time}
    return None


def t_server_time(path):
    return {"fieldPath": path, "setToServerValue": "REQUEST_TIME"}


def t_increment(path, v):
    return {"fieldPath": path, "increment": enc(v)}


def t_maximum(path, v):
    return {"fieldPath": path, "maximum": enc(v)}


def t_minimum(path, v):
    return {"fieldPath": path, "minimum": enc(v)}


def t_append(path, values):
    return {"fieldPath": path, "appendMissingElements": {"values": [enc(v) for v in values]}}


def t_remove(path, values):
    return {"fieldPath": path, "removeAllFromArray": {"values": [enc(v) for v in values]}}


def ff(path, op, value):
    return {"fieldFilter": {"field": {"fieldPath": path}, "op": op, "value": enc(value)}}


def uf(path, op):
    return {"unaryFilter": {"op": op, "field": {"fieldPath": path}}}


def and_(*filters):
    return {"compositeFilter": {"op": "AND", "filters": list(filters)}}


def or_(*filters):
    return {"compositeFilter": {"op": "OR", "filters": list(filters)}}


def order(path, direction="ASCENDING"):
    return {"field": {"fieldPath": path}, "direction": direction}


def sq(collection, all_descendants=None, where=None, order_by=None, start_at=None, end_at=None,
       offset=None, limit=None, select=None):
    frm = {"collectionId": collection}
    if all_descendants is not None:
        frm["allDescendants"] = all_descendants
    q = {"from": [frm]}
    if select is not None:
        q["select"] = {"fields": [{"fieldPath": p} for p in select]}
    if where is not None:
        q["where"] = where
    if order_by is not None:
        q["orderBy"] = list(order_by)
    if start_at is not None:
        q["startAt"] = start_at
    if end_at is not None:
        q["endAt"] = end_at
    if offset is not None:
        q["offset"] = offset
    if limit is not None:
        q["limit"] = limit
    return q


def cursor(values, before):
    return {"values": [enc(v) for v in values], "before": before}


# --------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------

class Fs:
    """A thin Firestore REST v1 client over `requests` for one project."""

    def __init__(self, base_url, project, database="(default)", session=None):
        self.base = base_url
        self.project = project
        self.database = database
        self.db = f"projects/{project}/databases/{database}"
        self.root = f"{self.db}/documents"
        self.s = session or requests.Session()

    # names and urls
    def name(self, path):
        return f"{self.root}/{path}"

    def ref(self, path):
        return Ref(self.name(path))

    def url(self, resource):
        return f"{self.base}/v1/{resource}"

    def doc_url(self, path):
        return self.url(self.name(path))

    def parent_name(self, parent):
        return self.root if parent is None else self.name(parent)

    # single-document methods
    def get(self, path, mask=None, transaction=None, read_time=None, **params):
        if mask is not None:
            params["mask.fieldPaths"] = list(mask)
        if transaction is not None:
            params["transaction"] = transaction
        if read_time is not None:
            params["readTime"] = read_time
        return self.s.get(self.doc_url(path), params=params, timeout=30)

    def create(self, collection_path, flds=None, doc_id=None, mask=None, body=None):
        params = {}
        if doc_id is not None:
            params["documentId"] = doc_id
        if mask is not None:
            params["mask.fieldPaths"] = list(mask)
        if body is None:
            body = {"fields": fields(flds or {})}
        return self.s.post(self.url(self.name(collection_path)), params=params, json=body, timeout=30)

    def patch(self, path, flds=None, update_mask=None, mask=None, exists=None, update_time=None,
              raw_fields=None):
        params = {}
        if update_mask is not None:
            params["updateMask.fieldPaths"] = list(update_mask)
        if mask is not None:
            params["mask.fieldPaths"] = list(mask)
        if exists is not None:
            params["currentDocument.exists"] = "true" if exists else "false"
        if update_time is not None:
            params["currentDocument.updateTime"] = update_time
        body = {"fields": raw_fields if raw_fields is not None else fields(flds or {})}
        return self.s.patch(self.doc_url(path), params=params, json=body, timeout=30)

    def delete(self, path, exists=None, update_time=None):
        params = {}
        if exists is not None:
            params["currentDocument.exists"] = "true" if exists else "false"
        if update_time is not None:
            params["currentDocument.updateTime"] = update_time
        return self.s.delete(self.doc_url(path), params=params, timeout=30)

    def list(self, collection_path, **params):
        return self.s.get(self.url(self.name(collection_path)), params=params, timeout=30)

    # database-level methods
    def post(self, resource, body, **kw):
        return self.s.post(self.url(resource), json=body, timeout=kw.pop("timeout", 60), **kw)

    def commit(self, writes, transaction=None, **kw):
        body = {"writes": list(writes)}
        if transaction is not None:
            body["transaction"] = transaction
        return self.post(f"{self.root}:commit", body, **kw)

    def batch_get(self, paths, **extra):
        body = {"documents": [self.name(p) for p in paths]}
        body.update(extra)
        return self.post(f"{self.root}:batchGet", body)

    def begin(self, options=None):
        return self.post(f"{self.root}:beginTransaction", {} if options is None else {"options": options})

    def rollback(self, transaction):
        return self.post(f"{self.root}:rollback", {"transaction": transaction})

    def run_query(self, query, parent=None, **extra):
        body = {"structuredQuery": query}
        body.update(extra)
        return self.post(f"{self.parent_name(parent)}:runQuery", body)

    def run_agg(self, query, aggregations, parent=None, **extra):
        body = {"structuredAggregationQuery": {"structuredQuery": query, "aggregations": aggregations}}
        body.update(extra)
        return self.post(f"{self.parent_name(parent)}:runAggregationQuery", body)

    def list_collection_ids(self, parent=None, **body):
        return self.post(f"{self.parent_name(parent)}:listCollectionIds", body)

    def batch_write(self, writes, headers=None):
        """batchWrite is an admin API: sent as the admin (`owner`) unless told otherwise."""
        return self.post(f"{self.root}:batchWrite", {"writes": list(writes)},
                         headers={"Authorization": "Bearer owner"} if headers is None else headers)

    def reset(self):
        return self.s.delete(f"{self.base}/emulator/v1/projects/{self.project}/databases/{self.database}/documents",
                             timeout=30)

    # conveniences (assert success)
    def set(self, path, flds):
        """Writes a whole document (upsert) and returns the stored Document JSON."""
        return ok(self.patch(path, flds))

    def set_many(self, docs):
        """Writes {path: fields} in one commit; returns the commit response."""
        return ok(self.commit([w_update(self.name(p), f) for p, f in docs.items()]))

    def get_ok(self, path, **kw):
        return ok(self.get(path, **kw))

    def exists(self, path):
        r = self.get(path)
        assert r.status_code in (200, 404), r.text
        return r.status_code == 200

    def query_results(self, query, parent=None, **extra):
        """Runs a query and returns the validated response array."""
        arr = ok(self.run_query(query, parent=parent, **extra))
        check_stream_array(arr, RUN_QUERY_KEYS)
        return arr

    def query_docs(self, query, parent=None, **extra):
        return [e["document"] for e in self.query_results(query, parent=parent, **extra) if "document" in e]

    def query_paths(self, query, parent=None, **extra):
        return [self.rel(d["name"]) for d in self.query_docs(query, parent=parent, **extra)]

    def rel(self, name):
        prefix = self.root + "/"
        assert name.startswith(prefix), name
        return name[len(prefix):]


def new_transaction_of(arr):
    """The transaction a streaming read started (`newTransaction`): set in the first response only."""
    assert "transaction" in arr[0], f"the first response carries the new transaction: {arr[0]}"
    for e in arr[1:]:
        assert "transaction" not in e, e
    tx = arr[0]["transaction"]
    base64.b64decode(tx, validate=True)
    return tx


def check_stream_array(arr, allowed_keys):
    assert isinstance(arr, list) and arr, f"a streaming method answers ONE non-empty JSON array: {arr!r}"
    for e in arr:
        assert isinstance(e, dict), e
        assert set(e) <= allowed_keys, e
        if set(e) == {"transaction"}:
            # RunQueryResponse.transaction: "If set, no other fields will be set in this response."
            assert e is arr[0], "only the first response carries a new transaction"
            continue
        assert_ts(e.get("readTime"))


def check_document(doc, name=None, flds=None):
    """A stored Document: exactly name, [fields], createTime, updateTime."""
    assert set(doc) <= {"name", "fields", "createTime", "updateTime"}, doc
    assert {"name", "createTime", "updateTime"} <= set(doc), doc
    assert_ts(doc["createTime"])
    assert_ts(doc["updateTime"])
    assert ts_key(doc["createTime"]) <= ts_key(doc["updateTime"]), doc
    if name is not None:
        assert doc["name"] == name
    if flds is not None:
        if flds:
            assert doc.get("fields") == flds, doc
        else:
            assert "fields" not in doc, f"an empty document has no 'fields' key: {doc}"
    return doc
