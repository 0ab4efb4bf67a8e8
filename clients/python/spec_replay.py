#!/usr/bin/env python3
"""Replays the Firestore SDK team's JSON spec tests against Firegate's edge clients.

    python3 clients/python/spec_replay.py --base-url http://127.0.0.1:8080 [--file write] [--test NAME] [-v]

Every spec test is a list of steps on one emulated SDK instance (listen, write, watch stream
messages, write acks, network on/off, restart) with the snapshot events the SDK must raise after
each step. The replay maps each test onto one fresh edge client (`/clients/{id}`, DESIGN.md §1.3)
in a fresh project:

* the client's watch and write gates are held for the whole test; `watchEntity` documents become
  plain backend writes (Firestore REST on the same server) at that step and `watchSnapshot` releases
  the watch gate (one consistent snapshot); `writeAck` / `failWrite` release the oldest held write
  (commit + ack, or reject with the status of the gRPC code);
* `userListen` opens an SSE listener (`…:listen?query=…&includeMetadataChanges=…`), `userSet` /
  `userPatch` / `userDelete` go through the client's `documents:commit`;
* after every step `POST /clients/{id}/gates:sync` puts a marker into every open listener stream and
  the events before the marker are the step's events. They are compared the way the JS runner does
  (spec_test_runner.ts `validateExpectedSnapshotEvents`): per query, in order; fromCache and
  hasPendingWrites of the snapshot; the document changes sorted by key with type, key, value and the
  document's pending flag (a spec `metadata` change is a public `modified` change); versions are
  not compared. `expectedState` checks `userCallbacks`, `numOutstandingWrites`, `isShutdown`; the
  watch-protocol internals (active targets, limbo documents, request counts) are dropped.

With a scripted watch (`--watch scripted`, and for the tests only it can map under the default
`--watch auto`) nothing reaches the backend: the client gets `PUT gates {"scriptedWatch":true}`,
every watch step becomes one `POST /clients/{id}/watch` message shaped as the runner's
encodeWatchChange sends it (ack, entity changes, CURRENT, snapshot at a version, existence filter
with its bloom filter, reset, removal with a cause, stream close), `writeAck` is
`gates:releaseWrite {"count":1,"commitTime":<version>}`, spec versions are microseconds since the
epoch, and the project is the spec's `test-project` (its bloom filters hash those names). The
runner's sticky `activeTargets` (id, resume token, purpose), `activeLimboDocs` and
`enqueuedLimboDocs` are then checked against the client state's `watch` after every step.

Without it, two adaptations keep the backend consistent with what the spec's watch stream says:
* when a target listened without a resume token turns CURRENT, documents of its query that watch did
  not send are gone on the server: they are deleted on the backend (the SDK synthesizes deletes);
* a `writeAck` whose documents watch already delivered at the ack's version (watch ahead of the ack)
  also releases the watch gate: the held write reached the backend only at its release, so its
  echo must be delivered for the client to hold the state the spec's SDK holds.

`changeUser` is `PUT /clients/{id}/auth` with the new uid; `addSnapshotsInSyncListener` opens
`GET /clients/{id}/snapshotsInSync` (its events up to each step's sync marker are counted against
`expectedSnapshotsInSyncEvents`, none meaning 0, as the runner does) and
`removeSnapshotsInSyncListener` closes the newest one.

Tests that need what the backend mapping cannot express (existence filters, watch resets and
stream errors, target removal with an error, limbo expectations, snapshots not yet CURRENT while
online, watch versions going backwards, write acks older than the watch's version, watch documents
that do not match their target's query, messages for a re-listened target before the old removal
is acknowledged) run with the scripted watch, as do multi-client tests; bundles are reported as
SKIP with the reason (`classify`). Each mapped test runs with persistence `persistent` (skipping
`eager-gc` tests) and `memory` (skipping `durable-persistence` and, as the SDK's runner does,
multi-client tests).

A multi-client test's instances are tabs of one shared web persistence (`PUT /clients/{id}` with
`sharedWith`, opened hidden at their first step as the runner's fake document is): `clientIndex`
picks the tab a step runs on; each tab has its own listeners, write callbacks, snapshotsInSync
observers and sticky expectations, and its events are read at its own steps (as the runner
drains a client's queue only at that client's steps). `applyClientState` maps to
`:setVisibility` and `:claimPrimary`, `shutdown` to `:terminate`, `clearPersistence` to the
terminated tab's `:clearPersistence`; `isPrimary` and `numActiveClients` are checked against the
tab's `tab` state; `activeTargets` of a secondary tab (or one offline) must be empty, as the
runner checks its own connection. `setIndexConfiguration` is `PUT /clients/{id}/indexes`, and
`indexes` expectations compare collection groups, fields and kinds.

The spec JSON is read from --spec-dir, $FIREGATE_SPEC_DIR, <repo>/conformance/firestore-spec or
<repo>/../shared/conformance/firestore-spec. The last line printed is
`spec replay: N passed, M failed, K skipped`. Exit status: 0 when every mapped run passed, 1
when any failed, 2 on a harness error (a bug here, or the server went away).
"""
from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import sys
import threading
import time
import traceback
import uuid
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from urllib.parse import quote, urlsplit

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sse import SSEClosed, SSEStream, SSETimeout  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SPEC_DIR_CANDIDATES = [
    REPO / "conformance" / "firestore-spec",
    REPO / "clients" / "python" / "firestore-spec",
    # The steering repository's shared/ folder stands beside this repository's clone.
    REPO.parent / "shared" / "conformance" / "firestore-spec",
]

# The files the pytest wrapper replays (the ones with mappable tests).
DEFAULT_FILES = ["write", "listen", "limit", "persistence", "query", "collection", "orderby",
                 "listen_source", "offline"]

MODES = ("persistent", "memory")

GRPC_CODES = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED",
    13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}

# The SDK sends at most this many writes at once; `numOutstandingWrites` counts those in flight
# (remote_store.ts MAX_PENDING_WRITES), while the edge client reports its whole queue.
MAX_PENDING_WRITES = 10

SYNC_TIMEOUT = 10.0  # seconds to wait for a sync marker on one stream
HTTP_TIMEOUT = 20.0
WFPW_TIMEOUT_MS = 60000
WFPW_WAIT = 5.0  # seconds to wait for expected waitForPendingWrites completions
WFPW_GRACE = 0.1  # seconds to watch for unexpected completions

# Steps the backend mapping cannot express, with the reason reported (those whose reason is in
# SCRIPTED_REASONS run with a scripted watch; the rest are skipped).
STEP_REASONS = OrderedDict([
    ("watchFilter", "watchFilter (existence/bloom filter)"),
    ("watchReset", "watchReset (target reset)"),
    ("watchStreamClose", "watchStreamClose (watch stream error injection)"),
    ("loadBundle", "loadBundle (bundles)"),
    ("failDatabase", "failDatabase (persistence fault injection)"),
    ("applyClientState", "applyClientState (multi-tab)"),
    ("runTimer", "runTimer (SDK timers)"),
    ("watchUsesTargetIndex", "watchUsesTargetIndex (remote target ids)"),
])

# Reasons a scripted watch (`PUT /clients/{id}/gates {"scriptedWatch":true}`, then every watch
# step as `POST /clients/{id}/watch`) removes: the steps map one to one, so no backend write has to
# stand in for what watch says.
SCRIPTED_REASONS = {
    "watchFilter (existence/bloom filter)", "watchReset (target reset)",
    "watchStreamClose (watch stream error injection)",
    "watchRemove with a cause (listen rejected by the server)",
    "watch snapshot while a target is not CURRENT (partial snapshot)",
    "watch delivers an older version than already seen (version regression)",
    "write ack older than the watch's version of the document (concurrent remote write)",
    "watch messages for a re-listened target before its old removal is acknowledged",
    "watch sends a document that does not match its target's query",
    "limbo resolution expectations",
    "runTimer (SDK timers)",
    "failDatabase (persistence fault injection)",
    "multi-client",
    "applyClientState (multi-tab)",
}

# The spec's database: its bloom filters hash these names.
SPEC_PROJECT = "test-project"

KNOWN_ACTIONS = {
    "userListen", "userUnlisten", "userSet", "userPatch", "userDelete", "watchAck", "watchEntity",
    "watchCurrent", "watchSnapshot", "watchRemove", "writeAck", "failWrite", "enableNetwork",
    "restart", "shutdown", "clearPersistence", "waitForPendingWrites", "drainQueue", "triggerLruGC", "changeUser",
    "addSnapshotsInSyncListener", "removeSnapshotsInSyncListener", "setIndexConfiguration",
} | set(STEP_REASONS)

