"""Documents backend, Firestore REST v1: commit (writes, preconditions, every field transform,
atomicity, limits) and transactions (beginTransaction, rollback, read-write, read-only).
"""
import base64
import math

import time

import pytest

from docs_support import (Fs, assert_client_error, assert_error, assert_ts, check_document, enc, fields,
                          new_transaction_of, ok, t_append, t_increment, t_maximum, t_minimum, t_remove,
                          t_server_time, ts_key, w_delete, w_transform, w_update)


@pytest.fixture
def fs(base_url, project):
    """A Firestore REST client on a fresh project."""
    return Fs(base_url, project)

I64_MAX = 9223372036854775807
I64_MIN = -9223372036854775808

# ---------------------------------------------------------------------------------------------
# commit: shapes
# ---------------------------------------------------------------------------------------------


def test_commit_single_update_shape(fs):
    res = ok(fs.commit([w_update(fs.name("c/d"), {"a": 1})]))
    assert set(res) == {"writeResults", "commitTime"}
    assert_ts(res["commitTime"])
    assert res["writeResults"] == [{"updateTime": res["commitTime"]}]
    doc = fs.get_ok("c/d")
    check_document(doc, fs.name("c/d"), fields({"a": 1}))
    assert doc["createTime"] == doc["updateTime"] == res["commitTime"]


def test_commit_without_writes(fs):
    res = ok(fs.commit([]))
    assert set(res) == {"commitTime"}
    assert_ts(res["commitTime"])


def test_commit_delete_write_result_is_empty(fs):
    fs.set("c/d", {"a": 1})
    res = ok(fs.commit([w_delete(fs.name("c/d")), w_delete(fs.name("c/never"))]))
    assert res["writeResults"] == [{}, {}]
    assert not fs.exists("c/d")


def test_commit_writes_share_one_commit_time(fs):
    before = fs.set("c/old", {"v": 0})
    res = ok(fs.commit([w_update(fs.name(f"c/{i}"), {"i": i}) for i in "abc"] +
                       [w_update(fs.name("c/old"), {"v": 1})]))
    ct = res["commitTime"]
    assert ts_key(ct) > ts_key(before["updateTime"])
    assert res["writeResults"] == [{"updateTime": ct}] * 4
    for i in "abc":
        doc = fs.get_ok(f"c/{i}")
        assert doc["createTime"] == doc["updateTime"] == ct
    old = fs.get_ok("c/old")
    assert old["createTime"] == before["createTime"] and old["updateTime"] == ct


def test_commit_times_increase(fs):
    times = [ok(fs.commit([w_update(fs.name("c/d"), {"i": i})]))["commitTime"] for i in range(5)]
    assert [ts_key(t) for t in times] == sorted(ts_key(t) for t in times)
    assert len(set(times)) == 5


def test_noop_write_keeps_previous_update_time(fs):
    v1 = fs.set("c/d", {"a": 1, "b": "x"})
    res = ok(fs.commit([w_update(fs.name("c/d"), {"a": 1, "b": "x"})]))
    # WriteResult.updateTime: "If the write did not actually change the document, this will be the
    # previous update_time."
    assert res["writeResults"] == [{"updateTime": v1["updateTime"]}]
    assert ts_key(res["commitTime"]) > ts_key(v1["updateTime"])
    assert fs.get_ok("c/d") == v1


def test_commit_writes_apply_in_order_to_the_same_document(fs):
    res = ok(fs.commit([
        w_update(fs.name("c/d"), {"n": 1, "x": "gone"}),
        w_update(fs.name("c/d"), {"m": 2}, mask=["m", "x"]),
        w_transform(fs.name("c/d"), [t_increment("n", 5)]),
    ]))
    ct = res["commitTime"]
    assert res["writeResults"] == [{"updateTime": ct}, {"updateTime": ct},
                                   {"updateTime": ct, "transformResults": [enc(6)]}]
    assert fs.get_ok("c/d")["fields"] == fields({"n": 6, "m": 2})


