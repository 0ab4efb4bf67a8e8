"""Documents backend, Firestore REST v1: runQuery (filters, ordering, cursors, offset/limit,
projections, collection groups, parents), cross-type value ordering, and runAggregationQuery.
"""
import math

import pytest

from docs_support import (RUN_QUERY_KEYS, Fs, Geo, Ts, and_, assert_error, assert_ts, check_document,
                          check_stream_array, cursor, enc, ff, fields, ok, or_, order, sq, uf, w_update)


@pytest.fixture
def fs(base_url, project):
    """A Firestore REST client on a fresh project."""
    return Fs(base_url, project)


# The main data set. `n` mixes ints, a double equal to an int, a string, and a missing value.
DATA = {
    "c/d1": {"n": 1, "s": "a", "tags": ["x", "y"]},
    "c/d2": {"n": 2.5, "s": "b", "tags": ["y"]},
    "c/d3": {"n": 3, "s": "c", "tags": []},
    "c/d4": {"n": "3", "s": "d", "tags": ["z", 1]},
    "c/d5": {"s": "e", "tags": "x"},
    "c/d6": {"n": 1.0, "s": "f"},
}


@pytest.fixture
def data(fs):
    fs.set_many(DATA)
    return fs


def ids(paths):
    return [p.rsplit("/", 1)[1] for p in paths]


def run(fs, **kw):
    return ids(fs.query_paths(sq("c", **kw)))


# ---------------------------------------------------------------------------------------------
# response shape
# ---------------------------------------------------------------------------------------------


def test_run_query_response_shape(data):
    arr = data.query_results(sq("c"))
    check_stream_array(arr, RUN_QUERY_KEYS)
    docs = [e["document"] for e in arr if "document" in e]
    assert [d["name"] for d in docs] == [data.name(p) for p in sorted(DATA)]
    for d in docs:
        assert d == data.get_ok(data.rel(d["name"]))


def test_run_query_no_results_is_single_read_time_element(fs):
    arr = ok(fs.run_query(sq("nothing")))
    assert len(arr) == 1
    assert set(arr[0]) <= {"readTime", "done"} and "readTime" in arr[0], arr
    assert_ts(arr[0]["readTime"])


def test_run_query_no_match_in_existing_collection(data):
    arr = ok(data.run_query(sq("c", where=ff("s", "EQUAL", "zzz"))))
    assert len(arr) == 1 and "document" not in arr[0]
    assert_ts(arr[0]["readTime"])


# ---------------------------------------------------------------------------------------------
# field filters
# ---------------------------------------------------------------------------------------------


def test_equal_compares_numbers_across_int_and_double(data):
    assert run(data, where=ff("n", "EQUAL", 1)) == ["d1", "d6"]
    assert run(data, where=ff("n", "EQUAL", 1.0)) == ["d1", "d6"]
    assert run(data, where=ff("n", "EQUAL", "3")) == ["d4"]
    assert run(data, where=ff("s", "EQUAL", "c")) == ["d3"]
    assert run(data, where=ff("tags", "EQUAL", ["y"])) == ["d2"]
    assert run(data, where=ff("tags", "EQUAL", [])) == ["d3"]


def test_range_filters_match_only_the_same_type(data):
    # implicit order: n ascending, then __name__ ascending
    assert run(data, where=ff("n", "LESS_THAN", 3)) == ["d1", "d6", "d2"]
    assert run(data, where=ff("n", "LESS_THAN_OR_EQUAL", 2.5)) == ["d1", "d6", "d2"]
    assert run(data, where=ff("n", "GREATER_THAN", 1)) == ["d2", "d3"]
    assert run(data, where=ff("n", "GREATER_THAN_OR_EQUAL", 1)) == ["d1", "d6", "d2", "d3"]
    assert run(data, where=ff("n", "GREATER_THAN", "2")) == ["d4"]
    assert run(data, where=ff("n", "LESS_THAN", "")) == []
    assert run(data, where=ff("s", "GREATER_THAN_OR_EQUAL", "e")) == ["d5", "d6"]


