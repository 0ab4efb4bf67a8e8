"""Snapshot events: the ones a spec step expects, the ones a listener's stream delivered
(`Listener`, `actual_event`), and their comparison as the JS runner makes it
(spec_test_runner.ts `validateExpectedSnapshotEvents`)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Optional

from sse import SSEStream

from .errors import GRPC_CODES, StepFailure
from .values import Names, canon_fields, plain_fields, query_key, query_label, to_fields


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


def actual_event(l: Listener, ev, names: Names, log) -> Optional[Event]:
    """One SSE event of a listener's stream as an Event (None: not a snapshot or an error).
    A document listen's snapshots become the change against its previous snapshot."""
    if ev.event == "sync":
        return None  # an older marker
    if ev.event == "error":
        try:
            body = ev.json() or {}
            err = body.get("error", body)
            status = err.get("status") or GRPC_CODES.get(err.get("code"), str(err.get("code")))
        except (ValueError, AttributeError):
            status = f"unparseable error event {ev.data[:100]!r}"
        log(f"  event {query_label(l.spec_query)}: error {ev.data[:200]}")
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
        if exists and doc.get("name") and names.key(doc["name"]) != key:
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
            out.changes.append(Change(ch.get("type", "?"), names.key(doc.get("name", "?")),
                                      doc.get("fields", {}) or {},
                                      None if ch.get("type") == "removed" else pending))
    log(f"  event {query_label(l.spec_query)}: {out.describe()}")
    return out
