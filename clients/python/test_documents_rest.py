"""Documents backend, Firestore REST v1: single-document methods, list, batchGet, batchWrite,
listCollectionIds, typed values, request encodings, errors, reset and restart.

Expected bodies are what real Firestore returns (proto3 JSON: camelCase, int64 as strings,
defaults and empty fields omitted).
"""
import uuid

import pytest
import requests

from conftest import start_server, stop_server
from docs_support import (AUTO_ID_RE, Fs, Geo, Ts, assert_client_error, assert_error, assert_ts, check_document, check_stream_array,
                          enc, fields, new_transaction_of, ok, ts_key, ts_minus_micros, w_delete, w_update)


@pytest.fixture
def fs(base_url, project):
    """A Firestore REST client on a fresh project."""
    return Fs(base_url, project)

# ---------------------------------------------------------------------------------------------
# get
# ---------------------------------------------------------------------------------------------


def test_get_returns_exact_document(fs):
    written = fs.set("c/d", {"a": 1, "b": "x"})
    check_document(written, fs.name("c/d"), fields({"a": 1, "b": "x"}))
    assert written["createTime"] == written["updateTime"]
    got = fs.get_ok("c/d")
    assert got == written


def test_get_missing_document_is_404(fs):
    r = fs.get("c/missing")
    assert_error(r, 404, "NOT_FOUND")


def test_get_missing_in_unknown_project_is_404(base_url):
    f = Fs(base_url, "never-" + uuid.uuid4().hex[:8])
    assert_error(f.get("c/d"), 404, "NOT_FOUND")


def test_get_with_mask(fs):
    fs.set("c/d", {"a": 1, "b": {"c": 2, "d": 3}, "e": "x"})
    got = fs.get_ok("c/d", mask=["a", "b.c", "zzz"])
    check_document(got, fs.name("c/d"), {"a": enc(1), "b": {"mapValue": {"fields": {"c": enc(2)}}}})
    only_missing = fs.get_ok("c/d", mask=["zzz"])
    check_document(only_missing, fs.name("c/d"), {})


def test_get_empty_document_has_no_fields_key(fs):
    fs.set("c/empty", {})
    got = fs.get_ok("c/empty")
    assert set(got) == {"name", "createTime", "updateTime"}
    check_document(got, fs.name("c/empty"), {})


def test_get_nested_subcollection_document(fs):
    fs.set("c/d/sub/e/deeper/f", {"n": 1})
    got = fs.get_ok("c/d/sub/e/deeper/f")
    check_document(got, fs.name("c/d/sub/e/deeper/f"), fields({"n": 1}))
    # The ancestors were never written: they do not exist.
    assert_error(fs.get("c/d"), 404, "NOT_FOUND")
    assert_error(fs.get("c/d/sub/e"), 404, "NOT_FOUND")


def test_percent_encoded_database_segment(fs):
    fs.set("c/d", {"a": 1})
    url = f"{fs.base}/v1/projects/{fs.project}/databases/%28default%29/documents/c/d"
    r = requests.get(url, timeout=30)
    got = ok(r)
    assert got["name"] == fs.name("c/d")  # the name is always spelt with "(default)"
    r = requests.post(f"{fs.base}/v1/projects/{fs.project}/databases/%28default%29/documents:commit",
                      json={"writes": [w_update(fs.name("c/e"), {"b": 2})]}, timeout=30)
    ok(r)
    assert fs.get_ok("c/e")["fields"] == fields({"b": 2})


def test_document_id_needing_percent_encoding(fs):
    doc_id = "a b%c+é"
    encoded = "a%20b%25c%2B%C3%A9"
    r = requests.patch(f"{fs.base}/v1/{fs.root}/c/{encoded}", json={"fields": fields({"n": 1})}, timeout=30)
    doc = ok(r)
    assert doc["name"] == fs.name("c/" + doc_id)
    got = ok(requests.get(f"{fs.base}/v1/{fs.root}/c/{encoded}", timeout=30))
    assert got == doc
    listed = ok(fs.list("c"))
    assert [d["name"] for d in listed["documents"]] == [fs.name("c/" + doc_id)]


# ---------------------------------------------------------------------------------------------
# list
# ---------------------------------------------------------------------------------------------


def test_list_documents_in_name_order(fs):
    for i in ["b", "a", "c"]:
        fs.set(f"col/{i}", {"i": i})
    fs.set("col/a/sub/x", {"deep": True})   # a subcollection is not listed with its parent
    fs.set("other/z", {"z": 1})
    body = ok(fs.list("col"))
    assert set(body) == {"documents"}, body
    assert [d["name"] for d in body["documents"]] == [fs.name("col/a"), fs.name("col/b"), fs.name("col/c")]
    for d in body["documents"]:
        assert d == fs.get_ok(fs.rel(d["name"]))


def test_list_empty_collection_is_empty_object(fs):
    assert ok(fs.list("nothing")) == {}


