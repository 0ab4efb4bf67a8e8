"""What google-cloud-firestore's own system tests exposed in the engine, checked over REST too:
vectors and the BSON types of Enterprise databases, future preconditions, sum/avg with a
limit, collection ids at a read time, kindless all-descendants queries and numeric ids."""
import requests


def url(base_url, project, rest="", database="(default)"):
    return f"{base_url}/v1/projects/{project}/databases/{database}/documents{rest}"


def commit(base_url, project, writes, database="(default)"):
    return requests.post(url(base_url, project, ":commit", database), json={"writes": writes})


def update(project, path, fields, database="(default)"):
    return {"update": {"name": f"projects/{project}/databases/{database}/documents/{path}", "fields": fields}}


def run_query(base_url, project, query, database="(default)", **extra):
    r = requests.post(url(base_url, project, ":runQuery", database), json={"structuredQuery": query, **extra})
    assert r.status_code == 200, r.text
    return [item["document"]["name"].rsplit("/", 1)[1] for item in r.json() if "document" in item]


def vector(*values):
    return {"mapValue": {"fields": {"__type__": {"stringValue": "__vector__"},
                                    "value": {"arrayValue": {"values": [{"doubleValue": v} for v in values]}}}}}


def test_vectors_are_written_and_ordered_by_length_then_values(base_url, project):
    writes = [update(project, "v/a", {"e": vector(1, 2, 3)}), update(project, "v/b", {"e": vector(2, 2)}),
              update(project, "v/c", {"e": vector(2, 2, 3)})]
    assert commit(base_url, project, writes).status_code == 200
    query = {"from": [{"collectionId": "v"}], "orderBy": [{"field": {"fieldPath": "e"}}]}
    assert run_query(base_url, project, query) == ["b", "a", "c"]
    bad = {"e": {"mapValue": {"fields": {"__type__": {"stringValue": "__vector__"}, "value": {"arrayValue": {"values": [{"stringValue": "x"}]}}}}}}
    assert commit(base_url, project, [update(project, "v/d", bad)]).status_code == 400
    empty = commit(base_url, project, [update(project, "v/d", {"e": vector()})])
    assert empty.status_code == 400 and empty.json()["error"]["message"] == "Cannot have a zero length vector."
    other = {"e": {"mapValue": {"fields": {"__type__": {"stringValue": "x"}}}}}
    assert commit(base_url, project, [update(project, "v/d", other)]).status_code == 400


def bson(key, value):
    return {"mapValue": {"fields": {key: value}}}


def test_bson_values_are_validated_normalised_and_ordered(base_url, project):
    db = "enterprise-db-native"
    fields = {
        "oid": bson("__oid__", {"stringValue": "507f191e810c19729de860ea"}), "int": bson("__int__", {"integerValue": "5"}),
        "bin": bson("__binary__", {"bytesValue": "AAEC"}), "min": bson("__min__", {"nullValue": None}),
        "ts": bson("__request_timestamp__", {"mapValue": {"fields": {"seconds": {"integerValue": "1"}, "increment": {"integerValue": "2"}}}}),
        "re": bson("__regex__", {"mapValue": {"fields": {"pattern": {"stringValue": "^a"}, "options": {"stringValue": "mi"}}}}),
        "inf": bson("__decimal128__", {"stringValue": "-inf"}),
    }
    assert commit(base_url, project, [update(project, "b/one", fields, db)], db).status_code == 200
    got = requests.get(url(base_url, project, "/b/one", db)).json()["fields"]
    assert got["inf"] == bson("__decimal128__", {"stringValue": "-Infinity"})
    assert got["re"]["mapValue"]["fields"]["__regex__"]["mapValue"]["fields"]["options"] == {"stringValue": "im"}
    assert got["oid"] == fields["oid"] and got["ts"] == fields["ts"]

    bad_regex = bson("__regex__", {"mapValue": {"fields": {"pattern": {"stringValue": "a"}, "options": {"stringValue": "l"}}}})
    r = commit(base_url, project, [update(project, "b/bad", {"r": bad_regex}, db)], db)
    assert r.status_code == 400 and "Invalid regex option" in r.json()["error"]["message"]
    for bad in (bson("__oid__", {"stringValue": "xyz"}), bson("__int__", {"integerValue": "4294967296"}),
                bson("__min__", {"integerValue": "1"})):
        assert commit(base_url, project, [update(project, "b/bad", {"x": bad}, db)], db).status_code == 400

    ordered = [("max", bson("__max__", {"nullValue": None})), ("ten", bson("__int__", {"integerValue": "10"})),
               ("min", bson("__min__", {"nullValue": None})), ("nul", {"nullValue": None}), ("two", {"integerValue": "2"})]
    writes = [update(project, f"o/{name}", {"val": value}, db) for name, value in ordered]
    assert commit(base_url, project, writes, db).status_code == 200
    query = {"from": [{"collectionId": "o"}], "orderBy": [{"field": {"fieldPath": "val"}}]}
    assert run_query(base_url, project, query, db) == ["nul", "min", "two", "ten", "max"]