def test_commit_set_then_delete_same_document(fs):
    fs.set("c/d", {"a": 1})
    res = ok(fs.commit([w_update(fs.name("c/d"), {"a": 2}), w_delete(fs.name("c/d"))]))
    assert res["writeResults"][1] == {}
    assert not fs.exists("c/d")


# ---------------------------------------------------------------------------------------------
# commit: preconditions and atomicity
# ---------------------------------------------------------------------------------------------


def test_commit_update_with_exists_true_is_sdk_update(fs):
    fs.set("c/d", {"a": 1, "b": {"x": 1, "y": 2}})
    res = ok(fs.commit([w_update(fs.name("c/d"), {"b": {"x": 9}}, mask=["b.x"], exists=True)]))
    assert res["writeResults"] == [{"updateTime": res["commitTime"]}]
    assert fs.get_ok("c/d")["fields"] == fields({"a": 1, "b": {"x": 9, "y": 2}})


def test_commit_precondition_failures(fs):
    v1 = fs.set("c/d", {"a": 1})
    v2 = fs.set("c/d", {"a": 2})
    assert_error(fs.commit([w_update(fs.name("c/missing"), {"a": 1}, exists=True)]), 404, "NOT_FOUND")
    assert_error(fs.commit([w_update(fs.name("c/d"), {"a": 3}, exists=False)]), 409, "ALREADY_EXISTS")
    assert_error(fs.commit([w_update(fs.name("c/d"), {"a": 3}, update_time=v1["updateTime"])]),
                 400, "FAILED_PRECONDITION")
    assert_error(fs.commit([w_delete(fs.name("c/d"), update_time=v1["updateTime"])]), 400, "FAILED_PRECONDITION")
    assert_error(fs.commit([w_delete(fs.name("c/missing"), exists=True)]), 404, "NOT_FOUND")
    assert fs.get_ok("c/d") == v2
    assert not fs.exists("c/missing")
    res = ok(fs.commit([w_update(fs.name("c/d"), {"a": 4}, update_time=v2["updateTime"])]))
    assert fs.get_ok("c/d")["updateTime"] == res["commitTime"]
    ok(fs.commit([w_update(fs.name("c/new"), {"a": 1}, exists=False)]))
    assert fs.exists("c/new")


def test_commit_is_atomic(fs):
    v = fs.set("c/existing", {"a": 1})
    writes = [
        w_update(fs.name("c/first"), {"n": 1}),
        w_update(fs.name("c/existing"), {"a": 2}),
        w_transform(fs.name("c/existing"), [t_increment("a", 1)]),
        w_delete(fs.name("c/other")),
        w_update(fs.name("c/missing"), {"n": 2}, exists=True),   # fails
        w_update(fs.name("c/last"), {"n": 3}),
    ]
    fs.set("c/other", {"keep": True})
    assert_error(fs.commit(writes), 404, "NOT_FOUND")
    assert not fs.exists("c/first")
    assert not fs.exists("c/last")
    assert fs.get_ok("c/existing") == v
    assert fs.exists("c/other")


def test_commit_500_writes_allowed_501_rejected(fs):
    ok_writes = [w_update(fs.name(f"ok/d{i:03d}"), {"i": i}) for i in range(500)]
    res = ok(fs.commit(ok_writes))
    assert len(res["writeResults"]) == 500
    assert fs.get_ok("ok/d499")["fields"] == fields({"i": 499})
    too_many = [w_update(fs.name(f"no/d{i:03d}"), {"i": i}) for i in range(501)]
    assert_error(fs.commit(too_many), 400, "INVALID_ARGUMENT")
    assert not fs.exists("no/d000")
    assert ok(fs.list("no")) == {}


