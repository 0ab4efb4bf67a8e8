"""What Google's own Firestore integration tests and the official emulator showed Firegate did
differently (issue 40), each as the official emulator answers it (docs/documents.md):
transactions' `verify` writes over REST and gRPC, several writes to one document in a commit,
null and NaN in filters, inequalities with the key, and batchWrite as an admin API.
"""

import grpc
import pytest
import requests
from google.cloud.firestore_v1.types import firestore as fs

DB = "(default)"
T = 10
OWNER = {"Authorization": "Bearer owner"}


def docs(base_url, project):
    return f"{base_url}/v1/projects/{project}/databases/{DB}/documents"


def name(project, path):
    return f"projects/{project}/databases/{DB}/documents/{path}"


def commit(base_url, project, writes):
    return requests.post(f"{docs(base_url, project)}:commit", json={"writes": writes}, timeout=T)


def put(base_url, project, path, value):
    r = requests.patch(f"{docs(base_url, project)}/{path}", json={"fields": {"f": value}}, timeout=T)
    assert r.status_code == 200, r.text
    return r.json()


def error(r, code, status, message):
    assert r.status_code == code, r.text
    assert r.json()["error"] == {"code": code, "message": message, "status": status}, r.text


# --------------------------------------------------------------------------------------------
# verify: the JS SDK's check of every document a transaction read and did not write

def test_a_verify_write_checks_its_precondition_and_changes_nothing(base_url, project):
    stored = put(base_url, project, "c/d", {"integerValue": "1"})
    r = commit(base_url, project, [{"verify": name(project, "c/d"), "currentDocument": {"updateTime": stored["updateTime"]}},
                                   {"update": {"name": name(project, "c/e"), "fields": {}}}])
    assert r.status_code == 200, r.text
    results = r.json()["writeResults"]
    assert results[0] == {"updateTime": stored["updateTime"]}  # the document's own, unchanged
    assert results[1]["updateTime"] == r.json()["commitTime"]
    assert requests.get(f"{docs(base_url, project)}/c/d", timeout=T).json()["updateTime"] == stored["updateTime"]

    stale = commit(base_url, project, [{"update": {"name": name(project, "c/z"), "fields": {}}},
                                       {"verify": name(project, "c/d"), "currentDocument": {"updateTime": "2001-01-01T00:00:00.000001Z"}}])
    assert stale.status_code == 400 and stale.json()["error"]["status"] == "FAILED_PRECONDITION", stale.text
    assert requests.get(f"{docs(base_url, project)}/c/z", timeout=T).status_code == 404  # the commit is one
    missing = commit(base_url, project, [{"verify": name(project, "c/none"), "currentDocument": {"exists": False}}])
    assert missing.status_code == 200, missing.text
    error(commit(base_url, project, [{"verify": name(project, "c/d")}]), 400, "INVALID_ARGUMENT", "a verify must contain a precondition")


@pytest.mark.parametrize("order,message", [
    ("verify-write", "the same document cannot be verified and then written in a single request"),
    ("write-verify", "the same document cannot be written and then verified in a single request"),
    ("verify-verify", "the same document cannot be verified more than once in a single request"),
])
def test_a_verified_document_is_written_in_another_commit(base_url, project, order, message):
    stored = put(base_url, project, "v/d", {"integerValue": "1"})
    verify = {"verify": name(project, "v/d"), "currentDocument": {"updateTime": stored["updateTime"]}}
    write = {"update": {"name": name(project, "v/d"), "fields": {}}}
    pair = {"verify-write": [verify, write], "write-verify": [write, verify], "verify-verify": [verify, verify]}[order]
    error(commit(base_url, project, pair), 400, "INVALID_ARGUMENT", message)


def test_a_verify_over_grpc_is_field_5_as_the_sdks_send_it(base_url, project):
    """The JS SDK's own write.proto has `string verify = 5` (googleapis' does not)."""
    stored = put(base_url, project, "g/d", {"integerValue": "1"})
    seconds, _, fraction = stored["updateTime"].rstrip("Z").partition(".")
    import datetime
    epoch = int(datetime.datetime.fromisoformat(seconds).replace(tzinfo=datetime.timezone.utc).timestamp())
    nanos = int(fraction.ljust(9, "0"))

    def field(number, payload):
        return bytes([number << 3 | 2]) + varint(len(payload)) + payload

    def varint(n):
        out = b""
        while True:
            out += bytes([n & 0x7f | (0x80 if n > 0x7f else 0)])
            n >>= 7
            if not n:
                return out

    timestamp = bytes([1 << 3]) + varint(epoch) + bytes([2 << 3]) + varint(nanos)
    precondition = field(2, timestamp)  # update_time
    write = field(5, name(project, "g/d").encode()) + field(4, precondition)
    request = field(1, f"projects/{project}/databases/{DB}".encode()) + field(2, write)
    channel = grpc.insecure_channel(base_url.split("://", 1)[1])
    try:
        call = channel.unary_unary("/google.firestore.v1.Firestore/Commit", request_serializer=lambda raw: raw,
                                   response_deserializer=fs.CommitResponse.deserialize)
        response = call(request, metadata=[("authorization", "Bearer owner")], timeout=T)
        assert len(response.write_results) == 1
        stale_precondition = field(2, bytes([1 << 3]) + varint(978307200))
        stale = field(1, f"projects/{project}/databases/{DB}".encode()) + field(2, field(5, name(project, "g/d").encode()) + field(4, stale_precondition))
        with pytest.raises(grpc.RpcError) as failed:
            call(stale, metadata=[("authorization", "Bearer owner")], timeout=T)
        assert failed.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    finally:
        channel.close()