def test_list_pagination(fs):
    ids = ["e", "a", "d", "b", "c"]
    fs.set_many({f"c/{i}": {"i": i} for i in ids})
    pages, token = [], None
    for _ in range(10):
        params = {"pageSize": 2}
        if token:
            params["pageToken"] = token
        body = ok(fs.list("c", **params))
        assert set(body) <= {"documents", "nextPageToken"}
        pages.append([fs.rel(d["name"]) for d in body.get("documents", [])])
        token = body.get("nextPageToken")
        if not token:
            break
    assert pages == [["c/a", "c/b"], ["c/c", "c/d"], ["c/e"]]


def test_list_order_by(fs):
    fs.set_many({"c/a": {"n": 3}, "c/b": {"n": 1}, "c/c": {"n": 2}})
    body = ok(fs.list("c", orderBy="n desc"))
    assert [fs.rel(d["name"]) for d in body["documents"]] == ["c/a", "c/c", "c/b"]
    body = ok(fs.list("c", orderBy="n"))
    assert [fs.rel(d["name"]) for d in body["documents"]] == ["c/b", "c/c", "c/a"]


def test_list_order_by_with_explicit_name_tiebreak(fs):
    fs.set_many({"c/a": {"n": 2}, "c/b": {"n": 1}, "c/c": {"n": 2}, "c/d": {"n": 1}})
    body = ok(fs.list("c", orderBy="n asc, __name__ desc"))
    assert [fs.rel(d["name"]) for d in body["documents"]] == ["c/d", "c/b", "c/c", "c/a"]


def test_list_with_mask(fs):
    fs.set_many({"c/a": {"x": 1, "y": 2}, "c/b": {"y": 3}})
    body = ok(fs.list("c", **{"mask.fieldPaths": "x"}))
    docs = body["documents"]
    check_document(docs[0], fs.name("c/a"), fields({"x": 1}))
    check_document(docs[1], fs.name("c/b"), {})


def test_list_show_missing(fs):
    fs.set("c/a/sub/x", {"v": 1})      # c/a does not exist but has a subcollection
    fs.set("c/b", {"v": 2})
    body = ok(fs.list("c"))
    assert [d["name"] for d in body["documents"]] == [fs.name("c/b")]
    body = ok(fs.list("c", showMissing="true"))
    docs = body["documents"]
    assert docs[0] == {"name": fs.name("c/a")}
    assert docs[1] == fs.get_ok("c/b")
    assert len(docs) == 2


def test_list_subcollection(fs):
    fs.set_many({"c/d/sub/y": {"n": 2}, "c/d/sub/x": {"n": 1}, "c/e/sub/z": {"n": 3}})
    body = ok(fs.list("c/d/sub"))
    assert [fs.rel(d["name"]) for d in body["documents"]] == ["c/d/sub/x", "c/d/sub/y"]


# ---------------------------------------------------------------------------------------------
# createDocument
# ---------------------------------------------------------------------------------------------


def test_create_with_document_id(fs):
    doc = ok(fs.create("c", {"a": 1, "m": {"k": "v"}}, doc_id="d"))
    check_document(doc, fs.name("c/d"), fields({"a": 1, "m": {"k": "v"}}))
    assert doc["createTime"] == doc["updateTime"]
    assert fs.get_ok("c/d") == doc


def test_create_assigns_auto_id(fs):
    a = ok(fs.create("c", {"n": 1}))
    b = ok(fs.create("c", {"n": 2}))
    for doc in (a, b):
        assert doc["name"].startswith(fs.root + "/c/")
        assert AUTO_ID_RE.match(fs.rel(doc["name"])[2:]), doc["name"]
        assert fs.get_ok(fs.rel(doc["name"])) == doc
    assert a["name"] != b["name"]


def test_create_existing_is_already_exists(fs):
    first = ok(fs.create("c", {"n": 1}, doc_id="d"))
    r = fs.create("c", {"n": 2}, doc_id="d")
    assert_error(r, 409, "ALREADY_EXISTS")
    assert fs.get_ok("c/d") == first


def test_create_in_subcollection_and_empty(fs):
    doc = ok(fs.create("c/d/sub", doc_id="x", body={}))
    check_document(doc, fs.name("c/d/sub/x"), {})
    assert_error(fs.get("c/d"), 404, "NOT_FOUND")


def test_create_with_response_mask(fs):
    doc = ok(fs.create("c", {"a": 1, "b": 2}, doc_id="d", mask=["a"]))
    check_document(doc, fs.name("c/d"), fields({"a": 1}))
    assert fs.get_ok("c/d")["fields"] == fields({"a": 1, "b": 2})


# ---------------------------------------------------------------------------------------------
# patch (UpdateDocument)
# ---------------------------------------------------------------------------------------------


def test_patch_upserts_missing_document(fs):
    doc = ok(fs.patch("c/d", {"a": 1}))
    check_document(doc, fs.name("c/d"), fields({"a": 1}))
    assert doc["createTime"] == doc["updateTime"]


def test_patch_without_mask_replaces_document(fs):
    first = fs.set("c/d", {"a": 1, "b": 2})
    second = ok(fs.patch("c/d", {"c": 3}))
    check_document(second, fs.name("c/d"), fields({"c": 3}))
    assert second["createTime"] == first["createTime"]
    assert ts_key(second["updateTime"]) > ts_key(first["updateTime"])
    assert fs.get_ok("c/d") == second