def test_commit_oversize_document_rejected_atomically(fs):
    writes = [w_update(fs.name("c/small"), {"a": 1}), w_update(fs.name("c/big"), {"s": "x" * 1_048_600})]
    assert_error(fs.commit(writes), 400, "INVALID_ARGUMENT")
    assert not fs.exists("c/small")
    # a transform may not push a document past the limit either
    fs.set("c/grow", {"s": "y" * 1_000_000, "arr": []})
    r = fs.commit([w_transform(fs.name("c/grow"), [t_append("arr", ["z" * 60_000])])])
    assert_error(r, 400, "INVALID_ARGUMENT")
    assert fs.get_ok("c/grow")["fields"]["arr"] == {"arrayValue": {}}


def test_update_with_mask_and_transforms_on_missing_document(fs):
    res = ok(fs.commit([w_update(fs.name("c/d"), {"a": 1}, mask=["a"],
                                 transforms=[t_increment("n", 2), t_server_time("t")])]))
    ct = res["commitTime"]
    assert res["writeResults"] == [{"updateTime": ct, "transformResults": [enc(2), {"timestampValue": ct}]}]
    assert fs.get_ok("c/d")["fields"] == {"a": enc(1), "n": enc(2), "t": {"timestampValue": ct}}


# ---------------------------------------------------------------------------------------------
# field transforms
# ---------------------------------------------------------------------------------------------


def apply_transforms(fs, path, initial, transforms):
    """Sets `initial` (None = no document), commits `transforms` as updateTransforms with an empty mask
    (so only the transformed fields change), returns (transformResults, stored fields, commitTime)."""
    if initial is not None:
        fs.set(path, initial)
    res = ok(fs.commit([w_update(fs.name(path), {}, mask=[], transforms=transforms)]))
    wr = res["writeResults"]
    assert len(wr) == 1 and set(wr[0]) == {"updateTime", "transformResults"}, wr
    assert_ts(wr[0]["updateTime"])
    return wr[0]["transformResults"], fs.get_ok(path).get("fields", {}), res["commitTime"]


def test_transform_request_time(fs):
    results, stored, ct = apply_transforms(fs, "c/d", {"keep": 1}, [t_server_time("t"), t_server_time("m.inner")])
    assert results == [{"timestampValue": ct}, {"timestampValue": ct}]
    assert stored == {"keep": enc(1), "t": {"timestampValue": ct},
                      "m": {"mapValue": {"fields": {"inner": {"timestampValue": ct}}}}}


def test_transform_request_time_via_transform_write(fs):
    fs.set("c/d", {"a": 1})
    res = ok(fs.commit([w_transform(fs.name("c/d"), [t_server_time("at")])]))
    ct = res["commitTime"]
    assert res["writeResults"] == [{"updateTime": ct, "transformResults": [{"timestampValue": ct}]}]
    doc = fs.get_ok("c/d")
    assert doc["fields"] == {"a": enc(1), "at": {"timestampValue": ct}}
    assert doc["updateTime"] == ct


def test_transform_increment_integers(fs):
    results, stored, _ = apply_transforms(
        fs, "c/d", {"a": 5, "b": -2, "s": "str", "m": {"x": 1}},
        [t_increment("a", 3), t_increment("b", 2), t_increment("missing", 7), t_increment("s", 4),
         t_increment("m.x", 10), t_increment("m.new", 1)])
    assert results == [enc(8), enc(0), enc(7), enc(4), enc(11), enc(1)]
    assert stored == fields({"a": 8, "b": 0, "missing": 7, "s": 4, "m": {"x": 11, "new": 1}})


def test_transform_increment_doubles_and_mixed(fs):
    results, stored, _ = apply_transforms(
        fs, "c/d", {"i": 5, "d": 1.25, "n": math.nan},
        [t_increment("i", 1.5), t_increment("d", 2), t_increment("missing", 0.5), t_increment("n", 1)])
    assert results == [enc(6.5), enc(3.25), enc(0.5), enc(math.nan)]
    assert stored == fields({"i": 6.5, "d": 3.25, "missing": 0.5, "n": math.nan})


