"""The generated Firestore client (google-cloud-firestore's GAPIC layer) over its REST transport,
pointed at Firegate unchanged.

What that client sends (read from google/cloud/firestore_v1/services/firestore/transports/rest*.py and
google/api_core/rest_helpers.py, and observed on the wire):
- URL = api_endpoint + "/v1/" + resource; with api_endpoint "http://127.0.0.1:PORT" the scheme is
  kept. Path segments are percent-encoded: "(default)" -> "%28default%29", " " -> "%20".
- Every call adds the query parameter `$alt=json;enum-encoding=int` (sent as
  `%24alt=json%3Benum-encoding%3Dint`); enums in bodies are numbers (op 5, direction 2,
  setToServerValue 1); int64 as strings; camelCase names; an empty DocumentMask is `{}`.
- Request fields outside the path and body become camelCase query parameters, e.g.
  `mask.fieldPaths=a&mask.fieldPaths=b`, `updateMask.fieldPaths=a`, `currentDocument.exists=true`,
  `currentDocument.updateTime=1970-01-01T00:00:01.000005Z`, `pageSize=2&orderBy=a+desc&showMissing=true`.
- Headers: `Content-Type: application/json` on every request (GET and DELETE included),
  `x-goog-api-client`, `x-goog-request-params`; no Authorization with anonymous credentials.
- Streaming methods (batchGet, runQuery, runAggregationQuery) are parsed by
  google.api_core.rest_streaming.ResponseIterator, which reads the body one character at a time and
  raises ValueError unless the very first character is `[` — and also if any character other than `[`
  follows the closing `]` (e.g. a trailing newline). The body must be exactly one JSON array.
- Errors: google.api_core.exceptions.from_http_response maps the HTTP status (404 NotFound, 409
  Conflict, 400 BadRequest) and reads error.message from `{"error":{...}}` (or `[{"error":{...}}]`).
- create_document's URL template is /v1/{parent=projects/*/databases/*/documents/**}/{collection_id}:
  "**" needs at least one segment in this client, so a top-level collection cannot be used with
  create_document through it (a client-side ValueError); it works under a document.
"""
import datetime

import pytest
import requests
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud.firestore_v1.services.firestore import FirestoreClient
from google.cloud.firestore_v1.types import common, document, firestore, query, write

from docs_support import AUTO_ID_RE, Fs, fields, ok


@pytest.fixture
def client(base_url):
    return FirestoreClient(transport="rest", client_options={"api_endpoint": base_url},
                           credentials=AnonymousCredentials())


@pytest.fixture
def names(project):
    class N:
        db = f"projects/{project}/databases/(default)"
        root = db + "/documents"

        @staticmethod
        def doc(path):
            return f"{N.root}/{path}"
    return N


def V(**kw):
    return document.Value(**kw)


def ts_of(v):
    """A proto-plus timestamp field (DatetimeWithNanoseconds) -> aware datetime."""
    return v if isinstance(v, datetime.datetime) else v.ToDatetime(tzinfo=datetime.timezone.utc)


def test_endpoint_with_http_scheme_is_used_as_is(client, base_url):
    assert client.transport._host == base_url


def test_create_get_update_delete(client, names):
    doc = client.update_document(request={
        "document": {"name": names.doc("c/d"), "fields": {"a": V(integer_value=1), "b": V(string_value="x"),
                                                          "m": V(map_value={"fields": {"k": V(boolean_value=True)}})}},
    })
    assert doc.name == names.doc("c/d")
    assert doc.fields["a"].integer_value == 1
    assert doc.create_time == doc.update_time

    got = client.get_document(request={"name": names.doc("c/d")})
    assert got == doc

    masked = client.get_document(request={"name": names.doc("c/d"), "mask": {"field_paths": ["b", "m.k"]}})
    assert set(masked.fields) == {"b", "m"}
    assert masked.fields["m"].map_value.fields["k"].boolean_value is True

    updated = client.update_document(request={
        "document": {"name": names.doc("c/d"), "fields": {"a": V(integer_value=2)}},
        "update_mask": {"field_paths": ["a", "b"]},
        "current_document": {"exists": True},
    })
    assert set(updated.fields) == {"a", "m"}
    assert updated.fields["a"].integer_value == 2
    assert ts_of(updated.update_time) > ts_of(doc.update_time)

    with pytest.raises(gexc.BadRequest):     # FAILED_PRECONDITION: stale updateTime
        client.update_document(request={
            "document": {"name": names.doc("c/d"), "fields": {"a": V(integer_value=3)}},
            "current_document": {"update_time": doc.update_time},
        })

    client.delete_document(request={"name": names.doc("c/d"), "current_document": {"exists": True}})
    with pytest.raises(gexc.NotFound):
        client.get_document(request={"name": names.doc("c/d")})
    with pytest.raises(gexc.NotFound):
        client.delete_document(request={"name": names.doc("c/d"), "current_document": {"exists": True}})