def test_not_equal(data):
    # excludes documents without the field; types need not match; implicit order by n
    assert run(data, where=ff("n", "NOT_EQUAL", 1)) == ["d2", "d3", "d4"]
    assert run(data, where=ff("n", "NOT_EQUAL", "3")) == ["d1", "d6", "d2", "d3"]
    assert run(data, where=ff("s", "NOT_EQUAL", "a")) == ["d2", "d3", "d4", "d5", "d6"]


def test_in(data):
    assert run(data, where=ff("n", "IN", [1, "3"])) == ["d1", "d4", "d6"]
    assert run(data, where=ff("s", "IN", ["f", "b", "zz"])) == ["d2", "d6"]
    assert run(data, where=ff("tags", "IN", [["y"], ["x"]])) == ["d2"]


def test_not_in(data):
    assert run(data, where=ff("n", "NOT_IN", [1, 3])) == ["d2", "d4"]
    assert run(data, where=ff("s", "NOT_IN", ["a", "b", "c"])) == ["d4", "d5", "d6"]


def test_array_contains(data):
    assert run(data, where=ff("tags", "ARRAY_CONTAINS", "y")) == ["d1", "d2"]
    assert run(data, where=ff("tags", "ARRAY_CONTAINS", 1)) == ["d4"]
    assert run(data, where=ff("tags", "ARRAY_CONTAINS", 1.0)) == ["d4"]
    assert run(data, where=ff("tags", "ARRAY_CONTAINS", "x")) == ["d1"]      # d5.tags is not an array
    assert run(data, where=ff("tags", "ARRAY_CONTAINS", "nope")) == []


def test_array_contains_any(data):
    assert run(data, where=ff("tags", "ARRAY_CONTAINS_ANY", ["x", 1])) == ["d1", "d4"]
    assert run(data, where=ff("tags", "ARRAY_CONTAINS_ANY", ["y", "z"])) == ["d1", "d2", "d4"]


def test_filters_on_nested_fields(fs):
    fs.set_many({"c/a": {"m": {"k": 1, "deep": {"x": "p"}}}, "c/b": {"m": {"k": 2}}, "c/c": {"m": 5},
                 "c/d": {"m.k": 1}})
    assert ids(fs.query_paths(sq("c", where=ff("m.k", "EQUAL", 1)))) == ["a"]
    assert ids(fs.query_paths(sq("c", where=ff("`m.k`", "EQUAL", 1)))) == ["d"]
    assert ids(fs.query_paths(sq("c", where=ff("m.deep.x", "EQUAL", "p")))) == ["a"]
    assert ids(fs.query_paths(sq("c", where=ff("m.k", "GREATER_THAN", 0)))) == ["a", "b"]


def test_filters_on_document_name(data):
    ref = data.ref
    assert run(data, where=ff("__name__", "GREATER_THAN", ref("c/d3"))) == ["d4", "d5", "d6"]
    assert run(data, where=ff("__name__", "LESS_THAN_OR_EQUAL", ref("c/d2"))) == ["d1", "d2"]
    assert run(data, where=ff("__name__", "EQUAL", ref("c/d5"))) == ["d5"]
    assert run(data, where=ff("__name__", "IN", [ref("c/d5"), ref("c/d2"), ref("c/zz")])) == ["d2", "d5"]
    assert run(data, where=ff("__name__", "NOT_IN", [ref("c/d1"), ref("c/d2")])) == ["d3", "d4", "d5", "d6"]


# ---------------------------------------------------------------------------------------------
# unary filters
# ---------------------------------------------------------------------------------------------


def test_unary_filters(fs):
    fs.set_many({"u/u1": {"v": None}, "u/u2": {"v": math.nan}, "u/u3": {"v": 1}, "u/u4": {"v": "x"},
                 "u/u5": {"w": 1}})
    q = lambda f: ids(fs.query_paths(sq("u", where=f)))  # noqa: E731
    assert q(uf("v", "IS_NULL")) == ["u1"]
    assert q(uf("v", "IS_NAN")) == ["u2"]
    # IS_NOT_NULL: the field exists and is not null; ordered by v (NaN < 1 < "x")
    assert q(uf("v", "IS_NOT_NULL")) == ["u2", "u3", "u4"]
    fs.set_many({"n/a": {"v": math.nan}, "n/b": {"v": 1}, "n/c": {"v": 2.5}, "n/d": {"w": 0}})
    assert ids(fs.query_paths(sq("n", where=uf("v", "IS_NOT_NAN")))) == ["b", "c"]