def test_patch_update_mask_semantics(fs):
    fs.set("c/d", {"a": 1, "b": {"x": 1, "y": 2}, "c": 3, "d": 4})
    doc = ok(fs.patch("c/d", {"a": 10, "b": {"x": 5}, "n": {"m": 1}},
                      update_mask=["a", "b.x", "d", "zz", "n.m"]))
    expected = fields({"a": 10, "b": {"x": 5, "y": 2}, "c": 3, "n": {"m": 1}})
    check_document(doc, fs.name("c/d"), expected)   # d: masked but absent -> deleted; zz: no-op
    assert fs.get_ok("c/d") == doc


def test_patch_update_mask_deletes_nested_field(fs):
    fs.set("c/d", {"m": {"x": 1, "y": 2}})
    doc = ok(fs.patch("c/d", {}, update_mask=["m.x"]))
    assert doc["fields"] == fields({"m": {"y": 2}})


def test_patch_update_mask_with_backtick_field_paths(fs):
    fs.set("c/d", {"a": {"b": 1}})
    doc = ok(fs.patch("c/d", {"a.b": 2, "x y": 3}, update_mask=["`a.b`", "`x y`"]))
    # "a.b" is a top-level field whose name contains a dot; a.b (the nested one) is untouched.
    assert doc["fields"] == fields({"a": {"b": 1}, "a.b": 2, "x y": 3})


def test_patch_update_mask_on_missing_document_creates_it(fs):
    doc = ok(fs.patch("c/d", {"a": 1}, update_mask=["a", "b"]))
    check_document(doc, fs.name("c/d"), fields({"a": 1}))


def test_patch_response_mask(fs):
    doc = ok(fs.patch("c/d", {"a": 1, "b": 2}, mask=["b"]))
    check_document(doc, fs.name("c/d"), fields({"b": 2}))
    assert fs.get_ok("c/d")["fields"] == fields({"a": 1, "b": 2})


def test_patch_precondition_exists_true(fs):
    r = fs.patch("c/d", {"a": 1}, exists=True)
    assert_error(r, 404, "NOT_FOUND")
    assert not fs.exists("c/d")
    fs.set("c/d", {"a": 1})
    doc = ok(fs.patch("c/d", {"b": 2}, update_mask=["b"], exists=True))
    assert doc["fields"] == fields({"a": 1, "b": 2})


def test_patch_precondition_exists_false(fs):
    created = ok(fs.patch("c/d", {"a": 1}, exists=False))
    check_document(created, fs.name("c/d"), fields({"a": 1}))
    r = fs.patch("c/d", {"a": 2}, exists=False)
    assert_error(r, 409, "ALREADY_EXISTS")
    assert fs.get_ok("c/d") == created


def test_patch_precondition_update_time(fs):
    v1 = fs.set("c/d", {"a": 1})
    v2 = ok(fs.patch("c/d", {"a": 2}, update_time=v1["updateTime"]))
    assert v2["fields"] == fields({"a": 2})
    r = fs.patch("c/d", {"a": 3}, update_time=v1["updateTime"])       # stale
    assert_error(r, 400, "FAILED_PRECONDITION")
    assert fs.get_ok("c/d") == v2
    r = fs.patch("c/d", {"a": 3}, update_time=ts_minus_micros(v2["updateTime"], 1))
    assert_error(r, 400, "FAILED_PRECONDITION")
    assert fs.get_ok("c/d") == v2


def test_patch_with_reserved_or_invalid_field_names_is_rejected(fs):
    assert_error(fs.patch("c/d", {"__reserved__": 1}), 400, "INVALID_ARGUMENT")
    assert_error(fs.patch("c/d", {"": 1}), 400, "INVALID_ARGUMENT")
    assert not fs.exists("c/d")


# ---------------------------------------------------------------------------------------------
# delete
# ---------------------------------------------------------------------------------------------


def test_delete_existing(fs):
    fs.set("c/d", {"a": 1})
    assert ok(fs.delete("c/d")) == {}
    assert_error(fs.get("c/d"), 404, "NOT_FOUND")


def test_delete_missing_is_ok(fs):
    assert ok(fs.delete("c/never")) == {}


def test_delete_precondition_exists(fs):
    assert_error(fs.delete("c/d", exists=True), 404, "NOT_FOUND")
    fs.set("c/d", {"a": 1})
    assert ok(fs.delete("c/d", exists=True)) == {}
    assert not fs.exists("c/d")


def test_delete_precondition_update_time(fs):
    v1 = fs.set("c/d", {"a": 1})
    v2 = fs.set("c/d", {"a": 2})
    assert_error(fs.delete("c/d", update_time=v1["updateTime"]), 400, "FAILED_PRECONDITION")
    assert fs.get_ok("c/d") == v2
    assert ok(fs.delete("c/d", update_time=v2["updateTime"])) == {}
    assert not fs.exists("c/d")


