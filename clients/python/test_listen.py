"""Documents backend: `:listen` over Server-Sent Events (docs/documents.md).

Each test follows a query (or one document) with an SSE client and asserts the exact event
sequence — change types, oldIndex/newIndex, the changed documents, the full `documents` list, the
resume ids and read times — for a scripted series of writes through the REST API.

Synchronisation: every write is acknowledged (HTTP 200) before its event is awaited, and events are
read with a timeout, never after a sleep. A write that must NOT produce an event is followed by one
that must; the next event read has to be the latter's (its `readTime` is that commit's time), so a
stray event is caught without waiting for silence.

Index rules are the SDK's `docChanges()`: removed first, then added, then modified, each group in
query order, with oldIndex/newIndex computed against a running list that starts as the previous
result and has each change applied in turn.
"""
import json
import re

import pytest
import requests

from docs_support import Fs, assert_error, assert_ts, ff, ok, order, sq, ts_key, w_delete, w_update
from sse import SSEClosed, SSEStream, SSETimeout

EVENT_TIMEOUT = 10
ID_RE = re.compile(r"^([0-9a-z]+)\.(\d+)$")
SNAPSHOT_KEYS = {"readTime", "documents", "changes", "reset"}
DOC_SNAPSHOT_KEYS = {"readTime", "exists", "document", "reset"}


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


class Db(Fs):
    """A REST client that remembers the current (and last deleted) version of every document it
    wrote, as read back from the server, plus each commit's time."""

    def __init__(self, base_url, project):
        super().__init__(base_url, project)
        self.cur = {}    # path -> Document JSON
        self.gone = {}   # path -> last Document JSON before its deletion
        self.history = {}  # path -> every version written, oldest first

    def write(self, docs):
        """One commit: {path: fields (upsert) | None (delete)}. Returns the commit time."""
        writes = [w_delete(self.name(p)) if f is None else w_update(self.name(p), f) for p, f in docs.items()]
        commit_time = ok(self.commit(writes))["commitTime"]
        for p in docs:
            r = self.get(p)
            if r.status_code == 200:
                self.cur[p] = r.json()
                self.history.setdefault(p, []).append(self.cur[p])
            else:
                assert r.status_code == 404, r.text
                if p in self.cur:
                    self.gone[p] = self.cur.pop(p)
        return commit_time

    def doc(self, path):
        return self.cur[path]

    def listen_url(self, parent=None):
        return f"{self.url(self.parent_name(parent))}:listen"

    def listen(self, query, parent=None, last_event_id=None, keep_comments=False, **params):
        headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else None
        s = SSEStream(self.listen_url(parent), params={"query": json.dumps(query), **params}, headers=headers,
                      keep_comments=keep_comments)
        assert s.ok, f"listen failed: {s.status_code} {s.body}"
        return s

    def listen_doc(self, path, last_event_id=None):
        headers = {"Last-Event-ID": last_event_id} if last_event_id is not None else None
        s = SSEStream(f"{self.doc_url(path)}:listen", headers=headers)
        assert s.ok, f"listen failed: {s.status_code} {s.body}"
        return s


@pytest.fixture
def db(base_url, project):
    return Db(base_url, project)