# ---------------------------------------------------------------------------------------------
# composite filters
# ---------------------------------------------------------------------------------------------


def test_and(data):
    assert run(data, where=and_(ff("tags", "ARRAY_CONTAINS", "y"), ff("n", "GREATER_THAN", 1))) == ["d2"]
    assert run(data, where=and_(ff("n", "GREATER_THAN_OR_EQUAL", 1), ff("s", "IN", ["a", "c", "f"]))) == \
        ["d1", "d6", "d3"]
    assert run(data, where=and_(ff("s", "EQUAL", "a"), ff("n", "EQUAL", 2.5))) == []
    assert run(data, where=and_(ff("s", "EQUAL", "a"))) == ["d1"]


def test_or(data):
    assert run(data, where=or_(ff("n", "EQUAL", 3), ff("s", "EQUAL", "a"), ff("tags", "ARRAY_CONTAINS", 1))) == \
        ["d1", "d3", "d4"]
    assert run(data, where=or_(and_(ff("s", "EQUAL", "b"), ff("n", "EQUAL", 2.5)), ff("s", "EQUAL", "f"))) == \
        ["d2", "d6"]
    # a document matching several branches appears once
    assert run(data, where=or_(ff("s", "EQUAL", "a"), ff("n", "EQUAL", 1))) == ["d1", "d6"]
    # documents without the field of one branch still match another branch
    assert run(data, where=or_(ff("s", "EQUAL", "e"), ff("n", "EQUAL", "3"))) == ["d4", "d5"]


def test_and_of_ors(data):
    where = and_(or_(ff("s", "EQUAL", "a"), ff("s", "EQUAL", "b"), ff("s", "EQUAL", "c")),
                 or_(ff("n", "EQUAL", 1), ff("n", "EQUAL", 3)))
    assert run(data, where=where) == ["d1", "d3"]


# ---------------------------------------------------------------------------------------------
# ordering
# ---------------------------------------------------------------------------------------------


def test_order_by_ascending_with_implicit_name_tiebreak(data):
    # documents without n are left out; d1 (1) and d6 (1.0) tie and go by name
    assert run(data, order_by=[order("n")]) == ["d1", "d6", "d2", "d3", "d4"]


def test_order_by_descending_with_implicit_name_tiebreak_descending(data):
    assert run(data, order_by=[order("n", "DESCENDING")]) == ["d4", "d3", "d2", "d6", "d1"]


def test_order_by_explicit_name(data):
    assert run(data, order_by=[order("n"), order("__name__", "DESCENDING")]) == ["d6", "d1", "d2", "d3", "d4"]
    assert run(data, order_by=[order("__name__", "DESCENDING")]) == ["d6", "d5", "d4", "d3", "d2", "d1"]


def test_order_by_two_fields(fs):
    fs.set_many({"c/a": {"x": 1, "y": 2}, "c/b": {"x": 1, "y": 1}, "c/c": {"x": 0, "y": 9}, "c/d": {"x": 1}})
    assert ids(fs.query_paths(sq("c", order_by=[order("x", "DESCENDING"), order("y")]))) == ["b", "a", "c"]


def test_inequality_with_explicit_order_on_other_field(data):
    q = sq("c", where=ff("n", "GREATER_THAN", 1), order_by=[order("s", "DESCENDING")])
    # the explicit order comes first; the inequality field follows (implicitly), then __name__
    assert ids(data.query_paths(q)) == ["d3", "d2"]


# ---------------------------------------------------------------------------------------------
# cursors, offset, limit
# ---------------------------------------------------------------------------------------------


