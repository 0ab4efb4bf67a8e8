"""A small query matcher over plain JSON documents: whether a document can belong to a spec
query's result. `classify` uses it to find watch documents that do not match their target (those
tests need a scripted watch: a backend write cannot send a document a query does not hold)."""
from __future__ import annotations

from typing import Optional

from .values import is_doc_path

_MISSING = object()


def get_field(value: dict, path: str):
    cur = value
    for seg in path.split("."):
        if not isinstance(cur, dict) or seg not in cur:
            return _MISSING
        cur = cur[seg]
    return cur


def _type_class(v):
    if v is None:
        return 0
    if isinstance(v, bool):
        return 1
    if isinstance(v, (int, float)):
        return 2
    if isinstance(v, str):
        return 3
    if isinstance(v, list):
        return 4
    return 5


def _eq(a, b) -> bool:
    return _type_class(a) == _type_class(b) and a == b


def _filter_matches(v, op: str, want) -> Optional[bool]:
    """Plain-JSON evaluation of a spec filter (None: not evaluated)."""
    if op == "==":
        return v is not _MISSING and _eq(v, want)
    if op == "!=":
        return v is not _MISSING and v is not None and not _eq(v, want)
    if op in ("<", "<=", ">", ">="):
        if v is _MISSING or _type_class(v) != _type_class(want) or _type_class(v) not in (2, 3):
            return False
        return {"<": v < want, "<=": v <= want, ">": v > want, ">=": v >= want}[op]
    if op == "array-contains":
        return isinstance(v, list) and any(_eq(x, want) for x in v)
    if op == "array-contains-any":
        return isinstance(v, list) and any(_eq(x, w) for x in v for w in want)
    if op == "in":
        return v is not _MISSING and any(_eq(v, w) for w in want)
    if op == "not-in":
        return v is not _MISSING and v is not None and not any(_eq(v, w) for w in want)
    return None


def doc_matches(q, key: str, value: dict) -> bool:
    """Whether a document (plain JSON value) can belong to the spec query's result, ignoring
    the limit: the check a real backend makes before it sends a document for a target."""
    if isinstance(q, str):
        q = {"path": q}
    path = (q.get("path") or "").strip("/")
    segs = key.split("/")
    if q.get("collectionGroup"):
        if len(segs) < 2 or segs[-2] != q["collectionGroup"]:
            return False
        if path and not key.startswith(path + "/"):
            return False
    elif is_doc_path(path):
        return key == path
    elif "/".join(segs[:-1]) != path:
        return False
    for fpath, op, want in q.get("filters") or []:
        if fpath == "__name__":
            continue
        ok = _filter_matches(get_field(value, fpath), op, want)
        if ok is False:
            return False
    for fpath, _ in q.get("orderBys") or []:
        if fpath != "__name__" and get_field(value, fpath) is _MISSING:
            return False
    return True