class Follower:
    """Reads one listen stream's snapshots and checks the id sequence (same epoch, strictly
    increasing commit sequence) and the read times (monotonic) across them."""

    def __init__(self, stream):
        self.s = stream
        self.epoch = None
        self.seq = None
        self.read_time = None
        self.last_id = None

    def next(self, kind="snapshot"):
        ev = self.s.next(timeout=EVENT_TIMEOUT)
        assert ev.event == kind, ev
        body = ev.json()
        if kind != "snapshot":
            return ev, body
        m = ID_RE.match(ev.id or "")
        assert m, f"snapshot id must be <epoch>.<sequence>: {ev!r}"
        if self.epoch is not None:
            assert m.group(1) == self.epoch, f"epoch changed within a stream: {ev.id}"
            assert int(m.group(2)) > self.seq, f"ids must increase: {self.last_id} then {ev.id}"
        self.epoch, self.seq, self.last_id = m.group(1), int(m.group(2)), ev.id
        assert_ts(body["readTime"])
        if self.read_time is not None:
            assert ts_key(body["readTime"]) >= ts_key(self.read_time), (self.read_time, body["readTime"])
        self.read_time = body["readTime"]
        return ev, body

    def snapshot(self, db, changes, documents, read_time=None, reset=False, changes_only=False):
        """Next event: a query snapshot with exactly these changes [(type, oldIndex, newIndex, path)]
        and this result [paths]. Added/modified documents are the current versions, removed ones
        the version last in the result."""
        ev, body = self.next()
        allowed = SNAPSHOT_KEYS - ({"documents"} if changes_only else set())
        assert set(body) <= allowed, body
        if reset:
            assert body.get("reset") is True, body
        else:
            assert "reset" not in body, body
        if read_time is not None:
            assert body["readTime"] == read_time, f"snapshot should be the commit at {read_time}: {body}"
        got = [(c["type"], c["oldIndex"], c["newIndex"], db.rel(c["document"]["name"])) for c in body["changes"]]
        assert got == list(changes), f"changes: got {got}, expected {list(changes)}"
        for c, (kind, _, _, path) in zip(body["changes"], changes):
            assert set(c) == {"type", "oldIndex", "newIndex", "document"}, c
            if kind != "removed":
                assert c["document"] == db.cur[path], (kind, path)
            elif path not in db.cur:
                assert c["document"] == db.gone[path], (kind, path)     # deleted: its last version
            else:
                # left the result by an update (the change carries the version that was in the
                # result; tests that know which pin it down) or pushed out of a limit window
                assert c["document"] in db.history[path], (kind, path)
        if changes_only:
            assert "documents" not in body, body
        else:
            assert [db.rel(d["name"]) for d in body["documents"]] == list(documents)
            assert body["documents"] == [db.cur[p] for p in documents]
        return ev, body

    def doc_snapshot(self, db, path, exists, read_time=None, reset=False):
        ev, body = self.next()
        assert set(body) <= DOC_SNAPSHOT_KEYS, body
        assert body["exists"] is exists, body
        if reset:
            assert body.get("reset") is True, body
        else:
            assert "reset" not in body, body
        if exists:
            assert body["document"] == db.cur[path], body
        else:
            assert "document" not in body, body
        if read_time is not None:
            assert body["readTime"] == read_time, body
        return ev, body

    def close(self):
        self.s.close()


def follow(stream):
    return Follower(stream)


def q(collection="c", where=None, order_by=None, limit=None, all_descendants=None):
    return sq(collection, where=where, order_by=order_by, limit=limit, all_descendants=all_descendants)


# ---------------------------------------------------------------------------------------------
# protocol: headers, first event, errors before the stream
# ---------------------------------------------------------------------------------------------


def test_headers_and_first_event_of_a_query(db):
    db.write({"c/a": {"n": 2}, "c/b": {"n": 1}})
    s = db.listen(q(order_by=[order("n")]))
    try:
        assert s.status_code == 200
        assert s.headers["Content-Type"].split(";")[0].strip() == "text/event-stream"
        assert s.headers["Cache-Control"] == "no-cache"
        assert "Content-Length" not in s.headers
        f = follow(s)
        ev, body = f.snapshot(db, [("added", -1, 0, "c/b"), ("added", -1, 1, "c/a")], ["c/b", "c/a"])
        assert ev.event == "snapshot"
        # the position is the database's latest commit (one so far)
        assert f.seq == 1
    finally:
        s.close()


def test_headers_and_first_event_of_a_document(db):
    db.write({"c/a": {"n": 1}})
    s = db.listen_doc("c/a")
    try:
        assert s.headers["Content-Type"].split(";")[0].strip() == "text/event-stream"
        assert s.headers["Cache-Control"] == "no-cache"
        follow(s).doc_snapshot(db, "c/a", True)
    finally:
        s.close()


def test_first_event_of_an_empty_result_has_no_changes(db):
    f = follow(db.listen(q("nothing")))
    try:
        ev, body = f.snapshot(db, [], [])
        assert body["changes"] == [] and body["documents"] == []
        assert f.seq == 0
    finally:
        f.close()


@pytest.mark.parametrize("text, why", [
    ("{not json", "malformed JSON"),
    ('{"from":[{"collectionId":"c"}],"where":{"fieldFilter":{"field":{"fieldPath":"n"},"op":"NOPE","value":{"integerValue":"1"}}}}',
     "unknown operator"),
    ('{"from":[{"collectionId":"c"}],"limit":-1}', "negative limit"),
    ('{"from":[{"collectionId":"c"}],"orderBy":[{"field":{"fieldPath":"n"},"direction":"SIDEWAYS"}]}', "bad direction"),
    ('[1,2]', "not an object"),
    ('{"from":[{"collectionId":"c"}],"where":{"fieldFilter":{"field":{"fieldPath":"n"},"op":"IN","value":{"integerValue":"1"}}}}',
     "IN needs an array"),
])
def test_invalid_query_is_400_before_the_stream(db, text, why):
    r = requests.get(db.listen_url(), params={"query": text}, headers={"Accept": "text/event-stream"}, timeout=10)
    assert not r.headers.get("Content-Type", "").startswith("text/event-stream"), why
    assert_error(r, 400, "INVALID_ARGUMENT")