def test_cursors(data):
    by_n = [order("n")]                                  # d1 d6 d2 d3 d4
    assert run(data, order_by=by_n, start_at=cursor([2.5], True)) == ["d2", "d3", "d4"]      # startAt
    assert run(data, order_by=by_n, start_at=cursor([2.5], False)) == ["d3", "d4"]           # startAfter
    assert run(data, order_by=by_n, end_at=cursor([3], False)) == ["d1", "d6", "d2", "d3"]   # endAt
    assert run(data, order_by=by_n, end_at=cursor([3], True)) == ["d1", "d6", "d2"]          # endBefore
    assert run(data, order_by=by_n, start_at=cursor([1], False)) == ["d2", "d3", "d4"]
    assert run(data, order_by=by_n, start_at=cursor([1], True), end_at=cursor([1.0], False)) == ["d1", "d6"]
    assert run(data, order_by=by_n, start_at=cursor([2], True), end_at=cursor([2.9], False)) == ["d2"]
    assert run(data, order_by=by_n, start_at=cursor([3], True), end_at=cursor([1], False)) == []


def test_cursors_with_document_name(data):
    by_n = [order("n")]
    ref = data.ref
    assert run(data, order_by=by_n, start_at=cursor([1, ref("c/d6")], True)) == ["d6", "d2", "d3", "d4"]
    assert run(data, order_by=by_n, start_at=cursor([1, ref("c/d1")], False)) == ["d6", "d2", "d3", "d4"]
    assert run(data, order_by=by_n, end_at=cursor([1, ref("c/d1")], False)) == ["d1"]
    # no orderBy: the cursor is on __name__
    assert run(data, start_at=cursor([ref("c/d3")], True)) == ["d3", "d4", "d5", "d6"]
    assert run(data, start_at=cursor([ref("c/d3")], False), end_at=cursor([ref("c/d5")], True)) == ["d4"]


def test_cursor_descending(data):
    by_n_desc = [order("n", "DESCENDING")]               # d4 d3 d2 d6 d1
    assert run(data, order_by=by_n_desc, start_at=cursor([3], True)) == ["d3", "d2", "d6", "d1"]
    assert run(data, order_by=by_n_desc, start_at=cursor([3], False), end_at=cursor([1], True)) == ["d2"]


def test_offset_and_limit(data):
    by_n = [order("n")]                                  # d1 d6 d2 d3 d4
    assert run(data, order_by=by_n, limit=2) == ["d1", "d6"]
    assert run(data, order_by=by_n, offset=1, limit=2) == ["d6", "d2"]
    assert run(data, order_by=by_n, offset=3) == ["d3", "d4"]
    assert run(data, order_by=by_n, offset=2, start_at=cursor([1], False)) == ["d4"]
    assert run(data, order_by=by_n, limit={"value": 3}) == ["d1", "d6", "d2"]     # Int32Value as the Node SDK sends it
    arr = data.query_results(sq("c", order_by=by_n, offset=10))
    assert [e for e in arr if "document" in e] == []


def test_projection(data):
    docs = data.query_docs(sq("c", where=ff("s", "IN", ["a", "e"]), select=["s", "tags"]))
    check_document(docs[0], data.name("c/d1"), fields({"s": "a", "tags": ["x", "y"]}))
    check_document(docs[1], data.name("c/d5"), fields({"s": "e", "tags": "x"}))
    docs = data.query_docs(sq("c", where=ff("s", "EQUAL", "a"), select=["__name__"]))
    check_document(docs[0], data.name("c/d1"), {})
    docs = data.query_docs(sq("c", where=ff("s", "EQUAL", "a"), select=["nope"]))
    check_document(docs[0], data.name("c/d1"), {})


# ---------------------------------------------------------------------------------------------
# parents and collection groups
# ---------------------------------------------------------------------------------------------


def group_data(fs):
    fs.set_many({
        "c1/x/sub/a": {"v": 1},
        "c2/y/sub/b": {"v": 2},
        "sub/z": {"v": 3},
        "c1/x/sub/a/sub/deep": {"v": 4},
        "c1/x/other/o": {"v": 5},
        "c1/x": {"v": 6},
        "subx/q": {"v": 7},
    })