def test_delete_keeps_subcollections(fs):
    fs.set("c/d", {"a": 1})
    sub = fs.set("c/d/sub/x", {"b": 2})
    ok(fs.delete("c/d"))
    assert fs.get_ok("c/d/sub/x") == sub
    assert ok(fs.list("c")) == {}
    assert ok(fs.list("c", showMissing="true")) == {"documents": [{"name": fs.name("c/d")}]}


# ---------------------------------------------------------------------------------------------
# batchGet
# ---------------------------------------------------------------------------------------------


def test_batch_get_found_and_missing(fs):
    a = fs.set("c/a", {"n": 1})
    b = fs.set("c/b", {"n": 2})
    arr = ok(fs.batch_get(["c/a", "c/missing", "c/b"]))
    check_stream_array(arr, {"found", "missing", "readTime"})
    assert len(arr) == 3
    found = {e["found"]["name"]: e["found"] for e in arr if "found" in e}
    missing = [e["missing"] for e in arr if "missing" in e]
    assert found == {a["name"]: a, b["name"]: b}
    assert missing == [fs.name("c/missing")]
    for e in arr:
        assert len(set(e) & {"found", "missing"}) == 1, e


def test_batch_get_with_mask(fs):
    fs.set("c/a", {"x": 1, "y": 2})
    arr = ok(fs.batch_get(["c/a"], mask={"fieldPaths": ["y"]}))
    assert len(arr) == 1
    check_document(arr[0]["found"], fs.name("c/a"), fields({"y": 2}))


def test_batch_get_new_transaction_then_commit(fs):
    fs.set("c/a", {"n": 1})
    arr = ok(fs.batch_get(["c/a"], newTransaction={"readWrite": {}}))
    check_stream_array(arr, {"found", "missing", "readTime", "transaction"})
    tx = new_transaction_of(arr)
    assert [e["found"]["name"] for e in arr if "found" in e] == [fs.name("c/a")]
    res = ok(fs.commit([w_update(fs.name("c/a"), {"n": 2})], transaction=tx))
    assert res["writeResults"][0]["updateTime"] == res["commitTime"]
    assert fs.get_ok("c/a")["fields"] == fields({"n": 2})


def test_batch_get_rejects_names_of_another_database(fs):
    body = {"documents": [f"projects/{fs.project}-other/databases/(default)/documents/c/d"]}
    assert_error(fs.post(f"{fs.root}:batchGet", body), 400, "INVALID_ARGUMENT")


# ---------------------------------------------------------------------------------------------
# listCollectionIds
# ---------------------------------------------------------------------------------------------


def test_list_collection_ids(fs):
    fs.set_many({"b/y": {}, "a/x": {}, "c/z/sub/w": {}, "c/z/other/v/deep/u": {}})
    assert ok(fs.list_collection_ids()) == {"collectionIds": ["a", "b", "c"]}
    assert ok(fs.list_collection_ids("c/z")) == {"collectionIds": ["other", "sub"]}
    assert ok(fs.list_collection_ids("c/z/other/v")) == {"collectionIds": ["deep"]}
    assert ok(fs.list_collection_ids("a/x")) == {}


def test_list_collection_ids_paging(fs):
    fs.set_many({"b/y": {}, "a/x": {}, "c/z": {}})
    first = ok(fs.list_collection_ids(pageSize=2))
    assert first["collectionIds"] == ["a", "b"]
    assert first.get("nextPageToken")
    second = ok(fs.list_collection_ids(pageSize=2, pageToken=first["nextPageToken"]))
    assert second["collectionIds"] == ["c"]
    assert not second.get("nextPageToken")


# ---------------------------------------------------------------------------------------------
# batchWrite
# ---------------------------------------------------------------------------------------------


def test_batch_write_reports_per_write_status(fs):
    fs.set("c/b", {"n": 1})
    res = ok(fs.batch_write([
        w_update(fs.name("c/a"), {"n": 1}),
        w_update(fs.name("c/missing"), {"n": 2}, exists=True),
        w_delete(fs.name("c/b")),
    ]))
    assert set(res) == {"writeResults", "status"}
    assert len(res["writeResults"]) == 3 and len(res["status"]) == 3
    assert set(res["writeResults"][0]) == {"updateTime"}
    assert_ts(res["writeResults"][0]["updateTime"])
    assert res["writeResults"][1] == {}
    assert res["writeResults"][2] == {}
    assert res["status"][0] == {}
    assert res["status"][1]["code"] == 5            # NOT_FOUND
    assert isinstance(res["status"][1].get("message"), str)
    assert res["status"][2] == {}
    assert fs.get_ok("c/a")["fields"] == fields({"n": 1})
    assert fs.get_ok("c/a")["updateTime"] == res["writeResults"][0]["updateTime"]
    assert not fs.exists("c/missing")
    assert not fs.exists("c/b")


def test_batch_write_same_document_twice_is_rejected(fs):
    r = fs.batch_write([w_update(fs.name("c/a"), {"n": 1}), w_update(fs.name("c/a"), {"n": 2})])
    assert_error(r, 400, "INVALID_ARGUMENT")
    assert not fs.exists("c/a")