def test_listen_on_a_collection_path_is_400(db):
    r = requests.get(f"{db.doc_url('c')}:listen", timeout=10)
    assert_error(r, 400, "INVALID_ARGUMENT")
    r = requests.get(f"{db.doc_url('c')}:listen", params={"query": json.dumps(q())}, timeout=10)
    assert_error(r, 400, "INVALID_ARGUMENT")


def test_query_both_in_url_and_body_is_400(db):
    r = requests.post(db.listen_url(), params={"query": json.dumps(q())}, json={"structuredQuery": q()}, timeout=10)
    assert_error(r, 400, "INVALID_ARGUMENT")


def test_post_with_structured_query_body(db):
    db.write({"c/a": {"n": 1}, "c/b": {"n": 5}})
    s = SSEStream(db.listen_url(), method="POST", json_body={"structuredQuery": q(where=ff("n", "GREATER_THAN", 2))})
    assert s.ok, s.body
    f = follow(s)
    try:
        f.snapshot(db, [("added", -1, 0, "c/b")], ["c/b"])
        t = db.write({"c/c": {"n": 3}})
        # an inequality filter orders by its field first (Firestore's implicit orderBy)
        f.snapshot(db, [("added", -1, 0, "c/c")], ["c/c", "c/b"], read_time=t)
    finally:
        f.close()


# ---------------------------------------------------------------------------------------------
# query listens: the event sequence for scripted writes
# ---------------------------------------------------------------------------------------------


def test_filter_order_by_create_update_delete(db):
    """Creates in and out of a filter, updates that move a document under orderBy, that change
    it in place, that take it out of and into the filter, deletes in and out of the result."""
    db.write({"c/a": {"n": 10}, "c/b": {"n": 20}, "c/x": {"n": 5}})
    f = follow(db.listen(q(where=ff("n", "GREATER_THAN_OR_EQUAL", 10), order_by=[order("n")])))
    try:
        f.snapshot(db, [("added", -1, 0, "c/a"), ("added", -1, 1, "c/b")], ["c/a", "c/b"])

        t = db.write({"c/c": {"n": 30}})                       # created at the end
        f.snapshot(db, [("added", -1, 2, "c/c")], ["c/a", "c/b", "c/c"], read_time=t)

        db.write({"c/y": {"n": 1}})                            # created outside the filter: no event
        t = db.write({"c/d": {"n": 15}})                       # created in the middle
        f.snapshot(db, [("added", -1, 1, "c/d")], ["c/a", "c/d", "c/b", "c/c"], read_time=t)

        t = db.write({"c/a": {"n": 25}})                       # moves from first to third
        f.snapshot(db, [("modified", 0, 2, "c/a")], ["c/d", "c/b", "c/a", "c/c"], read_time=t)

        t = db.write({"c/c": {"n": 30, "tag": "x"}})           # changed in place (last)
        f.snapshot(db, [("modified", 3, 3, "c/c")], ["c/d", "c/b", "c/a", "c/c"], read_time=t)

        t = db.write({"c/d": {"n": 40}})                       # moves from first to last
        f.snapshot(db, [("modified", 0, 3, "c/d")], ["c/b", "c/a", "c/c", "c/d"], read_time=t)

        old_b = db.doc("c/b")
        t = db.write({"c/b": {"n": 3}})                        # leaves the filter
        _, body = f.snapshot(db, [("removed", 0, -1, "c/b")], ["c/a", "c/c", "c/d"], read_time=t)
        assert body["changes"][0]["document"] == old_b, "a removed change carries the version that was in the result"

        t = db.write({"c/x": {"n": 12}})                       # enters the filter, first
        f.snapshot(db, [("added", -1, 0, "c/x")], ["c/x", "c/a", "c/c", "c/d"], read_time=t)

        t = db.write({"c/c": None})                            # deleted from the middle
        f.snapshot(db, [("removed", 2, -1, "c/c")], ["c/x", "c/a", "c/d"], read_time=t)

        db.write({"c/y": None})                                # deleted outside the filter: no event
        db.write({"c/a": {"n": 25}})                           # a no-op write (nothing changes): no event
        db.write({"c/b": {"n": 4}})                            # changed but still outside: no event
        t = db.write({"c/z": {"n": 100}})
        f.snapshot(db, [("added", -1, 3, "c/z")], ["c/x", "c/a", "c/d", "c/z"], read_time=t)
        assert f.s.drain() == []
    finally:
        f.close()