def test_collection_group_query(fs):
    group_data(fs)
    paths = fs.query_paths(sq("sub", all_descendants=True))
    assert paths == ["c1/x/sub/a", "c1/x/sub/a/sub/deep", "c2/y/sub/b", "sub/z"]
    paths = fs.query_paths(sq("sub", all_descendants=True, where=ff("v", "GREATER_THAN", 1),
                              order_by=[order("v", "DESCENDING")]))
    assert paths == ["c1/x/sub/a/sub/deep", "sub/z", "c2/y/sub/b"]


def test_query_under_parent_document(fs):
    group_data(fs)
    assert fs.query_paths(sq("sub"), parent="c1/x") == ["c1/x/sub/a"]
    assert fs.query_paths(sq("sub", all_descendants=True), parent="c1/x") == ["c1/x/sub/a", "c1/x/sub/a/sub/deep"]
    assert fs.query_paths(sq("sub", all_descendants=False), parent="c2/y") == ["c2/y/sub/b"]
    assert fs.query_paths(sq("sub")) == ["sub/z"]
    assert fs.query_paths(sq("sub"), parent="c1/x/sub/a") == ["c1/x/sub/a/sub/deep"]
    arr = ok(fs.run_query(sq("sub"), parent="nope/none"))
    assert len(arr) == 1 and "document" not in arr[0]


def test_query_is_scoped_to_the_project(base_url, project):
    a, b = Fs(base_url, project), Fs(base_url, project + "-b")
    a.set("c/d", {"n": 1})
    b.set("c/e", {"n": 1})
    assert a.query_paths(sq("c")) == ["c/d"]
    assert b.query_paths(sq("c")) == ["c/e"]


# ---------------------------------------------------------------------------------------------
# cross-type ordering
# ---------------------------------------------------------------------------------------------


def test_cross_type_ordering(fs):
    ref = fs.ref
    ascending = [
        None, False, True,
        math.nan, -math.inf, -5, 1.0, 1, 1.5, 2, math.inf,
        Ts("1969-12-31T23:59:59.999999Z"), Ts("1970-01-01T00:00:00Z"), Ts("2024-01-02T03:04:05.123456Z"),
        "", "B", "a", "ab", "é", "\ufffd", "😀",
        b"", b"\x00", b"\x01\x02", b"\xff",
        ref("a/b"), ref("a/b/c/d"), ref("a/c"), ref("b/a"),
        Geo(-10, 5), Geo(-10, 6), Geo(1, -100),
        [], [None], [1], [1, "a"], [2], ["a"],
        {}, {"a": 1}, {"a": 1, "b": 0}, {"a": 2}, {"b": 0},
    ]
    # ids in an order unrelated to the values, except for the 1.0 / 1 tie (k06 < k07)
    n = len(ascending)
    order_ids = [f"k{(i * 17) % 97:02d}" for i in range(n)]
    tie = ascending.index(1.0)
    order_ids[tie], order_ids[tie + 1] = "t1", "t2"
    assert len(set(order_ids)) == n
    fs.set_many({f"x/{i}": {"v": v} for i, v in zip(order_ids, ascending)})
    fs.set("x/nofield", {"w": 1})

    asc = ids(fs.query_paths(sq("x", order_by=[order("v")])))
    assert asc == order_ids
    desc = ids(fs.query_paths(sq("x", order_by=[order("v", "DESCENDING")])))
    assert desc == list(reversed(order_ids))

    # values are returned exactly as written
    docs = fs.query_docs(sq("x", order_by=[order("v")]))
    assert [d["fields"]["v"] for d in docs] == [enc(v) for v in ascending]


def test_range_filter_on_mixed_types_keeps_to_the_type(fs):
    fs.set_many({"x/a": {"v": Ts("2024-01-01T00:00:00Z")}, "x/b": {"v": "2024"}, "x/c": {"v": 2024},
                 "x/d": {"v": b"2024"}, "x/e": {"v": Ts("2025-01-01T00:00:00Z")}, "x/f": {"v": [2024]}})
    q = lambda f: ids(fs.query_paths(sq("x", where=f)))  # noqa: E731
    assert q(ff("v", "GREATER_THAN", Ts("2000-01-01T00:00:00Z"))) == ["a", "e"]
    assert q(ff("v", "GREATER_THAN", 0)) == ["c"]
    assert q(ff("v", "GREATER_THAN_OR_EQUAL", "")) == ["b"]
    assert q(ff("v", "GREATER_THAN", b"")) == ["d"]
    assert q(ff("v", "GREATER_THAN", [])) == ["f"]