# ---------------------------------------------------------------------------------------------
# typed values
# ---------------------------------------------------------------------------------------------


def test_typed_values_round_trip(fs):
    ref = fs.name("other/doc")
    sent = {
        "null": {"nullValue": None},
        "t": {"booleanValue": True},
        "f": {"booleanValue": False},
        "int": {"integerValue": "42"},
        "zero": {"integerValue": "0"},
        "min": {"integerValue": "-9223372036854775808"},
        "max": {"integerValue": "9223372036854775807"},
        "dbl": {"doubleValue": 1.5},
        "dblWhole": {"doubleValue": 2.0},
        "dblZero": {"doubleValue": 0},
        "tiny": {"doubleValue": 5e-324},
        "nan": {"doubleValue": "NaN"},
        "inf": {"doubleValue": "Infinity"},
        "ninf": {"doubleValue": "-Infinity"},
        "ts": {"timestampValue": "2024-01-02T03:04:05.123456Z"},
        "str": {"stringValue": "héllo wörld 😀"},
        "empty": {"stringValue": ""},
        "bytes": {"bytesValue": "AAECA/8="},
        "ref": {"referenceValue": ref},
        "geo": {"geoPointValue": {"latitude": 1.5, "longitude": -3.25}},
        "arr": {"arrayValue": {"values": [{"integerValue": "1"}, {"stringValue": "a"},
                                          {"mapValue": {"fields": {"k": {"booleanValue": True}}}}]}},
        "emptyArr": {"arrayValue": {}},
        "map": {"mapValue": {"fields": {"nested": {"mapValue": {"fields": {"x": {"nullValue": None}}}},
                                        "a.b": {"integerValue": "1"}}}},
        "emptyMap": {"mapValue": {}},
    }
    doc = ok(fs.patch("c/d", raw_fields=sent))
    assert doc["fields"] == sent
    got = fs.get_ok("c/d")
    assert got["fields"] == sent
    # JSON types, not just Python equality
    assert got["fields"]["int"]["integerValue"] == "42"
    assert isinstance(got["fields"]["dbl"]["doubleValue"], float)
    assert got["fields"]["nan"]["doubleValue"] == "NaN"
    assert got["fields"]["null"] == {"nullValue": None}


def test_alternative_value_spellings_are_normalised(fs):
    sent = {
        "intNumber": {"integerValue": 42},
        "nullName": {"nullValue": "NULL_VALUE"},
        "nullNumber": {"nullValue": 0},
        "tsNanos": {"timestampValue": "2024-01-02T03:04:05.123456789Z"},
        "tsMillis": {"timestampValue": "2024-01-02T03:04:05.100Z"},
        "tsWhole": {"timestampValue": "2024-01-02T03:04:05Z"},
        "tsOffset": {"timestampValue": "2024-01-02T04:04:05.5+01:00"},
        "tsMicrosRound": {"timestampValue": "2024-01-02T03:04:05.120000Z"},
    }
    got = ok(fs.patch("c/d", raw_fields=sent))["fields"]
    assert got == {
        "intNumber": {"integerValue": "42"},
        "nullName": {"nullValue": None},
        "nullNumber": {"nullValue": None},
        "tsNanos": {"timestampValue": "2024-01-02T03:04:05.123456Z"},   # truncated to µs
        "tsMillis": {"timestampValue": "2024-01-02T03:04:05.100Z"},
        "tsWhole": {"timestampValue": "2024-01-02T03:04:05Z"},
        "tsOffset": {"timestampValue": "2024-01-02T03:04:05.500Z"},
        "tsMicrosRound": {"timestampValue": "2024-01-02T03:04:05.120Z"},
    }
    assert fs.get_ok("c/d")["fields"] == got


def test_document_and_field_names_with_unicode(fs):
    doc = ok(fs.patch("c/d", {"ключ": "значение", "emoji😀": 1, "with space": True}))
    assert fs.get_ok("c/d") == doc
    assert set(doc["fields"]) == {"ключ", "emoji😀", "with space"}


def test_nested_arrays_are_rejected(fs):
    bad = {"a": {"arrayValue": {"values": [{"arrayValue": {"values": [{"integerValue": "1"}]}}]}}}
    assert_error(fs.patch("c/d", raw_fields=bad), 400, "INVALID_ARGUMENT")
    assert not fs.exists("c/d")
    # an array inside a map inside an array is fine
    good = {"a": {"arrayValue": {"values": [{"mapValue": {"fields": {"b": {"arrayValue": {"values": [
        {"integerValue": "1"}]}}}}}]}}}
    assert ok(fs.patch("c/d", raw_fields=good))["fields"] == good


def test_excessive_map_nesting_is_rejected(fs):
    def nest(depth):
        v = {"integerValue": "1"}
        for _ in range(depth):
            v = {"mapValue": {"fields": {"m": v}}}
        return {"m": v}

    assert ok(fs.patch("c/ok", raw_fields=nest(10)))["fields"] == nest(10)
    assert_error(fs.patch("c/deep", raw_fields=nest(40)), 400, "INVALID_ARGUMENT")
    assert not fs.exists("c/deep")