def test_transform_increment_saturates_on_overflow(fs):
    results, stored, _ = apply_transforms(
        fs, "c/d", {"hi": I64_MAX - 1, "lo": I64_MIN + 1, "x": 10},
        [t_increment("hi", 5), t_increment("lo", -5), t_increment("x", I64_MAX)])
    assert results == [enc(I64_MAX), enc(I64_MIN), enc(I64_MAX)]
    assert stored == fields({"hi": I64_MAX, "lo": I64_MIN, "x": I64_MAX})
    assert stored["hi"] == {"integerValue": "9223372036854775807"}
    assert stored["lo"] == {"integerValue": "-9223372036854775808"}


def test_transform_maximum(fs):
    results, stored, _ = apply_transforms(
        fs, "c/d", {"a": 5, "b": 5, "c": 3, "d": 3, "e": 3.5, "f": "str", "g": 0.0, "h": 1},
        [t_maximum("a", 10), t_maximum("b", 3), t_maximum("c", 3.0), t_maximum("d", 3.5),
         t_maximum("e", 4), t_maximum("f", 2), t_maximum("g", 0), t_maximum("missing", -1),
         t_maximum("h", math.nan)])
    # mixed types: the winner's type; equal values (3 vs 3.0) and zeros keep the stored value; NaN wins
    assert results == [enc(10), enc(5), enc(3), enc(3.5), enc(4), enc(2), enc(0.0), enc(-1), enc(math.nan)]
    assert stored == fields({"a": 10, "b": 5, "c": 3, "d": 3.5, "e": 4, "f": 2, "g": 0.0, "missing": -1,
                             "h": math.nan})
    assert stored["c"] == {"integerValue": "3"}
    assert "doubleValue" in stored["g"]


def test_transform_minimum(fs):
    results, stored, _ = apply_transforms(
        fs, "c/d", {"a": 5, "b": 5, "c": 3.0, "d": 3, "e": 2.5, "f": None, "g": 0, "h": 1.5},
        [t_minimum("a", 10), t_minimum("b", 3), t_minimum("c", 3), t_minimum("d", 2.5),
         t_minimum("e", 1), t_minimum("f", 7), t_minimum("g", -0.0), t_minimum("missing", 4),
         t_minimum("h", math.nan)])
    assert results == [enc(5), enc(3), enc(3.0), enc(2.5), enc(1), enc(7), enc(0), enc(4), enc(math.nan)]
    assert stored == fields({"a": 5, "b": 3, "c": 3.0, "d": 2.5, "e": 1, "f": 7, "g": 0, "missing": 4,
                             "h": math.nan})
    assert stored["c"] == {"doubleValue": 3.0}
    assert stored["g"] == {"integerValue": "0"}


def test_transform_append_missing_elements(fs):
    results, stored, _ = apply_transforms(
        fs, "c/d", {"a": [1, 2], "b": [3], "c": [None, math.nan, "x"], "s": "not an array", "e": []},
        [t_append("a", [2, 3, 3, 4]), t_append("b", [3.0, 3.5]), t_append("c", [None, math.nan, "y"]),
         t_append("s", [1]), t_append("missing", ["m", "m"]), t_append("e", [{"k": 1}])])
    assert results == [{"nullValue": None}] * 6
    assert stored == fields({"a": [1, 2, 3, 4], "b": [3, 3.5], "c": [None, math.nan, "x", "y"], "s": [1],
                             "missing": ["m"], "e": [{"k": 1}]})


def test_transform_remove_all_from_array(fs):
    results, stored, _ = apply_transforms(
        fs, "c/d", {"a": [1, 2, 1, 3.0, None, "x", math.nan, {"k": 1}], "s": "str", "b": [1]},
        [t_remove("a", [1, 3, None, math.nan, {"k": 1}, "absent"]), t_remove("s", [1]), t_remove("missing", [1]),
         t_remove("b", [1])])
    assert results == [{"nullValue": None}] * 4
    assert stored == fields({"a": [2, "x"], "s": [], "missing": [], "b": []})
    assert stored["b"] == {"arrayValue": {}}


