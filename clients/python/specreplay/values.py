"""Spec JSON → Firestore REST: typed values, document names, structured queries and patches;
typed values back to canonical (comparable) and plain (readable) forms.

`to_value` is the one Python → Firestore value converter of clients/python: docs_support.py
re-exports it (as `enc`, with the marker types `Ref`, `Ts`, `Geo`, `Raw`) for the REST tests.
"""
from __future__ import annotations

import base64
import json
import math
import calendar
import time

from .errors import HarnessError, UnsupportedValue


class Ref(str):
    """A referenceValue (full resource name)."""


class Ts(str):
    """A timestampValue."""


class Geo(tuple):
    """A geoPointValue (latitude, longitude)."""

    def __new__(cls, lat, lng):
        return super().__new__(cls, (lat, lng))


class Raw(dict):
    """A Value given as literal JSON."""


def to_value(v):
    """Python value → typed Firestore REST value, as a careful REST client writes it. Plain JSON
    (all a spec holds) maps as the JS test helper `wrap` parses it; the marker types, bytes and
    tuples are for the REST tests. An empty array or map is written without its `values` /
    `fields` (proto3 JSON leaves empty lists out, and the REST tests compare stored documents
    with what they wrote)."""
    # Marker and str/tuple subclasses first: they would match the plain types below.
    if isinstance(v, Raw):
        return dict(v)
    if v is None:
        return {"nullValue": None}
    if isinstance(v, bool):
        return {"booleanValue": v}
    if isinstance(v, int):
        return {"integerValue": str(v)}
    if isinstance(v, float):
        if math.isnan(v):
            return {"doubleValue": "NaN"}
        if math.isinf(v):
            return {"doubleValue": "Infinity" if v > 0 else "-Infinity"}
        return {"doubleValue": v}
    if isinstance(v, Ref):
        return {"referenceValue": str(v)}
    if isinstance(v, Ts):
        return {"timestampValue": str(v)}
    if isinstance(v, Geo):
        return {"geoPointValue": {"latitude": v[0], "longitude": v[1]}}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, (bytes, bytearray)):
        return {"bytesValue": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [to_value(x) for x in v]}} if v else {"arrayValue": {}}
    if isinstance(v, dict):
        return {"mapValue": {"fields": to_fields(v)}} if v else {"mapValue": {}}
    raise UnsupportedValue(f"cannot encode {v!r} as a Firestore value")


def to_fields(obj: dict) -> dict:
    return {k: to_value(v) for k, v in obj.items()}