def test_wrongly_typed_values_are_rejected(fs):
    bad_values = [
        {"integerValue": "abc"},
        {"integerValue": "9223372036854775808"},        # out of int64 range
        {"integerValue": "1", "stringValue": "x"},      # two kinds in one Value
        {"doubleValue": "abc"},
        {"booleanValue": "yes"},
        {"timestampValue": "yesterday"},
        {"bytesValue": "!!not base64!!"},
        {"geoPointValue": {"latitude": 91, "longitude": 0}},
        {"arrayValue": {"values": "x"}},
        {"mapValue": {"fields": []}},
        {"fancyValue": 1},
        "just a string",
    ]
    for i, value in enumerate(bad_values):
        r = fs.patch(f"c/d{i}", raw_fields={"f": value})
        assert_error(r, 400, "INVALID_ARGUMENT")
        assert not fs.exists(f"c/d{i}")
    r = fs.s.patch(fs.doc_url("c/x"), json={"fields": "nope"}, timeout=30)
    assert_error(r, 400, "INVALID_ARGUMENT")
    r = fs.s.patch(fs.doc_url("c/x"), json=[1, 2], timeout=30)
    assert_error(r, 400, "INVALID_ARGUMENT")


# ---------------------------------------------------------------------------------------------
# request encodings clients really send
# ---------------------------------------------------------------------------------------------


def test_text_plain_and_missing_content_type_are_parsed_as_json(fs):
    body = '{"writes":[{"update":{"name":"%s","fields":{"a":{"integerValue":"1"}}}}]}' % fs.name("c/d")
    r = fs.s.post(fs.url(f"{fs.root}:commit"), data=body.encode(),
                  headers={"Content-Type": "text/plain;charset=UTF-8"}, timeout=30)
    res = ok(r)
    assert res["writeResults"][0]["updateTime"] == res["commitTime"]
    r = fs.s.post(fs.url(f"{fs.root}:runQuery"), data=b'{"structuredQuery":{"from":[{"collectionId":"c"}]}}',
                  headers={"Content-Type": "text/plain"}, timeout=30)
    arr = ok(r)
    assert [e["document"]["name"] for e in arr if "document" in e] == [fs.name("c/d")]
    r = requests.Request("PATCH", fs.doc_url("c/e"), data=b'{"fields":{"b":{"stringValue":"x"}}}').prepare()
    r.headers.pop("Content-Type", None)
    assert ok(fs.s.send(r, timeout=30))["fields"] == fields({"b": "x"})


def test_snake_case_request_fields(fs):
    fs.set("c/a", {"n": 1, "keep": True})
    body = {"writes": [{
        "update": {"name": fs.name("c/a"), "fields": {"n": {"integer_value": "5"}, "m": {"map_value": {
            "fields": {"s": {"string_value": "x"}}}}}},
        "update_mask": {"field_paths": ["n", "m"]},
        "update_transforms": [{"field_path": "t", "set_to_server_value": "REQUEST_TIME"},
                              {"field_path": "arr", "append_missing_elements": {"values": [{"integer_value": "1"}]}}],
        "current_document": {"exists": True},
    }]}
    res = ok(fs.post(f"{fs.root}:commit", body))
    commit_time = res["commitTime"]
    assert res["writeResults"] == [{"updateTime": commit_time, "transformResults": [
        {"timestampValue": commit_time}, {"nullValue": None}]}]
    got = fs.get_ok("c/a")
    assert got["fields"] == {"n": {"integerValue": "5"}, "keep": {"booleanValue": True},
                             "m": {"mapValue": {"fields": {"s": {"stringValue": "x"}}}},
                             "t": {"timestampValue": commit_time},
                             "arr": {"arrayValue": {"values": [{"integerValue": "1"}]}}}
    q = {"structured_query": {
        "from": [{"collection_id": "c", "all_descendants": False}],
        "where": {"field_filter": {"field": {"field_path": "n"}, "op": "EQUAL", "value": {"integer_value": "5"}}},
        "order_by": [{"field": {"field_path": "n"}, "direction": "DESCENDING"}],
        "limit": 5}}
    arr = ok(fs.post(f"{fs.root}:runQuery", q))
    assert [e["document"] for e in arr if "document" in e] == [got]
    arr = ok(fs.post(f"{fs.root}:batchGet", {"documents": [fs.name("c/a")], "new_transaction": {"read_only": {}}}))
    new_transaction_of(arr)
    assert [e["found"] for e in arr if "found" in e] == [got]
    r = fs.s.get(fs.doc_url("c/a"), params={"mask.field_paths": "keep"}, timeout=30)
    assert ok(r)["fields"] == {"keep": {"booleanValue": True}}