def test_transform_with_non_numeric_operand_is_rejected(fs):
    fs.set("c/d", {"n": 1})
    for t in [t_increment("n", "x"), t_maximum("n", [1]), t_minimum("n", None),
              {"fieldPath": "n", "setToServerValue": "BOGUS"}]:
        assert_error(fs.commit([w_transform(fs.name("c/d"), [t])]), 400, "INVALID_ARGUMENT")
    assert fs.get_ok("c/d")["fields"] == fields({"n": 1})


def test_empty_update_mask_object_means_no_field_is_replaced(fs):
    """Generated clients serialise an empty DocumentMask as `{}`: present, so fields are kept."""
    fs.set("c/d", {"a": 1, "n": 1})
    body = {"writes": [{"update": {"name": fs.name("c/d")}, "updateMask": {},
                        "updateTransforms": [t_increment("n", 1)]}]}
    res = ok(fs.post(f"{fs.root}:commit", body))
    assert res["writeResults"][0]["transformResults"] == [enc(2)]
    assert fs.get_ok("c/d")["fields"] == fields({"a": 1, "n": 2})
    # without updateMask the update replaces the document before the transform
    body = {"writes": [{"update": {"name": fs.name("c/d")}, "updateTransforms": [t_increment("n", 1)]}]}
    ok(fs.post(f"{fs.root}:commit", body))
    assert fs.get_ok("c/d")["fields"] == fields({"n": 1})


def test_transform_on_reserved_or_empty_path_is_rejected(fs):
    assert_error(fs.commit([w_transform(fs.name("c/d"), [t_server_time("__name__")])]), 400, "INVALID_ARGUMENT")
    assert_error(fs.commit([w_transform(fs.name("c/d"), [t_server_time("")])]), 400, "INVALID_ARGUMENT")
    assert not fs.exists("c/d")


def test_transform_write_with_precondition(fs):
    r = fs.commit([w_transform(fs.name("c/missing"), [t_increment("n", 1)], exists=True)])
    assert_error(r, 404, "NOT_FOUND")
    assert not fs.exists("c/missing")


def test_typed_field_paths_in_transforms(fs):
    results, stored, _ = apply_transforms(fs, "c/d", {"a.b": 1, "a": {"b": 100}}, [t_increment("`a.b`", 1)])
    assert results == [enc(2)]
    assert stored == fields({"a.b": 2, "a": {"b": 100}})


# ---------------------------------------------------------------------------------------------
# transactions
# ---------------------------------------------------------------------------------------------


def begin(fs, options=None):
    res = ok(fs.begin(options))
    assert set(res) == {"transaction"}, res
    assert base64.b64decode(res["transaction"], validate=True)
    return res["transaction"]


def test_begin_and_rollback(fs):
    tx = begin(fs)
    tx2 = begin(fs, {"readWrite": {}})
    assert tx != tx2
    assert ok(fs.rollback(tx)) == {}
    assert ok(fs.rollback(tx2)) == {}


def test_read_write_transaction_commits(fs):
    fs.set("acct/a", {"balance": 100})
    fs.set("acct/b", {"balance": 0})
    tx = begin(fs)
    a = fs.get_ok("acct/a", transaction=tx)
    arr = ok(fs.batch_get(["acct/b"], transaction=tx))
    b = arr[0]["found"]
    assert "transaction" not in arr[0]
    res = ok(fs.commit([
        w_update(fs.name("acct/a"), {"balance": 70}, update_time=a["updateTime"]),
        w_update(fs.name("acct/b"), {"balance": 30}, update_time=b["updateTime"]),
    ], transaction=tx))
    assert res["writeResults"] == [{"updateTime": res["commitTime"]}] * 2
    assert fs.get_ok("acct/a")["fields"] == fields({"balance": 70})
    assert fs.get_ok("acct/b")["fields"] == fields({"balance": 30})