STEP_EXPECTATION_KEYS = {"clientIndex", "expectedSnapshotEvents", "expectedState",
                         "expectedSnapshotsInSyncEvents", "expectedWaitForPendingWritesEvents"}


class HarnessError(Exception):
    """A bug in the harness or an unusable server (not a test failure)."""


class ServerGone(HarnessError):
    """The server stopped answering: the replay stops."""


class StepFailure(Exception):
    """The edge client did not do what the spec test expects."""


# ---------------------------------------------------------------------------------------------
# Spec files
# ---------------------------------------------------------------------------------------------

def find_spec_dir(explicit: Optional[str] = None) -> Path:
    cands = []
    if explicit:
        cands.append(Path(explicit))
    if os.environ.get("FIREGATE_SPEC_DIR"):
        cands.append(Path(os.environ["FIREGATE_SPEC_DIR"]))
    cands += SPEC_DIR_CANDIDATES
    for c in cands:
        if c.is_dir() and any(c.glob("*_spec_test.json")):
            return c
    raise FileNotFoundError("spec JSON not found; pass --spec-dir or set FIREGATE_SPEC_DIR "
                            f"(looked in: {', '.join(str(c) for c in cands)})")


def spec_file_path(spec_dir: Path, short: str) -> Path:
    p = spec_dir / f"{short}_spec_test.json"
    if not p.exists():
        p = spec_dir / short
    if not p.exists():
        raise FileNotFoundError(f"no spec file {short!r} in {spec_dir}")
    return p


def short_name(path: Path) -> str:
    n = path.name
    return n[: -len("_spec_test.json")] if n.endswith("_spec_test.json") else n


# ---------------------------------------------------------------------------------------------
# Values, queries and documents
# ---------------------------------------------------------------------------------------------

def to_value(v):
    """Plain spec JSON → typed Firestore REST value (as the JS test helper `wrap` parses it)."""
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
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [to_value(x) for x in v]}}
    if isinstance(v, dict):
        return {"mapValue": {"fields": {k: to_value(x) for k, x in v.items()}}}
    raise HarnessError(f"unsupported spec value {v!r}")