# --------------------------------------------------------------------------------------------
# Several writes to one document in one commit

def test_delete_then_update_in_one_commit_is_refused_and_delete_then_set_recreates(base_url, project):
    put(base_url, project, "m/d", {"integerValue": "1"})
    delete = {"delete": name(project, "m/d")}
    sdk_update = {"update": {"name": name(project, "m/d"), "fields": {"f": {"integerValue": "2"}}},
                  "updateMask": {"fieldPaths": ["f"]}, "currentDocument": {"exists": True}}
    error(commit(base_url, project, [delete, sdk_update]), 400, "INVALID_ARGUMENT",
          "Cannot delete then update an entity in the same request.")
    error(commit(base_url, project, [delete, {"delete": name(project, "m/d"), "currentDocument": {"exists": True}}]), 400,
          "INVALID_ARGUMENT", "Cannot delete then delete an entity in the same request.")
    upsert = {"update": {"name": name(project, "m/d"), "fields": {"f": {"integerValue": "3"}}}}
    insert = {"update": {"name": name(project, "m/d"), "fields": {}}, "currentDocument": {"exists": False}}
    error(commit(base_url, project, [upsert, insert]), 400, "INVALID_ARGUMENT", "Cannot upsert then insert an entity in the same request.")
    r = commit(base_url, project, [delete, upsert])
    assert r.status_code == 200, r.text
    doc = requests.get(f"{docs(base_url, project)}/m/d", timeout=T).json()
    assert doc["fields"] == {"f": {"integerValue": "3"}} and doc["createTime"] == r.json()["commitTime"]
    assert commit(base_url, project, [upsert, delete]).status_code == 200
    assert commit(base_url, project, [delete, insert]).status_code == 200


# --------------------------------------------------------------------------------------------
# null and NaN in filters: as an operand they match nothing (the SDK sends == null as IS_NULL)

NULL, NAN = {"nullValue": None}, {"doubleValue": "NaN"}
ONE = {"integerValue": "1"}


@pytest.fixture
def mixed(base_url, project):
    for doc, value in {"null": NULL, "nan": NAN, "one": ONE, "a": {"stringValue": "a"},
                       "arrnull": {"arrayValue": {"values": [NULL]}}, "arr1": {"arrayValue": {"values": [ONE]}}}.items():
        put(base_url, project, f"q/{doc}", value)
    requests.patch(f"{docs(base_url, project)}/q/nof", json={"fields": {"g": ONE}}, timeout=T)
    return project


def matching(base_url, project, where):
    r = requests.post(f"{docs(base_url, project)}:runQuery", json={"structuredQuery": {"from": [{"collectionId": "q"}], "where": where}},
                      timeout=T)
    assert r.status_code == 200, r.text
    return sorted(row["document"]["name"].rsplit("/", 1)[1] for row in r.json() if "document" in row)


def field_filter(op, value):
    return {"fieldFilter": {"field": {"fieldPath": "f"}, "op": op, "value": value}}


def array(*values):
    return {"arrayValue": {"values": list(values)}}


@pytest.mark.parametrize("op,value,expected", [
    ("EQUAL", NULL, []), ("EQUAL", NAN, []), ("EQUAL", ONE, ["one"]),
    ("IN", array(NULL), []), ("IN", array(NULL, ONE), ["one"]), ("IN", array(NAN), []), ("IN", array(NAN, ONE), ["one"]),
    ("NOT_IN", array(NULL), []), ("NOT_IN", array(NULL, ONE), []), ("NOT_IN", array(ONE), ["a", "arr1", "arrnull", "nan"]),
    ("NOT_EQUAL", NULL, []), ("NOT_EQUAL", ONE, ["a", "arr1", "arrnull", "nan"]),
    ("ARRAY_CONTAINS", NULL, []), ("ARRAY_CONTAINS", NAN, []), ("ARRAY_CONTAINS", ONE, ["arr1"]),
    ("ARRAY_CONTAINS_ANY", array(NULL), []), ("ARRAY_CONTAINS_ANY", array(NULL, ONE), ["arr1"]), ("ARRAY_CONTAINS_ANY", array(NAN), []),
    ("LESS_THAN_OR_EQUAL", NULL, []), ("GREATER_THAN_OR_EQUAL", NULL, []), ("GREATER_THAN_OR_EQUAL", NAN, []),
])
def test_a_null_or_nan_operand_matches_nothing(base_url, mixed, op, value, expected):
    assert matching(base_url, mixed, field_filter(op, value)) == expected