def test_enums_as_numbers(fs):
    """What generated REST clients send: `$alt=json;enum-encoding=int` and enum numbers."""
    params = {"$alt": "json;enum-encoding=int"}
    body = {"writes": [w_update(fs.name("c/a"), {"n": 1, "s": "x"},
                                transforms=[{"fieldPath": "t", "setToServerValue": 1}]),
                       w_update(fs.name("c/b"), raw_fields={"n": {"integerValue": "2"}, "z": {"nullValue": 0}})]}
    res = ok(fs.s.post(fs.url(f"{fs.root}:commit"), params=params, json=body, timeout=30))
    assert res["writeResults"][0]["transformResults"] == [{"timestampValue": res["commitTime"]}]
    assert fs.get_ok("c/b")["fields"]["z"] == {"nullValue": None}
    query = {"structuredQuery": {
        "from": [{"collectionId": "c"}],
        "where": {"compositeFilter": {"op": 1, "filters": [                                        # AND
            {"fieldFilter": {"field": {"fieldPath": "n"}, "op": 4, "value": {"integerValue": "1"}}},   # >=
            {"fieldFilter": {"field": {"fieldPath": "n"}, "op": 2, "value": {"integerValue": "2"}}}]}},  # <=
        "orderBy": [{"field": {"fieldPath": "n"}, "direction": 2}]}}                               # DESCENDING
    arr = ok(fs.s.post(fs.url(f"{fs.root}:runQuery"), params=params, json=query, timeout=30))
    assert [fs.rel(e["document"]["name"]) for e in arr if "document" in e] == ["c/b", "c/a"]
    query = {"structuredQuery": {"from": [{"collectionId": "c"}],
                                 "where": {"unaryFilter": {"op": 3, "field": {"fieldPath": "z"}}}}}    # IS_NULL
    arr = ok(fs.s.post(fs.url(f"{fs.root}:runQuery"), params=params, json=query, timeout=30))
    assert [fs.rel(e["document"]["name"]) for e in arr if "document" in e] == ["c/b"]
    doc = ok(fs.s.get(fs.doc_url("c/a"), params=params, timeout=30))
    assert doc["fields"]["n"] == {"integerValue": "1"}


def test_gapic_style_request_headers_are_accepted(fs):
    headers = {"x-goog-api-client": "gl-python/3.11.7 gapic/2.34.1", "x-goog-request-params":
               f"name={fs.root}/c/d", "Content-Type": "application/json", "Authorization": "Bearer owner"}
    r = fs.s.patch(fs.doc_url("c/d"), params={"$alt": "json;enum-encoding=int"},
                   json={"fields": fields({"a": 1})}, headers=headers, timeout=30)
    assert ok(r)["fields"] == fields({"a": 1})


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------


def test_malformed_json_is_invalid_argument(fs):
    for resource, method in [(f"{fs.root}:commit", "POST"), (f"{fs.root}:runQuery", "POST"),
                             (f"{fs.root}:batchGet", "POST"), (fs.name("c/d"), "PATCH"),
                             (f"{fs.root}/c", "POST")]:
        r = fs.s.request(method, fs.url(resource), data=b'{"writes": [', timeout=30,
                         headers={"Content-Type": "application/json"})
        assert_error(r, 400, "INVALID_ARGUMENT")
    assert not fs.exists("c/d")


def test_wrong_request_field_types_are_invalid_argument(fs):
    cases = [
        (f"{fs.root}:commit", {"writes": "x"}),
        (f"{fs.root}:commit", {"writes": [{"update": {"name": fs.name("c/d")}, "delete": fs.name("c/d")}]}),
        (f"{fs.root}:commit", {"writes": [{}]}),
        (f"{fs.root}:batchGet", {"documents": "c/d"}),
        (f"{fs.root}:runQuery", {"structuredQuery": {"from": [{"collectionId": "c"}], "limit": "many"}}),
        (f"{fs.root}:runQuery", {"structuredQuery": {"from": [{"collectionId": "c"}], "where": {
            "fieldFilter": {"field": {"fieldPath": "a"}, "op": "BOGUS", "value": {"integerValue": "1"}}}}}),
        (f"{fs.root}:beginTransaction", {"options": {"readOnly": {}, "readWrite": {}}}),
    ]
    for resource, body in cases:
        assert_error(fs.post(resource, body), 400, "INVALID_ARGUMENT")
    assert not fs.exists("c/d")


def test_bad_document_names_are_invalid_argument(fs):
    other = f"projects/{fs.project}-x/databases/(default)/documents/c/d"
    bad_writes = [
        w_update(fs.name("c"), {"a": 1}),                 # a collection, not a document
        w_update(fs.name("c/__x__"), {"a": 1}),           # reserved id
        w_update(fs.name("c/d/e"), {"a": 1}),
        w_update(other, {"a": 1}),                        # another database
        w_update("not/a/name", {"a": 1}),
        w_delete(fs.name("c/..")),                        # ".." is not a valid id
    ]
    for w in bad_writes:
        assert_error(fs.commit([w]), 400, "INVALID_ARGUMENT")
    assert_error(fs.patch("c/__x__", {"a": 1}), 400, "INVALID_ARGUMENT")
    # PATCH on a collection path: Firestore rejects the name (400); a 404 "no such route" is acceptable too
    assert_client_error(fs.s.patch(fs.url(fs.name("c")), json={"fields": {}}, timeout=30),
                        {(400, "INVALID_ARGUMENT"), (404, "NOT_FOUND")})
    assert_error(fs.create("c", {"a": 1}, doc_id="a/b"), 400, "INVALID_ARGUMENT")
    assert_error(fs.create("c", {"a": 1}, doc_id="__id__"), 400, "INVALID_ARGUMENT")
    assert ok(fs.list_collection_ids()) == {}