# ---------------------------------------------------------------------------------------------
# query errors
# ---------------------------------------------------------------------------------------------


def test_invalid_queries_are_invalid_argument(data):
    bad = [
        sq("c", where=ff("n", "IN", [])),
        sq("c", where=ff("tags", "ARRAY_CONTAINS_ANY", [])),
        sq("c", where=ff("n", "IN", 1)),
        sq("c", where=and_(ff("n", "NOT_EQUAL", 1), ff("s", "NOT_IN", ["a"]))),
        sq("c", where=ff("__name__", "EQUAL", "d1")),                 # must be a reference
        sq("c", order_by=[order("n")], start_at=cursor([1, data.ref("c/d1"), 3], True)),   # too many values
        sq("c", limit=-1),
        sq("c", offset=-1),
        {"from": [{"collectionId": "c"}, {"collectionId": "d"}]},
        {"from": [{"collectionId": "a/b"}]},
        sq("c", where={"fieldFilter": {"field": {"fieldPath": "n"}, "op": "EQUAL"}}),   # no value
        sq("c", where={"compositeFilter": {"op": "AND", "filters": []}}),
        sq("c", where=uf("n", "OPERATOR_UNSPECIFIED")),
    ]
    for q in bad:
        assert_error(data.run_query(q), 400, "INVALID_ARGUMENT")


# ---------------------------------------------------------------------------------------------
# runAggregationQuery
# ---------------------------------------------------------------------------------------------

AGG_DATA = {
    "a/a1": {"n": 1, "x": 10},
    "a/a2": {"n": 2, "x": 2.5},
    "a/a3": {"n": 3, "x": "str"},
    "a/a4": {"n": 4.5},
    "a/a5": {"m": 1},
}


def agg(fs, query, aggregations, parent=None):
    arr = ok(fs.run_agg(query, aggregations, parent=parent))
    assert isinstance(arr, list) and len(arr) == 1, arr
    e = arr[0]
    assert set(e) == {"result", "readTime"}, e
    assert_ts(e["readTime"])
    assert set(e["result"]) == {"aggregateFields"}, e
    return e["result"]["aggregateFields"]


def count(alias="c", up_to=None):
    a = {"alias": alias, "count": {}}
    if up_to is not None:
        a["count"]["upTo"] = str(up_to)
    return a


def sum_(path, alias):
    return {"alias": alias, "sum": {"field": {"fieldPath": path}}}


def avg(path, alias):
    return {"alias": alias, "avg": {"field": {"fieldPath": path}}}


def test_aggregations(fs):
    fs.set_many(AGG_DATA)
    # One query with several aggregations takes only the documents that have every summed or
    # averaged field (production's rule, and the official emulator's): here the three with n and x.
    got = agg(fs, sq("a"), [count("all"), sum_("n", "sn"), avg("n", "an"), sum_("x", "sx"), avg("x", "ax")])
    assert got == {"all": enc(3), "sn": {"integerValue": "6"}, "an": {"doubleValue": 2.0}, "sx": enc(12.5), "ax": enc(6.25)}
    got = agg(fs, sq("a"), [count("all"), sum_("n", "sn"), avg("n", "an")])
    assert got == {"all": enc(4), "sn": enc(10.5), "an": enc(2.625)}


def test_sum_of_integers_is_an_integer(fs):
    fs.set_many(AGG_DATA)
    got = agg(fs, sq("a", where=ff("n", "LESS_THAN", 4)), [sum_("n", "s"), avg("n", "a"), count("c")])
    assert got == {"s": {"integerValue": "6"}, "a": {"doubleValue": 2.0}, "c": {"integerValue": "3"}}