def spec_time(version) -> str:
    """A spec version (microseconds since the epoch) as an RFC 3339 timestamp."""
    v = int(version or 0)
    secs, micros = divmod(v, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{micros:06d}Z"


def time_micros(text) -> int:
    """An RFC 3339 timestamp from the server as microseconds since the epoch (0 when absent)."""
    if not text:
        return 0
    whole, _, rest = text.rstrip("Z").partition(".")
    secs = calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S"))
    return secs * 1_000_000 + int((rest + "000000")[:6])


def _num(x, kind):
    if kind == "int":
        return int(x)
    if isinstance(x, str):
        if x == "NaN":
            return "NaN"
        return float(x)
    if isinstance(x, float) and math.isnan(x):
        return "NaN"
    return float(x)


def canon_value(v):
    """Typed Firestore value → hashable canonical form (for equality)."""
    if not isinstance(v, dict) or len(v) != 1:
        return ("?", json.dumps(v, sort_keys=True))
    (k, x), = v.items()
    if k == "nullValue":
        return ("null",)
    if k == "booleanValue":
        return ("bool", bool(x))
    if k == "integerValue":
        return ("int", _num(x, "int"))
    if k == "doubleValue":
        return ("double", _num(x, "double"))
    if k == "stringValue":
        return ("str", x)
    if k == "arrayValue":
        return ("array", tuple(canon_value(e) for e in (x or {}).get("values", []) or []))
    if k == "mapValue":
        return ("map", canon_fields((x or {}).get("fields", {}) or {}))
    return (k, json.dumps(x, sort_keys=True))


def canon_fields(fields: dict):
    return tuple(sorted((k, canon_value(v)) for k, v in (fields or {}).items()))


def plain_value(v):
    """Typed Firestore value → plain JSON (for readable messages)."""
    if not isinstance(v, dict) or len(v) != 1:
        return v
    (k, x), = v.items()
    if k == "nullValue":
        return None
    if k == "integerValue":
        return int(x)
    if k == "doubleValue":
        return x if isinstance(x, str) else float(x)
    if k == "arrayValue":
        return [plain_value(e) for e in (x or {}).get("values", []) or []]
    if k == "mapValue":
        return plain_fields((x or {}).get("fields", {}) or {})
    if k in ("booleanValue", "stringValue"):
        return x
    return {k: x}


def plain_fields(fields: dict):
    return {k: plain_value(v) for k, v in (fields or {}).items()}


OPS = {
    "==": "EQUAL", "!=": "NOT_EQUAL", "<": "LESS_THAN", "<=": "LESS_THAN_OR_EQUAL",
    ">": "GREATER_THAN", ">=": "GREATER_THAN_OR_EQUAL", "array-contains": "ARRAY_CONTAINS",
    "array-contains-any": "ARRAY_CONTAINS_ANY", "in": "IN", "not-in": "NOT_IN",
}


def is_doc_path(path: str) -> bool:
    segs = [s for s in path.split("/") if s]
    return len(segs) > 0 and len(segs) % 2 == 0


def query_key(q) -> str:
    """Canonical id of a spec query (for grouping events per query)."""
    if isinstance(q, str):
        q = {"path": q, "filters": [], "orderBys": []}
    return json.dumps(q, sort_keys=True, separators=(",", ":"))


def query_label(q) -> str:
    if isinstance(q, str):
        return q
    s = q.get("path") or ""
    if q.get("collectionGroup"):
        s = (s + " " if s else "") + f"group:{q['collectionGroup']}"
    for f in q.get("filters") or []:
        s += f" where {f[0]} {f[1]} {json.dumps(f[2])}"
    for o in q.get("orderBys") or []:
        s += f" orderBy {o[0]} {o[1]}"
    if q.get("limit"):
        s += f" {'limitToLast' if q.get('limitType') == 'LimitToLast' else 'limit'} {q['limit']}"
    return s


class Names:
    def __init__(self, project: str, database: str = "(default)"):
        self.project = project
        self.database = database
        self.root = f"projects/{project}/databases/{database}/documents"

    def name(self, key: str) -> str:
        return f"{self.root}/{key}"

    def key(self, name: str) -> str:
        prefix = self.root + "/"
        if name.startswith(prefix):
            return name[len(prefix):]
        marker = "/documents/"
        i = name.find(marker)
        return name[i + len(marker):] if i >= 0 else name


def structured_query(q: dict, names: Names):
    """Spec query → (parent path under documents, structuredQuery JSON, limitToLast?)."""
    path = (q.get("path") or "").strip("/")
    if q.get("collectionGroup"):
        parent = path
        frm = {"collectionId": q["collectionGroup"], "allDescendants": True}
    else:
        segs = path.split("/")
        parent = "/".join(segs[:-1])
        frm = {"collectionId": segs[-1]}
    sq: dict = {"from": [frm]}
    filters = []
    for fpath, op, value in q.get("filters") or []:
        if op in ("==", "!=") and value is None:
            filters.append({"unaryFilter": {"op": "IS_NULL" if op == "==" else "IS_NOT_NULL",
                                            "field": {"fieldPath": fpath}}})
        elif op in ("==", "!=") and isinstance(value, float) and math.isnan(value):
            filters.append({"unaryFilter": {"op": "IS_NAN" if op == "==" else "IS_NOT_NAN",
                                            "field": {"fieldPath": fpath}}})
        else:
            if op not in OPS:
                raise HarnessError(f"unsupported filter op {op!r}")
            if fpath == "__name__" and isinstance(value, str):
                tv = {"referenceValue": names.name(value)}
            elif fpath == "__name__" and isinstance(value, list):
                tv = {"arrayValue": {"values": [{"referenceValue": names.name(x)} for x in value]}}
            else:
                tv = to_value(value)
            filters.append({"fieldFilter": {"field": {"fieldPath": fpath}, "op": OPS[op], "value": tv}})
    if len(filters) == 1:
        sq["where"] = filters[0]
    elif filters:
        sq["where"] = {"compositeFilter": {"op": "AND", "filters": filters}}
    if q.get("orderBys"):
        sq["orderBy"] = [{"field": {"fieldPath": f},
                          "direction": "DESCENDING" if d == "desc" else "ASCENDING"}
                         for f, d in q["orderBys"]]
    if q.get("limit"):
        sq["limit"] = int(q["limit"])
    return parent, sq, q.get("limitType") == "LimitToLast" and bool(q.get("limit"))


def patch_body(names: Names, key: str, patch: dict) -> dict:
    """userPatch → Firestore Write (dotted keys are field paths; '<DELETE>' deletes a field)."""
    fields: dict = {}
    mask = []
    for k, v in patch.items():
        mask.append(k)
        if v == "<DELETE>":
            continue
        segs = k.split(".")
        cur = fields
        for s in segs[:-1]:
            node = cur.setdefault(s, {"mapValue": {"fields": {}}})
            cur = node["mapValue"]["fields"]
        cur[segs[-1]] = to_value(v)
    return {"update": {"name": names.name(key), "fields": fields},
            "updateMask": {"fieldPaths": sorted(mask)},
            "currentDocument": {"exists": True}}