def test_oversize_document_is_invalid_argument(fs):
    big = "x" * 1_048_576
    assert_error(fs.patch("c/big", {"s": big}), 400, "INVALID_ARGUMENT")
    assert_error(fs.create("c", {"s": big}, doc_id="big2"), 400, "INVALID_ARGUMENT")
    assert not fs.exists("c/big") and not fs.exists("c/big2")
    near = "y" * 1_000_000
    doc = ok(fs.patch("c/near", {"s": near}))
    assert doc["fields"]["s"]["stringValue"] == near


# ---------------------------------------------------------------------------------------------
# reset endpoint
# ---------------------------------------------------------------------------------------------


def test_reset_endpoint_clears_one_project(fs, base_url):
    other = Fs(base_url, fs.project + "-o")
    fs.set_many({"c/a": {"n": 1}, "c/a/sub/b": {"n": 2}})
    kept = other.set("c/a", {"n": 3})
    r = fs.reset()
    assert r.status_code == 200, r.text
    assert_error(fs.get("c/a"), 404, "NOT_FOUND")
    assert_error(fs.get("c/a/sub/b"), 404, "NOT_FOUND")
    assert ok(fs.list("c", showMissing="true")) == {}
    assert ok(fs.list_collection_ids()) == {}
    assert other.get_ok("c/a") == kept
    # the database works normally afterwards
    assert fs.set("c/a", {"n": 4})["fields"] == fields({"n": 4})


# ---------------------------------------------------------------------------------------------
# durability across restarts
# ---------------------------------------------------------------------------------------------


def test_restart_with_data_dir_keeps_documents(tmp_path, project):
    (tmp_path / "data").mkdir()
    proc, base = start_server(data_dir=tmp_path / "data")
    try:
        f = Fs(base, project)
        a = f.set("c/a", {"n": 1, "ts": Ts("2024-01-02T03:04:05.123456Z"), "ref": f.ref("c/b"),
                          "geo": Geo(1.5, 2.5), "b": b"\x00\x01", "arr": [1, "x"], "m": {"k": None}})
        sub = f.set("c/a/sub/x", {"deep": True})
        res = ok(f.commit([w_update(f.name("c/b"), {"v": 2}), w_delete(f.name("c/gone"))]))
        b = f.get_ok("c/b")
        assert b["updateTime"] == res["commitTime"]
    finally:
        stop_server(proc)
    proc, base = start_server(data_dir=tmp_path / "data")
    try:
        f = Fs(base, project)
        assert f.get_ok("c/a") == a
        assert f.get_ok("c/a/sub/x") == sub
        assert f.get_ok("c/b") == b
        assert [d["name"] for d in ok(f.list("c"))["documents"]] == [f.name("c/a"), f.name("c/b")]
        # writing after a restart still works and times move forward
        c = f.set("c/b", {"v": 3})
        assert ts_key(c["updateTime"]) > ts_key(b["updateTime"])
    finally:
        stop_server(proc)


def test_acknowledged_writes_survive_kill_9(tmp_path, project):
    (tmp_path / "data").mkdir()
    proc, base = start_server(data_dir=tmp_path / "data")
    try:
        f = Fs(base, project)
        written = {}
        for i in range(40):
            written[f"c/d{i:02d}"] = f.set(f"c/d{i:02d}", {"i": i})
    finally:
        proc.kill()          # SIGKILL: no clean shutdown
        proc.wait()
    proc, base = start_server(data_dir=tmp_path / "data")
    try:
        f = Fs(base, project)
        for path, doc in written.items():
            assert f.get_ok(path) == doc
    finally:
        stop_server(proc)


def test_projects_are_isolated(base_url, project):
    """Projects are isolated: the same document path in two projects holds two documents."""
    a, b = Fs(base_url, project), Fs(base_url, project + "-b")
    a.set("c/d", {"who": "a"})
    b.set("c/d", {"who": "b"})
    assert a.get_ok("c/d")["fields"] == fields({"who": "a"})
    assert b.get_ok("c/d")["fields"] == fields({"who": "b"})
    assert a.get_ok("c/d")["name"] != b.get_ok("c/d")["name"]


def test_responses_are_json(fs):
    fs.set("c/d", {"a": 1})
    for r in [fs.get("c/d"), fs.get("c/missing"), fs.run_query({"from": [{"collectionId": "c"}]}),
              fs.commit([]), fs.s.post(fs.url(f"{fs.root}:commit"), data=b"{", timeout=30)]:
        assert r.headers.get("Content-Type", "").startswith("application/json"), r.headers
        r.json()