def test_create_document_under_a_document(client, names):
    created = client.create_document(request={
        "parent": names.doc("c/d"), "collection_id": "sub", "document_id": "x",
        "document": {"fields": {"n": V(double_value=1.5)}},
    })
    assert created.name == names.doc("c/d/sub/x")
    assert created.fields["n"].double_value == 1.5
    with pytest.raises(gexc.Conflict):         # ALREADY_EXISTS
        client.create_document(request={"parent": names.doc("c/d"), "collection_id": "sub", "document_id": "x",
                                        "document": {}})
    auto = client.create_document(request={"parent": names.doc("c/d"), "collection_id": "sub", "document": {}})
    assert AUTO_ID_RE.match(auto.name.rsplit("/", 1)[1])


def test_list_documents_pager(client, names, base_url, project):
    Fs(base_url, project).set_many({f"c/{i}": {"i": i} for i in ["e", "a", "c", "b", "d"]})
    pager = client.list_documents(request={"parent": names.root, "collection_id": "c", "page_size": 2})
    assert [d.name.rsplit("/", 1)[1] for d in pager] == ["a", "b", "c", "d", "e"]
    pager = client.list_documents(request={"parent": names.root, "collection_id": "c", "order_by": "i desc",
                                           "mask": {"field_paths": ["i"]}})
    assert [d.name.rsplit("/", 1)[1] for d in pager] == ["e", "d", "c", "b", "a"]


def test_commit_with_transforms(client, names):
    FT = write.DocumentTransform.FieldTransform
    resp = client.commit(request={"database": names.db, "writes": [
        {"update": {"name": names.doc("c/d"), "fields": {"n": V(integer_value=5), "arr": V(array_value={
            "values": [V(integer_value=1)]})}}},
        {"update": {"name": names.doc("c/d"), "fields": {}}, "update_mask": {"field_paths": []},
         "update_transforms": [
             {"field_path": "t", "set_to_server_value": FT.ServerValue.REQUEST_TIME},
             {"field_path": "n", "increment": V(integer_value=3)},
             {"field_path": "arr", "append_missing_elements": {"values": [V(integer_value=1), V(integer_value=2)]}},
             {"field_path": "mx", "maximum": V(double_value=2.5)},
         ]},
    ]})
    assert len(resp.write_results) == 2
    results = resp.write_results[1].transform_results
    assert ts_of(results[0].timestamp_value) == ts_of(resp.commit_time)
    assert results[1].integer_value == 8
    assert "null_value" in results[2]
    assert results[3].double_value == 2.5
    got = client.get_document(request={"name": names.doc("c/d")})
    assert got.fields["n"].integer_value == 8
    assert [v.integer_value for v in got.fields["arr"].array_value.values] == [1, 2]
    assert ts_of(got.fields["t"].timestamp_value) == ts_of(resp.commit_time)
    assert ts_of(got.update_time) == ts_of(resp.commit_time)