@pytest.mark.parametrize("op,expected", [
    ("IS_NULL", ["null"]), ("IS_NAN", ["nan"]), ("IS_NOT_NULL", ["a", "arr1", "arrnull", "nan", "one"]),
    ("IS_NOT_NAN", ["a", "arr1", "arrnull", "one"]),
])
def test_unary_filters_match_null_and_nan(base_url, mixed, op, expected):
    assert matching(base_url, mixed, {"unaryFilter": {"field": {"fieldPath": "f"}, "op": op}}) == expected


# --------------------------------------------------------------------------------------------
# Inequalities and the key

def query_error(base_url, project, query, message):
    r = requests.post(f"{docs(base_url, project)}:runQuery", json={"structuredQuery": {"from": [{"collectionId": "r"}], **query}}, timeout=T)
    error(r, 400, "INVALID_ARGUMENT", message)


def test_an_inequality_cannot_follow_the_key_in_the_order(base_url, project):
    key_first = "order by clause cannot contain more fields after the key"
    for op in ("NOT_EQUAL", "GREATER_THAN"):
        query_error(base_url, project, {"where": field_filter(op, ONE), "orderBy": [{"field": {"fieldPath": "__name__"}}]}, key_first)
    query_error(base_url, project, {"orderBy": [{"field": {"fieldPath": "__name__"}}, {"field": {"fieldPath": "f"}}]}, key_first)
    key = {"fieldFilter": {"field": {"fieldPath": "__name__"}, "op": "EQUAL", "value": {"referenceValue": name(project, "r/b")}}}
    query_error(base_url, project, {"where": {"compositeFilter": {"op": "AND", "filters": [field_filter("NOT_EQUAL", ONE), key]}}},
                "Equality on key is not allowed if there are other inequality fields and key does not appear in inequalities.")
    two = {"compositeFilter": {"op": "AND", "filters": [field_filter("NOT_EQUAL", ONE),
                                                        {"fieldFilter": {"field": {"fieldPath": "g"}, "op": "NOT_EQUAL", "value": ONE}}]}}
    query_error(base_url, project, {"where": two},
                "Only a single 'NOT_EQUAL', 'NOT_IN', 'IS_NOT_NAN', or 'IS_NOT_NULL' filter allowed per query.")
    # Allowed: the key ordered last, an equality on a field with the key, the key in the inequalities.
    for query in ({"where": field_filter("NOT_EQUAL", ONE), "orderBy": [{"field": {"fieldPath": "f"}}, {"field": {"fieldPath": "__name__"}}]},
                  {"where": {"compositeFilter": {"op": "AND", "filters": [field_filter("EQUAL", ONE), key]}}},
                  {"where": field_filter("GREATER_THAN", ONE), "orderBy": [{"field": {"fieldPath": "g"}}]}):
        r = requests.post(f"{docs(base_url, project)}:runQuery", json={"structuredQuery": {"from": [{"collectionId": "r"}], **query}}, timeout=T)
        assert r.status_code == 200, (query, r.text)


# --------------------------------------------------------------------------------------------
# batchWrite is the Admin SDKs' API

def test_batch_write_needs_the_admin_over_rest_and_grpc(base_url, project):
    body = {"writes": [{"update": {"name": name(project, "bw/x"), "fields": {}}}]}
    for headers in ({}, {"Authorization": "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbm4ifQ."}):
        error(requests.post(f"{docs(base_url, project)}:batchWrite", json=body, headers=headers, timeout=T), 403, "PERMISSION_DENIED",
              "Batch writes require admin authentication.")
    assert requests.get(f"{docs(base_url, project)}/bw/x", timeout=T).status_code == 404
    r = requests.post(f"{docs(base_url, project)}:batchWrite", json=body, headers=OWNER, timeout=T)
    assert r.status_code == 200 and r.json()["status"] == [{}], r.text
    channel = grpc.insecure_channel(base_url.split("://", 1)[1])
    try:
        call = channel.unary_unary("/google.firestore.v1.Firestore/BatchWrite", request_serializer=fs.BatchWriteRequest.serialize,
                                   response_deserializer=fs.BatchWriteResponse.deserialize)
        request = fs.BatchWriteRequest(database=f"projects/{project}/databases/{DB}", writes=[{"update": {"name": name(project, "bw/y")}}])
        with pytest.raises(grpc.RpcError) as refused:
            call(request, timeout=T)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert refused.value.details() == "Batch writes require admin authentication."
        assert len(call(request, metadata=[("authorization", "Bearer owner")], timeout=T).write_results) == 1
    finally:
        channel.close()