def test_descending_order_and_ties_break_by_name(db):
    db.write({"c/b": {"n": 1}, "c/a": {"n": 1}, "c/c": {"n": 2}})
    f = follow(db.listen(q(order_by=[order("n", "DESCENDING")])))
    try:
        # equal n: the implicit __name__ order follows the last orderBy direction (descending)
        f.snapshot(db, [("added", -1, 0, "c/c"), ("added", -1, 1, "c/b"), ("added", -1, 2, "c/a")],
                   ["c/c", "c/b", "c/a"])
        t = db.write({"c/ab": {"n": 1}})
        f.snapshot(db, [("added", -1, 2, "c/ab")], ["c/c", "c/b", "c/ab", "c/a"], read_time=t)
        t = db.write({"c/a": {"n": 3}})
        f.snapshot(db, [("modified", 3, 0, "c/a")], ["c/a", "c/c", "c/b", "c/ab"], read_time=t)
    finally:
        f.close()


def test_limit_window(db):
    """orderBy n limit 2: a document entering pushes the last one out; a document leaving lets
    the next one in."""
    db.write({"c/a": {"n": 1}, "c/b": {"n": 2}, "c/c": {"n": 3}, "c/d": {"n": 4}})
    f = follow(db.listen(q(order_by=[order("n")], limit=2)))
    try:
        f.snapshot(db, [("added", -1, 0, "c/a"), ("added", -1, 1, "c/b")], ["c/a", "c/b"])

        t = db.write({"c/e": {"n": 0}})                        # enters first, b leaves
        f.snapshot(db, [("removed", 1, -1, "c/b"), ("added", -1, 0, "c/e")], ["c/e", "c/a"], read_time=t)

        t = db.write({"c/e": None})                            # deleted: b comes back
        f.snapshot(db, [("removed", 0, -1, "c/e"), ("added", -1, 1, "c/b")], ["c/a", "c/b"], read_time=t)

        old_a = db.doc("c/a")
        t = db.write({"c/a": {"n": 10}})                       # a moves out of the window, c enters
        _, body = f.snapshot(db, [("removed", 0, -1, "c/a"), ("added", -1, 1, "c/c")], ["c/b", "c/c"], read_time=t)
        assert body["changes"][0]["document"] == old_a

        t = db.write({"c/d": {"n": 2.5}})                      # d moves into the window, c leaves
        f.snapshot(db, [("removed", 1, -1, "c/c"), ("added", -1, 1, "c/d")], ["c/b", "c/d"], read_time=t)

        db.write({"c/c": {"n": 7}})                            # outside the window: no event
        db.write({"c/f": {"n": 99}})                           # created outside the window: no event
        t = db.write({"c/b": {"n": 2, "v": True}})             # changed in place inside the window
        f.snapshot(db, [("modified", 0, 0, "c/b")], ["c/b", "c/d"], read_time=t)

        t = db.write({"c/d": {"n": 1.5}})                      # reordered inside the window
        f.snapshot(db, [("modified", 1, 0, "c/d")], ["c/d", "c/b"], read_time=t)
    finally:
        f.close()


def test_multi_document_commit_is_one_event(db):
    """One commit touching many documents gives ONE event, changes in the SDK order with indexes
    against the running list."""
    db.write({"c/a": {"n": 1}, "c/b": {"n": 2}, "c/c": {"n": 3}, "c/d": {"n": 4}, "c/e": {"n": 5}})
    f = follow(db.listen(q(where=ff("n", "GREATER_THAN_OR_EQUAL", 0), order_by=[order("n")])))
    try:
        f.snapshot(db, [("added", -1, i, f"c/{x}") for i, x in enumerate("abcde")], [f"c/{x}" for x in "abcde"])
        t = db.write({
            "c/e": {"n": 6},      # modified in place, last
            "c/b": None,          # removed (deleted)
            "c/f": {"n": 0},      # added, first
            "c/d": {"n": 0.5},    # modified, moves from 3rd to 2nd
            "c/g": {"n": -1},     # created outside the filter
            "c/a": {"n": -5},     # removed (leaves the filter)
            "c/h": {"n": 3.5},    # added between c and e
        })
        # running list: [a b c d4 e5] -removed a@0-> [b c d4 e5] -removed b@0-> [c d4 e5]
        #   -added f@0-> [f c d4 e5] -added h@2 (d still holds n=4 in the list)-> [f c h d4 e5]
        #   -modified d 3->1-> [f d c h e5] -modified e 4->4-> [f d c h e]
        f.snapshot(db, [
            ("removed", 0, -1, "c/a"),
            ("removed", 0, -1, "c/b"),
            ("added", -1, 0, "c/f"),
            ("added", -1, 2, "c/h"),
            ("modified", 3, 1, "c/d"),
            ("modified", 4, 4, "c/e"),
        ], ["c/f", "c/d", "c/c", "c/h", "c/e"], read_time=t)
        t = db.write({"c/c": None})
        f.snapshot(db, [("removed", 2, -1, "c/c")], ["c/f", "c/d", "c/h", "c/e"], read_time=t)
        assert f.s.drain() == []
    finally:
        f.close()