def test_run_query(client, names, base_url, project):
    Fs(base_url, project).set_many({"c/a": {"n": 1}, "c/b": {"n": 5}, "c/c": {"n": 3}, "c/d": {"s": "x"}})
    Op = query.StructuredQuery.FieldFilter.Operator
    sq = query.StructuredQuery(
        from_=[{"collection_id": "c"}],
        where={"field_filter": {"field": {"field_path": "n"}, "op": Op.GREATER_THAN, "value": V(integer_value=1)}},
        order_by=[{"field": {"field_path": "n"}, "direction": query.StructuredQuery.Direction.DESCENDING}],
        limit=10,
    )
    responses = list(client.run_query(request={"parent": names.root, "structured_query": sq}))
    docs = [r.document for r in responses if r.document.name]
    assert [d.name.rsplit("/", 1)[1] for d in docs] == ["b", "c"]
    assert all(r.read_time for r in responses)

    none = list(client.run_query(request={"parent": names.root, "structured_query": {
        "from_": [{"collection_id": "nothing"}]}}))
    assert len(none) == 1 and not none[0].document.name and none[0].read_time

    composite = query.StructuredQuery(
        from_=[{"collection_id": "c"}],
        where={"composite_filter": {"op": query.StructuredQuery.CompositeFilter.Operator.OR, "filters": [
            {"field_filter": {"field": {"field_path": "n"}, "op": Op.EQUAL, "value": V(integer_value=1)}},
            {"unary_filter": {"op": query.StructuredQuery.UnaryFilter.Operator.IS_NOT_NULL,
                              "field": {"field_path": "s"}}},
        ]}})
    responses = list(client.run_query(request={"parent": names.root, "structured_query": composite}))
    # IS_NOT_NULL is an inequality: the query is implicitly ordered by `s`, and ordering requires
    # the field, so `a` (no `s`) is excluded even though it matches `n == 1` (the SDK's
    # queryMatchesOrderBy rule over the normalized order).
    assert [r.document.name.rsplit("/", 1)[1] for r in responses if r.document.name] == ["d"]


def test_run_aggregation_query(client, names, base_url, project):
    Fs(base_url, project).set_many({"c/a": {"n": 1}, "c/b": {"n": 2}})
    responses = list(client.run_aggregation_query(request={
        "parent": names.root,
        "structured_aggregation_query": {
            "structured_query": {"from_": [{"collection_id": "c"}]},
            "aggregations": [{"alias": "cnt", "count": {}}, {"alias": "total", "sum": {"field": {"field_path": "n"}}}],
        }}))
    assert len(responses) == 1
    fields_ = responses[0].result.aggregate_fields
    assert fields_["cnt"].integer_value == 2
    assert fields_["total"].integer_value == 3


def test_batch_get_documents(client, names, base_url, project):
    Fs(base_url, project).set("c/a", {"n": 1})
    responses = list(client.batch_get_documents(request={
        "database": names.db, "documents": [names.doc("c/a"), names.doc("c/missing")]}))
    assert len(responses) == 2
    found = [r.found for r in responses if r.found.name]
    missing = [r.missing for r in responses if r.missing]
    assert [d.name for d in found] == [names.doc("c/a")]
    assert found[0].fields["n"].integer_value == 1
    assert missing == [names.doc("c/missing")]


def test_transaction_begin_read_commit(client, names, base_url, project):
    Fs(base_url, project).set("c/d", {"n": 1})
    tx = client.begin_transaction(request={"database": names.db}).transaction
    assert tx
    doc = client.get_document(request={"name": names.doc("c/d"), "transaction": tx})
    resp = client.commit(request={"database": names.db, "transaction": tx, "writes": [
        {"update": {"name": names.doc("c/d"), "fields": {"n": V(integer_value=doc.fields["n"].integer_value + 1)}},
         "current_document": {"update_time": doc.update_time}}]})
    assert ts_of(resp.write_results[0].update_time) == ts_of(resp.commit_time)
    assert client.get_document(request={"name": names.doc("c/d")}).fields["n"].integer_value == 2

    ro = client.begin_transaction(request={"database": names.db,
                                           "options": common.TransactionOptions(read_only={})}).transaction
    assert client.get_document(request={"name": names.doc("c/d"), "transaction": ro}).fields["n"].integer_value == 2
    client.rollback(request={"database": names.db, "transaction": ro})


def test_transaction_conflicts_raise_conflict(client, names, base_url, project):
    """A transaction's read locks the document (docs/transactions.md): a write from outside gives
    up with 409 ABORTED, and of two transactions the older commits and the younger is aborted."""
    f = Fs(base_url, project)
    f.set("c/d", {"n": 1})
    older = client.begin_transaction(request={"database": names.db}).transaction
    younger = client.begin_transaction(request={"database": names.db}).transaction
    for tx in (younger, older):
        client.get_document(request={"name": names.doc("c/d"), "transaction": tx})
    outside = f.patch("c/d", {"n": 100})
    assert outside.status_code == 409 and outside.json()["error"]["status"] == "ABORTED", outside.text
    client.commit(request={"database": names.db, "transaction": older, "writes": [
        {"update": {"name": names.doc("c/d"), "fields": {"n": V(integer_value=2)}}}]})
    with pytest.raises(gexc.Conflict):          # 409 ABORTED
        client.commit(request={"database": names.db, "transaction": younger, "writes": [
            {"update": {"name": names.doc("c/d"), "fields": {"n": V(integer_value=3)}}}]})
    assert f.get_ok("c/d")["fields"] == fields({"n": 2})