def test_a_read_locks_the_document_against_writes_from_outside(fs):
    """Production's server-side transactions lock what they read (docs/transactions.md)."""
    fs.set("c/d", {"n": 1})
    tx = begin(fs)
    assert fs.get_ok("c/d", transaction=tx)["fields"] == fields({"n": 1})
    # Someone else's write waits for the lock, then gives up and changes nothing...
    started = time.monotonic()
    assert_error(fs.commit([w_update(fs.name("c/d"), {"n": 50})], timeout=15), 409, "ABORTED")
    assert time.monotonic() - started >= 1.9
    assert fs.get_ok("c/d")["fields"] == fields({"n": 1})
    # ...and the transaction commits what it read.
    res = ok(fs.commit([w_update(fs.name("c/d"), {"n": 2}), w_update(fs.name("c/other"), {"x": 1})], transaction=tx))
    doc = fs.get_ok("c/d")
    assert doc["fields"] == fields({"n": 2}) and doc["updateTime"] == res["commitTime"]
    assert fs.exists("c/other")


def test_a_write_waits_for_the_lock_and_lands_when_it_is_released(fs):
    from concurrent.futures import ThreadPoolExecutor
    fs.set("c/d", {"n": 1})
    tx = begin(fs)
    fs.get_ok("c/d", transaction=tx)
    with ThreadPoolExecutor(1) as pool:
        outside = pool.submit(lambda: fs.commit([w_update(fs.name("c/d"), {"n": 50})], timeout=15))
        time.sleep(0.3)
        assert not outside.done()
        ok(fs.rollback(tx))
        ok(outside.result())
    assert fs.get_ok("c/d")["fields"] == fields({"n": 50})


def test_retry_after_abort_with_retry_transaction(fs):
    fs.set("c/d", {"n": 1})
    older, younger = begin(fs), begin(fs)
    fs.get_ok("c/d", transaction=younger)
    fs.get_ok("c/d", transaction=older)
    # The older transaction's commit aborts the younger, which holds a lock it needs.
    ok(fs.commit([w_update(fs.name("c/d"), {"n": 10})], transaction=older, timeout=15))
    assert_error(fs.commit([w_update(fs.name("c/d"), {"n": 2})], transaction=younger), 409, "ABORTED")
    retry = begin(fs, {"readWrite": {"retryTransaction": younger}})
    cur = fs.get_ok("c/d", transaction=retry)
    n = int(cur["fields"]["n"]["integerValue"])
    ok(fs.commit([w_update(fs.name("c/d"), {"n": n + 1})], transaction=retry))
    assert fs.get_ok("c/d")["fields"] == fields({"n": 11})


def test_competing_transactions_first_commit_wins(fs):
    fs.set("c/d", {"n": 0})
    tx1, tx2 = begin(fs), begin(fs)
    fs.get_ok("c/d", transaction=tx1)
    fs.get_ok("c/d", transaction=tx2)
    ok(fs.commit([w_update(fs.name("c/d"), {"n": 1})], transaction=tx1, timeout=15))
    assert_error(fs.commit([w_update(fs.name("c/d"), {"n": 2})], transaction=tx2, timeout=15), 409, "ABORTED")
    assert fs.get_ok("c/d")["fields"] == fields({"n": 1})


def test_a_document_read_as_missing_is_locked_too(fs):
    tx = begin(fs)
    assert_error(fs.get("c/d", transaction=tx), 404, "NOT_FOUND")
    assert_error(fs.commit([w_update(fs.name("c/d"), {"by": "other"})], timeout=15), 409, "ABORTED")
    ok(fs.commit([w_update(fs.name("c/d"), {"by": "tx"})], transaction=tx))
    assert fs.get_ok("c/d")["fields"] == fields({"by": "tx"})