def test_commit_outside_the_result_gives_no_event_and_ids_skip(db):
    db.write({"c/a": {"n": 1}})
    f = follow(db.listen(q()))
    try:
        f.snapshot(db, [("added", -1, 0, "c/a")], ["c/a"])
        first = f.seq
        db.write({"other/x": {"n": 1}})
        db.write({"other/y": {"n": 1}, "other/z": {"n": 2}})
        db.write({"c/a/sub/s": {"n": 1}})                      # a subcollection is not the collection
        t = db.write({"c/b": {"n": 2}})
        f.snapshot(db, [("added", -1, 1, "c/b")], ["c/a", "c/b"], read_time=t)
        assert f.seq == first + 4, "the id is the database's commit sequence"
    finally:
        f.close()


def test_changes_only_leaves_documents_out(db):
    db.write({"c/a": {"n": 1}})
    f = follow(db.listen(q(order_by=[order("n")]), changesOnly="true"))
    try:
        f.snapshot(db, [("added", -1, 0, "c/a")], None, changes_only=True)
        t = db.write({"c/b": {"n": 0}})
        f.snapshot(db, [("added", -1, 0, "c/b")], None, read_time=t, changes_only=True)
    finally:
        f.close()


def test_collection_group_query(db):
    db.write({
        "msgs/m0": {"n": 0},
        "rooms/r1/msgs/m1": {"n": 1},
        "rooms/r2/msgs/m2": {"n": 2},
        "rooms/r1/other/o1": {"n": 1},
        "rooms/r1/msgsx/m9": {"n": 1},
    })
    f = follow(db.listen(q("msgs", order_by=[order("n")], all_descendants=True)))
    try:
        f.snapshot(db, [("added", -1, 0, "msgs/m0"), ("added", -1, 1, "rooms/r1/msgs/m1"),
                        ("added", -1, 2, "rooms/r2/msgs/m2")],
                   ["msgs/m0", "rooms/r1/msgs/m1", "rooms/r2/msgs/m2"])
        t = db.write({"users/u/msgs/m3": {"n": 1.5}})          # a new parent, same collection id
        f.snapshot(db, [("added", -1, 2, "users/u/msgs/m3")],
                   ["msgs/m0", "rooms/r1/msgs/m1", "users/u/msgs/m3", "rooms/r2/msgs/m2"], read_time=t)
        db.write({"rooms/r1/other/o2": {"n": 0}, "msgsx/a": {"n": 0}})   # other collection ids: no event
        t = db.write({"a/b/c/d/msgs/deep": {"n": -1}, "msgs/m0": None})  # one commit, two changes
        f.snapshot(db, [("removed", 0, -1, "msgs/m0"), ("added", -1, 0, "a/b/c/d/msgs/deep")],
                   ["a/b/c/d/msgs/deep", "rooms/r1/msgs/m1", "users/u/msgs/m3", "rooms/r2/msgs/m2"], read_time=t)
    finally:
        f.close()