def test_aggregations_over_nothing(fs):
    fs.set_many(AGG_DATA)
    got = agg(fs, sq("a", where=ff("n", "GREATER_THAN", 100)), [count("c"), sum_("n", "s"), avg("n", "a")])
    assert got == {"c": {"integerValue": "0"}, "s": {"integerValue": "0"}, "a": {"nullValue": None}}
    got = agg(fs, sq("empty"), [count("c"), sum_("n", "s"), avg("n", "a")])
    assert got == {"c": {"integerValue": "0"}, "s": {"integerValue": "0"}, "a": {"nullValue": None}}


def test_aggregation_default_aliases(fs):
    fs.set_many(AGG_DATA)
    aggs = [{"alias": "count_up_to_1", "count": {"upTo": "1"}}, {"count": {"upTo": 2}},
            {"alias": "count_up_to_3", "count": {"upTo": "3"}}, {"count": {}}]
    got = agg(fs, sq("a"), aggs)
    assert got == {"count_up_to_1": enc(1), "field_1": enc(2), "count_up_to_3": enc(3), "field_2": enc(5)}


def test_sum_overflow_and_nan(fs):
    fs.set_many({"o/a": {"n": 9223372036854775807}, "o/b": {"n": 1}, "o/c": {"n": -1}})
    got = agg(fs, sq("o", where=ff("n", "GREATER_THAN", 0)), [sum_("n", "s")])
    assert list(got["s"]) == ["doubleValue"]
    assert got["s"]["doubleValue"] == pytest.approx(9.223372036854775808e18)
    fs.set("o/nan", {"n": math.nan})
    got = agg(fs, sq("o"), [sum_("n", "s"), avg("n", "a")])
    assert got == {"s": {"doubleValue": "NaN"}, "a": {"doubleValue": "NaN"}}


def test_aggregation_respects_limit_and_parent(fs):
    fs.set_many(AGG_DATA)
    fs.set_many({"p/q/a/z1": {"n": 100}, "p/q/a/z2": {"n": 200}})
    assert agg(fs, sq("a", limit=2), [count("c")]) == {"c": enc(2)}
    assert agg(fs, sq("a", order_by=[order("n", "DESCENDING")], limit=2), [sum_("n", "s")]) == {"s": enc(7.5)}
    assert agg(fs, sq("a"), [sum_("n", "s"), count("c")], parent="p/q") == {"s": enc(300), "c": enc(2)}
    assert agg(fs, sq("a", all_descendants=True), [count("c")]) == {"c": enc(7)}


def test_invalid_aggregations(fs):
    fs.set_many(AGG_DATA)
    bad = [
        [count("same"), sum_("n", "same")],                                  # duplicate alias
        [count(f"c{i}") for i in range(6)],                                  # more than 5
        [],                                                                  # none
        [{"alias": "x", "sum": {}}],                                         # no field
    ]
    for aggregations in bad:
        assert_error(fs.run_agg(sq("a"), aggregations), 400, "INVALID_ARGUMENT")


def test_aggregation_snake_case_and_enum_numbers(fs):
    fs.set_many(AGG_DATA)
    body = {"structured_aggregation_query": {
        "structured_query": {"from": [{"collection_id": "a"}],
                             "where": {"field_filter": {"field": {"field_path": "n"}, "op": 3,
                                                        "value": {"integer_value": "1"}}}},
        "aggregations": [{"alias": "total", "sum": {"field": {"field_path": "n"}}}, {"count": {"up_to": "10"}}]}}
    r = fs.s.post(fs.url(f"{fs.root}:runAggregationQuery"), params={"$alt": "json;enum-encoding=int"},
                  json=body, timeout=30)
    arr = ok(r)
    assert arr[0]["result"]["aggregateFields"] == {"total": enc(9.5), "field_1": enc(3)}
    assert set(arr[0]) == {"result", "readTime"}


def test_queries_see_writes_immediately(fs):
    """Read-your-writes: a query right after a commit sees it (no eventual consistency)."""
    for i in range(20):
        res = ok(fs.commit([w_update(fs.name(f"rw/d{i:02d}"), {"i": i})]))
        arr = fs.query_results(sq("rw", order_by=[order("i", "DESCENDING")], limit=1))
        docs = [e["document"] for e in arr if "document" in e]
        assert docs[0]["fields"] == fields({"i": i}) and docs[0]["updateTime"] == res["commitTime"]