def spec_time(version) -> str:
    """A spec version (microseconds since the epoch) as an RFC 3339 timestamp."""
    v = int(version or 0)
    secs, micros = divmod(v, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{micros:06d}Z"


def to_fields(obj: dict) -> dict:
    return {k: to_value(v) for k, v in obj.items()}


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


# ---------------------------------------------------------------------------------------------
# Expected and actual events
# ---------------------------------------------------------------------------------------------

@dataclass
class Change:
    type: str  # added | modified | removed
    key: str
    fields: Optional[dict]  # typed fields (None: not known)
    pending: Optional[bool]  # per-document hasPendingWrites (None: not compared)

    def describe(self) -> str:
        val = plain_fields(self.fields) if self.fields is not None else "?"
        p = "" if self.pending is None else (" pending" if self.pending else "")
        return f"{self.type} {self.key} {json.dumps(val, sort_keys=True)}{p}"


@dataclass
class Event:
    query: str  # query_key
    error: Optional[str] = None  # status name when the listener failed
    from_cache: Optional[bool] = None
    has_pending_writes: Optional[bool] = None
    changes: list = field(default_factory=list)
    raw: object = None

    def describe(self) -> str:
        if self.error:
            return f"error {self.error}"
        ch = "; ".join(c.describe() for c in sorted(self.changes, key=lambda c: c.key)) or "no changes"
        return f"fromCache={self.from_cache} hasPendingWrites={self.has_pending_writes} [{ch}]"


def expected_event(ev: dict) -> Event:
    qk = query_key(ev["query"])
    if ev.get("errorCode"):
        return Event(qk, error=GRPC_CODES.get(ev["errorCode"], str(ev["errorCode"])))
    hpw = bool(ev.get("hasPendingWrites"))
    out = Event(qk, from_cache=bool(ev.get("fromCache")), has_pending_writes=hpw)
    for kind, typ in (("removed", "removed"), ("added", "added"), ("modified", "modified"),
                      ("metadata", "modified")):
        for d in ev.get(kind) or []:
            opts = d.get("options") or {}
            # The public per-document hasPendingWrites is `mutatedKeys.has(key)` of the new view
            # (api/snapshot.ts): hasLocalMutations, or a committed-but-unconfirmed mutation that
            # the view still counts; a snapshot without pending writes has no pending document.
            pending = bool(opts.get("hasLocalMutations")) or (bool(opts.get("hasCommittedMutations")) and hpw)
            out.changes.append(Change(
                typ, d["key"], to_fields(d.get("value") or {}),
                # A removed document's public flag describes the new view, where it is gone;
                # the spec's flags describe the old document: not comparable.
                None if typ == "removed" else pending))
    return out


def compare_events(expected: Event, actual: Event) -> Optional[str]:
    if expected.error or actual.error:
        if expected.error == actual.error:
            return None
        return f"expected {expected.describe()}, got {actual.describe()}"
    problems = []
    if expected.from_cache != actual.from_cache:
        problems.append(f"fromCache {actual.from_cache} (expected {expected.from_cache})")
    if expected.has_pending_writes != actual.has_pending_writes:
        problems.append(f"hasPendingWrites {actual.has_pending_writes} (expected {expected.has_pending_writes})")
    exp = sorted(expected.changes, key=lambda c: (c.key, c.type))
    act = sorted(actual.changes, key=lambda c: (c.key, c.type))
    if len(exp) != len(act):
        problems.append(f"{len(act)} document change(s), expected {len(exp)}")
    else:
        for e, a in zip(exp, act):
            if e.key != a.key or e.type != a.type:
                problems.append(f"change {a.type} {a.key} (expected {e.type} {e.key})")
                continue
            if e.fields is not None and a.fields is not None and canon_fields(e.fields) != canon_fields(a.fields):
                problems.append(f"{a.key}: value {json.dumps(plain_fields(a.fields), sort_keys=True)} "
                                f"(expected {json.dumps(plain_fields(e.fields), sort_keys=True)})")
            if e.pending is not None and a.pending is not None and e.pending != a.pending:
                problems.append(f"{a.key}: hasPendingWrites {a.pending} (expected {e.pending})")
            if e.pending is not None and a.pending is None:
                problems.append(f"{a.key}: no metadata.hasPendingWrites on the document")
    if problems:
        return "; ".join(problems) + f"\n        expected: {expected.describe()}\n        actual:   {actual.describe()}"
    return None


# ---------------------------------------------------------------------------------------------
# Static classification (which tests can be mapped)
# ---------------------------------------------------------------------------------------------

def is_multi_client(spec: dict) -> bool:
    """A test of several web tabs sharing one persistence (the runner's multi-client tag)."""
    return "multi-client" in set(spec.get("tags") or []) or (spec.get("config") or {}).get("numClients", 1) > 1


def classify(spec: dict, mode: str) -> list[str]:
    """Reasons why this spec test cannot be replayed in this mode (empty: mappable)."""
    reasons: list[str] = []
    tags = set(spec.get("tags") or [])
    if is_multi_client(spec):
        # The SDK's runner runs multi-tab tests with persistence only (describe_spec.ts).
        reasons.append("multi-client (persistence only)" if mode == "memory" else "multi-client")
    if "no-web" in tags:
        reasons.append("no-web (the web SDK's runner skips it)")
    if "benchmark" in tags:
        reasons.append("benchmark")
    if mode == "persistent" and "eager-gc" in tags:
        reasons.append("eager-gc (memory persistence only)")
    if mode == "memory" and "durable-persistence" in tags:
        reasons.append("durable-persistence (persistent only)")

    active: dict = {}  # targetId -> {"cache": bool, "current": bool, "query": spec query}
    network = True
    write_queue: list[list[str]] = []
    user, parked_writes = None, {}  # the signed-in user; other users' queues
    known_version: dict = {}
    watch_version: dict = {}  # key -> version of the last global snapshot that carried it
    unsnapped: list = []
    unacked_removal: Counter = Counter()  # targetId -> unlistens whose watchRemove is pending
    partial = regress = outdated_ack = foreign_doc = stale_target = False

    def add(r):
        if r not in reasons:
            reasons.append(r)

    for step in spec["steps"]:
        if step.get("clientIndex", 0) != 0:
            add("multi-client")
        actions = [k for k in step if k not in STEP_EXPECTATION_KEYS]
        for a in actions:
            if a in STEP_REASONS:
                add(STEP_REASONS[a])
            elif a not in KNOWN_ACTIONS:
                add(f"unknown step {a}")
        es = step.get("expectedState") or {}
        if es.get("activeLimboDocs") or es.get("enqueuedLimboDocs"):
            add("limbo resolution expectations")
        if "numActiveClients" in es:
            add("multi-client")

        if "userListen" in step:
            ul = step["userListen"]
            cache = (ul.get("options") or {}).get("source") == "cache"
            active[ul["targetId"]] = {"cache": cache, "current": False, "query": ul["query"]}
        elif "userUnlisten" in step:
            t = active.pop(step["userUnlisten"][0], None)
            if t is not None and not t["cache"] and network:
                unacked_removal[step["userUnlisten"][0]] += 1
        elif "enableNetwork" in step:
            network = bool(step["enableNetwork"])
            if not network:
                unacked_removal.clear()
                for t in active.values():
                    t["current"] = False
        elif "changeUser" in step:
            if step["changeUser"] != user:
                parked_writes[user] = write_queue
                user = step["changeUser"]
                write_queue = parked_writes.pop(user, [])
        elif "restart" in step or "shutdown" in step:
            active.clear()
            unacked_removal.clear()
            if mode == "memory":
                write_queue.clear()
                parked_writes.clear()
        elif "watchCurrent" in step:
            for tid in step["watchCurrent"][0]:
                if unacked_removal[tid] and tid in active:
                    stale_target = True
                if tid in active:
                    active[tid]["current"] = True
        elif "watchRemove" in step:
            if step["watchRemove"].get("cause"):
                add("watchRemove with a cause (listen rejected by the server)")
            for tid in step["watchRemove"].get("targetIds") or []:
                if unacked_removal[tid]:
                    unacked_removal[tid] -= 1
        elif "watchAck" in step:
            if any(unacked_removal[tid] and tid in active for tid in step["watchAck"]):
                stale_target = True
        elif "watchEntity" in step:
            we = step["watchEntity"]
            docs = we.get("docs") or ([we["doc"]] if we.get("doc") else [])
            if any(unacked_removal[tid] and tid in active
                   for tid in (we.get("targets") or []) + (we.get("removedTargets") or [])):
                stale_target = True
            # A key-only removal from a target needs no backend write: the backend's own query
            # decides membership (e.g. a document pushed out of a limit).
            for d in docs:
                v = d.get("version", 0)
                if v < known_version.get(d["key"], 0):
                    regress = True
                known_version[d["key"]] = max(v, known_version.get(d["key"], 0))
                unsnapped.append((d["key"], v))
                if d.get("value") is not None:
                    for tid in we.get("targets") or []:
                        t = active.get(tid)
                        if t is not None and not doc_matches(t["query"], d["key"], d["value"]):
                            foreign_doc = True
        elif "watchSnapshot" in step:
            if not step["watchSnapshot"].get("targetIds") and network:
                if any(not t["cache"] and not t["current"] for t in active.values()):
                    partial = True
                for k, v in unsnapped:
                    watch_version[k] = max(v, watch_version.get(k, 0))
                unsnapped = []
        elif any(k in step for k in ("userSet", "userPatch", "userDelete")):
            if "userSet" in step:
                write_queue.append([step["userSet"][0]])
            elif "userPatch" in step:
                write_queue.append([step["userPatch"][0]])
            else:
                write_queue.append([step["userDelete"]])
        elif "writeAck" in step:
            if write_queue and not step["writeAck"].get("keepInQueue"):
                for k in write_queue.pop(0):
                    v = step["writeAck"].get("version", 0)
                    if watch_version.get(k, 0) > v:
                        outdated_ack = True
                    known_version[k] = max(known_version.get(k, 0), v)
        elif "failWrite" in step:
            if write_queue and not step["failWrite"].get("keepInQueue"):
                write_queue.pop(0)
    if partial:
        add("watch snapshot while a target is not CURRENT (partial snapshot)")
    if regress:
        add("watch delivers an older version than already seen (version regression)")
    if outdated_ack:
        add("write ack older than the watch's version of the document (concurrent remote write)")
    if stale_target:
        # The SDK ignores them until the watchRemove that acknowledges the unlisten; a backend
        # write cannot be addressed to the old incarnation of a re-listened target.
        add("watch messages for a re-listened target before its old removal is acknowledged")
    if foreign_doc:
        add("watch sends a document that does not match its target's query")
    return reasons


# ---------------------------------------------------------------------------------------------
# Running one test
# ---------------------------------------------------------------------------------------------

@dataclass
class Result:
    file: str
    name: str
    mode: str
    status: str  # PASS | FAIL | SKIP | ERROR
    reason: str = ""
    detail: str = ""
    seconds: float = 0.0


class Listener:
    def __init__(self, spec_query, target_id, stream: Optional[SSEStream], is_doc: bool, key: str):
        self.spec_query = spec_query
        self.target_id = target_id
        self.stream = stream
        self.is_doc = is_doc
        self.key = key
        self.done = stream is None or not stream.ok
        self.last_doc = None  # doc listens: (fields, pending) of the last snapshot, None = missing
        self.pending_events: list[Event] = []
        self.closing = False  # its client instance restarted/terminated: the stream must end


class ClientSide:
    """One SDK instance of a spec run: a client of its own or, in a multi-client test, one tab of
    the shared web persistence (`sharedWith`). What the runner keeps per instance lives here."""

    def __init__(self, run: "SpecRun", index: int):
        self.index = index
        self.client = run.client_base if index == 0 and not run.multi else f"{run.client_base}-{index}"
        self.cbase = f"{run.base}/clients/{self.client}"
        self.docs_prefix = f"{self.cbase}/v1/projects/{run.project}/databases/(default)/documents"
        self.listeners: "OrderedDict[str, Listener]" = OrderedDict()
        self.writes: list[dict] = []  # {"id", "keys", "state"}
        self.in_sync: list[SSEStream] = []
        self.in_sync_events = 0
        self.wfpw_done = 0
        self.wfpw_outstanding = 0
        self.wfpw_seen = 0
        # Sticky expectations (the runner checks them after every later step too).
        self.expected_targets = None
        self.expected_limbo = None
        self.expected_enqueued = None
        self.shut_down = False


def _side_attribute(name):
    return property(lambda self: getattr(self.side, name), lambda self, value: setattr(self.side, name, value))


class SpecRun:
    # What each SDK instance has of its own: the current step's instance's (`self.side`).
    client = _side_attribute("client")
    cbase = _side_attribute("cbase")
    docs_prefix = _side_attribute("docs_prefix")
    listeners = _side_attribute("listeners")
    writes = _side_attribute("writes")
    in_sync = _side_attribute("in_sync")
    in_sync_events = _side_attribute("in_sync_events")
    wfpw_seen = _side_attribute("wfpw_seen")
    expected_targets = _side_attribute("expected_targets")
    expected_limbo = _side_attribute("expected_limbo")
    expected_enqueued = _side_attribute("expected_enqueued")

    def __init__(self, replay: "Replay", file: str, name: str, spec: dict, mode: str, scripted: bool = False):
        self.r = replay
        self.file = file
        self.name = name
        self.spec = spec
        self.mode = mode
        # Scripted: watch steps and write acks go to the client's scripted watch, nothing to the
        # backend; the project is the spec's own, whose names its bloom filters hash.
        self.scripted = scripted
        uid = uuid.uuid4().hex[:10]
        self.project = SPEC_PROJECT if scripted else f"spec-{uid}"
        self.names = Names(self.project)
        self.http = requests.Session()
        self.base = replay.base_url
        self.backend_prefix = f"{self.base}/v1/projects/{self.project}/databases/(default)/documents"
        # A multi-client test's instances are tabs of one shared web persistence, each opened
        # at its first step (as the runner starts them), hidden as the runner's fake document.
        self.multi = is_multi_client(spec)
        self.persistence_key = f"spec-{uid}"
        self.sides: dict[int, ClientSide] = {}
        self.side = None
        self.client_base = f"spec-{uid}"
        self.wfpw_lock = threading.Lock()
        self.step_index = -1
        self.log_lines: list[str] = []
        # The spec's view of the watch stream and the write pipeline (for the mapping only).
        self.targets: dict = {}  # targetId -> {"query", "fresh", "acked", "sent": set(), "synthesized"}
        self.unsnapped: list = []  # (key, version) sent by watch since the last global snapshot
        self.watch_version: dict = {}  # key -> version watch delivered (at a global snapshot)
        self.spec_writes: list = []  # keys of each not yet acknowledged/rejected write, in order
        self.user = None  # the signed-in user (changeUser); other users' spec_writes are parked
        self.parked_writes: dict = {}
        # onSnapshotsInSync observers (`GET /clients/{id}/snapshotsInSync`), newest last, and the
        # events they got during the current step (the runner counts them all together).

    # -- http helpers ---------------------------------------------------------------------------
    def call(self, method, url, expect=(200,), **kw):
        kw.setdefault("timeout", HTTP_TIMEOUT)
        try:
            r = self.http.request(method, url, **kw)
        except requests.ConnectionError as e:
            raise ServerGone(f"server unreachable: {method} {url}: {e}") from None
        except requests.Timeout:
            raise StepFailure(f"{method} {url} did not answer within {kw['timeout']}s") from None
        if expect and r.status_code not in expect:
            raise StepFailure(f"{method} {url[len(self.base):]} -> {r.status_code}: {r.text[:300]}")
        return r

    def log(self, msg):
        self.log_lines.append(msg)
        if self.r.verbose >= 2:
            print("      " + msg, flush=True)

    # -- lifecycle ------------------------------------------------------------------------------
    def use_side(self, index: int):
        """The instance a step runs on, opened at its first step."""
        side = self.sides.get(index)
        if side is None:
            self.side = side = self.sides[index] = ClientSide(self, index)
            self.open_side(first=len(self.sides) == 1)
        self.side = side

    def setup(self):
        steps = self.spec.get("steps") or [{}]
        self.use_side(steps[0].get("clientIndex", 0))

    def open_side(self, first: bool):
        cfg = self.spec.get("config") or {}
        body = {"project": self.project, "database": "(default)", "persistence": self.mode}
        if self.multi:
            body.update({"platform": "web", "sharedWith": self.persistence_key, "visible": False})
        if self.mode == "memory":
            body["garbageCollector"] = "eager" if cfg.get("useEagerGCForMemory", True) else "lru"
        else:
            body["garbageCollector"] = "lru"
        r = self.call("PUT", self.cbase, expect=None, json=body)
        if r.status_code == 400 and "garbageCollector" in r.text:
            body.pop("garbageCollector")
            r = self.call("PUT", self.cbase, expect=None, json=body)
        if r.status_code not in (200, 201):
            raise StepFailure(f"PUT /clients/{self.client} -> {r.status_code}: {r.text[:300]}")
        if not first:
            return  # the gates are the shared persistence's, set by its first tab
        if self.scripted:
            # The runner's default is no limit on concurrent limbo lookups.
            limit = cfg.get("maxConcurrentLimboResolutions") or 1000000
            self.call("PUT", f"{self.cbase}/gates", json={"scriptedWatch": True, "holdWrites": True,
                                                         "maxConcurrentLimboResolutions": limit})
        else:
            self.call("PUT", f"{self.cbase}/gates", json={"holdWatch": True, "holdWrites": True})

    def teardown(self):
        urls = []
        for side in self.sides.values():
            for l in side.listeners.values():
                if l.stream is not None:
                    l.stream.close()
            side.listeners.clear()
            for stream in side.in_sync:
                stream.close()
            side.in_sync.clear()
            urls.append(side.cbase)
        if self.multi and self.sides:
            # Terminate a tab, clear the shared persistence from it, then forget the tabs.
            first = next(iter(self.sides.values())).cbase
            for url in (f"{first}:terminate", f"{first}:clearPersistence"):
                try:
                    self.http.request("POST", url, json={}, timeout=5)
                except requests.RequestException:
                    pass
        urls.append(f"{self.base}/emulator/v1/projects/{self.project}/databases/(default)/documents")
        for url in urls:
            method = "DELETE"
            try:
                self.http.request(method, url, timeout=5)
            except requests.RequestException:
                pass
        self.http.close()

    def run(self) -> None:
        self.setup()
        for i, step in enumerate(self.spec["steps"]):
            self.step_index = i
            self.use_side(step.get("clientIndex", 0))
            action = next((k for k in step if k not in STEP_EXPECTATION_KEYS), "?")
            tab = f"[client {self.side.index}] " if self.multi else ""
            self.log(f"step {i}: {tab}{action} {json.dumps(step.get(action))[:160]}")
            try:
                self.do_step(step)
                self.check_step(step)
            except StepFailure as e:
                raise StepFailure(f"step {i} ({action}): {e}") from None

    # -- actions --------------------------------------------------------------------------------
    def do_step(self, step: dict):
        if self.multi and self.do_tab_step(step):
            return
        if self.scripted and self.do_scripted_step(step):
            return
        if "userListen" in step:
            self.do_listen(step["userListen"], step.get("expectedState") or {})
        elif "userUnlisten" in step:
            self.do_unlisten(step["userUnlisten"])
        elif "addSnapshotsInSyncListener" in step:
            self.in_sync.append(SSEStream(f"{self.cbase}/snapshotsInSync"))
        elif "removeSnapshotsInSyncListener" in step:
            if not self.in_sync:
                raise HarnessError("removeSnapshotsInSyncListener without an observer")
            # What it was told before it goes still counts.
            self.in_sync_events += self.read_in_sync(self.in_sync[-1], self.sync_marker())
            self.in_sync.pop().close()
        elif "userSet" in step:
            key, value = step["userSet"]
            self.do_write([{"update": {"name": self.names.name(key), "fields": to_fields(value)}}], [key])
        elif "userPatch" in step:
            key, value = step["userPatch"]
            self.do_write([patch_body(self.names, key, value)], [key])
        elif "userDelete" in step:
            key = step["userDelete"]
            self.do_write([{"delete": self.names.name(key)}], [key])
        elif "watchAck" in step:
            for tid in step["watchAck"]:
                t = self.targets.get(tid)
                if t is not None:
                    t["acked"] = True
                    t["sent"] = set()
        elif "watchEntity" in step:
            self.do_watch_entity(step["watchEntity"])
        elif "watchCurrent" in step:
            for tid in step["watchCurrent"][0]:
                t = self.targets.get(tid)
                if t is not None and t["fresh"] and t["acked"] and not t["synthesized"]:
                    t["synthesized"] = True
                    self.synthesize_deletes(t)
        elif "watchSnapshot" in step:
            if not step["watchSnapshot"].get("targetIds"):
                # Only a global (empty targetIds) snapshot makes the SDK raise events.
                self.call("POST", f"{self.cbase}/gates:releaseWatch", json={})
                for k, v in self.unsnapped:
                    self.watch_version[k] = max(v, self.watch_version.get(k, 0))
                self.unsnapped = []
                for t in self.targets.values():
                    if t["synthesized"]:
                        t["fresh"] = False  # the SDK now holds a resume token for it
        elif "writeAck" in step:
            ack = step["writeAck"]
            batch = self.spec_writes.pop(0) if self.spec_writes and not ack.get("keepInQueue") else []
            self.call("POST", f"{self.cbase}/gates:releaseWrite", json={"count": 1})
            version = ack.get("version", 0)
            if batch and all(self.watch_version.get(k, -1) >= version for k in batch):
                # Watch already delivered this write's result (at the ack's version) before the
                # ack. Here the held write only now reached the backend, at a newer version, so
                # deliver that echo too: the SDK then holds the same state as in the spec.
                self.log("watch echo of the acknowledged write released")
                self.call("POST", f"{self.cbase}/gates:releaseWatch", json={})
        elif "failWrite" in step:
            fw = step["failWrite"]
            if self.spec_writes and not fw.get("keepInQueue"):
                self.spec_writes.pop(0)
            code = fw["error"]["code"]
            self.call("POST", f"{self.cbase}/gates:releaseWrite", json={"fail": GRPC_CODES[code]})
        elif "enableNetwork" in step:
            self.call("POST", f"{self.cbase}:{'enableNetwork' if step['enableNetwork'] else 'disableNetwork'}",
                      json={})
        elif "restart" in step:
            self.call("POST", f"{self.cbase}:restart", json={})
            self.forget_session()
        elif "shutdown" in step:
            self.call("POST", f"{self.cbase}:terminate", json={})
            self.forget_session()
        elif "changeUser" in step:
            # A user change switches the client's mutation queue, as the SDK's does.
            if step["changeUser"] != self.user:
                self.parked_writes[self.user] = self.spec_writes
                self.user = step["changeUser"]
                self.spec_writes = self.parked_writes.pop(self.user, [])
            uid = step["changeUser"]
            self.call("PUT", f"{self.cbase}/auth", json={"uid": uid} if uid else {})
        elif "clearPersistence" in step:
            self.call("POST", f"{self.cbase}:clearPersistence", json={})
        elif "waitForPendingWrites" in step:
            self.start_wait_for_pending_writes()
        elif "setIndexConfiguration" in step:
            self.call("PUT", f"{self.cbase}/indexes", json=step["setIndexConfiguration"])
        elif "triggerLruGC" in step:
            # The spec runner collects with LruParams(threshold, 100 %, no cap).
            self.call("POST", f"{self.cbase}:collectGarbage",
                      json={"thresholdBytes": step["triggerLruGC"], "percentile": 100})
        elif any(k in step for k in ("watchRemove", "drainQueue")):
            pass  # the backend answers listens itself; the release at watchSnapshot delivers
        else:
            raise HarnessError(f"unmapped step reached the runner: {sorted(step)}")

    # -- tabs -----------------------------------------------------------------------------------
    def do_tab_step(self, step: dict) -> bool:
        """The steps a tab of a shared persistence maps differently: its visibility, the lease,
        and its shutdown (the tab closes; the persistence stays)."""
        if "applyClientState" in step:
            cs = step["applyClientState"]
            if cs.get("visibility"):
                self.call("POST", f"{self.cbase}:setVisibility", json={"visible": cs["visibility"] == "visible"})
            if cs.get("primary"):
                self.call("POST", f"{self.cbase}:claimPrimary", json={})
        elif "shutdown" in step:
            self.call("POST", f"{self.cbase}:terminate", json={})
            self.side.shut_down = True
            self.forget_session()
        elif "clearPersistence" in step:
            # From a terminated tab: the other tabs shut down with it.
            self.call("POST", f"{self.cbase}:clearPersistence", json={})
            for side in self.sides.values():
                if not side.shut_down:
                    side.shut_down = True
                    for l in side.listeners.values():
                        l.closing = True
        else:
            return False
        return True

    def check_tab_state(self, es: dict):
        state = self.call("GET", self.cbase).json()
        tab = state.get("tab") if not state.get("terminated") else None
        problems = []
        if "isPrimary" in es and bool(tab and tab["primary"]) != es["isPrimary"]:
            problems.append(f"primary {bool(tab and tab['primary'])} (expected {es['isPrimary']}; primary tab "
                            f"{tab and tab.get('primaryTab')})")
        if "numActiveClients" in es and (tab or {}).get("activeTabs") != es["numActiveClients"]:
            problems.append(f"{(tab or {}).get('activeTabs')} active tabs (expected {es['numActiveClients']})")
        if "isShutdown" in es and bool(state.get("terminated")) != es["isShutdown"]:
            problems.append(f"terminated {state.get('terminated')} (expected {es['isShutdown']})")
        if problems:
            raise StepFailure("; ".join(problems))

    # -- scripted watch -------------------------------------------------------------------------
    def watch(self, message: dict):
        self.call("POST", f"{self.cbase}/watch", json=message)

    def do_scripted_step(self, step: dict) -> bool:
        """Watch steps and write acks as the runner's encodeWatchChange sends them; False for
        the steps mapped the same way as without a scripted watch."""
        def target_change(kind, ids, **extra):
            body = {"targetChangeType": kind, "targetIds": list(ids)}
            body.update({k: v for k, v in extra.items() if v is not None})
            self.watch({"targetChange": body})

        if "watchAck" in step:
            target_change("ADD", step["watchAck"])
        elif "watchCurrent" in step:
            ids, token = step["watchCurrent"]
            target_change("CURRENT", ids, resumeToken=token)
        elif "watchReset" in step:
            target_change("RESET", step["watchReset"])
        elif "watchRemove" in step:
            wr = step["watchRemove"]
            cause = wr.get("cause")
            target_change("REMOVE", wr.get("targetIds") or [],
                          cause={"code": cause["code"], "message": cause.get("message", "")} if cause else None)
        elif "watchEntity" in step:
            we = step["watchEntity"]
            targets, removed = we.get("targets") or [], we.get("removedTargets") or []
            docs = we.get("docs") or ([we["doc"]] if we.get("doc") else [])
            for d in docs:
                name = self.names.name(d["key"])
                if d.get("value") is not None:
                    self.watch({"documentChange": {
                        "document": {"name": name, "fields": to_fields(d["value"]),
                                     "createTime": spec_time(d.get("createTime", 0)),
                                     "updateTime": spec_time(d.get("version", 0))},
                        "targetIds": targets, "removedTargetIds": removed}})
                else:
                    # The runner's encoder drops `targets` of a deleted document.
                    self.watch({"documentDelete": {"document": name, "removedTargetIds": removed,
                                                   "readTime": spec_time(d.get("version", 0))}})
            if we.get("key"):
                self.watch({"documentRemove": {"document": self.names.name(we["key"]), "removedTargetIds": removed}})
        elif "watchFilter" in step:
            wf = step["watchFilter"]
            body = {"targetId": wf["targetIds"][0], "count": len(wf.get("keys") or [])}
            if wf.get("bloomFilter") is not None:
                body["unchangedNames"] = wf["bloomFilter"]
            self.watch({"filter": body})
        elif "watchSnapshot" in step:
            ws = step["watchSnapshot"]
            target_change("NO_CHANGE", ws.get("targetIds") or [], resumeToken=ws.get("resumeToken"),
                          readTime=spec_time(ws.get("version", 0)))
        elif "watchStreamClose" in step:
            err = step["watchStreamClose"].get("error") or {}
            # runBackoffTimer: the backoff elapses now and the stream reopens; else it stays
            # closed until something reopens it (a listen, the network, a user change).
            self.watch({"streamClose": {"error": {"code": err.get("code", 14), "message": err.get("message", "")},
                                        "reconnect": bool(step["watchStreamClose"].get("runBackoffTimer"))}})
        elif "writeAck" in step:
            ack = step["writeAck"]
            if self.spec_writes and not ack.get("keepInQueue"):
                self.spec_writes.pop(0)
            self.call("POST", f"{self.cbase}/gates:releaseWrite",
                      json={"count": 1, "commitTime": spec_time(ack.get("version", 0))})
        elif "runTimer" in step:
            self.call("POST", f"{self.cbase}:runTimer", json={"timer": step["runTimer"]})
        elif "failDatabase" in step:
            # The named local-store operations fail until healed (false).
            fd = step["failDatabase"]
            self.call("PUT", f"{self.cbase}/faults", json={"storage": fd if fd else False})
        elif "drainQueue" in step:
            pass
        else:
            return False
        return True

    def check_scripted_state(self, es: dict):
        """The sticky watch expectations: active targets (id, resume token, purpose), active and
        enqueued limbo documents, against the client's `watch` state."""
        if "activeTargets" in es:
            self.expected_targets = es["activeTargets"]
        if "activeLimboDocs" in es:
            self.expected_limbo = sorted(es["activeLimboDocs"])
        if "enqueuedLimboDocs" in es:
            self.expected_enqueued = sorted(es["enqueuedLimboDocs"])
        if self.expected_targets is None and self.expected_limbo is None and self.expected_enqueued is None:
            return
        if self.multi and self.side.shut_down:
            return  # the runner checks a stopped instance no more
        r = self.call("GET", self.cbase, expect=None)
        if r.status_code != 200:
            return
        state = r.json()
        if state.get("terminated"):
            return
        watch = state.get("watch") or {}
        problems = []
        if self.expected_limbo is not None:
            got = sorted(self.names.key(n) for n in watch.get("limboDocuments") or [])
            if got != self.expected_limbo:
                problems.append(f"active limbo documents {got}, expected {self.expected_limbo}")
        if self.expected_enqueued is not None:
            got = sorted(self.names.key(n) for n in watch.get("enqueuedLimboDocuments") or [])
            if got != self.expected_enqueued:
                problems.append(f"enqueued limbo documents {got}, expected {self.expected_enqueued}")
        if self.expected_targets is not None:
            got = {str(t["targetId"]): t for t in watch.get("targets") or []}
            # As the runner: with the network off, or in a secondary tab, the instance's stream
            # asks for nothing, whatever is expected.
            online = (state.get("network") or {}).get("online", True)
            want = self.expected_targets if online and (state.get("tab") or {}).get("primary", True) else {}
            if sorted(got) != sorted(want, key=str):
                problems.append(f"active targets {sorted(got, key=int)}, expected {sorted(want, key=int)}")
            else:
                for tid, exp in want.items():
                    t = got[str(tid)]
                    if (exp.get("resumeToken") or "") != t.get("resumeToken", ""):
                        problems.append(f"target {tid} listened with resume token {t.get('resumeToken')!r}, "
                                        f"expected {exp.get('resumeToken') or ''!r}")
                    purpose = exp.get("targetPurpose") or "TargetPurposeListen"
                    if purpose != t.get("purpose"):
                        problems.append(f"target {tid} listened for {t.get('purpose')}, expected {purpose}")
        if problems:
            raise StepFailure("; ".join(problems))

    def forget_session(self):
        # The SDK instance is gone: its listeners end and the callbacks of its writes never fire
        # in this runner (as in the JS runner, where the old sync engine's promises are dropped).
        for l in self.listeners.values():
            l.closing = True
        self.writes = []
        self.targets.clear()
        if self.mode == "memory":
            self.spec_writes = []  # a memory mutation queue does not survive
            self.parked_writes = {}

    def synthesize_deletes(self, t: dict):
        """A fresh target turned CURRENT: what watch sent since its ack is the whole result, so
        the documents of the query that watch did not send are gone on the server (the SDK
        synthesizes deletes for them). Delete those on the backend. Limit queries are left
        alone (documents outside the window exist without being sent)."""
        q = t["query"]
        if isinstance(q, dict) and q.get("limit"):
            return
        path = q if isinstance(q, str) else q.get("path", "")
        if is_doc_path(path) and not (isinstance(q, dict) and q.get("collectionGroup")):
            candidates = [self.names.name(path.strip("/"))]
            r = self.call("POST", f"{self.backend_prefix}:batchGet", json={"documents": candidates})
            present = [i["found"]["name"] for i in r.json() if "found" in i]
        else:
            parent, sq, _ = structured_query(q, self.names)
            url = f"{self.backend_prefix}{'/' + quote(parent, safe='/') if parent else ''}:runQuery"
            r = self.call("POST", url, json={"structuredQuery": sq})
            present = [i["document"]["name"] for i in r.json() if isinstance(i, dict) and i.get("document")]
        gone = [n for n in present if self.names.key(n) not in t["sent"]]
        if gone:
            self.log(f"backend: synthesized delete of {', '.join(self.names.key(n) for n in gone)}")
            self.call("POST", f"{self.backend_prefix}:commit", json={"writes": [{"delete": n} for n in gone]})

    def do_listen(self, ul: dict, expected_state: dict):
        q = ul["query"]
        opts = ul.get("options") or {}
        if opts.get("source") != "cache":
            at = (expected_state.get("activeTargets") or {}).get(str(ul.get("targetId")))
            self.targets[ul.get("targetId")] = {
                "query": q, "acked": False, "sent": set(), "synthesized": False,
                # Only a listen without a resume token gets the full result before CURRENT.
                "fresh": at is not None and not at.get("resumeToken"),
            }
        include_md = opts.get("includeMetadataChanges", True)
        params = {"includeMetadataChanges": "true" if include_md else "false"}
        if opts.get("source") == "cache":
            params["source"] = "cache"
        qk = query_key(q)
        path = q if isinstance(q, str) else q.get("path", "")
        is_doc = is_doc_path(path) and not (isinstance(q, dict) and q.get("collectionGroup"))
        if is_doc:
            url = f"{self.docs_prefix}/{quote(path.strip('/'), safe='/')}:listen"
        else:
            parent, sq, ltl = structured_query(q, self.names)
            url = f"{self.docs_prefix}{'/' + quote(parent, safe='/') if parent else ''}:listen"
            params["query"] = json.dumps(sq, separators=(",", ":"))
            if ltl:
                params["limitToLast"] = "true"
        if qk in self.listeners and not self.listeners[qk].done:
            if not self.multi:
                raise HarnessError(f"second listener for the same query {query_label(q)}")
            # As the runner's map of listeners by query: the newer one is what an unlisten
            # ends; the older one keeps raising events.
            self.listeners[f"{qk}#{len(self.listeners)}"] = self.listeners.pop(qk)
        try:
            stream = SSEStream(url, params=params, session=None)
        except requests.ConnectionError as e:
            raise ServerGone(f"server unreachable: {e}") from None
        l = Listener(q, ul.get("targetId"), stream, is_doc, qk)
        if not stream.ok:
            body = stream.error_json() or {}
            status = (body.get("error") or {}).get("status") if isinstance(body, dict) else None
            l.pending_events.append(Event(qk, error=status or f"HTTP {stream.status_code}",
                                          raw=stream.body))
            self.log(f"listen {query_label(q)} -> HTTP {stream.status_code} {stream.body[:200] if stream.body else ''}")
        self.listeners[qk] = l

    def do_unlisten(self, uu):
        q = uu[1]
        qk = query_key(q)
        l = self.listeners.pop(qk, None)
        if l is None:
            raise HarnessError(f"unlisten of a query that is not listened to: {query_label(q)}")
        self.targets.pop(uu[0], None)
        if l.stream is not None:
            l.stream.close()
        self.wait_listener_count()

    def wait_listener_count(self):
        """After closing a stream, waits until the client no longer counts that listener.

        A server may only notice a closed connection when it writes to it, so each round puts a
        sync marker (that no reader waits for) into the client's streams."""
        want = sum(1 for side in self.sides.values() for l in side.listeners.values() if not l.done)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            self.call("POST", f"{self.cbase}/gates:sync", expect=None, json={"token": "unlisten-poke"})
            r = self.call("GET", self.cbase, expect=None)
            if r.status_code != 200:
                return
            try:
                n = r.json().get("listeners")
            except ValueError:
                return
            if isinstance(n, list):
                n = len(n)
            if not isinstance(n, int) or n <= want:
                return
            time.sleep(0.01)
        self.log("listener count did not drop after closing a stream")

    def do_write(self, writes: list, keys: list):
        r = self.call("POST", f"{self.docs_prefix}:commit", expect=(200, 503), json={"writes": writes})
        if r.status_code == 503:
            # The local persistence refused it (failDatabase): rejected at once, never sent.
            self.writes.append({"id": None, "keys": keys, "state": "pending", "initial": "rejected"})
            return
        self.spec_writes.append(list(keys))
        wid = r.headers.get("Firegate-Write-Id")
        state = (r.headers.get("Firegate-Write-State") or "pending").lower()
        if not wid:
            raise StepFailure("commit through the client answered without a Firegate-Write-Id header")
        self.writes.append({"id": wid, "keys": keys, "state": "pending", "initial": state})

    def do_watch_entity(self, we: dict):
        docs = we.get("docs") or ([we["doc"]] if we.get("doc") else [])
        for d in docs:
            self.unsnapped.append((d["key"], d.get("version", 0)))
            for tid in we.get("targets") or []:
                if tid in self.targets:
                    self.targets[tid]["sent"].add(d["key"])
        if not docs:
            return  # key-only target removal: the backend's own query decides membership
        names = [self.names.name(d["key"]) for d in docs]
        r = self.call("POST", f"{self.backend_prefix}:batchGet", json={"documents": names})
        current = {}
        try:
            for item in r.json():
                if "found" in item:
                    current[item["found"]["name"]] = item["found"].get("fields", {}) or {}
                elif "missing" in item:
                    current[item["missing"]] = None
        except (ValueError, TypeError, AttributeError):
            raise StepFailure(f"backend batchGet answered {r.text[:200]}") from None
        writes = []
        for d, name in zip(docs, names):
            want = to_fields(d["value"]) if d.get("value") is not None else None
            have = current.get(name)
            if want is None:
                if have is not None:
                    writes.append({"delete": name})
            elif have is None or canon_fields(have) != canon_fields(want):
                writes.append({"update": {"name": name, "fields": want}})
        if writes:
            self.call("POST", f"{self.backend_prefix}:commit", json={"writes": writes})
            self.log(f"backend: {len(writes)} write(s)")

    def start_wait_for_pending_writes(self):
        """Starts the long poll. The request is fully sent before this returns (only the answer
        is awaited on a thread), so the client registers it before the next step's calls."""
        u = urlsplit(f"{self.cbase}:waitForPendingWrites")
        path = f"{u.path}?timeoutMs={WFPW_TIMEOUT_MS}"
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=WFPW_TIMEOUT_MS / 1000 + 10)
        try:
            conn.request("POST", path, body=b"{}", headers={"Content-Type": "application/json"})
        except OSError as e:
            raise ServerGone(f"server unreachable: POST {path}: {e}") from None
        side = self.side
        with self.wfpw_lock:
            side.wfpw_outstanding += 1

        def wait():
            ok = False
            try:
                resp = conn.getresponse()
                resp.read()
                ok = resp.status == 200
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()
            with self.wfpw_lock:
                side.wfpw_outstanding -= 1
                if ok:
                    side.wfpw_done += 1

        threading.Thread(target=wait, daemon=True, name="waitForPendingWrites").start()
        time.sleep(0.01)

    # -- collecting and checking ----------------------------------------------------------------
    def sync_marker(self) -> str:
        """Puts a fresh marker into every stream of the client; returns its token."""
        token = f"t{self.step_index}-{uuid.uuid4().hex[:8]}"
        self.call("POST", f"{self.cbase}/gates:sync", json={"token": token})
        return token

    def read_in_sync(self, stream: SSEStream, token: str) -> int:
        """The snapshotsInSync events an observer got before the marker `token`."""
        try:
            raw, _ = stream.read_until(lambda e: e.event == "sync" and _token(e) == token, timeout=SYNC_TIMEOUT)
        except SSEClosed as e:
            raw = e.events
        except SSETimeout:
            raise StepFailure(f"snapshotsInSync observer: no sync marker {token!r} within {SYNC_TIMEOUT}s") from None
        return sum(1 for e in raw if e.event == "snapshotsInSync")

    def collect_events(self) -> list[Event]:
        token = f"t{self.step_index}-{uuid.uuid4().hex[:8]}"
        open_ls = [l for l in self.listeners.values() if not l.done and not l.closing]
        r = self.call("POST", f"{self.cbase}/gates:sync", expect=None, json={"token": token})
        if (open_ls or self.in_sync) and r.status_code != 200:
            raise StepFailure(f"POST gates:sync -> {r.status_code}: {r.text[:200]}")
        for stream in self.in_sync:
            self.in_sync_events += self.read_in_sync(stream, token)
        events: list[Event] = []
        for l in list(self.listeners.values()):
            events.extend(l.pending_events)
            l.pending_events = []
            if l.done:
                continue
            closing = l.closing
            try:
                if closing:
                    raw = l.stream.read_to_end(timeout=SYNC_TIMEOUT)
                    l.done = True
                else:
                    raw, _ = l.stream.read_until(lambda e: e.event == "sync" and _token(e) == token,
                                                 timeout=SYNC_TIMEOUT)
            except SSEClosed as e:
                raw = e.events
                l.done = True
            except SSETimeout as e:
                what = "end" if closing else f"sync marker {token!r}"
                got = "; ".join(repr(x) for x in e.events[:5])
                raise StepFailure(f"listener {query_label(l.spec_query)}: no {what} within "
                                  f"{SYNC_TIMEOUT}s (events read: {got or 'none'})") from None
            for ev in raw:
                conv = self.convert(l, ev)
                if conv is not None:
                    events.append(conv)
                    if conv.error:
                        l.done = True
        # Listeners of a restarted/terminated instance are gone after their streams ended.
        for qk in [qk for qk, l in self.listeners.items() if l.closing]:
            self.listeners.pop(qk)
        return events

    def convert(self, l: Listener, ev) -> Optional[Event]:
        if ev.event == "sync":
            return None  # an older marker
        if ev.event == "error":
            try:
                body = ev.json() or {}
                err = body.get("error", body)
                status = err.get("status") or GRPC_CODES.get(err.get("code"), str(err.get("code")))
            except (ValueError, AttributeError):
                status = f"unparseable error event {ev.data[:100]!r}"
            self.log(f"  event {query_label(l.spec_query)}: error {ev.data[:200]}")
            return Event(l.key, error=status, raw=ev.data)
        if ev.event != "snapshot":
            return None
        try:
            data = ev.json()
        except ValueError:
            raise StepFailure(f"snapshot event with invalid JSON: {ev.data[:200]!r}") from None
        if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict):
            raise StepFailure(f"snapshot event without metadata: {ev.data[:200]!r}")
        md = data["metadata"]
        out = Event(l.key, from_cache=md.get("fromCache"), has_pending_writes=md.get("hasPendingWrites"),
                    raw=data)
        if l.is_doc:
            exists = bool(data.get("exists"))
            doc = data.get("document") or {}
            new = (doc.get("fields", {}) or {}, bool(md.get("hasPendingWrites"))) if exists else None
            old = l.last_doc
            key = (l.spec_query.get("path") if isinstance(l.spec_query, dict) else l.spec_query).strip("/")
            if exists and doc.get("name") and self.names.key(doc["name"]) != key:
                raise StepFailure(f"document listen on {key} delivered {doc['name']}")
            if old is None and new is not None:
                out.changes.append(Change("added", key, new[0], new[1]))
            elif old is not None and new is None:
                out.changes.append(Change("removed", key, old[0], None))
            elif old is not None and new is not None:
                if canon_fields(old[0]) != canon_fields(new[0]) or old[1] != new[1]:
                    out.changes.append(Change("modified", key, new[0], new[1]))
            l.last_doc = new
        else:
            for ch in data.get("changes") or []:
                doc = ch.get("document") or {}
                dmd = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
                pending = dmd.get("hasPendingWrites") if "hasPendingWrites" in dmd else None
                out.changes.append(Change(ch.get("type", "?"), self.names.key(doc.get("name", "?")),
                                          doc.get("fields", {}) or {},
                                          None if ch.get("type") == "removed" else pending))
        self.log(f"  event {query_label(l.spec_query)}: {out.describe()}")
        return out

    def check_step(self, step: dict):
        events = self.collect_events()
        # Snapshot events, grouped per query in order (the runner sorts by canonical query id).
        expected = [expected_event(e) for e in step.get("expectedSnapshotEvents") or []]
        exp_by_q: dict = defaultdict(list)
        act_by_q: dict = defaultdict(list)
        for e in expected:
            exp_by_q[e.query].append(e)
        for a in events:
            act_by_q[a.query].append(a)
        problems = []
        for qk in list(OrderedDict.fromkeys(list(exp_by_q) + list(act_by_q))):
            exp, act = exp_by_q.get(qk, []), act_by_q.get(qk, [])
            label = query_label(json.loads(qk))
            if len(exp) != len(act):
                problems.append(f"query {label}: {len(act)} event(s), expected {len(exp)}"
                                + "".join(f"\n        expected: {e.describe()}" for e in exp)
                                + "".join(f"\n        actual:   {a.describe()}" for a in act))
                continue
            for n, (e, a) in enumerate(zip(exp, act)):
                msg = compare_events(e, a)
                if msg:
                    problems.append(f"query {label} event {n + 1}: {msg}")
        if problems:
            raise StepFailure("\n      ".join(problems))

        es = step.get("expectedState") or {}
        if self.scripted:
            self.check_scripted_state(es)
        self.check_callbacks(es.get("userCallbacks"))
        if "indexes" in es:
            self.check_indexes(es["indexes"])
        if self.multi:
            self.check_tab_state(es)
            es = {k: v for k, v in es.items() if k != "isShutdown"}
        if "numOutstandingWrites" in es or "isShutdown" in es:
            r = self.call("GET", self.cbase)
            state = r.json()
            if "numOutstandingWrites" in es:
                n = state.get("pendingWrites")
                if isinstance(n, (list, dict)):
                    n = len(n)
                if not isinstance(n, int):
                    raise StepFailure(f"client state has no pendingWrites count: {r.text[:200]}")
                if min(n, MAX_PENDING_WRITES) != es["numOutstandingWrites"]:
                    raise StepFailure(f"pendingWrites {n} (expected {es['numOutstandingWrites']} in flight)")
            if "isShutdown" in es and bool(state.get("terminated")) != bool(es["isShutdown"]):
                raise StepFailure(f"terminated {state.get('terminated')} (expected {es['isShutdown']})")
        self.check_wait_for_pending_writes(step.get("expectedWaitForPendingWritesEvents", 0) or 0)
        # As the runner: every step expects its count, none meaning 0.
        expected_in_sync = step.get("expectedSnapshotsInSyncEvents", 0) or 0
        got, self.in_sync_events = self.in_sync_events, 0
        if got != expected_in_sync:
            raise StepFailure(f"{got} snapshotsInSync event(s), expected {expected_in_sync}")

    def check_indexes(self, expected: list):
        """The client's field indexes against the runner's FieldIndex objects (collection
        group, segments and kinds). Like the runner it ignores `indexId`; it also ignores
        `indexState`, the SDK's backfill bookkeeping: Firegate builds an index at once."""
        kinds = {0: "ASCENDING", 1: "DESCENDING", 2: "CONTAINS"}
        want = sorted((i["collectionGroup"], tuple((".".join(f["fieldPath"]["segments"]), kinds[f["kind"]]) for f in i["fields"]))
                      for i in expected)
        got = []
        for i in self.call("GET", f"{self.cbase}/indexes").json().get("indexes") or []:
            fields = tuple((f["fieldPath"], f.get("order") or f.get("arrayConfig")) for f in i.get("fields") or [])
            got.append((i["collectionGroup"], fields))
        if sorted(got) != want:
            raise StepFailure(f"indexes {sorted(got)} (expected {want})")

    def check_callbacks(self, expected):
        acked, rejected = [], []
        for w in self.writes:
            if w["state"] != "pending":
                continue
            if w["initial"] in ("acknowledged", "rejected"):
                state = w["initial"]
            else:
                r = self.call("GET", f"{self.cbase}/pendingWrites/{quote(w['id'], safe='')}", expect=None)
                if r.status_code != 200:
                    raise StepFailure(f"GET pendingWrites/{w['id']} -> {r.status_code}: {r.text[:200]}")
                state = (r.json().get("state") or "").lower()
            if state in ("acknowledged", "rejected"):
                w["state"] = state
                (acked if state == "acknowledged" else rejected).extend(w["keys"])
        exp_acked = sorted((expected or {}).get("acknowledgedDocs") or [])
        exp_rejected = sorted((expected or {}).get("rejectedDocs") or [])
        if sorted(acked) != exp_acked or sorted(rejected) != exp_rejected:
            raise StepFailure(f"write callbacks: acknowledged {sorted(acked)} rejected {sorted(rejected)} "
                              f"(expected acknowledged {exp_acked} rejected {exp_rejected})")

    def check_wait_for_pending_writes(self, expected: int):
        def done():
            with self.wfpw_lock:
                return self.side.wfpw_done - self.side.wfpw_seen, self.side.wfpw_outstanding

        got, outstanding = done()
        if expected > got:
            deadline = time.monotonic() + WFPW_WAIT
            while time.monotonic() < deadline:
                got, outstanding = done()
                if got >= expected:
                    break
                time.sleep(0.01)
        if outstanding and got == expected:
            time.sleep(WFPW_GRACE)
            got, outstanding = done()
        self.wfpw_seen += got
        if got != expected:
            raise StepFailure(f"{got} waitForPendingWrites completion(s), expected {expected}")