def test_query_under_a_parent_document(db):
    db.write({
        "rooms/r1/msgs/a": {"n": 2},
        "rooms/r1/msgs/b": {"n": 1},
        "rooms/r2/msgs/c": {"n": 0},
        "msgs/d": {"n": 0},
        "rooms/r1/msgs/a/msgs/deep": {"n": 0},
    })
    f = follow(db.listen(q("msgs", order_by=[order("n")]), parent="rooms/r1"))
    try:
        f.snapshot(db, [("added", -1, 0, "rooms/r1/msgs/b"), ("added", -1, 1, "rooms/r1/msgs/a")],
                   ["rooms/r1/msgs/b", "rooms/r1/msgs/a"])
        db.write({"rooms/r2/msgs/e": {"n": 5}, "msgs/f": {"n": 5}})      # other parents: no event
        db.write({"rooms/r1/msgs/a/msgs/deep2": {"n": 5}})               # deeper: no event
        t = db.write({"rooms/r1/msgs/g": {"n": 1.5}})
        f.snapshot(db, [("added", -1, 1, "rooms/r1/msgs/g")],
                   ["rooms/r1/msgs/b", "rooms/r1/msgs/g", "rooms/r1/msgs/a"], read_time=t)
        t = db.write({"rooms/r1/msgs/b": None})
        f.snapshot(db, [("removed", 0, -1, "rooms/r1/msgs/b")], ["rooms/r1/msgs/g", "rooms/r1/msgs/a"], read_time=t)
    finally:
        f.close()

    # the same parent with allDescendants: every msgs collection below rooms/r1, and only there
    g = follow(db.listen(q("msgs", order_by=[order("n")], all_descendants=True), parent="rooms/r1"))
    try:
        g.snapshot(db, [("added", -1, 0, "rooms/r1/msgs/a/msgs/deep"), ("added", -1, 1, "rooms/r1/msgs/g"),
                        ("added", -1, 2, "rooms/r1/msgs/a"), ("added", -1, 3, "rooms/r1/msgs/a/msgs/deep2")],
                   ["rooms/r1/msgs/a/msgs/deep", "rooms/r1/msgs/g", "rooms/r1/msgs/a", "rooms/r1/msgs/a/msgs/deep2"])
        db.write({"rooms/r2/msgs/h": {"n": 0}, "rooms/r10/msgs/h": {"n": 0}})   # siblings of the parent: no event
        t = db.write({"rooms/r1/x/y/msgs/z": {"n": 9}})
        g.snapshot(db, [("added", -1, 4, "rooms/r1/x/y/msgs/z")],
                   ["rooms/r1/msgs/a/msgs/deep", "rooms/r1/msgs/g", "rooms/r1/msgs/a", "rooms/r1/msgs/a/msgs/deep2",
                    "rooms/r1/x/y/msgs/z"], read_time=t)
    finally:
        g.close()


def test_two_listeners_see_the_same_events(db):
    f1 = follow(db.listen(q(order_by=[order("n")])))
    f2 = follow(db.listen(q(order_by=[order("n")])))
    try:
        f1.snapshot(db, [], [])
        f2.snapshot(db, [], [])
        t = db.write({"c/a": {"n": 1}, "c/b": {"n": 0}})
        e1, b1 = f1.snapshot(db, [("added", -1, 0, "c/b"), ("added", -1, 1, "c/a")], ["c/b", "c/a"], read_time=t)
        e2, b2 = f2.snapshot(db, [("added", -1, 0, "c/b"), ("added", -1, 1, "c/a")], ["c/b", "c/a"], read_time=t)
        assert e1.id == e2.id and b1 == b2
    finally:
        f1.close()
        f2.close()


# ---------------------------------------------------------------------------------------------
# single-document listens
# ---------------------------------------------------------------------------------------------


def test_single_document_create_update_delete(db):
    f = follow(db.listen_doc("c/s"))
    try:
        f.doc_snapshot(db, "c/s", False)                      # missing at first
        db.write({"c/other": {"n": 1}})                        # another document: no event
        t = db.write({"c/s": {"n": 1}})
        f.doc_snapshot(db, "c/s", True, read_time=t)
        t = db.write({"c/s": {"n": 2, "m": {"k": "v"}}})
        f.doc_snapshot(db, "c/s", True, read_time=t)
        db.write({"c/s": {"n": 2, "m": {"k": "v"}}})           # no-op: no event
        db.write({"c/s/sub/x": {"n": 1}})                      # a document below it: no event
        t = db.write({"c/s": None})
        f.doc_snapshot(db, "c/s", False, read_time=t)
        t = db.write({"c/s": {"again": True}})
        f.doc_snapshot(db, "c/s", True, read_time=t)
        assert f.s.drain() == []
    finally:
        f.close()


# ---------------------------------------------------------------------------------------------
# resuming with Last-Event-ID
# ---------------------------------------------------------------------------------------------


