"""Ordered, ranged and limited queries over REST, with production's parameter forms and
errors."""
import json

import requests


def q(base, ns, path, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return requests.get(f"{base}/{path}.json?ns={ns}&{query}")


def keys(r):
    assert r.status_code == 200, r.text
    value = r.json()
    return list(value.keys()) if isinstance(value, dict) else value


def seed(base, ns):
    data = {
        "a": {"h": 3, "n": "x"},
        "b": {"h": 1},
        "c": {"h": "tall"},
        "d": {"h": True},
        "e": {"other": 1},
        "f": {"h": {"nested": 1}},
        "g": {"h": 1},
        "10": {"h": 2},
        "9": {"h": False},
    }
    requests.put(f"{base}/d.json?ns={ns}", data=json.dumps(data))


def test_order_by_child_puts_types_in_order(base_url, namespace):
    seed(base_url, namespace)
    r = q(base_url, namespace, "d", orderBy='"h"', limitToFirst=100)
    # null (e), false (9), true (d), numbers (b, g tie -> key order; 10; a), strings (c), objects (f)
    assert keys(r) == ["e", "9", "d", "b", "g", "10", "a", "c", "f"]


def test_order_by_key_integer_keys_first(base_url, namespace):
    requests.put(f"{base_url}/k.json?ns={namespace}", data=json.dumps({"b": 1, "a": 1, "10": 1, "9": 1, "-1": 1, "a1": 1}))
    assert keys(q(base_url, namespace, "k", orderBy='"$key"', limitToFirst=10)) == ["-1", "9", "10", "a", "a1", "b"]
    assert keys(q(base_url, namespace, "k", orderBy='"$key"', startAt='"a"')) == ["a", "a1", "b"]
    assert keys(q(base_url, namespace, "k", orderBy='"$key"', endAt='"9"')) == ["-1", "9"]
    assert keys(q(base_url, namespace, "k", orderBy='"$key"', limitToLast=2)) == ["a1", "b"]


def test_ranges_with_key_tiebreak(base_url, namespace):
    seed(base_url, namespace)
    assert keys(q(base_url, namespace, "d", orderBy='"h"', startAt=1, endAt=2)) == ["b", "g", "10"]
    assert keys(q(base_url, namespace, "d", orderBy='"h"', startAt='1,"g"', endAt=3)) == ["g", "10", "a"]
    assert keys(q(base_url, namespace, "d", orderBy='"h"', endAt='1,"b"')) == ["e", "9", "d", "b"]
    assert keys(q(base_url, namespace, "d", orderBy='"h"', equalTo=1)) == ["b", "g"]
    assert keys(q(base_url, namespace, "d", orderBy='"h"', equalTo='"tall"')) == ["c"]
    assert keys(q(base_url, namespace, "d", orderBy='"h"', startAt='"b"', endAt='"b\\uf8ff"')) is None
    assert keys(q(base_url, namespace, "d", orderBy='"h"', startAfter=1, endBefore=3)) == ["10"]


def test_limits(base_url, namespace):
    seed(base_url, namespace)
    assert keys(q(base_url, namespace, "d", orderBy='"h"', limitToFirst=2)) == ["e", "9"]
    assert keys(q(base_url, namespace, "d", orderBy='"h"', limitToLast=2)) == ["c", "f"]
    assert keys(q(base_url, namespace, "d", orderBy='"h"', startAt=1, limitToFirst=2)) == ["b", "g"]


def test_order_by_value_and_priority(base_url, namespace):
    requests.put(f"{base_url}/v.json?ns={namespace}", data=json.dumps({"x": 3, "y": 1, "z": "s", "w": None, "u": 2}))
    assert keys(q(base_url, namespace, "v", orderBy='"$value"', limitToFirst=9)) == ["y", "u", "x", "z"]
    assert keys(q(base_url, namespace, "v", orderBy='"$value"', startAt=2)) == ["u", "x", "z"]
    requests.put(f"{base_url}/p.json?ns={namespace}", data=json.dumps({
        "a": {".value": 1, ".priority": 2}, "b": {".value": 1, ".priority": 1}, "c": {".value": 1, ".priority": "s"}, "d": 1}))
    assert keys(q(base_url, namespace, "p", orderBy='"$priority"', limitToFirst=9)) == ["d", "b", "a", "c"]
    assert keys(q(base_url, namespace, "p", orderBy='"$priority"', startAt=2)) == ["a", "c"]


def test_order_by_nested_child_path(base_url, namespace):
    requests.put(f"{base_url}/n.json?ns={namespace}", data=json.dumps({
        "a": {"m": {"s": 2}}, "b": {"m": {"s": 1}}, "c": {"m": {"s": 3}}}))
    assert keys(q(base_url, namespace, "n", orderBy='"m/s"', limitToLast=2)) == ["a", "c"]


def test_order_only_returns_everything(base_url, namespace):
    requests.put(f"{base_url}/o.json?ns={namespace}", data=json.dumps({"a": 1, "b": 2}))
    assert q(base_url, namespace, "o", orderBy='"$key"').json() == {"a": 1, "b": 2}
    requests.put(f"{base_url}/leaf.json?ns={namespace}", data="5")
    assert q(base_url, namespace, "leaf", orderBy='"$key"').json() == 5
    assert q(base_url, namespace, "leaf", orderBy='"$key"', limitToFirst=1).json() is None


def test_query_errors(base_url, namespace):
    cases = [
        (dict(limitToFirst=1), "orderBy must be defined when other query parameters are defined"),
        (dict(orderBy="h"), "orderBy must be a valid JSON encoded path"),
        (dict(orderBy='"$nope"'), "orderBy must be a valid JSON encoded path"),
        (dict(orderBy='"$key"', startAt=1), "Provided key index type is invalid, must be string"),
        (dict(orderBy='"h"', startAt="abc"), "Constraint index field must be a JSON primitive"),
        (dict(orderBy='"h"', startAt="[1]"), "Constraint index field must be a JSON primitive"),
        (dict(orderBy='"h"', limitToFirst=1, limitToLast=1), None),
        (dict(orderBy='"h"', limitToFirst=-1), None),
        (dict(orderBy='"h"', limitToFirst="x"), None),
        (dict(orderBy='"h"', equalTo=1, startAt=1), None),
    ]
    for params, message in cases:
        r = q(base_url, namespace, "d", **params)
        assert r.status_code == 400, params
        assert isinstance(r.json()["error"], str)
        if message:
            assert r.json()["error"] == message


def test_query_results_as_arrays(base_url, namespace):
    requests.put(f"{base_url}/arr.json?ns={namespace}", data=json.dumps([5, 4, 3, 2]))
    assert q(base_url, namespace, "arr", orderBy='"$value"', limitToFirst=4).json() == [5, 4, 3, 2]