def test_a_query_in_a_transaction_locks_the_documents_it_returns(fs):
    fs.set_many({"q/a": {"n": 1}, "q/b": {"n": 2}})
    tx = begin(fs)
    arr = ok(fs.run_query({"from": [{"collectionId": "q"}]}, transaction=tx))
    assert [e["document"]["name"] for e in arr if "document" in e] == [fs.name("q/a"), fs.name("q/b")]
    assert_error(fs.commit([w_update(fs.name("q/b"), {"n": 20})], timeout=15), 409, "ABORTED")
    ok(fs.commit([w_update(fs.name("q/a"), {"n": 3})], transaction=tx))
    assert fs.get_ok("q/a")["fields"] == fields({"n": 3}) and fs.get_ok("q/b")["fields"] == fields({"n": 2})


def test_read_write_transaction_unaffected_by_unrelated_writes(fs):
    fs.set_many({"c/read": {"n": 1}, "c/unrelated": {"n": 1}})
    tx = begin(fs)
    fs.get_ok("c/read", transaction=tx)
    ok(fs.commit([w_update(fs.name("c/unrelated"), {"n": 2})], timeout=15))
    res = ok(fs.commit([w_update(fs.name("c/read"), {"n": 2})], transaction=tx))
    assert fs.get_ok("c/read")["updateTime"] == res["commitTime"]


def test_new_transaction_on_run_query(fs):
    fs.set("c/a", {"n": 1})
    arr = fs.query_results({"from": [{"collectionId": "c"}]}, newTransaction={"readWrite": {}})
    tx = new_transaction_of(arr)
    assert [e["document"]["name"] for e in arr if "document" in e] == [fs.name("c/a")]
    ok(fs.commit([w_update(fs.name("c/a"), {"n": 2})], transaction=tx))
    assert fs.get_ok("c/a")["fields"] == fields({"n": 2})


def test_transaction_cannot_be_used_after_commit_or_rollback(fs):
    tx = begin(fs)
    ok(fs.commit([w_update(fs.name("c/a"), {"n": 1})], transaction=tx))
    allowed = {(400, "INVALID_ARGUMENT"), (400, "FAILED_PRECONDITION"), (409, "ABORTED"), (404, "NOT_FOUND")}
    assert_client_error(fs.commit([w_update(fs.name("c/a"), {"n": 2})], transaction=tx), allowed)
    tx2 = begin(fs)
    ok(fs.rollback(tx2))
    assert_client_error(fs.commit([w_update(fs.name("c/a"), {"n": 3})], transaction=tx2), allowed)
    assert fs.get_ok("c/a")["fields"] == fields({"n": 1})


def test_unknown_transaction_is_rejected(fs):
    bogus = base64.b64encode(b"definitely-not-a-transaction").decode()
    allowed = {(400, "INVALID_ARGUMENT"), (409, "ABORTED"), (404, "NOT_FOUND")}
    assert_client_error(fs.commit([w_update(fs.name("c/a"), {"n": 1})], transaction=bogus), allowed)
    assert_client_error(fs.get("c/a", transaction=bogus), allowed)
    assert not fs.exists("c/a")


def test_verify_write_is_a_precondition_only_write(fs):
    """The JS SDK's transactions send {"verify": name, "currentDocument": {...}} for documents they read
    but do not write; it checks the precondition and changes nothing."""
    v1 = fs.set("c/d", {"n": 1})
    v2 = fs.set("c/d", {"n": 2})
    tx = begin(fs)
    fs.get_ok("c/d", transaction=tx)
    res = ok(fs.commit([{"verify": fs.name("c/d"), "currentDocument": {"updateTime": v2["updateTime"]}},
                        w_update(fs.name("c/other"), {"x": 1})], transaction=tx))
    assert len(res["writeResults"]) == 2
    assert fs.get_ok("c/d") == v2
    r = fs.commit([{"verify": fs.name("c/d"), "currentDocument": {"updateTime": v1["updateTime"]}},
                   w_update(fs.name("c/third"), {"x": 1})])
    assert_error(r, 400, "FAILED_PRECONDITION")
    assert not fs.exists("c/third")
    r = fs.commit([{"verify": fs.name("c/none"), "currentDocument": {"exists": True}}])
    assert_error(r, 404, "NOT_FOUND")