def test_resume_with_last_event_id_sends_only_the_changes(db):
    db.write({"c/a": {"n": 1}, "c/b": {"n": 2}, "c/c": {"n": 3}})
    query = q(where=ff("n", "LESS_THAN", 100), order_by=[order("n")])
    f = follow(db.listen(query))
    f.snapshot(db, [("added", -1, 0, "c/a"), ("added", -1, 1, "c/b"), ("added", -1, 2, "c/c")], ["c/a", "c/b", "c/c"])
    t = db.write({"c/d": {"n": 4}})
    f.snapshot(db, [("added", -1, 3, "c/d")], ["c/a", "c/b", "c/c", "c/d"], read_time=t)
    last = f.last_id
    f.close()

    # while away: one doc removed by delete, one by leaving the filter, one added, one moved,
    # one changed in place, and writes elsewhere
    db.write({"c/a": None})
    db.write({"c/e": {"n": 0}})
    db.write({"elsewhere/x": {"n": 1}})
    db.write({"c/c": {"n": 1000}})
    db.write({"c/b": {"n": 5}})
    db.write({"c/d": {"n": 4, "v": 1}})
    t_last = db.write({"c/d": {"n": 4, "v": 2}})               # two changes to d: one modified

    g = follow(db.listen(query, last_event_id=last))
    try:
        # [a b c d] -removed a@0-> [b c d] -removed c@1-> [b d] -added e@0-> [e b d]
        #   -modified d(4) 2->2-> [e b d] -modified b(5) 1->2-> [e d b]
        ev, body = g.snapshot(db, [
            ("removed", 0, -1, "c/a"),
            ("removed", 1, -1, "c/c"),
            ("added", -1, 0, "c/e"),
            ("modified", 2, 2, "c/d"),
            ("modified", 1, 2, "c/b"),
        ], ["c/e", "c/d", "c/b"])
        # the resumed event's id is the latest commit's position, after the one resumed from
        assert int(ev.id.split(".")[1]) == int(last.split(".")[1]) + 7
        assert ev.id.split(".")[0] == last.split(".")[0]
        assert ts_key(body["readTime"]) >= ts_key(t_last)
        assert body["changes"][1]["document"] == db.history["c/c"][0], "c as it was in the result (n=3)"
        assert body["changes"][0]["document"] == db.gone["c/a"]
        t = db.write({"c/f": {"n": 6}})
        g.snapshot(db, [("added", -1, 3, "c/f")], ["c/e", "c/d", "c/b", "c/f"], read_time=t)
        latest = g.last_id
    finally:
        g.close()

    # resuming from the very latest event: nothing changed, the first event has no changes
    h = follow(db.listen(query, last_event_id=latest))
    try:
        ev, body = h.snapshot(db, [], ["c/e", "c/d", "c/b", "c/f"])
        assert ev.id == latest
        t = db.write({"c/e": None})
        h.snapshot(db, [("removed", 0, -1, "c/e")], ["c/d", "c/b", "c/f"], read_time=t)
    finally:
        h.close()


def test_resume_a_document_listen(db):
    db.write({"c/s": {"n": 1}})
    f = follow(db.listen_doc("c/s"))
    f.doc_snapshot(db, "c/s", True)
    last = f.last_id
    f.close()
    db.write({"c/s": {"n": 2}})
    db.write({"c/s": {"n": 3}})
    g = follow(db.listen_doc("c/s", last_event_id=last))
    try:
        g.doc_snapshot(db, "c/s", True)                       # the current version, no reset
        unchanged = g.last_id
    finally:
        g.close()
    db.write({"c/other": {"n": 1}})
    # nothing changed for this document since `unchanged`: no first event; the next one is the write's
    h = follow(db.listen_doc("c/s", last_event_id=unchanged))
    try:
        t = db.write({"c/s": None})
        h.doc_snapshot(db, "c/s", False, read_time=t)
    finally:
        h.close()


@pytest.mark.parametrize("bogus", ["garbage", "zzzzzz.1", "1.2.3", "abc.-1", "{epoch}.999999", "{epoch}.x", "{epoch}.-1"])
def test_resume_with_an_unknown_id_resets(db, bogus):
    db.write({"c/b": {"n": 2}, "c/a": {"n": 1}})
    probe = follow(db.listen(q()))
    probe.next()
    epoch = probe.epoch
    probe.close()
    bogus = bogus.replace("{epoch}", epoch)
    f = follow(db.listen(q(order_by=[order("n")]), last_event_id=bogus))
    try:
        f.snapshot(db, [("added", -1, 0, "c/a"), ("added", -1, 1, "c/b")], ["c/a", "c/b"], reset=True)
        t = db.write({"c/c": {"n": 3}})
        f.snapshot(db, [("added", -1, 2, "c/c")], ["c/a", "c/b", "c/c"], read_time=t)
    finally:
        f.close()


def test_resume_from_position_zero_is_every_document_added_without_reset(db):
    """`<epoch>.0` is the empty database before its first commit: a valid position."""
    f = follow(db.listen(q()))
    f.snapshot(db, [], [])
    zero = f.last_id
    assert zero.endswith(".0")
    f.close()
    db.write({"c/a": {"n": 1}})
    db.write({"c/b": {"n": 2}, "x/y": {"n": 0}})
    g = follow(db.listen(q(), last_event_id=zero))
    try:
        g.snapshot(db, [("added", -1, 0, "c/a"), ("added", -1, 1, "c/b")], ["c/a", "c/b"])
    finally:
        g.close()