def test_list_collection_ids_and_batch_write(client, names):
    request = {"database": names.db, "writes": [
        {"update": {"name": names.doc("b/x"), "fields": {}}},
        {"update": {"name": names.doc("a/y/sub/z"), "fields": {}}},
        {"update": {"name": names.doc("a/missing"), "fields": {}}, "current_document": {"exists": True}},
    ]}
    # An admin API: anonymous credentials are refused, as by the official emulator.
    with pytest.raises(gexc.Forbidden):  # a 403 over this REST transport
        client.batch_write(request=request)
    resp = client.batch_write(request=request, metadata=[("authorization", "Bearer owner")])
    assert [s.code for s in resp.status] == [0, 0, 5]
    ids = list(client.list_collection_ids(request={"parent": names.root}))
    assert ids == ["a", "b"]
    assert list(client.list_collection_ids(request={"parent": names.doc("a/y")})) == ["sub"]


def test_streaming_bodies_are_exactly_one_json_array(base_url, project):
    """rest_streaming.ResponseIterator rejects any byte before `[` or after `]` (see module docstring)."""
    f = Fs(base_url, project)
    f.set("c/a", {"n": 1})
    for resource, body in [
        (f"{f.root}:runQuery", {"structuredQuery": {"from": [{"collectionId": "c"}]}}),
        (f"{f.root}:runQuery", {"structuredQuery": {"from": [{"collectionId": "none"}]}}),
        (f"{f.root}:batchGet", {"documents": [f.name("c/a")]}),
        (f"{f.root}:runAggregationQuery", {"structuredAggregationQuery": {
            "structuredQuery": {"from": [{"collectionId": "c"}]}, "aggregations": [{"count": {}}]}}),
    ]:
        r = requests.post(f"{base_url}/v1/{resource}", params={"$alt": "json;enum-encoding=int"}, json=body,
                          timeout=30)
        ok(r)
        assert r.content[:1] == b"[" and r.content[-1:] == b"]", r.content[:40] + b"..." + r.content[-40:]


def test_errors_map_to_api_core_exceptions(client, names):
    with pytest.raises(gexc.NotFound) as e:
        client.get_document(request={"name": names.doc("c/none")})
    assert e.value.code == 404
    with pytest.raises(gexc.BadRequest):
        list(client.run_query(request={"parent": names.root, "structured_query": {
            "from_": [{"collection_id": "c"}],
            "where": {"field_filter": {"field": {"field_path": "n"}, "op": 8,              # IN with no values
                                       "value": {"array_value": {}}}}}}))
    with pytest.raises(gexc.BadRequest):
        client.commit(request={"database": names.db, "writes": [
            {"update": {"name": names.doc("c/d"), "fields": {"__bad__": V(integer_value=1)}}}]})


def test_firestore_request_types_used_directly(client, names):
    """The same calls with request objects instead of dicts."""
    client.commit(firestore.CommitRequest(database=names.db, writes=[
        write.Write(update=document.Document(name=names.doc("c/x"), fields={"s": V(string_value="é")}))]))
    got = client.get_document(firestore.GetDocumentRequest(name=names.doc("c/x")))
    assert got.fields["s"].string_value == "é"


def test_large_streamed_query_result(client, names, base_url, project):
    f = Fs(base_url, project)
    ok(f.commit([{"update": {"name": f.name(f"big/d{i:04d}"), "fields": fields({"i": i, "s": "é\"\\{}[]" * 20})}}
                 for i in range(400)]))
    responses = list(client.run_query(request={"parent": names.root, "structured_query": {
        "from_": [{"collection_id": "big"}]}}))
    docs = [r.document for r in responses if r.document.name]
    assert [d.fields["i"].integer_value for d in docs] == list(range(400))
    assert docs[0].fields["s"].string_value == "é\"\\{}[]" * 20