def test_read_only_transaction_reads_a_consistent_snapshot(fs):
    v1 = fs.set("c/d", {"n": 1})
    tx = begin(fs, {"readOnly": {}})
    assert fs.get_ok("c/d", transaction=tx) == v1
    v2 = fs.set("c/d", {"n": 2})
    assert fs.get_ok("c/d", transaction=tx) == v1       # still the snapshot
    arr = ok(fs.batch_get(["c/d"], transaction=tx))
    assert arr[0]["found"] == v1
    assert fs.get_ok("c/d") == v2                        # outside the transaction: the latest
    assert ok(fs.rollback(tx)) == {}


def test_read_only_transaction_cannot_write(fs):
    tx = begin(fs, {"readOnly": {}})
    r = fs.commit([w_update(fs.name("c/d"), {"n": 1})], transaction=tx)
    assert_error(r, 400, "INVALID_ARGUMENT")
    assert not fs.exists("c/d")


def test_read_only_transaction_at_read_time(fs):
    v1 = fs.set("c/d", {"n": 1})
    v2 = fs.set("c/d", {"n": 2})
    tx = begin(fs, {"readOnly": {"readTime": v1["updateTime"]}})
    assert fs.get_ok("c/d", transaction=tx) == v1
    assert fs.get_ok("c/d", read_time=v1["updateTime"]) == v1
    assert fs.get_ok("c/d", read_time=v2["updateTime"]) == v2
    arr = ok(fs.run_query({"from": [{"collectionId": "c"}]}, readTime=v1["updateTime"]))
    assert [e["document"] for e in arr if "document" in e] == [v1]


# ---------------------------------------------------------------------------------------------
# concurrency
# ---------------------------------------------------------------------------------------------


def test_concurrent_increments_are_atomic(fs):
    from concurrent.futures import ThreadPoolExecutor
    import requests

    fs.set("c/counter", {"n": 0})
    url = fs.url(f"{fs.root}:commit")
    body = {"writes": [w_transform(fs.name("c/counter"), [t_increment("n", 1)])]}

    def worker(_):
        with requests.Session() as s:
            for _ in range(25):
                assert s.post(url, json=body, timeout=30).status_code == 200

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(worker, range(8)))
    assert fs.get_ok("c/counter")["fields"] == fields({"n": 200})


def test_concurrent_read_modify_write_transactions_serialise(fs):
    """Each worker retries on ABORTED, as the SDKs do; no increment may be lost."""
    from concurrent.futures import ThreadPoolExecutor
    import requests

    fs.set("c/counter", {"n": 0})

    def worker(_):
        f = Fs(fs.base, fs.project, session=requests.Session())
        done = 0
        previous = None
        while done < 5:
            options = {"readWrite": {"retryTransaction": previous}} if previous else {"readWrite": {}}
            tx = ok(f.begin(options))["transaction"]
            read = f.get("c/counter", transaction=tx)
            if read.status_code != 200:  # aborted by an older transaction's commit
                assert_error(read, 409, "ABORTED")
                previous = tx
                continue
            n = int(read.json()["fields"]["n"]["integerValue"])
            r = f.commit([w_update(f.name("c/counter"), {"n": n + 1})], transaction=tx, timeout=30)
            if r.status_code == 200:
                done += 1
                previous = None
            else:
                assert_error(r, 409, "ABORTED")
                previous = tx

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(worker, range(4)))
    assert fs.get_ok("c/counter")["fields"] == fields({"n": 20})