def test_resume_with_another_databases_id_resets(base_url, project):
    """An id from another database's stream is no position in this one."""
    other = Db(base_url, project + "-other")
    for i in range(3):
        other.write({f"c/x{i}": {"n": i}})
    o = follow(other.listen(q()))
    o.next()
    foreign = o.last_id                                          # <other epoch>.3
    o.close()
    db = Db(base_url, project)
    db.write({"c/a": {"n": 1}})
    for i in range(4):
        db.write({f"elsewhere/e{i}": {"n": i}})
    f = follow(db.listen(q(), last_event_id=foreign))
    try:
        f.snapshot(db, [("added", -1, 0, "c/a")], ["c/a"], reset=True)
    finally:
        f.close()


def test_resume_a_document_listen_with_an_unknown_id_resets(db):
    db.write({"c/s": {"n": 1}})
    f = follow(db.listen_doc("c/s", last_event_id="nope.1"))
    try:
        f.doc_snapshot(db, "c/s", True, reset=True)
    finally:
        f.close()


def test_resume_id_from_before_a_reset_resets(db):
    db.write({"c/a": {"n": 1}})
    f = follow(db.listen(q()))
    f.snapshot(db, [("added", -1, 0, "c/a")], ["c/a"])
    before = f.last_id
    f.close()
    assert db.reset().status_code == 200
    db.cur.clear()
    db.write({"c/b": {"n": 1}})
    db.write({"c/c": {"n": 2}})
    g = follow(db.listen(q(), last_event_id=before))
    try:
        g.snapshot(db, [("added", -1, 0, "c/b"), ("added", -1, 1, "c/c")], ["c/b", "c/c"], reset=True)
    finally:
        g.close()


# ---------------------------------------------------------------------------------------------
# the end of a stream
# ---------------------------------------------------------------------------------------------


def test_database_reset_ends_streams_with_an_error_event(db):
    db.write({"c/a": {"n": 1}})
    fq = follow(db.listen(q()))
    fd = follow(db.listen_doc("c/a"))
    try:
        fq.snapshot(db, [("added", -1, 0, "c/a")], ["c/a"])
        fd.doc_snapshot(db, "c/a", True)
        assert db.reset().status_code == 200
        for f in (fq, fd):
            ev, body = f.next("error")
            assert set(body) == {"error"}, body
            err = body["error"]
            assert err["status"] == "ABORTED" and err["code"] == 409, err
            assert isinstance(err["message"], str) and err["message"]
            with pytest.raises(SSEClosed):
                f.s.next(timeout=EVENT_TIMEOUT)
    finally:
        fq.close()
        fd.close()


def test_reset_of_another_database_leaves_the_stream_open(base_url, project):
    db = Db(base_url, project)
    other = Db(base_url, project + "-other")
    f = follow(db.listen(q()))
    try:
        f.snapshot(db, [], [])
        assert other.reset().status_code == 200
        t = db.write({"c/a": {"n": 1}})
        f.snapshot(db, [("added", -1, 0, "c/a")], ["c/a"], read_time=t)
    finally:
        f.close()


def test_listen_after_reset_starts_over(db):
    db.write({"c/a": {"n": 1}})
    assert db.reset().status_code == 200
    db.cur.clear()
    f = follow(db.listen(q()))
    try:
        f.snapshot(db, [], [])
        t = db.write({"c/b": {"n": 1}})
        f.snapshot(db, [("added", -1, 0, "c/b")], ["c/b"], read_time=t)
    finally:
        f.close()


def test_keep_alive_comment_on_an_idle_stream(db):
    """An idle stream gets a `: keep-alive` comment (every 15 s by default)."""
    s = db.listen(q(), keep_comments=True)
    try:
        first = s.next(timeout=EVENT_TIMEOUT)
        assert first.event == "snapshot"
        ev = s.next(timeout=20)
        assert ev.is_comment and ev.data == "keep-alive", ev
        # the stream still works after it
        t = db.write({"c/a": {"n": 1}})
        f = follow(s)
        f.snapshot(db, [("added", -1, 0, "c/a")], ["c/a"], read_time=t)
    finally:
        s.close()


def test_timeout_helper_sanity(db):
    """Reading with a timeout when nothing is due times out rather than hanging (the suite relies
    on it never blocking forever)."""
    f = follow(db.listen(q()))
    try:
        f.snapshot(db, [], [])
        with pytest.raises(SSETimeout):
            f.s.next(timeout=0.3)
    finally:
        f.close()
