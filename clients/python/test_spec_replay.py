"""The Firestore SDK spec tests, replayed against the edge clients (see spec_replay.py).

Run alone:  pytest clients/python/test_spec_replay.py -s      (or -k spec_replay)
Narrow it:  FIREGATE_SPEC_FILES=write,listen pytest clients/python/test_spec_replay.py -s
Skip it:    FIREGATE_SKIP_SPEC_REPLAY=1

The spec JSON is looked up as spec_replay.find_spec_dir() does ($FIREGATE_SPEC_DIR first); the
test is skipped when it is not found (and fails in CI). It replays every spec file twice — with
watch steps as backend writes where they can stand in (scripted elsewhere), and with every watch
step scripted — and fails on any FAIL or ERROR; over the full set, at least SPEC_FLOOR[watch]
(test x persistence mode) runs must pass and every skip must have one of ALLOWED_SKIPS as its
reason, so a mapping that silently turns into skips is caught.
Raise the floors as the edge clients pass more.
"""
import io
import os

import pytest

import spec_replay

# Runs (test x mode) that passed when these floors were last raised. Only ever raise them.
SPEC_FLOOR = {"auto": 479, "scripted": 479}

# The only reasons a run may be skipped: what the SDK's own web runner does not run in that mode
# (multi-tab tests need persistence; eager GC is memory-only; durable persistence persistent-only;
# no-web tests).
ALLOWED_SKIPS = {"multi-client (persistence only)", "eager-gc (memory persistence only)",
                 "durable-persistence (persistent only)", "no-web (the web SDK's runner skips it)"}

SPEC_FILES = ["all"]


@pytest.mark.skipif(os.environ.get("FIREGATE_SKIP_SPEC_REPLAY", "") not in ("", "0"),
                    reason="FIREGATE_SKIP_SPEC_REPLAY is set")
@pytest.mark.parametrize("watch", ["auto", "scripted"])
def test_spec_replay(base_url, capsys, watch):
    try:
        spec_replay.find_spec_dir()
    except FileNotFoundError as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI must replay the spec tests: {e}")
        pytest.skip(str(e))
    files = [f for f in os.environ.get("FIREGATE_SPEC_FILES", "").split(",") if f] or SPEC_FILES
    log = io.StringIO()
    replay = spec_replay.Replay(base_url, out=log, watch=watch)
    replay.run_files(files)
    summary = replay.summary()
    total = summary["total"]
    with capsys.disabled():
        print(f"\nwatch: {watch}\n" + replay.table() + "\n" + replay.final_line())
    failures = [r for r in replay.results if r.status in ("FAIL", "ERROR")]
    detail = "\n".join(f"{r.status} [{r.mode}] {r.file}: {r.name}\n    {r.detail}" for r in failures)
    assert not failures, f"{replay.final_line()}\n{detail}"
    if files == SPEC_FILES:
        floor = SPEC_FLOOR[watch]
        assert total["PASS"] >= floor, f"{total['PASS']} spec runs passed, the floor is {floor}\n{replay.final_line()}"
        unexpected = sorted({r.reason for r in replay.results if r.status == "SKIP"} - ALLOWED_SKIPS)
        assert not unexpected, f"runs skipped for reasons other than the allowed ones: {unexpected}"


def test_spec_replay_mapping_helpers():
    """The parts of the translation that need no server."""
    assert spec_replay.to_value({"a": [1, 1.5, True, None, "x"]}) == {"mapValue": {"fields": {"a": {
        "arrayValue": {"values": [{"integerValue": "1"}, {"doubleValue": 1.5}, {"booleanValue": True},
                                  {"nullValue": None}, {"stringValue": "x"}]}}}}}
    names = spec_replay.Names("p")
    parent, sq, ltl = spec_replay.structured_query(
        {"path": "rooms/r1/messages", "filters": [["n", ">=", 2], ["tag", "array-contains", "a"]],
         "orderBys": [["n", "desc"]], "limit": 3, "limitType": "LimitToLast"}, names)
    assert parent == "rooms/r1" and ltl
    assert sq["from"] == [{"collectionId": "messages"}] and sq["limit"] == 3
    assert sq["where"]["compositeFilter"]["op"] == "AND"
    assert sq["orderBy"] == [{"field": {"fieldPath": "n"}, "direction": "DESCENDING"}]
    parent, sq, _ = spec_replay.structured_query(
        {"path": "", "collectionGroup": "cg", "filters": [], "orderBys": []}, names)
    assert parent == "" and sq["from"] == [{"collectionId": "cg", "allDescendants": True}]
    body = spec_replay.patch_body(names, "c/d", {"a.c": "<DELETE>", "v": 2})
    assert body["updateMask"] == {"fieldPaths": ["a.c", "v"]}
    assert body["update"]["fields"] == {"v": {"integerValue": "2"}}
    assert body["currentDocument"] == {"exists": True}
    assert spec_replay.doc_matches({"path": "c", "filters": [["v", ">=", 2]], "orderBys": []}, "c/a", {"v": 3})
    assert not spec_replay.doc_matches({"path": "c", "filters": [], "orderBys": [["sort", "asc"]]},
                                       "c/b", {"key": "b"})
    # Expected per-document pending flag: local mutations, or committed ones the view still counts.
    ev = spec_replay.expected_event({
        "query": {"path": "c", "filters": [], "orderBys": []}, "errorCode": 0, "fromCache": False,
        "hasPendingWrites": False,
        "added": [{"key": "c/a", "value": {"v": 1}, "options": {"hasLocalMutations": False,
                                                                "hasCommittedMutations": True}}],
        "metadata": [{"key": "c/b", "value": {"v": 1}, "options": {}}]})
    assert [(c.type, c.key, c.pending) for c in ev.changes] == [("added", "c/a", False), ("modified", "c/b", False)]


def test_spec_times_are_microseconds():
    """Spec versions are microseconds since the epoch (the runner's version())."""
    assert spec_replay.spec_time(0) == "1970-01-01T00:00:00.000000Z"
    assert spec_replay.spec_time(1000) == "1970-01-01T00:00:00.001000Z"
    assert spec_replay.spec_time(2_500_000) == "1970-01-01T00:00:02.500000Z"