def _token(ev) -> Optional[str]:
    try:
        d = json.loads(ev.data) if ev.data else {}
        return d.get("token") if isinstance(d, dict) else d
    except ValueError:
        return ev.data.strip()


# ---------------------------------------------------------------------------------------------
# The replay driver
# ---------------------------------------------------------------------------------------------

class Replay:
    def __init__(self, base_url: str, spec_dir: Optional[str] = None, verbose: int = 0,
                 modes=MODES, out=None, watch: str = "auto"):
        self.base_url = base_url.rstrip("/")
        # auto: backend-driven watch where the steps map onto backend writes, else scripted.
        self.watch = watch
        self.spec_dir = find_spec_dir(spec_dir)
        self.verbose = verbose
        self.modes = tuple(modes)
        self.results: list[Result] = []
        self.out = out or sys.stdout

    def print(self, *a):
        print(*a, file=self.out, flush=True)

    def load(self, short: str) -> dict:
        with open(spec_file_path(self.spec_dir, short)) as f:
            return json.load(f)

    def expand(self, files) -> list[str]:
        """File short names, with "all" standing for every spec file found."""
        if "all" in files:
            return sorted(short_name(p) for p in self.spec_dir.glob("*_spec_test.json"))
        return list(files)

    def run_files(self, files, test_filter: Optional[str] = None) -> list[Result]:
        for short in self.expand(files):
            specs = self.load(short)
            names = list(specs)
            if test_filter:
                exact = [n for n in names if n == test_filter]
                names = exact or [n for n in names if test_filter.lower() in n.lower()]
            for name in names:
                for mode in self.modes:
                    self.results.append(self.run_one(short, name, specs[name], mode))
        return self.results

    def run_one(self, short: str, name: str, spec: dict, mode: str) -> Result:
        reasons = classify(spec, mode)
        scripted = self.watch == "scripted" or (self.watch == "auto" and bool(reasons) and set(reasons) <= SCRIPTED_REASONS)
        if scripted:
            reasons = [r for r in reasons if r not in SCRIPTED_REASONS]
        # The reason counted is one a scripted watch cannot remove.
        reasons.sort(key=lambda r: r in SCRIPTED_REASONS)
        if reasons:
            res = Result(short, name, mode, "SKIP", reason=reasons[0], detail="; ".join(reasons))
            self.print(f"  SKIP [{mode}] {short}: {name} ({'; '.join(reasons)})")
            return res
        run = SpecRun(self, short, name, spec, mode, scripted=scripted)
        t0 = time.monotonic()
        try:
            run.run()
            res = Result(short, name, mode, "PASS")
        except StepFailure as e:
            res = Result(short, name, mode, "FAIL", detail=str(e))
        except ServerGone as e:
            self.results.append(Result(short, name, mode, "ERROR", detail=f"harness error: {e}"))
            raise
        except HarnessError as e:
            res = Result(short, name, mode, "ERROR", detail=f"harness error: {e}")
        except Exception:  # a harness bug: report it, keep going, exit non-zero at the end
            res = Result(short, name, mode, "ERROR", detail="harness crash:\n" + traceback.format_exc())
        finally:
            run.teardown()
        res.seconds = time.monotonic() - t0
        line = f"  {res.status} [{mode}] {short}: {name} ({res.seconds:.2f}s)"
        if res.status != "PASS":
            line += "\n      " + res.detail.replace("\n", "\n      ")
            if self.verbose == 1 and run.log_lines:
                line += "\n      log:\n        " + "\n        ".join(run.log_lines[-40:])
        self.print(line)
        return res

    # -- reporting ------------------------------------------------------------------------------
    def summary(self) -> dict:
        per_file: "OrderedDict[str, Counter]" = OrderedDict()
        for r in self.results:
            per_file.setdefault(r.file, Counter())[r.status] += 1
        total = Counter()
        for c in per_file.values():
            total.update(c)
        skip_reasons = Counter(r.reason for r in self.results if r.status == "SKIP")
        return {"per_file": per_file, "total": total, "skip_reasons": skip_reasons}

    def table(self) -> str:
        s = self.summary()
        lines = [f"{'file':<16}{'pass':>6}{'fail':>6}{'error':>7}{'skip':>6}"]
        for f, c in s["per_file"].items():
            lines.append(f"{f:<16}{c['PASS']:>6}{c['FAIL']:>6}{c['ERROR']:>7}{c['SKIP']:>6}")
        t = s["total"]
        lines.append(f"{'total':<16}{t['PASS']:>6}{t['FAIL']:>6}{t['ERROR']:>7}{t['SKIP']:>6}")
        if s["skip_reasons"]:
            lines.append("skipped (test x mode), by first reason:")
            for reason, n in s["skip_reasons"].most_common():
                lines.append(f"  {n:>4}  {reason}")
        return "\n".join(lines)

    def final_line(self) -> str:
        t = self.summary()["total"]
        return f"spec replay: {t['PASS']} passed, {t['FAIL'] + t['ERROR']} failed, {t['SKIP']} skipped"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", default=os.environ.get("FIREGATE_URL", "http://127.0.0.1:8080"))
    ap.add_argument("--spec-dir", default=None)
    ap.add_argument("--file", action="append", default=[],
                    help="spec file short name (write, listen, …); repeatable or comma-separated; "
                         "default: " + ",".join(DEFAULT_FILES) + "; 'all' for every file")
    ap.add_argument("--test", default=None, help="test name (exact, else case-insensitive substring)")
    ap.add_argument("--mode", choices=("both",) + MODES, default="both")
    ap.add_argument("--watch", choices=("auto", "scripted", "backend"), default="auto",
                    help="how watch steps reach the client: a scripted watch, backend writes, or "
                         "backend writes where they can stand in and a scripted watch elsewhere (auto)")
    ap.add_argument("-v", "--verbose", action="count", default=0,
                    help="-v: print the step log of failures; -vv: log every step live")
    args = ap.parse_args(argv)

    files = [f for arg in args.file for f in arg.split(",") if f] or list(DEFAULT_FILES)
    try:
        replay = Replay(args.base_url, args.spec_dir, args.verbose,
                        MODES if args.mode == "both" else (args.mode,), watch=args.watch)
    except FileNotFoundError as e:
        print(f"spec replay: {e}", file=sys.stderr)
        return 2
    try:
        requests.get(replay.base_url + "/healthz", timeout=5).raise_for_status()
    except requests.RequestException as e:
        print(f"spec replay: server at {replay.base_url} is not healthy: {e}", file=sys.stderr)
        return 2
    try:
        replay.run_files(files, args.test)
    except ServerGone as e:
        print(f"\nspec replay: stopped: {e}", file=sys.stderr)
        print(replay.table())
        print(replay.final_line())
        return 2
    print()
    print(replay.table())
    print(replay.final_line())
    total = replay.summary()["total"]
    return 2 if total["ERROR"] else (1 if total["FAIL"] else 0)


if __name__ == "__main__":
    sys.exit(main())