def test_a_precondition_from_the_future_is_invalid_and_one_from_the_past_fails(base_url, project):
    r = commit(base_url, project, [update(project, "p/a", {"n": {"integerValue": "1"}})])
    update_time = r.json()["writeResults"][0]["updateTime"]
    future = {"delete": f"projects/{project}/databases/(default)/documents/p/a", "currentDocument": {"updateTime": "2999-01-01T00:00:00Z"}}
    r = commit(base_url, project, [future])
    assert r.status_code == 400 and r.json()["error"]["status"] == "INVALID_ARGUMENT"
    past = {"delete": f"projects/{project}/databases/(default)/documents/p/a", "currentDocument": {"updateTime": "2001-01-01T00:00:00Z"}}
    assert commit(base_url, project, [past]).json()["error"]["status"] == "FAILED_PRECONDITION"
    exact = {"delete": f"projects/{project}/databases/(default)/documents/p/a", "currentDocument": {"updateTime": update_time}}
    assert commit(base_url, project, [exact]).status_code == 200


def test_sum_and_avg_with_a_limit_take_the_lowest_values_of_their_field(base_url, project):
    writes = [update(project, f"s/{name}", {"n": {"integerValue": str(n)}}) for name, n in (("a", 9), ("b", 1), ("c", 5), ("d", 2))]
    assert commit(base_url, project, writes).status_code == 200
    body = {"structuredAggregationQuery": {"structuredQuery": {"from": [{"collectionId": "s"}], "limit": 2},
                                           "aggregations": [{"alias": "s", "sum": {"field": {"fieldPath": "n"}}},
                                                            {"alias": "a", "avg": {"field": {"fieldPath": "n"}}}]}}
    fields = requests.post(url(base_url, project, ":runAggregationQuery"), json=body).json()[0]["result"]["aggregateFields"]
    assert fields == {"s": {"integerValue": "3"}, "a": {"doubleValue": 1.5}}
    body["structuredAggregationQuery"]["aggregations"] = [{"alias": "x", "count": {}}, {"alias": "x", "count": {}}]
    r = requests.post(url(base_url, project, ":runAggregationQuery"), json=body)
    assert "Aggregation aliases contain duplicate alias" in r.json()["error"]["message"]


def test_collection_ids_at_a_read_time_and_kindless_queries_with_numeric_ids(base_url, project):
    first = commit(base_url, project, [update(project, "old/1", {}), update(project, "keep/__id5__", {})]).json()["commitTime"]
    commit(base_url, project, [{"delete": f"projects/{project}/databases/(default)/documents/old/1"}, update(project, "new/1", {})])
    listed = lambda **body: requests.post(url(base_url, project, ":listCollectionIds"), json=body).json().get("collectionIds")
    assert listed() == ["keep", "new"]
    assert listed(readTime=first) == ["keep", "old"]

    commit(base_url, project, [update(project, "keep/a", {}), update(project, "keep/a/sub/b", {})])
    kindless = {"from": [{"allDescendants": True}], "orderBy": [{"field": {"fieldPath": "__name__"}}]}
    assert run_query(base_url, project, kindless) == ["__id5__", "a", "b", "1"]
    assert requests.post(url(base_url, project, ":runQuery"), json={"structuredQuery": {"from": [{}]}}).status_code == 400
